"""The repository as a newcomer and a packager get it: a `git clone` of this commit into an
empty directory with nothing beside it. The README's first command (`scripts/quickstart`,
non-interactive) finishes its demo introspection against a real Ironic of its own, deletes
the demo's nodes and says that Ironic keeps running (sending no notification: no RabbitMQ
was started); the sdist and the wheel build without warnings and pass `twine check`; the
wheel, installed alone into a fresh virtualenv, carries the distribution's name, version
and Requires-Python and serves `inspector all`.

Slow (two virtualenvs and an Ironic installed from the pip cache): a few minutes.
"""

import email.parser
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator

import pytest
import requests

import inspector

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: The distribution's name on PyPI ("inspector" there is an unrelated project).
DISTRIBUTION = "ironic-ha-inspector"
#: Seconds the whole quickstart may take from a cold clone (pip cache warm or not).
QUICKSTART_TIMEOUT = 1500
#: Seconds a build or an install may take.
INSTALL_TIMEOUT = 900
IRONIC_HEADERS = {"X-OpenStack-Ironic-API-Version": "1.81"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the test suite's service URLs and virtualenv,
    as a user's shell would be."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("INSPECTOR_", "PYTEST_"))
        # PYTHONDONTWRITEBYTECODE makes setuptools warn that it does not byte-compile.
        and key not in ("VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    }
    env["PATH"] = os.pathsep.join(
        part for part in env.get("PATH", "").split(os.pathsep) if not part.startswith(str(ROOT))
    )
    env.update(extra)
    return env


def run(command: list[str], cwd: pathlib.Path, timeout: float, **kwargs):
    """The command's result; past the timeout its whole process group is killed (the
    quickstart's `inspector all` with it) and the test fails."""
    with subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            pytest.fail(f"{command} took over {timeout} s:\n{stdout}\n{stderr}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def clone() -> Iterator[pathlib.Path]:
    """A clone of this commit, alone in an empty temporary directory."""
    if shutil.which("git") is None:
        pytest.fail("git is not installed")
    head = run(["git", "rev-parse", "HEAD"], ROOT, 30).stdout.strip()
    parent = pathlib.Path(tempfile.mkdtemp(prefix="inspector-bare-clone-"))
    target = parent / "inspector"
    try:
        cloned = run(["git", "clone", "--quiet", str(ROOT), str(target)], parent, 300)
        assert cloned.returncode == 0, cloned.stderr
        checked = run(["git", "checkout", "--quiet", head], target, 60)
        assert checked.returncode == 0, checked.stderr
        assert sorted(p.name for p in parent.iterdir()) == ["inspector"]
        yield target
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_quickstart_finishes_its_introspection_from_a_bare_clone(clone):
    ironic_port, inspector_port = free_port(), free_port()
    env = clean_env(INSPECTOR_IRONIC_PORT=str(ironic_port), INSPECTOR_PORT=str(inspector_port))
    try:
        result = run(
            ["./scripts/quickstart", "--non-interactive"],
            clone,
            QUICKSTART_TIMEOUT,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        lines = result.stdout.splitlines()
        # One line per step, nothing else: no installer or build-tool output.
        assert lines and all(line.startswith("quickstart: ") for line in lines), output
        assert not result.stderr.strip(), result.stderr
        for expected in (
            "installing",
            "starting Ironic",
            "starting Inspector",
            "demo: 1. enrolled",
            "demo: 3. Inspector set PXE boot and powered it on: Ironic says 'power on'",
            "demo: 5. introspection finished",
            "demo: deleted the 3 nodes it enrolled from Ironic",
            "done in",
        ):
            assert any(expected in line for line in lines), (expected, output)
        written = next(line for line in lines if "demo: 6. Ironic now holds" in line)
        for key in ("cpus", "memory_mb", "local_gb", "cpu_arch"):
            assert f'"{key}": ' in written, output
        assert written.endswith("power 'power off'"), output
        # Inspector stopped; the last line says Ironic is not, where it logs, how to stop it.
        ironic_log = clone / ".services" / "ironic" / "ironic.log"
        assert lines[-1] == (
            f"quickstart: Inspector stopped; Ironic is still running on "
            f"http://127.0.0.1:{ironic_port} (log: {ironic_log}): "
            "'scripts/services stop ironic' stops it"
        ), output
        assert not (clone / ".data" / "inspector.pid").exists()
        # The demo's nodes are gone from Ironic (its own, fresh: no other node).
        nodes = requests.get(
            f"http://127.0.0.1:{ironic_port}/v1/nodes", headers=IRONIC_HEADERS, timeout=10
        ).json()["nodes"]
        assert nodes == [], nodes
        # No RabbitMQ was started: Ironic sent no notification anywhere, and logged no
        # failure to send one.
        assert "driver = noop" in (clone / ".services" / "ironic" / "ironic.conf").read_text()
        assert "Could not send notification" not in ironic_log.read_text()
    finally:
        stopped = run(["scripts/services", "stop", "ironic"], clone, 120, env=env)
        assert stopped.returncode == 0, stopped.stderr


@pytest.fixture(scope="module")
def dist(clone) -> pathlib.Path:
    """The sdist and the wheel built from the clone, as a packager builds them."""
    out = clone / "dist"
    built = run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), "."],
        clone,
        INSTALL_TIMEOUT,
        env=clean_env(),
    )
    assert built.returncode == 0, built.stdout + built.stderr
    # setuptools' warnings ("Package would be ignored", license classifiers...) would show
    # up here: a packager sees them first.
    assert "warning" not in (built.stdout + built.stderr).lower(), built.stdout + built.stderr
    return out


def test_sdist_and_wheel_pass_twine_check(dist):
    files = sorted(dist.iterdir())
    assert sorted(f.suffix for f in files) == [".gz", ".whl"], files
    checked = run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)], dist, 120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as wheel:
        names = wheel.namelist()
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(wheel.read(metadata_name).decode())
    assert metadata["Name"] == DISTRIBUTION
    assert metadata["Version"] == inspector.__version__
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["License-Expression"] == "Apache-2.0"
    extras = set(metadata.get_all("Provides-Extra"))
    assert {"postgresql", "mysql", "etcd", "zookeeper", "memcached", "wsgi"} <= extras
    # The package and its data (alembic's scripts); no tests, no scripts.
    assert "inspector/store/migrations/script.py.mako" in names
    assert any(n.startswith("inspector/store/migrations/versions/") for n in names)
    assert not any(n.startswith(("tests/", "scripts/", "bench/")) for n in names)


