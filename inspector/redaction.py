"""What a log line never shows: credentials and ramdisk logs are masked in every record
(the logging filter every process installs), and data quoted in a message is shortened.

`mask` runs oslo.utils' `mask_password` (keys containing password, secret, token,
auth_token, private_key, encrypted_key, passphrase..., in Python reprs, JSON, XML,
command-line and key=value forms) and adds what it misses:

* keys ending in `_key` (Ironic's `snmp_auth_key`, `snmp_priv_key`, `ipmi_hex_kg_key`...)
  except the few that name no credential (NOT_SECRET_KEYS: `routing_key`, `sort_key`...),
  and `*community*` (SNMP community strings are passwords);
* quoted values with quotes or escapes in them, values cut off by a truncation, and
  `key: value` without quotes;
* the password of URLs (`rabbit://user:***@host`, `redis://:***@host`);
* `Authorization:` header values;
* the ramdisk's `logs` (quoted as a key) and any run of 200 base64 characters or more.

A record without any candidate substring is left as it is (a few substring tests).

`mask_secrets` masks, besides, the secrets a caller knows (a database URL's password in
its driver's message): one of MIN_SECRET_ANYWHERE (8) characters or more wherever it
appears, a shorter one only as a whole token, neither preceded nor followed by a letter,
a digit or an underscore. A short password thus never masks a part of the words that
contain it (the password `p` leaves `port` as it is); a token equal to it is masked
even where it is something else (the password `1` masks a port `1`).
"""

import logging
import re
from collections.abc import Iterable

#: What a masked value becomes.
MASK = "***"
#: A known secret this long is masked wherever it appears; a shorter one as a token only.
MIN_SECRET_ANYWHERE = 8
#: Characters of data that a message quotes, at most (see shorten).
MAX_QUOTED = 500
#: Longest line of an exception's text in a log record; longer ones are cut (a stack
#: trace's lines are short: a longer one is an exception message that quotes data).
MAX_TRACEBACK_LINE = 1000
#: Longest message of a log record; longer ones are cut (a dump, never worth a line).
MAX_MESSAGE = 64 * 1024
#: Characters beyond a cut that shorten masks too, so that no value is masked half.
_MARGIN = 1000

#: Keys ending in `_key` that name no credential: their values stay readable.
NOT_SECRET_KEYS = frozenset(
    {
        "cache_key",
        "foreign_key",
        "idempotency_key",
        "lock_key",
        "lookup_key",
        "partition_key",
        "primary_key",
        "public_key",
        "routing_key",
        "sort_key",
    }
)

#: Lower-case substrings without which a text holds nothing to mask: every oslo.utils
#: key contains one (tests/unit/test_redaction.py checks), and so does every form below.
CANDIDATES = (
    "pass",
    "pswd",
    "secret",
    "token",
    "key",
    "communit",
    "credential",
    "cookie",
    "configdrive",
    "fsid",
    "kek",
    "suffix",
    "://",
    "logs",
    "authoriz",
)
#: A run of base64 this long is ramdisk logs (or another blob), never worth a log line.
MIN_BASE64 = 200

_NAME = (
    r"[\w-]*?(?:password|passwd|passphrase|pswd|secret|token|communit)[\w-]*"
    r"|[\w-]*_key|[\w-]*_pass"
)
#: A quoted value (possibly cut off before its closing quote) or a bare one.
_VALUE = r"""(?P<value>'(?:[^'\\\n]|\\.)*'?|"(?:[^"\\\n]|\\.)*"?|[^\s,;&'"(){}\[\]<>]+)"""
_KEY_VALUE = re.compile(
    rf"""(?P<head>(?P<q>['"])(?P<qname>{_NAME}|logs)(?P=q)\s*:\s*u?"""
    rf"""|(?<![\w-])(?P<name>{_NAME})\b\s*[=:]\s*){_VALUE}""",
    re.IGNORECASE,
)
_URL_PASSWORD = re.compile(
    r"""(?P<head>\b[a-z][a-z0-9+.\-]*://[^:/\s'"<>?#@]*:)[^/\s'"<>?#]*@""", re.IGNORECASE
)
_AUTHORIZATION = re.compile(
    r"""(?P<head>\bauthorization['"]?\s*[:=]\s*['"]?(?:(?:basic|bearer|digest|negotiate)\s+)?)"""
    r"""[^\s'",}]+""",
    re.IGNORECASE,
)
#: More pairs of quotes than oslo.utils has keys (see _oslo_mask).
_SACRIFICE = "'\x00'" * 50
_BASE64_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
_BASE64 = re.compile(rf"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{{{MIN_BASE64},}}={{0,2}}")


