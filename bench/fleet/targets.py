"""The fleet benchmark's targets, judged on one run's results: each a ratio or a bound, with the
figures it was computed from. A target whose scenario did not run is left out."""

#: The minimal introspection's Ironic calls (get node, list its ports, boot device,
#: reboot, one PATCH, power off).
MINIMAL_CALLS = 6


def _matching(
    scenarios: list[dict], target: str, name: str, *, prefix: bool = False, **match: object
) -> list[dict]:
    """The scenarios of `target` named `name` (or starting with it), with these fields."""
    return [
        e
        for e in scenarios
        if (e["name"].startswith(name) if prefix else e["name"] == name)
        and e["target"] == target
        and all(e.get(k) == v for k, v in match.items())
    ]


def _find(scenarios: list[dict], name: str, target: str, **match: object) -> dict | None:
    return next(iter(_matching(scenarios, target, name, **match)), None)


def _largest(scenarios: list[dict], prefix: str, target: str, **match: object) -> dict | None:
    """The largest batch, on the largest site when several sites ran it."""
    found = _matching(scenarios, target, prefix, prefix=True, **match)
    return max(found, key=lambda e: (e["batch"], e.get("enrolled", 0)), default=None)


def _boot(scenarios: list[dict], name: str, enrolled: int | None) -> float:
    ours = _find(scenarios, name, "inspector", enrolled=enrolled)
    return (ours or {}).get("boot_delay") or 0.0


def _target(name: str, value: float, limit: float, met: bool, detail: str) -> dict:
    return {"name": name, "value": round(value, 3), "limit": limit, "met": met, "detail": detail}


def _kill_target(killed: dict, normal: dict | None, what: str, whole: str) -> list[dict]:
    """Every node finishes, and the throughput keeps at least the share of workers left
    (1 of N lost half-way: at least 1 - 1/N of the batch without the kill)."""
    if not normal:
        return []
    workers = killed.get("workers") or 2
    bound = round(1 - 1 / workers, 3)
    ratio = killed["throughput"] / normal["throughput"]
    everyone = killed["finished"] == killed["batch"]
    return [
        _target(
            f"{what}: every node finishes, throughput drops by no more than the lost "
            "share of workers",
            ratio,
            bound,
            everyone and ratio >= bound,
            f"{killed['finished']}/{killed['batch']} finished; "
            f"{killed['throughput']:.2f}/s against {normal['throughput']:.2f}/s with {whole} "
            f"(1 of {workers} lost half-way: at least {bound:g}x)",
        )
    ]


