"""The Ironic client the rest of the service uses: nodes and ports in, changes out.

Owns the retry policy: connection failures, 5xx and 409 NodeLocked are retried
[ironic] max_retries times, [ironic] retry_interval apart (NodeLocked first after
0.1 s, doubling up to retry_interval), waiting on the shutdown event; within an API
request, no retry that would start after its deadline (inspector.deadlines). Retries
spent on a node Ironic kept locked are Conflict (the node's matter), on anything else
ServiceUnavailable (Ironic's).
Each method makes one request per attempt (listings one per page), and nothing waits
for Ironic to reach a state. Requests go as plain REST (inspector.ironic.rest) on our
connection (inspector.ironic.connection); each, retries included, is timed as one call.
"""

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from oslo_config import cfg

from inspector import backend_time, deadlines
from inspector.conf.ironic import GROUP
from inspector.errors import Conflict, NotFound, ServiceUnavailable
from inspector.ironic import changes, failures, rest
from inspector.ironic.changes import CHANGES_PAGE_SIZE
from inspector.ironic.connection import connect
from inspector.ironic.model import IronicNode, IronicPort

LOG = logging.getLogger(__name__)

#: Items per listing request; Ironic's own cap ([api] max_limit) is 1000 by default.
DEFAULT_PAGE_SIZE = 1000
#: Seconds before the first retry of a call Ironic answered 409 NodeLocked.
NODE_LOCKED_FIRST_DELAY = 0.1
#: Seconds between two looks at the shutdown event while waiting for a call slot.
SLOT_WAIT_STEP = 0.1

T = TypeVar("T")
#: Names under /v1/nodes/ that are Ironic's own routes, not nodes: `GET /v1/nodes/detail`
#: lists every node. A node can never be found by these names.
RESERVED_NODE_PATHS = frozenset({"detail", "validate"})


