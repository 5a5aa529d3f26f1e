"""inspector.macs: normalise_mac raises for what is not a MAC, parse_mac returns None."""

import pytest

from inspector.macs import is_normal_mac, normalise_mac, parse_mac

MAC = "52:54:00:ab:cd:ef"


@pytest.mark.parametrize(
    "spelling",
    [
        "52:54:00:ab:cd:ef",
        "52-54-00-AB-CD-EF",
        "5254.00ab.cdef",
        "525400ABCDEF",
        " 52:54:0:ab:cd:ef ",
    ],
)
def test_normalise_mac_accepts_common_spellings(spelling):
    assert normalise_mac(spelling) == MAC


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "52:54:00:ab:cd",
        "52:54:00:ab:cd:eg",
        "52:54-00:ab:cd:ef",
        "52:54:00:ab:cd:ef\n-j ACCEPT",
        "01-52-54-00-ab-cd-ef",
        None,
        525400,
    ],
)
def test_normalise_mac_refuses_garbage(garbage):
    with pytest.raises(ValueError, match="not a MAC address"):
        normalise_mac(garbage)


@pytest.mark.parametrize(
    "spelling",
    [
        "52:54:00:ab:cd:ef",
        "52-54-00-AB-CD-EF",
        " 52:54:00:AB:cd:ef\n",
        "01-52-54-00-ab-cd-ef",  # PXE's boot_interface
        "01-52-54-00-AB-CD-EF",
        "52:54-00:ab-cd:ef",  # ironic-inspector's pattern allows either separator per octet
    ],
)
def test_parse_mac_reads_what_a_ramdisk_reports(spelling):
    assert parse_mac(spelling) == MAC


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "52:54:00:ab:cd",
        "52:54:00:ab:cd:eg",
        "52:54:0:ab:cd:ef",  # one-digit octets, Cisco dots and bare digits are not reported
        "5254.00ab.cdef",
        "525400abcdef",
        "02-52-54-00-ab-cd-ef",  # not Ethernet's hardware type
        "52:54:00:ab:cd:ef\n-j ACCEPT",
        "80:00:02:08:fe:80:00:00:00:00:00:00:00:11:22:33:44:55:66:77",  # InfiniBand
        None,
        525400,
        ["52:54:00:ab:cd:ef"],
    ],
)
def test_parse_mac_returns_none_for_what_is_not_a_mac(garbage):
    assert parse_mac(garbage) is None


def test_what_either_returns_is_normal():
    assert is_normal_mac(normalise_mac("5254.00AB.CDEF"))
    assert is_normal_mac(parse_mac("01-52-54-00-AB-CD-EF"))


@pytest.mark.parametrize("value", ["52:54:00:AB:CD:EF", "52-54-00-ab-cd-ef", f"{MAC}\n", None])
def test_is_normal_mac_only_for_the_normal_spelling(value):
    assert not is_normal_mac(value)
