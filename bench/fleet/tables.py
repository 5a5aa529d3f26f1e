"""The fleet benchmark's tables: Markdown from its results JSON (the floor comparison,
batches, the engine alone, where the time goes, the targets).

Reads the results only (any optional field or scenario may be missing); measures nothing.
Also the shared vocabulary of the report: how targets are labelled, ordered and grouped.
"""

from collections.abc import Callable, Iterable

#: How each target is shown, in the order tables list them.
LABELS = {
    "inspector": "ours (inspector)",
    "ironic-inspector": "ironic-inspector 12.5.0",
    "ironic-floor": "Ironic floor",
    "engine": "engine (fake Ironic)",
}
COLORS = {"inspector": "tab:blue", "ironic-inspector": "tab:orange", "ironic-floor": "tab:gray"}
SERVICES = ("inspector", "ironic-inspector")
DASH = "-"


#: A table column: its header and how a scenario shows in it.
Column = tuple[str, Callable[[dict], str]]


def _num(value: object, digits: int = 1) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DASH
    return f"{value:,}" if isinstance(value, int) else f"{value:,.{digits}f}"


def _percent(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, float) else DASH


def _get(scenario: dict, *keys: str) -> object:
    value: object = scenario
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _col(header: str, *keys: str, digits: int = 1) -> Column:
    """A column showing the number at scenario[keys[0]][keys[1]]..., or a dash."""
    return header, lambda s: _num(_get(s, *keys), digits)


def _table(columns: list[Column], scenarios: Iterable[dict]) -> list[str]:
    rows = [[show(s) for _, show in columns] for s in scenarios]
    lines = ["| " + " | ".join(header for header, _ in columns) + " |"]
    lines.append("|" + "---|" * len(columns))
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def target_label(scenario: dict) -> str:
    target = scenario.get("target", "?")
    label = LABELS.get(target, target)
    if target == "inspector" and scenario.get("hosts"):
        label += f", local cluster of {scenario['hosts']} hosts"
    elif target == "inspector" and scenario.get("workers"):
        label += f", {scenario['workers']} worker{'s' if scenario['workers'] > 1 else ''}"
    return label + (", worker killed" if scenario.get("killed_worker") else "")


NAME: Column = ("scenario", lambda s: s.get("name", DASH))
TARGET: Column = ("target", target_label)


def size_key(scenario: dict) -> tuple:
    return (
        scenario.get("enrolled"),
        scenario.get("batch"),
        scenario.get("concurrency"),
        scenario.get("boot_delay") or 0,
    )


def target_order(scenario: dict) -> tuple:
    target = list(LABELS).index(scenario["target"]) if scenario.get("target") in LABELS else 9
    return (target, scenario.get("workers") or 0, bool(scenario.get("killed_worker")))


def by_size(scenario: dict) -> tuple:
    """Smaller runs first, then by target; a missing size sorts first."""
    return (*(value or 0 for value in size_key(scenario)), *target_order(scenario))


def _of(results: dict, *targets: str) -> list[dict]:
    """The scenarios of these targets, smaller runs first."""
    scenarios = results.get("scenarios") or []
    return sorted((s for s in scenarios if s.get("target") in targets), key=by_size)


def floor_groups(results: dict) -> list[tuple[dict, list[dict]]]:
    """(the floor, itself and the services' scenarios of its size) for each floor run."""
    groups = []
    for floor in _of(results, "ironic-floor"):
        group = [floor] + [
            s
            for s in _of(results, *SERVICES)
            if size_key(s) == size_key(floor) and not s.get("killed_worker")
        ]
        groups.append((floor, sorted(group, key=target_order)))
    return groups


def floor_section(results: dict) -> list[str]:
    lines = []
    for floor, group in floor_groups(results):
        enrolled, batch, concurrency, delay = size_key(floor)

        def ratio(s: dict, floor: dict = floor) -> str:
            seconds, floor_seconds = s.get("batch_seconds"), floor.get("batch_seconds")
            return _num(seconds / floor_seconds if seconds and floor_seconds else None, 2)

        columns = [TARGET, _col("batch s", "batch_seconds"), ("x floor", ratio)]
        columns += [_col("introspections/s", "throughput", digits=2)]
        columns += [_col(f"continue {q} ms", "continue_ms", q) for q in ("p50", "p99")]
        columns += [_col("Ironic calls each", "ironic_calls_per_introspection")]
        columns += [_col("CPU ms each", "cpu_ms_per_introspection")]
        lines += ["", f"### Side by side: {batch} introspections at concurrency {concurrency}"]
        lines[-1] += f", ramdisks booting in {delay:g} s"
        lines += ["", f"On {_num(enrolled)} enrolled nodes; x floor is the batch time over the"]
        lines += ["Ironic floor's (the Ironic calls of a minimal introspection alone, with the"]
        lines += ["same boot delay between the reboot and the PATCH).", ""]
        lines += _table(columns, group)
    return lines