class Ironic:
    """Ironic as we use it. Thread-safe: one instance serves every worker thread."""

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        *,
        shutdown: threading.Event | None = None,
        connection: rest.Sender | None = None,
    ) -> None:
        group = conf[GROUP]
        self._max_retries: int = group.max_retries
        self._retry_interval: float = group.retry_interval
        self._shutdown = shutdown or threading.Event()
        self._connection = connection if connection is not None else connect(conf)
        self._lock = threading.Lock()
        self._calls = 0
        limit = group.max_concurrent_calls
        #: The [ironic] max_concurrent_calls slots; None: no limit.
        self._slots = threading.BoundedSemaphore(limit) if limit else None

    @property
    def calls(self) -> int:
        """HTTP requests sent to Ironic so far, failed attempts included."""
        with self._lock:
            return self._calls

    # ------------------------------------------------------------ nodes

    def get_node(self, ident: str) -> IronicNode:
        """The node by UUID or name; NotFound when Ironic has none."""
        if ident in RESERVED_NODE_PATHS:
            raise NotFound(f"Node {ident} was not found in Ironic")
        try:
            node = self._call(
                f"get node {ident}", lambda http: rest.send(http, "GET", rest.node(ident))
            )
        except NotFound as exc:  # Ironic's 404, in ironic-inspector's words (as below)
            raise NotFound(f"Node {ident} was not found in Ironic") from exc.__cause__
        if not isinstance(node, dict) or "uuid" not in node:
            raise NotFound(f"Node {ident} was not found in Ironic: its path is not a node's")
        return IronicNode.from_ironic(node)

    def iter_nodes(
        self,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        fields: Sequence[str] | None = None,
        provision_state: str | None = None,
    ) -> Iterator[IronicNode]:
        """Every node (only those in `provision_state` when given), one request per
        page. With `fields`, only those (and uuid) are fetched; the others come back
        empty (None, {} or False)."""
        params = {} if provision_state is None else {"provision_state": provision_state}
        if fields is None:
            pages = self._paginate("nodes", "/nodes/detail", params, page_size)
        else:
            wanted = ",".join(dict.fromkeys(["uuid", *fields]))
            pages = self._paginate("nodes", "/nodes", {**params, "fields": wanted}, page_size)
        return (IronicNode.from_ironic(item) for item in pages)

    def inspected_since(
        self, since: datetime | None, *, page_size: int = DEFAULT_PAGE_SIZE
    ) -> list[tuple[str, datetime]]:
        """`changes.inspected_since` on this Ironic."""
        return changes.inspected_since(self._paginate, since, page_size)

    def get_inventory(self, node_uuid: str) -> dict[str, Any] | None:
        """The inventory and plugin data Ironic's inspection of the node stored
        ({"inventory": ..., "plugin_data": ...}); None when it has none."""
        try:
            return self._call(
                f"get the inventory of node {node_uuid}",
                lambda http: rest.send(http, "GET", rest.node(node_uuid, "inventory")),
            )
        except NotFound:
            return None

    def create_node(self, *, driver: str, **fields: Any) -> IronicNode:
        """A new node (enroll state), fields named as Ironic's API names them."""
        body = {"driver": driver, **fields}
        node = self._call("create a node", lambda http: rest.send(http, "POST", "/nodes", body))
        return IronicNode.from_ironic(node)

    def patch_node(
        self, node_uuid: str, patch: list[dict], *, reset_interfaces: bool = False
    ) -> IronicNode:
        """One JSON-patch PATCH of the node; the node as Ironic saved it. reset_interfaces
        resets the hardware interfaces to the new driver's defaults (a driver change)."""
        params = {"reset_interfaces": "true"} if reset_interfaces else None
        node = self._call(
            f"patch node {node_uuid}",
            lambda http: rest.send(http, "PATCH", rest.node(node_uuid), patch, params=params),
        )
        return IronicNode.from_ironic(node)

    def add_trait(self, node_uuid: str, trait: str) -> None:
        self._call(
            f"add trait {trait} to node {node_uuid}",
            lambda http: rest.send(http, "PUT", rest.node(node_uuid, "traits", trait)),
        )

    def remove_trait(self, node_uuid: str, trait: str) -> None:
        """Remove the trait; a node without it is fine (a node Ironic has not is NotFound)."""
        self._call(
            f"remove trait {trait} from node {node_uuid}",
            lambda http: rest.remove_trait(http, node_uuid, trait),
        )

    def set_boot_device(
        self, node_uuid: str, device: str = "pxe", persistent: bool = False
    ) -> None:
        body = {"boot_device": device, "persistent": persistent}
        self._call(
            f"set the boot device of node {node_uuid}",
            lambda http: rest.send(
                http, "PUT", rest.node(node_uuid, "management", "boot_device"), body
            ),
        )

    def set_power_state(self, node_uuid: str, target: str) -> None:
        """Ask for "power on", "power off" or "rebooting"; returns once Ironic accepted it
        (202: its conductor set the node's target_power_state and works in the
        background; the node's power_state, target_power_state and last_error tell the
        outcome, see inspector.worker.power)."""
        body = {"target": target}
        self._call(
            f"set the power of node {node_uuid} to {target}",
            lambda http: rest.send(http, "PUT", rest.node(node_uuid, "states", "power"), body),
        )

    # ------------------------------------------------------------ ports

    def list_ports(self, node_uuid: str) -> list[IronicPort]:
        """The node's ports (one request unless it has more than a page of them)."""
        pages = self._paginate("ports", "/ports/detail", {"node_uuid": node_uuid})
        return [IronicPort.from_ironic(item) for item in pages]

    def port_owner(self, address: str) -> str | None:
        """The UUID of the node that has a port with this MAC, or None."""
        pages = self._paginate("ports", "/ports", {"address": address, "fields": "uuid,node_uuid"})
        for item in pages:
            return item.get("node_uuid")
        return None

    def iter_ports(
        self, *, page_size: int = DEFAULT_PAGE_SIZE, fields: Sequence[str] | None = None
    ) -> Iterator[IronicPort]:
        """Every port of every node, one request per page. With `fields`, only those
        (and uuid, node_uuid, address) are fetched; the others come back empty."""
        if fields is None:
            pages = self._paginate("ports", "/ports/detail", {}, page_size)
        else:
            wanted = ",".join(dict.fromkeys(["uuid", "node_uuid", "address", *fields]))
            pages = self._paginate("ports", "/ports", {"fields": wanted}, page_size)
        return (IronicPort.from_ironic(item) for item in pages)

    def changed_ports(
        self, since: datetime, *, page_size: int = CHANGES_PAGE_SIZE
    ) -> list[tuple[IronicPort, datetime]] | None:
        """`changes.changed_ports` on this Ironic (deleted ports are not seen)."""
        return changes.changed_ports(self._paginate, since, page_size)

    def last_port_change(self) -> datetime | None:
        """`changes.last_change` on this Ironic: where `changed_ports` starts after a
        full listing."""
        return changes.last_change(self._paginate)

    def create_port(
        self,
        node_uuid: str,
        address: str,
        *,
        pxe_enabled: bool = True,
        extra: dict | None = None,
        local_link_connection: dict | None = None,
        physical_network: str | None = None,
    ) -> IronicPort:
        """A new port; Conflict when another port has that MAC. A retried POST whose first
        attempt did reach Ironic also answers Conflict."""
        fields: dict = {"pxe_enabled": pxe_enabled, "extra": extra or {}}
        if local_link_connection:
            fields["local_link_connection"] = local_link_connection
        if physical_network:
            fields["physical_network"] = physical_network
        body = {"node_uuid": node_uuid, "address": address, **fields}
        port = self._call(
            f"create port {address} for node {node_uuid}",
            lambda http: rest.send(http, "POST", "/ports", body),
        )
        return IronicPort.from_ironic(port)

    def update_port(self, port_uuid: str, patch: list[dict]) -> IronicPort:
        """One JSON-patch PATCH of the port."""
        port = self._call(
            f"patch port {port_uuid}",
            lambda http: rest.send(http, "PATCH", rest.port(port_uuid), patch),
        )
        return IronicPort.from_ironic(port)

    def delete_port(self, port_uuid: str) -> None:
        """NotFound when the port is already gone."""
        self._call(
            f"delete port {port_uuid}", lambda http: rest.send(http, "DELETE", rest.port(port_uuid))
        )

    # ------------------------------------------------------------ machinery

    @backend_time.timed(backend_time.IRONIC)  # one call, the waits between attempts included
    def _call(self, what: str, request: Callable[[rest.Sender], T]) -> T:
        """request(the connection), retried per our policy; only InspectorErrors escape."""
        attempt = locked = 0
        while True:
            attempt += 1
            with self._lock:
                self._calls += 1
            try:
                # Inside the try: the connection's first use reads Ironic's version document.
                with self._slot(what):
                    return request(self._connection)
            except failures.ERRORS as exc:
                reason = failures.retry_reason(exc)
                if reason is None:
                    raise failures.translate(exc, what) from exc
                # A node lock is usually held for a moment (a power action): its
                # retries start short and double up to retry_interval.
                locked = locked + 1 if failures.is_node_locked(exc) else 0
                if attempt > self._max_retries and locked:
                    # Ironic answers, but keeps this node busy: a refusal of this node.
                    raise Conflict(
                        f"Ironic refused to {what}: the node stayed locked for "
                        f"{attempt} attempts ({failures.detail_of(exc)})"
                    ) from exc
                if attempt > self._max_retries:
                    raise ServiceUnavailable(
                        f"Ironic is unavailable: cannot {what} after {attempt} attempts ({reason})",
                        service="Ironic",
                    ) from exc
                delay = self._delay(locked)
                left = deadlines.remaining()
                if left is not None and left <= delay:
                    raise ServiceUnavailable(
                        f"Ironic is unavailable: cannot {what} within the request's time "
                        f"limit ({reason})",
                        service="Ironic",
                    ) from exc
                if self._shutdown.wait(delay):
                    raise ServiceUnavailable(
                        f"Ironic is unavailable: gave up trying to {what} on shutdown ({reason})",
                        service="Ironic",
                    ) from exc
                LOG.warning("Cannot %s (attempt %d, retrying): %s", what, attempt, reason)

    @contextlib.contextmanager
    def _slot(self, what: str) -> Iterator[None]:
        """One of the process's [ironic] max_concurrent_calls, for one attempt (not
        across retries' waits); waited for in short steps, so a shutdown ends the wait."""
        if self._slots is None:
            yield
            return
        while not self._slots.acquire(timeout=SLOT_WAIT_STEP):
            if self._shutdown.is_set():
                raise ServiceUnavailable(
                    f"Ironic is unavailable: gave up waiting to {what} on shutdown",
                    service="Ironic",
                )
        try:
            yield
        finally:
            self._slots.release()

    def _delay(self, locked: int) -> float:
        """Seconds before the next attempt; `locked` counts NodeLocked answers in a row."""
        if not locked:
            return self._retry_interval
        return min(self._retry_interval, NODE_LOCKED_FIRST_DELAY * 2 ** (locked - 1))

    def _paginate(
        self, kind: str, path: str, params: dict[str, Any], page_size: int = DEFAULT_PAGE_SIZE
    ) -> Iterator[dict]:
        """Ironic's items, one GET per page, each retried on its own, following `next`.

        Ironic sends `next` only after a full page, so the common short list costs one
        request (openstacksdk's own paging asks once more after every last page), and a
        page size above Ironic's [api] max_limit is cut to it without losing the rest.
        """
        if page_size < 1:
            raise ValueError(f"page_size must be positive, not {page_size}")
        marker = None
        while True:
            query = {**params, "limit": page_size}
            if marker is not None:
                query["marker"] = marker
            body = self._call(
                f"list {kind}", functools.partial(rest.send, method="GET", path=path, params=query)
            )
            items = body.get(kind) or []
            yield from items
            if not items or not body.get("next"):
                return
            marker = items[-1]["uuid"]