def evaluate(results: dict) -> list[dict]:
    scenarios = results["scenarios"]
    found = []
    # Each compare run (each site, each boot delay) judged on its own: how the peer
    # compares depends on both, and no one run stands for the others.
    runs = sorted(
        {
            (e["name"], e.get("enrolled"))
            for e in _matching(scenarios, "inspector", "compare", prefix=True)
        },
        key=lambda run: (run[1] or 0, _boot(scenarios, *run)),
    )
    for name, enrolled in runs:
        ours = _find(scenarios, name, "inspector", enrolled=enrolled)
        floor = _find(scenarios, name, "ironic-floor", enrolled=enrolled)
        peer = _find(scenarios, name, "ironic-inspector", enrolled=enrolled)
        site = f"{enrolled:,} enrolled" if enrolled else "site ?"
        run = f"{site}, boot {ours.get('boot_delay') or 0:g} s"
        if floor:
            ratio = ours["batch_seconds"] / floor["batch_seconds"]
            found.append(
                _target(
                    f"batch time within 1.25x of the Ironic floor ({run})",
                    ratio,
                    1.25,
                    ratio <= 1.25 and not ours["unfinished"],
                    f"{ours['batch_seconds']:.1f} s against {floor['batch_seconds']:.1f} s "
                    f"({ours['batch']} nodes at concurrency {ours['concurrency']})",
                )
            )
        if peer:
            ratio = peer["batch_seconds"] / ours["batch_seconds"]
            beside = (
                f"; ironic-inspector itself {peer['batch_seconds'] / floor['batch_seconds']:.2f}x "
                "the floor"
                if floor
                else ""
            )
            found.append(
                _target(
                    f"at least 2x faster than ironic-inspector ({run})",
                    ratio,
                    2.0,
                    ratio >= 2.0,
                    f"ironic-inspector {peer['batch_seconds']:.1f} s ({peer['errors']} of "
                    f"{peer['batch']} failed), ours {ours['batch_seconds']:.1f} s "
                    f"({ours['errors']} failed){beside}",
                )
            )
    # The Ironic calls: the compare run of the largest site, ramdisks posting at once.
    ours = max(
        _matching(scenarios, "inspector", "compare", prefix=True),
        key=lambda e: (e.get("enrolled", 0), -(e.get("boot_delay") or 0)),
        default=None,
    )
    if ours:
        sent = ours["ironic_calls_per_introspection"]
        # Older results files lack the count of 409 answers: then every call counts.
        refused = ours.get("ironic_refused_calls_per_introspection", 0.0)
        calls = sent - refused
        lists_all = ours["ironic_list_all_calls"]
        found.append(
            _target(
                "no more Ironic calls per introspection than the minimal sequence",
                calls,
                MINIMAL_CALLS,
                round(calls, 6) <= MINIMAL_CALLS,
                f"{calls:.2f} calls Ironic carried out (minimal {MINIMAL_CALLS}), plus "
                f"{refused:.2f} answered 409 NodeLocked and retried ({sent:.2f} sent); calls "
                f"listing all nodes or ports during the batch: {lists_all}",
            )
        )
    big = _largest(scenarios, "batch-", "inspector")
    # The p99 of every run of that batch (each worker count, each site, with a worker
    # killed, on the local cluster), the worst one.
    runs = [
        e
        for prefix in ("batch-", "kill-", "cluster-")
        for e in _matching(scenarios, "inspector", prefix, prefix=True)
        if big and e["batch"] == big["batch"] and e.get("continue_ms")
    ]
    if runs:
        worst = max(runs, key=lambda e: e["continue_ms"]["p99"])
        p99 = worst["continue_ms"]["p99"]
        others = ", ".join(
            f"{e['continue_ms']['p99']:.1f} ms ({e['name']}, {e['workers']} workers, "
            f"{e.get('enrolled', '?')} enrolled)"
            for e in runs
            if e is not worst
        )
        found.append(
            _target(
                "/v1/continue p99 under 50 ms during the largest batch",
                p99,
                50.0,
                p99 < 50.0,
                f"{p99:.1f} ms over {worst['continue_ms']['count']} posts "
                f"({worst['name']}: {worst['batch']} nodes of {worst.get('enrolled', '?')} "
                f"enrolled, {worst['workers']} worker processes), the worst of its runs"
                + (f"; the others: {others}" if others else ""),
            )
        )
    cpu_source = big or ours
    if cpu_source and cpu_source.get("cpu_ms_per_introspection") is not None:
        cpu = cpu_source["cpu_ms_per_introspection"]
        found.append(
            _target(
                "our processes' CPU per introspection under 20 ms",
                cpu,
                20.0,
                cpu < 20.0,
                f"{cpu:.1f} ms ({cpu_source['name']} on {cpu_source.get('enrolled', '?')} "
                "enrolled, API and worker processes; "
                f"{cpu_source.get('busy_cpu_ms_per_introspection', cpu):.1f} ms without "
                "their idle cost)",
            )
        )
    killed = _largest(scenarios, "kill-", "inspector")
    if killed:
        normal = _find(
            scenarios,
            f"batch-{killed['batch']}",
            "inspector",
            workers=2,
            enrolled=killed.get("enrolled"),
        )
        found += _kill_target(killed, normal, "a worker host killed mid-batch", "2 workers")
    killed = _largest(scenarios, "cluster-kill-", "inspector")
    if killed:
        normal = _find(
            scenarios, f"cluster-{killed['batch']}", "inspector", enrolled=killed.get("enrolled")
        )
        found += _kill_target(
            killed, normal, "a host of the local cluster killed mid-batch", "the 3 hosts"
        )
    for workers in (1, 2):
        engine = _find(scenarios, "engine", "engine", workers=workers)
        if engine and engine.get("ceiling_per_second"):
            ratio = engine["ceiling_per_second"] / engine["throughput"]
            found.append(
                _target(
                    f"engine alone within 2x of the sum-of-parts ceiling ({workers} process)",
                    ratio,
                    2.0,
                    ratio <= 2.0,
                    f"{engine['throughput']:.1f}/s against a ceiling of "
                    f"{engine['ceiling_per_second']:.1f}/s",
                )
            )
    return found
