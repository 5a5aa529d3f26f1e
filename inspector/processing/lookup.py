"""Finding the node a ramdisk payload belongs to: its MACs and BMC addresses, and the
rule that the node with the most matches wins (a tie is an error, as in ironic-inspector).
"""

from typing import Any

from inspector.errors import BadRequest, NotFound
from inspector.macs import parse_mac

MAC = "mac"
BMC = "bmc_address"

_UNSET_ADDRESSES = {"", "0.0.0.0", "::", "::/0"}  # noqa: S104 - not a bind


def attributes(data: dict[str, Any]) -> dict[str, list[str]]:
    """The lookup attributes a payload carries: interface MACs and BMC addresses."""
    inventory = data.get("inventory")
    if inventory is not None and not isinstance(inventory, dict):
        raise BadRequest("inventory must be a JSON object")
    inventory = inventory or {}
    interfaces = inventory.get("interfaces")
    if interfaces is None:
        interfaces = []
    if not isinstance(interfaces, list):
        raise BadRequest("inventory.interfaces must be a list")
    macs = [i.get("mac_address") for i in interfaces if isinstance(i, dict)]
    macs.append(data.get("boot_interface"))
    legacy = data.get("macs")
    if isinstance(legacy, list):
        macs.extend(legacy)
    found_macs = sorted({m for m in map(parse_mac, macs) if m})
    bmcs = [inventory.get("bmc_address"), inventory.get("bmc_v6address")]
    found_bmcs = sorted(
        {
            b.strip().lower()
            for b in bmcs
            if isinstance(b, str) and b.strip() not in _UNSET_ADDRESSES
        }
    )
    return {MAC: found_macs, BMC: found_bmcs}


class LookupFailed(NotFound):
    """No node matches (ambiguous False), or several match equally (True)."""

    def __init__(self, message: str, *, ambiguous: bool = False) -> None:
        super().__init__(message)
        self.ambiguous = ambiguous


#: How ironic-inspector's process.process answers a ramdisk whose data it refused
#: before processing (lookup or a pre-processing hook), its failures following.
FAILURES = "The following failures happened during running pre-processing hooks:\n"
#: ... when the failure is the lookup's (its process._find_node_info).
LOOKUP_ERROR = FAILURES + "Look up error: "


def choose(matches: dict[str, int], attributes: dict[str, list[str]]) -> str:
    """The node uuid with the most matching attributes; NotFound for none or a tie, in
    ironic-inspector's words (its node_cache.find_node)."""
    if not matches:
        raise LookupFailed(
            f"{LOOKUP_ERROR}Could not find a node for attributes {_describe(attributes)}"
        )
    best = max(matches.values())
    winners = sorted(uuid for uuid, count in matches.items() if count == best)
    if len(winners) > 1:
        raise LookupFailed(
            f"{LOOKUP_ERROR}Multiple nodes match the same number of attributes "
            f"{_describe(attributes)}: {winners}",
            ambiguous=True,
        )
    return winners[0]


def _describe(attributes: dict[str, list[str]]) -> str:
    """As ironic-inspector prints its find_node(bmc_address=..., mac=...) arguments (a
    repr: a value the ramdisk sent cannot break the line)."""
    return repr({BMC: attributes.get(BMC, []), MAC: attributes.get(MAC, [])})
