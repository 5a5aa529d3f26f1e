"""PXE firewall drivers: a full sync and a single whitelist change, 100 to 10,000 MACs.

    sudo .venv/bin/python bench/firewall.py [--runs 7] [--baseline-full]
        [--out bench/results/firewall.json] [--docs docs/performance.md]
        [--driver iptables ...] [--size 10000 ...]

Needs root, iproute2, iptables, nftables (ipset and dnsmasq optional). The benchmark
creates a scratch network namespace and runs itself inside it, so the drivers' commands
run there directly as root (no `ip netns exec` or sudo per command) and the host's
firewall is never touched. For N known MACs (Ironic's ports: the blacklist) of which 1%
are under introspection (the whitelist), it times, as medians of --runs:
- full sync: a new driver (no known state) applies the whole rule set over the previous
  one of the same size (every MAC different), as after a restart or an error; the
  previous driver compacted first (untimed), as the manager does within 10 s;
- whitelist add / remove: one node starts or finishes introspection (one MAC in or out
  of the whitelist) on a driver that knows the applied state; with nftables and
  iptables a removal is an override rule (no deletion), and so is
- re-add: the same MAC back into the whitelist before the overrides were compacted;
- unchanged: the periodic sync when nothing changed (the driver checks its hook);
- compaction: what the periodic sync then does to fold the overrides (it deletes).
Each run: add, remove, re-add, remove (counted with the removes), unchanged,
compaction. `iptables-legacy` is the iptables driver with [iptables] backend = legacy.
The baseline is ironic-inspector's iptables method: a temporary chain filled by one
`iptables -A ... -m mac --mac-source X -j DROP` process per MAC, then swapped in (it did
that on every change, so its single change costs a full sync). At 10,000 MACs it is
extrapolated from the 1,000-MAC run unless --baseline-full.
Targets: a full sync of 10,000 MACs under 100 ms with nftables and iptables-restore; a
single change under 10 ms. Results go to JSON and to docs/performance.md. --driver and
--size (repeatable) run only those, to iterate: the baseline and the docs are then
skipped, and the JSON is written only to an --out given.
"""

import argparse
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inspector.errors import ConfigError  # noqa: E402
from inspector.firewall.drivers import DRIVERS  # noqa: E402
from inspector.firewall.ruleset import RuleSet  # noqa: E402

SIZES = (100, 1000, 10000)
INTERFACE = "pxe0"
BASELINE_CHAIN = "ironic-inspector"
START, END = "<!-- firewall:start -->", "<!-- firewall:end -->"
#: ms: the issue's targets.
TARGET_FULL_10K, TARGET_CHANGE = 100.0, 10.0


def macs(count, salt):
    return [
        f"52:{salt:02x}:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}:00"
        for i in range(count)
    ]