def steps_section(results: dict) -> list[str]:
    """Each single introspection's timeline (the `single` scenario), one table a target."""
    lines = []
    for s in _of(results, *SERVICES):
        if not s.get("steps"):
            continue
        columns: list[Column] = [("step", lambda t: t.get("step", DASH))]
        columns += [_col("at s", "at_seconds", digits=3), _col("took s", "took_seconds", digits=3)]
        lines += ["", f"### One introspection, step by step: {target_label(s)}", ""]
        lines += _table(columns, s["steps"])
    return lines


def batch_section(results: dict) -> list[str]:
    def spread(s: dict) -> str:
        return " / ".join(_num(_get(s, "introspection_seconds", q)) for q in ("p50", "p95", "max"))

    columns = [NAME, TARGET, *(_col(f, f) for f in ("enrolled", "batch", "concurrency"))]
    columns += [_col(f, f) for f in ("finished", "errors", "unfinished")]
    columns += [_col("batch s", "batch_seconds"), _col("introspections/s", "throughput", digits=2)]
    columns += [("introspection p50 / p95 / max s", spread)]
    columns += [_col("continue p99 ms", "continue_ms", "p99")]
    scenarios = _of(results, *SERVICES)
    return ["", "### Batches", "", *_table(columns, scenarios)] if scenarios else []


def engine_section(results: dict) -> list[str]:
    def ratio(s: dict) -> str:
        ceiling, rate = s.get("ceiling_per_second"), s.get("throughput")
        return _num(ceiling / rate if ceiling and rate else None, 2)

    columns = [NAME, _col("workers", "workers"), _col("worker threads", "worker_threads")]
    columns += [_col("introspections/s", "throughput"), _col("ceiling /s", "ceiling_per_second")]
    columns += [("ceiling / measured", ratio), _col("CPU ms each", "cpu_ms_per_introspection")]
    columns += [_col("machine CPU ms each", "machine_cpu_ms_per_introspection")]
    columns += [("cores busy", lambda s: _percent(s.get("machine_busy")))]
    scenarios = sorted(_of(results, "engine"), key=target_order)
    if not scenarios:
        return []
    intro = (
        "Against the in-repo fake Ironic: the engine's rate beside the sum-of-parts "
        "ceiling. CPU ms each: our API and worker processes; machine CPU ms each: "
        "everything on the machine (PostgreSQL, RabbitMQ, Redis, the fake Ironic and its "
        "proxy, the simulated ramdisks, ours), and how busy its cores were."
    )
    return ["", "### Engine alone", "", intro, "", *_table(columns, scenarios)]


def time_section(results: dict) -> list[str]:
    def ironic(s: dict) -> str:
        seconds = _get(s, "backend_seconds_per_introspection", "ironic")
        return _num(
            seconds if seconds is not None else s.get("ironic_seconds_per_introspection"), 3
        )

    columns = [NAME, TARGET, _col("enrolled", "enrolled")]
    columns += [_col("introspection p50 s", "introspection_seconds", "p50", digits=2)]
    columns += [("ironic s", ironic)]
    columns += [
        _col(f"{b} s", "backend_seconds_per_introspection", b, digits=3)
        for b in ("database", "dlm", "queue")
    ]
    columns += [_col("CPU ms", "cpu_ms_per_introspection")]
    columns += [_col("Ironic calls", "ironic_calls_per_introspection")]
    columns += [_col("list-all calls", "ironic_list_all_calls")]
    scenarios = _of(results, *SERVICES)
    if not scenarios:
        return []
    lines = ["", "### Where the time goes, per introspection", "", *_table(columns, scenarios)]
    return lines + _calls_by_kind(results)


def _calls_by_kind(results: dict) -> list[str]:
    """Ironic calls per introspection by kind, a column per scenario of the first floor
    comparison (all scenarios that report them when there is none)."""
    groups = floor_groups(results)
    candidates = groups[0][1] if groups else results.get("scenarios") or []
    reporting = [s for s in candidates if s.get("ironic_calls_by_kind")]
    if not reporting:
        return []
    kinds = sorted({kind for s in reporting for kind in s["ironic_calls_by_kind"]})
    columns: list[Column] = [("Ironic call", lambda kind: kind)]
    columns += [
        (
            f"{s.get('name', DASH)}: {target_label(s)}",
            lambda k, s=s: _num(_get(s, "ironic_calls_by_kind", k), 2),
        )
        for s in reporting
    ]
    return ["", "Ironic API calls per introspection, by kind:", "", *_table(columns, kinds)]


def targets_section(results: dict) -> list[str]:
    def met(target: dict) -> str:
        return {True: "met", False: "**not met**"}.get(target.get("met"), DASH)

    columns: list[Column] = [("target", lambda t: t.get("name", DASH))]
    columns += [_col("value", "value", digits=2), _col("limit", "limit", digits=2)]
    columns += [("met", met), ("detail", lambda t: t.get("detail") or "")]
    targets = results.get("targets") or []
    return ["", "### Targets", "", *_table(columns, targets)] if targets else []