def test_wheel_installed_alone_serves_inspector_all(dist, tmp_path):
    venv = tmp_path / "venv"
    made = run([sys.executable, "-m", "venv", str(venv)], tmp_path, 120)
    assert made.returncode == 0, made.stderr
    wheel = next(dist.glob("*.whl"))
    installed = run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(wheel),
        ],
        tmp_path,
        INSTALL_TIMEOUT,
        env=clean_env(),
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    command = venv / "bin" / "inspector"
    version = run([str(command), "--version"], tmp_path, 60, env=clean_env())
    assert version.stdout.strip() == inspector.__version__, version.stdout + version.stderr

    port = free_port()
    config = tmp_path / "inspector.conf"
    config.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\nlisten_address = 127.0.0.1\n"
        f"listen_port = {port}\n[ironic]\nauth_type = none\n"
        "endpoint_override = http://127.0.0.1:9/\n"
    )
    (tmp_path / "state").mkdir()
    # Run from an empty directory, so only the installed package can be imported.
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    log = tmp_path / "inspector.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(command), "all", "--config-file", str(config)],
            cwd=workdir,
            env=clean_env(),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        answer = None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                answer = requests.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except requests.ConnectionError:
                time.sleep(0.2)  # polling with a deadline
        assert answer is not None, log.read_text()
        assert answer.status_code == 200
        assert answer.json()["versions"][0]["id"] == "1.19"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