def rule_set(count, salt, extra=()):
    known = macs(count, salt)
    under = known[: max(1, count // 100)]
    return RuleSet(frozenset(under) | frozenset(extra), frozenset(known), True, False)


def timed(action, *args):
    started = time.perf_counter()
    action(*args)
    return (time.perf_counter() - started) * 1000


def median(values):
    return round(statistics.median(values), 2)


#: Benchmarked name -> (driver, its options).
VARIANTS = {
    "nftables": ("nftables", {}),
    "iptables": ("iptables", {}),
    "iptables-legacy": ("iptables", {"backend": "legacy"}),
    "ipset": ("ipset", {}),
    "dnsmasq": ("dnsmasq", {}),
}


def make_driver(name, hostsdir):
    driver, options = VARIANTS[name]
    if driver == "dnsmasq":
        return DRIVERS[driver](hostsdir=hostsdir, purge=False)
    return DRIVERS[driver](interface=INTERFACE, **options)


def bench_driver(name, runs, workdir, sizes=SIZES):
    hostsdir = os.path.join(workdir, f"hostsdir-{name}")
    probe = make_driver(name, hostsdir)
    try:
        probe.check()
    except ConfigError as exc:
        return {"available": False, "error": exc.message}
    result = {"available": True, "sizes": {}}
    for count in sizes:
        driver = make_driver(name, hostsdir)
        driver.apply(rule_set(count, 0))  # warm-up, untimed
        full = []
        for run in range(1, runs + 1):
            # What the previous process left, as its manager leaves it: compacted (the
            # periodic check does it within 10 s of any change).
            driver.compact()
            if name == "dnsmasq":  # a new driver onto an empty hostsdir: every file written
                make_driver(name, hostsdir).remove()
            driver, rules = make_driver(name, hostsdir), rule_set(count, run)
            full.append(timed(driver.apply, rules))
        base = rule_set(count, runs)
        newcomer = macs(count, runs)[-1]
        added = rule_set(count, runs, extra=[newcomer])
        add, remove, readd, unchanged, compact = [], [], [], [], []
        for _ in range(runs):
            add.append(timed(driver.apply, added))
            remove.append(timed(driver.apply, base))
            readd.append(timed(driver.apply, added))
            remove.append(timed(driver.apply, base))
            unchanged.append(timed(driver.apply, base))
            compact.append(timed(driver.compact))
        driver.remove()
        result["sizes"][str(count)] = {
            "full_sync_ms": median(full),
            "whitelist_add_ms": median(add),
            "whitelist_remove_ms": median(remove),
            "whitelist_readd_ms": median(readd),
            "unchanged_ms": median(unchanged),
            "compaction_ms": median(compact),
            "runs_ms": {
                "full_sync": [round(x, 2) for x in full],
                "whitelist_add": [round(x, 2) for x in add],
                "whitelist_remove": [round(x, 2) for x in remove],
                "whitelist_readd": [round(x, 2) for x in readd],
                "compaction": [round(x, 2) for x in compact],
            },
        }
        print(f"{name:9} {count:6}: {result['sizes'][str(count)]}", flush=True)
    return result


def iptables(*args, check=True):
    return subprocess.run(["iptables", "-w", *args], check=check, capture_output=True)


def ironic_inspector_sync(blacklist):
    """ironic-inspector's IptablesFilter.sync: a temporary chain, one process per rule."""
    new, main = BASELINE_CHAIN + "_temp", BASELINE_CHAIN
    jump = ["-i", INTERFACE, "-p", "udp", "--dport", "67", "-j"]
    for chain in (new,):
        iptables("-D", "INPUT", *jump, chain, check=False)
        iptables("-F", chain, check=False)
        iptables("-X", chain, check=False)
    iptables("-N", new)
    for mac in blacklist:
        iptables("-A", new, "-m", "mac", "--mac-source", mac, "-j", "DROP")
    iptables("-A", new, "-j", "ACCEPT")
    iptables("-I", "INPUT", *jump, new)
    iptables("-D", "INPUT", *jump, main, check=False)
    iptables("-F", main, check=False)
    iptables("-X", main, check=False)
    iptables("-E", new, main)


def bench_baseline(full_at_10k):
    result = {}
    per_mac = None
    for count in SIZES:
        if count == 10000 and not full_at_10k and per_mac is not None:
            result[str(count)] = {
                "full_sync_ms": round(per_mac * count, 1),
                "extrapolated": True,
                "from": "1000",
            }
        else:
            blacklist = macs(count, 7)
            elapsed = timed(ironic_inspector_sync, blacklist)
            per_mac = elapsed / count
            result[str(count)] = {"full_sync_ms": round(elapsed, 1), "extrapolated": False}
        print(f"baseline  {count:6}: {result[str(count)]}", flush=True)
    for chain in (BASELINE_CHAIN,):
        iptables("-D", "INPUT", "-i", INTERFACE, "-p", "udp", "--dport", "67", "-j", chain)
        iptables("-F", chain)
        iptables("-X", chain)
    return result


def version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return None
    return (
        (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else None
    )


def inner(args):
    # The hostsdir on tmpfs, as docs/firewall.md recommends (it needs no durability).
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="inspector-bench-fw-", dir=shm) as workdir:
        drivers = {}
        load_before = os.getloadavg()[0]
        for name in args.driver or VARIANTS:
            drivers[name] = bench_driver(name, args.runs, workdir, args.size or SIZES)
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "kernel": platform.release(),
            "iptables": version(["iptables", "--version"]),
            "nft": version(["nft", "--version"]),
            "ipset": version(["ipset", "version"]),
            "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        },
        "method": "in a scratch network namespace, commands run directly as root; "
        "N known MACs (blacklist), 1% of them under introspection (whitelist); "
        f"medians of {args.runs} runs",
        "targets_ms": {"full_sync_10000": TARGET_FULL_10K, "single_change": TARGET_CHANGE},
        "drivers": drivers,
    }
    if args.driver or args.size:  # a partial run, to iterate: no baseline, no docs
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
        return
    results["baseline_ironic_inspector_iptables"] = bench_baseline(args.baseline_full)
    out = args.out or str(ROOT / "bench" / "results" / "firewall.json")
    docs = args.docs or str(ROOT / "docs" / "performance.md")
    pathlib.Path(out).write_text(json.dumps(results, indent=2) + "\n")
    update_docs(pathlib.Path(docs), render_markdown(results))
    print(f"wrote {out} and {docs}")


def render_markdown(results):
    machine = results["machine"]
    load = machine.get("load_average_1min", ["?", "?"])
    lines = [
        START,
        "## PXE firewall (`bench/firewall.py`)",
        "",
        f"Machine: {machine['cpus']} CPUs, kernel {machine['kernel']}, "
        f"{machine['iptables']}, {machine['nft']}; 1-minute load average {load[0]} "
        f"before, {load[1]} after (others' work shares the machine). In a scratch network "
        "namespace, commands run directly as root (a `sudo -n` root helper adds its own "
        "start-up to each command); N known MACs in the blacklist, 1% of them also "
        f"whitelisted; {results['method'].rsplit('; ', 1)[-1]}. Full sync: a new driver (as "
        "after a restart) replaces the previous rule set of the same size, every MAC "
        "different, left compacted as the periodic sync leaves it. Single change: one MAC "
        "into (add) or out of (remove) the whitelist, and back in before compaction "
        "(re-add); unchanged: the periodic sync's check; compaction: what that sync then "
        "does to fold the removals' overrides. `iptables-legacy`: the iptables driver "
        "with `[iptables] backend = legacy` (`iptables` is the host's default, "
        "nf_tables here). The dnsmasq hostsdir is on tmpfs.",
        "",
        "| driver | MACs | full sync ms | whitelist add ms | whitelist remove ms "
        "| re-add ms | unchanged ms | compaction ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = ("full_sync_ms", "whitelist_add_ms", "whitelist_remove_ms", "whitelist_readd_ms")
    keys += ("unchanged_ms", "compaction_ms")
    for name, data in results["drivers"].items():
        if not data["available"]:
            lines.append(f"| {name} | - | unavailable here: {data['error']} | | | | | |")
            continue
        for count, row in data["sizes"].items():
            cells = " | ".join(f"{v:.1f}" if v >= 1 else f"{v:.2f}" for v in map(row.get, keys))
            lines.append(f"| {name} | {int(count):,} | {cells} |")
    for count, row in results["baseline_ironic_inspector_iptables"].items():
        note = " (extrapolated from 1,000)" if row["extrapolated"] else ""
        lines.append(
            f"| ironic-inspector: one `iptables` per MAC | {int(count):,} "
            f"| {row['full_sync_ms']:,.0f}{note} | same as full sync | same as full sync "
            "| same as full sync | - | - |"
        )
    lines += ["", *verdicts(results), END]
    return "\n".join(lines)


def met(value, target):
    return "met" if value < target else "missed"


def verdicts(results):
    out = []
    drivers = results["drivers"]
    baseline = results["baseline_ironic_inspector_iptables"]["10000"]["full_sync_ms"]
    for name in ("nftables", "iptables", "iptables-legacy"):
        data = drivers[name]
        if not data["available"]:
            out.append(f"- {name}: unavailable, no figure.")
            continue
        row = data["sizes"]["10000"]
        full, add = row["full_sync_ms"], row["whitelist_add_ms"]
        remove, readd = row["whitelist_remove_ms"], row["whitelist_readd_ms"]
        out.append(
            f"- {name}, 10,000 MACs: full sync {full} ms (target {TARGET_FULL_10K:g}: "
            f"{met(full, TARGET_FULL_10K)}; {baseline / full:,.0f}x faster than one process "
            f"per MAC); whitelist add {add} ms, remove {remove} ms, re-add {readd} ms "
            f"(target {TARGET_CHANGE:g}: {met(add, TARGET_CHANGE)}, "
            f"{met(remove, TARGET_CHANGE)}, {met(readd, TARGET_CHANGE)}); compaction, off "
            f"the hot path, {row['compaction_ms']} ms."
        )
    out += [
        "- A removal used to be a deletion, and a command whose nf_tables transaction "
        "deletes anything (a set element, an iptables rule, a chain flush) takes 10-25 ms "
        "longer on this machine whatever the size: the transaction commits at once, but "
        "closing the command's netlink socket waits for the deleted objects to be freed "
        "(an RCU grace period); an add-only one costs 3-6 ms. A removal (and a re-add "
        "before compaction) is now an override rule inserted at the head of a small chain "
        "looked at before the whitelist; the periodic sync (every 10 s) compacts, as does "
        "any batch that deletes anyway (a leader's expiry refresh rewrites its verdict "
        "rules every second).",
        "- iptables on nf_tables writes one rule object per MAC: an xt `mac` match (not "
        "translated to native expressions), a counter (iptables-nft adds one to every "
        "rule) and the verdict; for 10,000 MACs iptables-nft-restore parses for about "
        "40 ms and the kernel loads for about 50, of one CPU each. So a full sync deletes "
        "nothing (it fills the other slot of list chains, with two restores at once for "
        "a big blacklist, then one transaction puts the new verdict in front of the old "
        "one, which compaction removes later). The legacy backend loads the whole table "
        "as one blob, but every change, even of one MAC, rewrites that blob: its single "
        "changes grow with the blacklist. `[iptables] backend` therefore stays `auto` "
        "(the host's backend, never mixing two); see docs/firewall.md.",
    ]
    if drivers["nftables"]["available"]:
        unchanged = drivers["nftables"]["sizes"]["10000"]["unchanged_ms"]
        out.append(
            f"- nftables unchanged ({unchanged} ms at 10,000): the periodic check lists the "
            "hook chain, and nft reads the whole table, elements included, to list it."
        )
    out += [
        "- The ironic-inspector figure at 10,000 is the 1,000 run's cost per MAC times "
        "10,000 (a lower bound); it rebuilt its chain this way on every change.",
        "- This 2-CPU machine is shared: under other people's load the medians of one run "
        "move by up to 2-3x from one run to the next (each run records its load); "
        "compare figures within one run.",
    ]
    return out


def update_docs(path, section):
    text = path.read_text() if path.exists() else ""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline-full", action="store_true")
    parser.add_argument("--out", help="default: bench/results/firewall.json")
    parser.add_argument("--docs", help="default: docs/performance.md")
    parser.add_argument("--driver", action="append", choices=list(VARIANTS))
    parser.add_argument("--size", action="append", type=int)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        return inner(args)
    if os.geteuid() != 0:
        sys.exit("bench/firewall.py needs root (it creates a network namespace)")
    namespace = f"insp-bench-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        command = [sys.executable, __file__, "--inner", *sys.argv[1:]]
        return subprocess.run(["ip", "netns", "exec", namespace, *command], check=True).returncode
    finally:
        subprocess.run(["ip", "netns", "del", namespace], check=True)


if __name__ == "__main__":
    sys.exit(main())
