"""What the PXE filter tells as it goes: Ironic notifications heard, polls made and
Ironic's answer times, changes from Ironic and their applies. `Observer` records nothing
(the base every source calls); firewall.metrics records them. Must not change what the
filter does."""

import datetime
import logging

LOG = logging.getLogger(__name__)


def moment(stamp: object) -> float | None:
    """Epoch seconds of an Ironic timestamp (ISO 8601, UTC when it names no zone);
    None when there is none or it is not one."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.timestamp()


class Observer:
    """Records nothing."""

    #: Seconds from Ironic's last change to its rule applied; None: none measured yet.
    last_lag: float | None = None

    def notification(self) -> None:
        """An Ironic notification was heard."""

    def polled(self, listing: str, seconds: float) -> None:
        """A listing (`nodes`, `ports`) made to Ironic took `seconds`."""

    def changed(self, at: float | None) -> None:
        """Ironic changed a node's inspection at epoch `at` (its provision_updated_at or
        the notification's); the filter's rules follow at the next apply."""

    def applied(self) -> None:
        """The firewall applied a changed rule set."""
