"""Reading /proc/<pid>/stat: the fields after the command name, for the benchmark's
process accounting (parents, process groups, CPU time)."""

import os
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


def in_groups(leaders: set[int]) -> list[int]:
    """The live processes whose process group is one of these (each led by its pid)."""
    groups = {str(leader) for leader in leaders}
    return [pid for pid in pids() if (fields(pid) or [""] * 3)[2] in groups]


def machine_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine, all cores, since boot (/proc/stat;
    idle and I/O wait are not busy)."""
    first = pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in first[1:9])
    total = user + nice + system + idle + iowait + irq + softirq + steal
    hertz = os.sysconf("SC_CLK_TCK")
    return (total - idle - iowait) / hertz, total / hertz
