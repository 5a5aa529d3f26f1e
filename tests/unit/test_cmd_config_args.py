"""oslo.config's --config-file and --config-dir before or after the command, for every
command, in the order given (later files win)."""

import pytest

from inspector import cmd
from inspector.cmd import config_cmd

#: Every command that loads the configuration, with the arguments it needs.
COMMANDS = [
    ["api"],
    ["worker"],
    ["all"],
    ["db", "upgrade"],
    ["db", "version"],
    ["db", "import-ironic-inspector", "--source-connection", "sqlite:///nowhere.sqlite"],
    ["config", "check"],
    ["status"],
    ["history", "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"],
    ["drift", "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "--json"],
    ["firewall", "close"],
]


def _file(tmp_path, name: str, pool_size: int) -> str:
    path = tmp_path / name
    path.write_text(f"[worker]\npool_size = {pool_size}\n")
    return str(path)


@pytest.fixture
def loaded(monkeypatch):
    """The configurations `inspector config check` loaded."""
    confs = []
    load = config_cmd.config.load

    def recording(argv, **kwargs):
        confs.append(load(argv, **kwargs))
        return confs[-1]

    monkeypatch.setattr(config_cmd.config, "load", recording)
    return confs


def test_splitting_keeps_the_order_of_both_forms():
    argv = ["--config-file", "a", "db", "--config-dir=d", "upgrade", "--config-file=b", "-x"]
    assert cmd.config_arguments(argv) == (
        ["--config-file", "a", "--config-dir=d", "--config-file=b"],
        ["db", "upgrade", "-x"],
    )
    # A missing value is left for oslo.config to report; nothing after `--` is taken.
    assert cmd.config_arguments(["api", "--config-file"]) == (["--config-file"], ["api"])
    assert cmd.config_arguments(["api", "--", "--config-file", "a"]) == (
        [],
        ["api", "--", "--config-file", "a"],
    )


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_file_before_or_after_the_command(tmp_path, loaded, capsys, where):
    args = ["--config-file", _file(tmp_path, "one.conf", 3)]
    argv = [*args, "config", "check"] if where == "before" else ["config", "check", *args]
    assert cmd.main(argv) == 0
    assert "configuration is valid" in capsys.readouterr().out
    assert loaded[-1].worker.pool_size == 3


def test_files_on_both_sides_are_read_in_order_and_later_files_win(tmp_path, loaded):
    a, b, c, d = (_file(tmp_path, f"{name}.conf", size) for size, name in enumerate("abcd", 1))
    argv = ["--config-file", a, f"--config-file={b}", "config", "check"]
    assert cmd.main([*argv, "--config-file", c, f"--config-file={d}"]) == 0
    assert loaded[-1].config_file == [a, b, c, d]
    assert loaded[-1].worker.pool_size == 4
    assert (
        cmd.main(["--config-file", d, "--config-file", c, "config", "check", "--config-file", b])
        == 0
    )
    assert loaded[-1].worker.pool_size == 2


def test_a_later_valid_file_after_the_command_fixes_an_earlier_one(tmp_path, capsys):
    bad, good = _file(tmp_path, "bad.conf", 0), _file(tmp_path, "good.conf", 5)
    assert cmd.main(["--config-file", bad, "config", "check", "--config-file", good]) == 0
    assert cmd.main(["--config-file", good, "config", "check", "--config-file", bad]) == 2
    assert "[worker] pool_size" in capsys.readouterr().err


def test_a_directory_before_the_command(tmp_path, loaded):
    directory = tmp_path / "inspector.conf.d"
    directory.mkdir()
    _file(directory, "10-worker.conf", 7)
    first = _file(tmp_path, "first.conf", 3)
    assert (
        cmd.main(["--config-file", first, "--config-dir", str(directory), "config", "check"]) == 0
    )
    assert loaded[-1].worker.pool_size == 7
    last = _file(tmp_path, "last.conf", 9)
    argv = ["--config-dir", str(directory), "config", "check", "--config-file", last]
    assert cmd.main(argv) == 0
    assert loaded[-1].worker.pool_size == 9


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_command_reads_the_files_wherever_they_are(tmp_path, capsys, command, where):
    """A missing file is reported by the configuration, not refused by the command line:
    it reached oslo.config, before anything else is done."""
    missing = ["--config-file", str(tmp_path / "missing.conf")]
    argv = [*missing, *command] if where == "before" else [*command, *missing]
    assert cmd.main(argv) == 2
    err = capsys.readouterr().err
    assert f"configuration file not found: {tmp_path / 'missing.conf'}" in err
    assert "usage:" not in err


@pytest.mark.parametrize(
    "words",
    [
        *(
            [word for word in command if not word.startswith("-") and "/" not in word]
            for command in COMMANDS
        ),
        ["pxe-filter"],
        ["db"],
        ["config"],
        ["firewall"],
        [],
    ],
    ids=lambda words: " ".join(words) or "inspector",
)
def test_every_commands_help_names_the_configuration_options(capsys, words):
    with pytest.raises(SystemExit) as exited:
        cmd.main([*words, "--help"])
    assert exited.value.code == 0
    usage = capsys.readouterr().out
    assert "--config-file FILE" in usage and "--config-dir DIR" in usage, usage


def test_the_sample_reads_no_configuration_and_its_help_says_none(capsys):
    with pytest.raises(SystemExit):
        cmd.main(["config", "sample", "--help"])
    assert "--config-file" not in capsys.readouterr().out
