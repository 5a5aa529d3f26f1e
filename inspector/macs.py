"""MAC addresses: the one normal spelling (`52:54:00:ab:cd:ef`) and the two ways to it.

`normalise_mac` is for a value that must be a MAC (the PXE firewall's lists, which go
into kernel batches as text): it accepts every common spelling and raises ValueError for
anything else. `parse_mac` is for what a ramdisk or a switch reports, where a value that
is not a MAC is skipped: ironic-inspector's spelling (two-digit octets separated by
colons or dashes, and PXE's `01-` boot_interface form), None for anything else.
"""

import re
from typing import Any

#: The normal spelling: six lower-case hex octets joined by colons.
_NORMAL = re.compile(r"[0-9a-f]{2}(?::[0-9a-f]{2}){5}")
#: Spellings normalise_mac accepts: colons or dashes (one kind), Cisco dots, 12 bare digits.
_SEPARATED = re.compile(r"[0-9a-fA-F]{1,2}([:-])(?:[0-9a-fA-F]{1,2}\1){4}[0-9a-fA-F]{1,2}")
_DOTTED = re.compile(r"[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}")
_BARE = re.compile(r"[0-9a-fA-F]{12}")
#: What parse_mac accepts once lower-cased: two-digit octets, each separated by : or -.
_REPORTED = re.compile(r"[0-9a-f]{2}(?:[:-][0-9a-f]{2}){5}")
#: PXE's boot_interface prefix (ARP hardware type 1, Ethernet): `01-aa-bb-cc-dd-ee-ff`.
_PXE_PREFIX = "01-"
#: Length of a MAC written with PXE's prefix.
_PXE_LENGTH = 20


def normalise_mac(value: Any) -> str:
    """`52-54-00-AB-CD-EF`, `5254.00ab.cdef` or `525400abcdef` -> `52:54:00:ab:cd:ef`.

    Raises ValueError naming the value for anything else: a MAC goes into firewall
    batches as text, so a stray character must never get that far.
    """
    text = value.strip() if isinstance(value, str) else ""
    if _SEPARATED.fullmatch(text):
        octets = re.split(r"[:-]", text)
    elif _DOTTED.fullmatch(text) or _BARE.fullmatch(text):
        digits = text.replace(".", "")
        octets = [digits[i : i + 2] for i in range(0, 12, 2)]
    else:
        raise ValueError(
            f"not a MAC address: {value!r} (expected six hex octets, e.g. 52:54:00:12:34:56)"
        )
    return ":".join(octet.lower().rjust(2, "0") for octet in octets)


def parse_mac(value: Any) -> str | None:
    """'AA-BB-..' or PXE's '01-aa-bb-..' boot_interface -> 'aa:bb:..'; None if not a MAC."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text.startswith(_PXE_PREFIX) and len(text) == _PXE_LENGTH:
        text = text[len(_PXE_PREFIX) :]
    if not _REPORTED.fullmatch(text):
        return None
    return text.replace("-", ":")


def is_normal_mac(value: Any) -> bool:
    """True for a MAC already in the normal spelling (and nothing else)."""
    return isinstance(value, str) and _NORMAL.fullmatch(value) is not None
