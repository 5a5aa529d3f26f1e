"""The data collectors of `inspector status`: the cluster at a glance, as a report of
collectors in the format of Ganeti's monitoring agent (name, version, format_version,
timestamp, category, kind, data); status collectors (kind 1) carry a status code:
0 ok, 1 something is wrong and being fixed automatically, 2 unknown, 4 an operator
is needed. The codes OR together into the command's exit status.
"""

import dataclasses
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from oslo_config import cfg

from inspector import coordination
from inspector.census import Census
from inspector.coordination import backends
from inspector.errors import InspectorError
from inspector.machine import ACTIVE_STATES, State
from inspector.periodic.periods import periods as clean_up_periods

OK, FIXING, UNKNOWN, OPERATOR = 0, 1, 2, 4
PERFORMANCE, STATUS = 0, 1
#: Version of every built-in collector (Ganeti's convention).
BUILT_IN = "B"
#: The singleton kinds whose groups and leaders are reported.
SINGLETONS = ("periodic", "firewall", "notifications")
#: The singletons' line with the in-process DLM: `inspector all` leads them all itself.
ONE_PROCESS = (
    "one process (in-process DLM): `inspector all` leads every singleton itself; "
    "whether it runs: see periodic"
)


class Counted(Protocol):
    """Where the census comes from (the store, or inspector.cmd.status_read.Database)."""

    def census(self) -> Census: ...


@dataclasses.dataclass
class Report:
    name: str
    kind: int
    data: dict[str, Any]
    category: str | None = None
    format_version: int = 1

    @property
    def code(self) -> int:
        return self.data.get("status", {}).get("code", OK) if self.kind == STATUS else OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": BUILT_IN,
            "format_version": self.format_version,
            "timestamp": time.time_ns(),
            "category": self.category,
            "kind": self.kind,
            "data": self.data,
        }


def status(code: int, message: str = "") -> dict[str, Any]:
    return {"code": code, "message": message}


def _age(moment: datetime, now: datetime) -> float:
    return (now - moment).total_seconds()


def database(census: Census | None, problem: str | None) -> Report:
    if census is None:
        return Report("database", STATUS, {"status": status(OPERATOR, problem or "unreachable")})
    return Report("database", STATUS, {"status": status(OK)})


def nodes(census: Census) -> Report:
    counts = {state.value: census.nodes_by_state.get(state.value, 0) for state in State}
    active = sum(counts[state.value] for state in ACTIVE_STATES)
    return Report("nodes", PERFORMANCE, {"by_state": counts, "active": active})


def queue(
    depth: int | None, problem: str | None, in_flight: int | None = None, *, unmeasurable: str = ""
) -> Report:
    """The queue answers; its depth (requests waiting) and, where the broker tells them
    apart (Redis), its requests in flight (delivered, not acknowledged yet). A depth that
    cannot be known from here (`unmeasurable` says why) is not reported."""
    if problem is not None:
        return Report("queue", STATUS, {"status": status(OPERATOR, problem)})
    if unmeasurable:
        message = f"depth not measurable ({unmeasurable})"
        return Report("queue", STATUS, {"status": status(OK, message), "depth": None})
    data = {"status": status(OK), "depth": depth}
    if in_flight is not None:
        data["in_flight"] = in_flight
    return Report("queue", STATUS, data)


def singletons(
    census: Census,
    members: dict[str, list[str]] | None,
    problem: str | None,
    *,
    one_process: bool = False,
    caveat: str | None = None,
) -> Report:
    """Members of each singleton group, and whether its leader is one of them; with the
    in-process DLM (`one_process`), `inspector all` is every group: nothing to check.
    `caveat`: what the DLM cannot promise (memcached's), said whatever the groups."""
    data: dict[str, Any] = {"groups": {}}
    worst, messages = OK, []
    for kind in SINGLETONS:
        leader = census.leaders.get(kind)
        group = None if members is None else members.get(kind, [])
        entry: dict[str, Any] = {
            "members": group,
            "leader": None if leader is None else {"holder": leader[0], "term": leader[1]},
        }
        data["groups"][kind] = entry
        if group is None:
            continue
        if kind == "periodic" and not group:
            worst = max(worst, OPERATOR)
            messages.append("no worker process is running")
        elif group and leader is not None and leader[0] not in group:
            worst = max(worst, FIXING)
            messages.append(f"{kind}: the recorded leader {leader[0]} left; re-electing")
    if members is None and one_process:
        worst, messages = OK, [ONE_PROCESS]
    elif members is None:
        worst, messages = UNKNOWN, [f"cannot read the groups: {problem}"]
    if caveat:
        messages.append(f"DLM caveat: {caveat}")
    data["status"] = status(worst, "; ".join(messages))
    return Report("singletons", STATUS, data, category="cluster")


def periodic(census: Census, periods: dict[str, float], lease: float, now: datetime) -> Report:
    """Each clean-up task ran recently: late by a fail-over is being fixed; late by
    much more needs an operator (no leader can act)."""
    worst, messages = OK, []
    runs: dict[str, dict[str, float | bool | str | None] | None] = {}
    for task, period in periods.items():
        run = census.last_runs.get(task)
        if run is None:
            runs[task] = None
            worst = max(worst, UNKNOWN)
            messages.append(f"{task} never ran")
            continue
        started, finished, outcome = run
        age = _age(started, now)
        runs[task] = {"age_seconds": age, "finished": finished is not None, "outcome": outcome}
        if age > 10 * period + 10 * lease:
            worst = max(worst, OPERATOR)
            messages.append(f"{task} last ran {age:.0f} s ago (period {period:g} s)")
        elif age > 2 * period + 2 * lease:
            worst = max(worst, FIXING)
            messages.append(f"{task} is late ({age:.0f} s)")
    return Report("periodic", STATUS, {"status": status(worst, "; ".join(messages)), "tasks": runs})


