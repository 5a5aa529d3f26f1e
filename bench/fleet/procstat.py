"""Reading /proc/<pid>/stat: the fields after the command name, for the benchmark's
process accounting (parents, process groups, CPU time)."""

import pathlib


def fields(pid: int | str) -> list[str] | None:
    """The stat fields after the command name (state first); None once the process left.
    The name is in parentheses and may hold spaces or parentheses itself."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def pids() -> list[int]:
    return [int(entry.name) for entry in pathlib.Path("/proc").iterdir() if entry.name.isdigit()]
