"""Rules' regular expressions run by RE2: linear matching, what is refused and why, the bound
on one match, and where RE2 reads a pattern differently from Python's `re`."""

import contextlib
import signal
import time

import pytest

from inspector.processing import rule_regex

#: `(a+)+$` takes Python's backtracking `re` exponential time on this text.
CATASTROPHIC = "a" * 100_000 + "b"


@contextlib.contextmanager
def interrupted_after(seconds):
    """Raise TimeoutError in the test when the block runs longer (Python's `re` looks for
    signals while it backtracks; RE2 never needs it): the test then fails, never hangs."""

    def alarm(_signum, _frame):
        raise TimeoutError(f"still matching after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_catastrophic_pattern_is_accepted_and_runs_in_linear_time():
    pattern = rule_regex.compile_pattern(r"(a+)+$")
    started = time.monotonic()
    with interrupted_after(5):
        assert pattern.test(CATASTROPHIC, search=False) is False
        assert pattern.test(CATASTROPHIC, search=True) is False
        assert pattern.test(CATASTROPHIC[:-1], search=False) is True
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        (r"(a)\1", "backreferences are not supported"),
        (r"(?P<x>a)(?P=x)", "named backreferences"),
        (r"eth(?=0)", "lookahead assertions are not supported"),
        (r"(?<!v)lan", "lookbehind assertions are not supported"),
        (r"(?>a+)", "atomic groups"),
        (r"a++", "possessive quantifiers"),
        (r"(?x) a b", "the only flags are i, m, s and U"),
        (r"x86\Z", r"write \z"),
        (r"\u00e9", r"write \x{hhhh}"),
        ("a{99999999999}", "repetition count 99999999999 is over RE2's limit of 1000"),
        ("a{2,1001}", "repetition count 1001 is over RE2's limit of 1000"),
        ("((a{100}){100}){100}", "nested ones multiplied"),
        ("a{,5}", "write {0,5}"),
        (r"\pL{10}", "more than the 10000 a rule's pattern may use"),
        (r"\pL{1000}", "over RE2's memory bound"),
        ("(", "RE2: missing ): ("),
        ("[a", "RE2: missing ]"),
        ("*a", "RE2: no argument for repetition operator"),
        ("x" * 10_001, "more than the 10000 a rule's pattern may have"),
        ("a\ud800", "lone surrogate"),
    ],
)
def test_refused_patterns_say_why(pattern, fragment):
    with pytest.raises(ValueError) as refused:
        rule_regex.compile_pattern(pattern)
    assert fragment in str(refused.value)


@pytest.mark.parametrize(
    ("pattern", "text", "search", "expected"),
    [
        ("(?i)dell", "Dell Inc.", True, True),
        ("x86_.*", "x86_64", False, True),
        ("x86", "x86_64", False, False),
        ("eth0|eth1", "eth0-anything", False, False),
        ("eth0|eth1", "eth0-anything", True, True),
        (r"\d{1,3}(\.\d{1,3}){3}", "10.1.2.3", False, True),
        ("[[:alpha:]]{2}[0-9]+", "sd12", False, True),
        (r"(?P<vendor>HP|Dell)\b", "Dell Inc.", True, True),
        (r"a\{,5}", "a{,5}", False, True),
        ("[{,5}]+", "{,5}", False, True),
        (r"\Q{,5}\E", "{,5}", False, True),
        ("a{1000}", "a" * 1000, False, True),
        ("é+", "éé", False, True),
        # Where RE2 reads a pattern differently from Python (docs/processing.md):
        (r"\d", "\u0663", True, False),  # ASCII digits only; Python: any Unicode digit
        (r"\w", "é", True, False),  # ASCII word characters only
        (r"\pL", "é", True, True),  # the Unicode classes say it instead
        ("x86$", "x86\n", True, False),  # `$` is the end only; Python: before a final \n
    ],
)
def test_matching(pattern, text, search, expected):
    assert rule_regex.compile_pattern(pattern).test(text, search=search) is expected


def test_a_lone_surrogate_in_the_text_is_no_error():
    assert rule_regex.compile_pattern("a").test("\ud800a", search=True) is True


def test_one_match_is_bounded_by_text_length_times_program_size(monkeypatch):
    pattern = rule_regex.compile_pattern("[a-z]+z")
    monkeypatch.setattr(rule_regex, "MAX_MATCH_COST", pattern.size * 100)
    assert pattern.test("a" * 99 + "z", search=False) is True
    assert pattern.test("é" * 50, search=True) is False  # 100 bytes
    with pytest.raises(ValueError, match=r"a text of 101 bytes is too long for the pattern"):
        pattern.test("a" * 100 + "z", search=False)


def test_the_default_bounds_leave_room_for_common_patterns_on_big_texts():
    pattern = rule_regex.compile_pattern("(?i)mellanox")
    assert pattern.size * 5_000_000 <= rule_regex.MAX_MATCH_COST
    largest = rule_regex.MAX_MATCH_COST // rule_regex.MAX_PROGRAM_SIZE
    assert largest >= 20_000  # any accepted pattern may look at 20 kB


def test_repetition_scan_skips_escapes_classes_and_quoted_text():
    assert rule_regex.compile_pattern(r"[\]{,5}]").test("{", search=False)
    assert rule_regex.compile_pattern(r"[^]{,5}]x").test("ax", search=False)
    with pytest.raises(ValueError, match="99999"):
        rule_regex.compile_pattern(r"[]]a{99999}")
    with pytest.raises(ValueError, match="99999"):
        rule_regex.compile_pattern(r"\Qx\Ea{99999}")