def notifications(census: Census) -> Report:
    pending = census.notifications_pending
    code = FIXING if pending else OK
    message = f"{pending} notification(s) being retried" if pending else ""
    return Report("notifications", STATUS, {"status": status(code, message), "pending": pending})


def firewall(
    statuses: list[dict] | None, problem: str | None, *, not_applicable: str = ""
) -> Report:
    """Per host: PXE open or closed; at most one may be open. Without answers, ok when
    there is nothing to check (`not_applicable` says why), else unknown."""
    if statuses is None and not_applicable:
        message = f"not applicable: {not_applicable}"
        return Report("firewall", STATUS, {"status": status(OK, message), "hosts": []})
    if statuses is None:
        return Report(
            "firewall", STATUS, {"status": status(UNKNOWN, problem or "no answer"), "hosts": []}
        )
    open_hosts = [s for s in statuses if s.get("open")]
    if len(open_hosts) > 1:
        code, message = (
            OPERATOR,
            "more than one PXE service open: " + ", ".join(s["member"] for s in open_hosts),
        )
    elif not open_hosts and any(s.get("driver") != "noop" for s in statuses):
        code, message = FIXING, "no PXE service open (a firewall election is under way)"
    else:
        code, message = OK, ""
    return Report("firewall", STATUS, {"status": status(code, message), "hosts": statuses})


def gather(
    conf: cfg.ConfigOpts,
    db: Counted,
    *,
    queue_depth: Callable[[], tuple[int | None, int | None]],
    firewall_statuses: Callable[[], list[dict] | None],
) -> list[Report]:
    """Every collector's report; a backend that fails makes its reports say so."""
    now = datetime.now(UTC).replace(tzinfo=None)
    census, problem = None, None
    try:
        census = db.census()
    except InspectorError as exc:
        problem = exc.message
    reports = [database(census, problem)]
    if _in_process(conf.queue.transport_url):
        # Inside `inspector all`: a queue made here would be a new, empty one.
        reports.append(queue(None, None, unmeasurable="in-process queue"))
    else:
        try:
            depth, in_flight = queue_depth()
            reports.append(queue(depth, None, in_flight))
        except InspectorError as exc:
            reports.append(queue(None, exc.message))
    if census is not None:
        members, group_problem = _members(conf)
        one_process = _in_process(conf.coordination.backend_url)
        reports += [
            nodes(census),
            singletons(
                census,
                members,
                group_problem,
                one_process=one_process,
                caveat=None
                if conf.coordination.single_host
                else backends.caveat(conf.coordination.backend_url),
            ),
            periodic(census, clean_up_periods(conf), conf.coordination.lease_timeout, now),
            notifications(census),
        ]
    moot = _firewall_moot(conf)
    try:
        reports.append(firewall(firewall_statuses(), None, not_applicable=moot))
    except InspectorError as exc:
        reports.append(firewall(None, exc.message, not_applicable=moot))
    return reports


def _in_process(url: str) -> bool:
    """A memory:// queue or DLM: valid in `inspector all` only, which it lives inside."""
    return url.startswith("memory:")


def _firewall_moot(conf: cfg.ConfigOpts) -> str:
    """Why there is no PXE firewall to check, if there is none: "" when there is."""
    if conf.pxe_filter.driver == "noop":
        return "noop PXE driver"
    if _in_process(conf.coordination.backend_url):
        return "one process (in-process DLM), its PXE service not visible from here"
    return ""


def _members(conf: cfg.ConfigOpts) -> tuple[dict[str, list[str]] | None, str | None]:
    url = conf.coordination.backend_url
    if _in_process(url):
        return None, None  # the groups live inside `inspector all`: one process
    dlm = coordination.connect(
        url,
        f"status-{time.time_ns()}",
        max_retries=0,
        lease_seconds=conf.coordination.lease_timeout,
    )
    try:
        dlm.start()
        return {kind: sorted(dlm.members(f"inspector-{kind}")) for kind in SINGLETONS}, None
    except InspectorError as exc:
        return None, exc.message
    finally:
        dlm.stop()


def exit_code(reports: list[Report]) -> int:
    code = 0
    for report in reports:
        code |= report.code
    return code


def summary(reports: list[Report]) -> str:
    """The human view: one line per collector."""
    names = {OK: "ok", FIXING: "fixing", UNKNOWN: "unknown", OPERATOR: "NEEDS OPERATOR"}
    lines = []
    for report in reports:
        data = report.data
        if report.kind == STATUS:
            head = f"{report.name:14} {names.get(report.code, report.code)}"
            message = data["status"]["message"]
            lines.append(head + (f": {message}" if message else ""))
        elif report.name == "nodes":
            counts = ", ".join(f"{state} {n}" for state, n in data["by_state"].items() if n)
            lines.append(f"{report.name:14} {counts or 'none'}")
        else:
            lines.append(f"{report.name:14} {data}")
        if report.name == "queue" and data.get("depth") is not None:
            flying = f", {data['in_flight']} in flight" if "in_flight" in data else ""
            lines[-1] += f" (depth {data['depth']}{flying})"
        if report.name == "singletons":
            for kind, entry in data["groups"].items():
                leader = entry["leader"]
                who = f"{leader['holder']} (term {leader['term']})" if leader else "none"
                count = "?" if entry["members"] is None else len(entry["members"])
                lines.append(f"  {kind:12} leader {who}, {count} member(s)")
    return "\n".join(lines) + "\n"