def _masked_value(match: re.Match) -> str:
    name = (match["qname"] or match["name"]).lower()
    if name in NOT_SECRET_KEYS:
        return match[0]
    value = match["value"]
    if value[0] in "'\"":
        closing = value[0] if len(value) > 1 and value[-1] == value[0] else ""
        return f"{match['head']}{value[0]}{MASK}{closing}"
    return match["head"] + MASK


def _oslo_mask(text: str) -> str:
    """oslo.utils' mask_password, without its loss: its pattern for passwords with
    quotes in them deletes the text's last quoted value (and closing quote), once per
    key it finds; the pairs of quotes appended here are what it deletes instead."""
    # Imported at the first record to mask: its patterns take 50 ms to compile, which a
    # command that logs nothing (`inspector --version`, `firewall close`) need not pay.
    from oslo_utils import strutils  # noqa: PLC0415

    masked = strutils.mask_password(text + _SACRIFICE, MASK)
    end = masked.find(_SACRIFICE[:3])
    return masked if end < 0 else masked[:end]


def has_candidates(text: str) -> bool:
    """Whether text may hold something to mask (the fast path's test)."""
    if len(text) >= MIN_BASE64:
        return True
    lowered = text.lower()
    for candidate in CANDIDATES:  # a loop: twice as fast as any() over a generator
        if candidate in lowered:
            return True
    return False


def is_secret_key(name: str) -> bool:
    """Whether a field of this name holds a credential (or the ramdisk's logs): its
    value is masked wherever a record quotes it, and is never quoted in a message."""
    probe = f"'{name}': 'x'"
    return mask(probe) != probe


def mask(text: str) -> str:
    """text with credentials and ramdisk logs masked; text itself when there is nothing
    to mask."""
    if not has_candidates(text):
        return text
    # Ours first: it keeps a quoted value with escaped quotes whole, which oslo's cut.
    masked = _oslo_mask(_KEY_VALUE.sub(_masked_value, text))
    if "://" in masked:
        masked = _URL_PASSWORD.sub(rf"\g<head>{MASK}@", masked)
    if "uthoriz" in masked or "UTHORIZ" in masked:
        masked = _AUTHORIZATION.sub(rf"\g<head>{MASK}", masked)
    if len(masked) >= MIN_BASE64:
        masked = _BASE64.sub(MASK, masked)
    return text if masked == text else masked


def mask_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """text masked (`mask`), and each of the known `secrets` too: wherever it appears
    when it has MIN_SECRET_ANYWHERE characters or more, as a whole token when shorter."""
    masked = mask(text)
    for secret in secrets:
        if not secret:
            continue
        if len(secret) >= MIN_SECRET_ANYWHERE:
            masked = masked.replace(secret, MASK)
        else:
            masked = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", MASK, masked)
    return masked


def _cut(text: str, limit: int, length: int | None = None) -> str:
    """text cut to `limit` characters, saying how long it was (`length`, when text is
    already a part). A cut never leaves the start of a base64 run too short to be
    recognised (nor the start of a word)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    if text[limit] in _BASE64_CHARACTERS:
        head = head.rstrip(_BASE64_CHARACTERS)
    return f"{head}... ({length or len(text)} characters)"


def shorten(text: str, limit: int = MAX_QUOTED) -> str:
    """text masked and cut to `limit` characters (saying how long it was): for messages
    that may quote data (a ramdisk's error, a rule's message formatted from the data).
    Only the part kept, and a margin so that no value is masked half, is masked."""
    if len(text) <= limit:
        return mask(text)
    return _cut(mask(_cut(text, limit + _MARGIN)), limit, len(text))


def _cut_lines(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return "\n".join(_cut(line, limit) for line in text.split("\n"))


def mask_traceback(text: str) -> str:
    """An exception's text (or a stack) masked, its overlong lines cut: what a formatter
    that formats the exception itself (oslo.log's) writes instead."""
    return mask(_cut_lines(text, MAX_TRACEBACK_LINE))


class RedactingFilter(logging.Filter):
    """Masks the final message, the exception text and the stack of every record that
    passes the handler it is attached to. Never drops a record."""

    #: Formats exception text as the handlers' formatters would (logging.Formatter's).
    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # wrong arguments: the handler reports it (handleError)
            return True
        # Cut before masking (a dump costs ~1 ms per KiB to mask): a value cut in two
        # is masked up to the cut all the same.
        masked = mask(_cut(message, MAX_MESSAGE))
        if masked is not message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask_traceback(record.exc_text)
        if record.stack_info:
            record.stack_info = mask_traceback(record.stack_info)
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Attach a RedactingFilter to every handler of logger (the root logger by default)
    that has none yet."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
