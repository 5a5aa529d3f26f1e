"""The regular expressions of introspection rules, run by RE2: which patterns it refuses and
why, and the bound on one match. Python's `re` never runs a rule's pattern: it backtracks,
so `(a+)+$` on a long run of `a` takes exponential time while holding the GIL.
"""

import dataclasses
import functools
import re
from typing import Any

import re2

#: RE2's largest repetition count. RE2 refuses `{1001}` but reads a count too large for
#: its parser (`a{99999999999}`) as literal text, where Python overflows: both are refused.
MAX_REPEAT = 1000
#: Largest RE2 program (instructions) a rule's pattern may compile to. Matching costs up to
#: the program's size per byte of text; a Unicode class such as `\pL` alone is ~1,200.
MAX_PROGRAM_SIZE = 10_000
#: Longest pattern text: past it, a pattern is refused before it is even parsed (a
#: longer one would almost always be over MAX_PROGRAM_SIZE anyway).
MAX_PATTERN_LENGTH = 10_000
#: Largest (bytes of text x program size) one match may cost: about a second on the
#: slowest patterns measured. A match runs inside RE2, where nothing can stop it, so this
#: bounds how far past [processing] rules_evaluation_timeout one match can go. A pattern
#: of 20 instructions may look at 10 MB of text, one of 10,000 at 20 kB.
MAX_MATCH_COST = 200_000_000

# Our own fixed pattern over a rule's pattern text: linear, no nested repetition.
_BRACES = re.compile(r"\{(\d*)(,?)(\d*)\}")

#: (start of RE2's error message, why RE2 has no such thing or what to write instead).
_HINTS = (
    ("invalid escape sequence: \\Z", "write \\z for the end of the text"),
    ("invalid escape sequence: \\u", "write \\x{hhhh} for a code point"),
    ("invalid escape sequence: \\U", "write \\x{hhhhhh} for a code point"),
    ("invalid escape sequence: \\N", "write \\x{hhhh} for a code point"),
    ("invalid perl operator: (?=", "lookahead assertions are not supported"),
    ("invalid perl operator: (?!", "lookahead assertions are not supported"),
    ("invalid perl operator: (?<=", "lookbehind assertions are not supported"),
    ("invalid perl operator: (?<!", "lookbehind assertions are not supported"),
    ("invalid perl operator: (?>", "atomic groups are not supported"),
    ("invalid perl operator: (?(", "conditional groups are not supported"),
    ("invalid perl operator: (?#", "comments (?#...) are not supported"),
    ("invalid perl operator: (?P", "named backreferences (?P=name) are not supported"),
    ("invalid perl operator: (?", "the only flags are i, m, s and U: no x, a, L or u"),
    ("bad repetition operator: ++", "possessive quantifiers are not supported"),
    ("bad repetition operator: *+", "possessive quantifiers are not supported"),
    ("bad repetition operator: ?+", "possessive quantifiers are not supported"),
    ("invalid repetition size", f"repetition counts, nested ones multiplied, go over {MAX_REPEAT}"),
    ("pattern too large", "the compiled pattern is over RE2's memory bound"),
)
_BACKREFERENCE = re.compile(r"invalid escape sequence: \\[1-9]")


@dataclasses.dataclass(frozen=True)
class RulePattern:
    """A rule's pattern, compiled by RE2."""

    pattern: str
    regexp: Any
    size: int

    def test(self, text: str, *, search: bool) -> bool:
        """Whether the pattern matches the whole text (or, with search, a part of it);
        ValueError when that match could cost more than MAX_MATCH_COST."""
        data = text.encode("utf-8", "surrogatepass")
        if len(data) * self.size > MAX_MATCH_COST:
            raise ValueError(
                f"a text of {len(data)} bytes is too long for the pattern {shown(self.pattern)} "
                f"({self.size} RE2 instructions): one match may cost {MAX_MATCH_COST} "
                "(bytes x instructions) at most"
            )
        found = self.regexp.search(data) if search else self.regexp.fullmatch(data)
        return found is not None


def shown(pattern: str, limit: int = 100) -> str:
    """The pattern as an error message quotes it: repr, cut after `limit` characters."""
    return repr(pattern) if len(pattern) <= limit else f"{pattern[:limit]!r}..."


def _options() -> Any:
    options = re2.Options()
    options.never_capture = True  # a rule needs a yes or no, never groups
    options.log_errors = False  # the refusal is our error message, not RE2's stderr
    return options


def _repetition_problem(pattern: str) -> str | None:
    """What is wrong with a `{...}` of the pattern that RE2 would accept with another
    meaning than Python's, or None. Skips escapes, `\\Q...\\E` and character classes."""
    position, in_class, end = 0, False, len(pattern)
    last_named = pattern.rfind(":]")
    while position < end:
        char = pattern[position]
        if char == "\\":
            if pattern.startswith("\\Q", position):
                closing = pattern.find("\\E", position + 2)
                position = end if closing < 0 else closing + 2
            else:
                position += 2
            continue
        if in_class:
            # `[:alpha:]`; rfind once so that a pattern of many `[:` stays linear.
            if pattern.startswith("[:", position) and position + 2 <= last_named:
                position = pattern.index(":]", position + 2) + 2
                continue
            in_class = char != "]"
            position += 1
            continue
        if char == "[":
            in_class = True
            position += 1
            position += pattern.startswith("^", position)
            position += pattern.startswith("]", position)  # `[]...]`: a literal ]
            continue
        braces = _BRACES.match(pattern, position) if char == "{" else None
        if braces is not None:
            low, comma, high = braces.groups()
            if not low and comma:
                text = braces.group()
                return (
                    f"{text} is a repetition for Python (0 to {high or 'any'} times) but "
                    f"literal text for RE2: write {{0,{high}}} (or \\{{ for the text)"
                )
            for count in (low, high):
                if count and int(count) > MAX_REPEAT:
                    return f"repetition count {count} is over RE2's limit of {MAX_REPEAT}"
        position += 1
    return None


def _why(message: str) -> str:
    """RE2's compile error, said so that a rule author can act on it."""
    if _BACKREFERENCE.match(message):
        return f"backreferences are not supported (RE2: {message})"
    for prefix, hint in _HINTS:
        if message.startswith(prefix):
            return f"{hint} (RE2: {message})"
    return f"RE2: {message}"


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> RulePattern:
    """The pattern compiled by RE2; ValueError saying why when a rule cannot use it
    (invalid, a feature RE2 lacks, too large). Refusals are not cached."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(
            f"it is {len(pattern)} characters long, more than the {MAX_PATTERN_LENGTH} "
            "a rule's pattern may have"
        )
    problem = _repetition_problem(pattern)
    if problem is not None:
        raise ValueError(problem)
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("it holds a lone surrogate, which UTF-8 cannot carry") from None
    try:
        regexp = re2.compile(pattern, _options())
    except re2.error as exc:
        raw = exc.args[0] if exc.args else ""
        message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise ValueError(_why(message)) from None
    size = regexp.programsize
    if size > MAX_PROGRAM_SIZE:
        raise ValueError(
            f"it compiles to {size} RE2 instructions, more than the {MAX_PROGRAM_SIZE} a "
            "rule's pattern may use (Unicode classes such as \\pL are large)"
        )
    return RulePattern(pattern, regexp, size)
