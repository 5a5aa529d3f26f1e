"""Prometheus metrics of one PXE filter host (`inspector pxe-filter`): its role and term,
the MACs it allows and denies, the age of its lists, the lag from Ironic's change to
the rule applied, the notifications heard, the polls made and Ironic's answer times.

Its own registry (no global one), served by `serve`; the firewall's state is read at
scrape time. It only counts: it never changes what the filter does.
"""

import logging
import threading
import time
from collections.abc import Callable, Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import start_wsgi_server

from inspector.errors import ConfigError
from inspector.firewall.observer import Observer
from inspector.firewall.status import ROLES, Status

LOG = logging.getLogger(__name__)

#: Buckets of Ironic's answer times and of the lag, in seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 15.0, 30.0, 60.0)
#: A change older than this when applied is not a lag of ours (a clock far off, a
#: change Ironic made long before this host led): not observed.
LAG_WINDOW = 300.0


class FilterMetrics(Observer):
    """The Observer that counts; `status` (the manager's) and `leading` are set by the
    wiring: only the leader's changes have a lag (a follower applies no whitelist)."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.status: Callable[[], Status] | None = None
        self.leading: Callable[[], bool] = lambda: False
        self.registry = CollectorRegistry(auto_describe=False)
        self._notifications = Counter(
            "inspector_pxe_filter_notifications",
            "Ironic notifications heard",
            registry=self.registry,
        )
        self._ironic = Histogram(
            "inspector_pxe_filter_ironic_seconds",
            "Seconds each listing made to Ironic took (nodes under inspection, every port); "
            "its count is the number of polls",
            ["listing"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._lag = Histogram(
            "inspector_pxe_filter_lag_seconds",
            "Seconds from Ironic's change of a node's inspection (its provision_updated_at) "
            "to the leader's rule applied",
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_State(self))
        self._guard = threading.Lock()
        self._pending: list[float] = []
        self._server: WSGIServer | None = None

    def notification(self) -> None:
        self._notifications.inc()

    def polled(self, listing: str, seconds: float) -> None:
        self._ironic.labels(listing).observe(seconds)

    def changed(self, at: float | None) -> None:
        if at is not None and self.leading():
            with self._guard:
                self._pending.append(at)

    def applied(self) -> None:
        now = self.clock()
        with self._guard:
            pending, self._pending = self._pending, []
        for at in pending:
            lag = max(0.0, now - at)
            if lag <= LAG_WINDOW:
                self._lag.observe(lag)
                self.last_lag = lag

    def serve(self, address: str, port: int) -> None:
        """Serve GET /metrics on address:port from a daemon thread."""
        try:
            self._server, _ = start_wsgi_server(port, address, registry=self.registry)
        except OSError as exc:
            raise ConfigError(
                f"cannot serve PXE filter metrics on {address}:{port}: {exc}"
            ) from exc
        LOG.info("Serving PXE filter metrics on http://%s:%d/metrics", address, port)

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


class _State:
    """The gauges read at scrape time from the firewall's Status."""

    def __init__(self, metrics: FilterMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        if self.metrics.status is None:
            return
        status, now = self.metrics.status(), self.metrics.clock()
        role = GaugeMetricFamily(
            "inspector_pxe_filter_role",
            "1 for this host's role: leader (open), follower (closed, standing by) or "
            "closed (failing, stopping, or leading without being able to open)",
            labels=["role"],
        )
        for name in ROLES:
            role.add_metric([name], 1 if status.role == name else 0)
        yield role
        yield GaugeMetricFamily(
            "inspector_pxe_filter_leader_term",
            "The firewall leadership's term while this host leads, else 0",
            status.term or 0,
        )
        macs = GaugeMetricFamily(
            "inspector_pxe_filter_macs", "MACs in the applied rules", labels=["list"]
        )
        macs.add_metric(["allowed"], status.whitelist)
        macs.add_metric(["denied"], status.blacklist)
        yield macs
        age = GaugeMetricFamily(
            "inspector_pxe_filter_reconcile_age_seconds",
            "Seconds since the last full listing replaced each list (nodes under "
            "inspection: the leader's; every port: the leader's, shared)",
            labels=["list"],
        )
        for name, synced in (
            ("whitelist", status.whitelist_synced_at),
            ("blacklist", status.blacklist_synced_at),
        ):
            if synced is not None:
                age.add_metric([name], max(0.0, now - synced))
        yield age
