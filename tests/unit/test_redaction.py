"""The masking of every log record (inspector.redaction): each form a credential or the
ramdisk's logs takes in a message or a traceback, the keys left alone, the fast path."""

import base64
import io
import json
import logging

import pytest
from oslo_utils import strutils

from inspector import conf as config
from inspector import redaction
from inspector.api.logs import setup_logging

SECRET = "hunter2-Zq9"
#: The base64 of ramdisk logs: long, with a marker no other text has.
LOGS = base64.b64encode(b"RAMDISK-LOG-MARKER " * 40).decode()
LOGS_MARKER = LOGS[:40]

DRIVER_INFO_KEYS = [
    "ipmi_password",
    "redfish_password",
    "ilo_password",
    "drac_password",
    "irmc_password",
    "irmc_snmp_auth_password",
    "snmp_auth_key",
    "snmp_priv_key",
    "ipmi_hex_kg_key",
    "snmp_community",
    "password",
    "bmc_password",
    "client_secret",
    "secret",
    "token",
    "auth_token",
    "X-Auth-Token",
    "admin_pass",
    "private_key",
]


@pytest.mark.parametrize("key", DRIVER_INFO_KEYS)
@pytest.mark.parametrize(
    "form",
    [
        "{{'driver_info': {{'{key}': '{value}', 'ipmi_username': 'admin'}}}}",  # repr
        '{{"driver_info": {{"{key}": "{value}", "ipmi_username": "admin"}}}}',  # JSON
        "Cannot log in with {key}={value} user=admin",
        "{key}: {value}",
        "'{key}': '{value}",  # cut off by a truncation
    ],
    ids=["repr", "json", "key=value", "key: value", "unterminated"],
)
def test_credentials_are_masked_in_every_form(key, form):
    text = form.format(key=key, value=SECRET)
    masked = redaction.mask(text)
    assert SECRET not in masked
    assert key in masked  # the field is still named
    assert redaction.MASK in masked
    if "admin" in text:
        assert "admin" in masked  # the rest of the record is kept


@pytest.mark.parametrize(
    "text",
    [
        f"{{'ipmi_password': \"it's-{SECRET}\", 'x': 1}}",
        f"{{'ipmi_password': 'a\\'{SECRET}', 'x': 1}}",
        f'{{"ipmi_password": "a\\"{SECRET}", "x": 1}}',
        f"<password>{SECRET}</password>",
        f"--password {SECRET}",
    ],
)
def test_values_with_quotes_and_other_oslo_forms(text):
    assert SECRET not in redaction.mask(text)


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        (f"rabbit://inspector:{SECRET}@127.0.0.1:5672//", "127.0.0.1:5672//"),
        (f"rabbit://u:{SECRET}@h1:5672,u:{SECRET}@h2:5672/vhost", "h2:5672/vhost"),
        (f"redis://:{SECRET}@127.0.0.1:6379/0", "127.0.0.1:6379/0"),
        (f"mysql+pymysql://inspector:{SECRET}@db.example.com/inspector", "db.example.com"),
        (f"postgresql+psycopg://u:{SECRET}@h:5432/db?sslmode=require", "sslmode=require"),
    ],
)
def test_url_passwords_are_masked(url, kept):
    masked = redaction.mask(f"database {url} unavailable: timed out")
    assert SECRET not in masked
    assert kept in masked
    assert "unavailable: timed out" in masked


@pytest.mark.parametrize(
    ("secret", "text", "expected"),
    [
        # A short secret: only a whole token is masked, never a part of a word.
        (
            "p",
            'connection to server at "127.0.0.1", port 1 failed: password p for u',
            'connection to server at "127.0.0.1", port 1 failed: password *** for u',
        ),
        ("abc", "abcdef abc x-abc abc_d (abc)", "abcdef *** x-*** abc_d (***)"),
        ("a.b", "axb a.b", "axb ***"),
        ("1234567", "x1234567 1234567", "x1234567 ***"),
        # 8 characters or more: wherever it appears.
        ("12345678", "x12345678y 12345678", "x***y ***"),
        (SECRET, f"user 'u'{SECRET}: failed", "user 'u'***: failed"),
        # Nothing to mask.
        ("", "port 1", "port 1"),
    ],
)
def test_known_secrets_are_masked_as_tokens_or_anywhere_when_long(secret, text, expected):
    assert redaction.mask_secrets(text, [secret]) == expected


def test_known_secrets_and_url_passwords_together():
    text = 'postgresql://u:p@127.0.0.1:1/x: connection to server at "127.0.0.1", port 1 failed'
    assert redaction.mask_secrets(text, ["p", None]) == (
        'postgresql://u:***@127.0.0.1:1/x: connection to server at "127.0.0.1", port 1 failed'
    )


def test_urls_without_credentials_and_authorization_headers():
    assert redaction.mask("GET http://127.0.0.1:6385/v1/nodes/x?fields=a") == (
        "GET http://127.0.0.1:6385/v1/nodes/x?fields=a"
    )
    masked = redaction.mask(f"{{'Authorization': 'Basic {SECRET}', 'Accept': 'x'}}")
    assert SECRET not in masked
    assert "'Accept': 'x'" in masked


@pytest.mark.parametrize(
    "text",
    [
        f"{{'logs': '{LOGS}', 'inventory': {{}}}}",
        json.dumps({"inventory": {}, "logs": LOGS}),
        json.dumps({"inventory": {}, "logs": "short-marker-Q7"}),
        f"refused: {LOGS} is not of type 'object'",
    ],
)
def test_ramdisk_logs_are_masked(text):
    masked = redaction.mask(text)
    assert LOGS_MARKER not in masked
    assert "short-marker-Q7" not in masked


def test_keys_that_are_no_credential_are_kept():
    text = "{'routing_key': 'inspector.work', 'sort_key': 'created_at', 'key': 'v'}"
    assert redaction.mask(text) == text
    assert not redaction.is_secret_key("routing_key")
    assert redaction.is_secret_key("snmp_priv_key")
    assert redaction.is_secret_key("logs")


def test_a_password_key_costs_no_other_value():
    # oslo.utils' pattern for passwords with quotes in them deletes the last quoted
    # value of the text; the mask keeps it.
    text = "{'ipmi_password': 'x', 'auth_token': 'y', 'deploy_kernel': 'http://k/vmlinuz'}"
    masked = redaction.mask(text)
    assert masked == (
        "{'ipmi_password': '***', 'auth_token': '***', 'deploy_kernel': 'http://k/vmlinuz'}"
    )


def test_every_oslo_key_passes_the_fast_path():
    for key in strutils._SANITIZE_KEYS:
        assert redaction.has_candidates(f"'{key}': 'v'"), key
        assert SECRET not in redaction.mask(f"{{'{key}': '{SECRET}'}}"), key


def test_ordinary_text_is_returned_as_it_is_without_masking(monkeypatch):
    def expensive(*_args, **_kwargs):
        raise AssertionError("the fast path ran the patterns")

    monkeypatch.setattr(strutils, "mask_password", expensive)
    text = "[node 6f6e3e5e-0c36-4bd6-9d5a-1b2f4b4b0d6a req 1a2b continue] waiting -> processing"
    assert redaction.mask(text) is text


def test_shorten_masks_then_cuts_and_says_how_long():
    text = f"Introspection rule r failed: {{'bmc_password': '{SECRET}', " + "'a': 'b', " * 300
    short = redaction.shorten(text, 100)
    assert SECRET not in short
    assert short.startswith("Introspection rule r failed: {'bmc_password': '***'")
    assert short.endswith(f"... ({len(text)} characters)")
    assert redaction.shorten("short") == "short"


def test_shorten_leaves_no_piece_of_a_base64_run():
    other = base64.b64encode(b"OTHER-BLOB " * 200).decode()
    text = f"{other} {LOGS}{LOGS}"
    short = redaction.shorten(text, 100)
    assert LOGS_MARKER not in short and LOGS[-40:] not in short
    assert other[:40] not in short


# --- the filter on the handlers ------------------------------------------------------


@pytest.fixture
def output():
    """A logger whose one handler (with the filter, as setup_logging installs it)
    writes to a string."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    # A logger of its own, outside the logging tree (pytest attaches its handlers to
    # every registered logger that does not propagate).
    logger = logging.Logger("tests.redaction", logging.DEBUG)
    logger.addHandler(handler)
    redaction.install(logger)
    redaction.install(logger)  # idempotent
    assert len(handler.filters) == 1
    return logger, stream


def test_messages_and_their_arguments_are_masked(output):
    logger, stream = output
    node = {"driver_info": {"ipmi_password": SECRET, "ipmi_address": "10.0.0.9"}}
    logger.warning("node %s from %s", node, f"rabbit://u:{SECRET}@h//")
    logger.info("ramdisk data %s", json.dumps({"logs": LOGS}))
    text = stream.getvalue()
    assert SECRET not in text and LOGS_MARKER not in text
    assert "'ipmi_address': '10.0.0.9'" in text


def test_tracebacks_are_masked_and_their_long_lines_cut(output):
    logger, stream = output
    try:
        try:
            raise ValueError(f"cannot format {{'ipmi_password': '{SECRET}'}}")
        except ValueError as exc:
            raise RuntimeError("rule failed: " + repr({"logs": LOGS}) + "x" * 5000) from exc
    except RuntimeError:
        logger.exception("task failed")
    text = stream.getvalue()
    assert "Traceback (most recent call last)" in text
    assert "The above exception was the direct cause" in text
    assert SECRET not in text and LOGS_MARKER not in text
    assert max(len(line) for line in text.splitlines()) < redaction.MAX_TRACEBACK_LINE + 50


def test_stack_info_is_masked(output):
    logger, stream = output
    logger.info("token=%s", SECRET, stack_info=True)
    text = stream.getvalue()
    assert "Stack (most recent call last)" in text
    assert SECRET not in text


def test_a_huge_message_is_cut_before_it_is_masked(output):
    logger, stream = output
    logger.info("dump %s", "{'password': '" + SECRET + "', " + "'k': 'v', " * 20000)
    text = stream.getvalue()
    assert SECRET not in text
    assert len(text) < redaction.MAX_MESSAGE + 100


def test_an_ordinary_record_is_left_untouched(output):
    logger, stream = output
    seen = []

    class Keep(logging.Filter):
        def filter(self, record):
            seen.append((record.msg, record.args))
            return True

    logger.handlers[0].addFilter(Keep())
    logger.info("[node %s req %s] %s -> %s", "n1", "r1", "waiting", "processing")
    assert seen == [("[node %s req %s] %s -> %s", ("n1", "r1", "waiting", "processing"))]
    assert stream.getvalue() == "INFO [node n1 req r1] waiting -> processing\n"


def test_a_record_with_wrong_arguments_still_reaches_the_handler(output, monkeypatch):
    logger, _ = output
    errors = []
    monkeypatch.setattr(logger.handlers[0], "handleError", errors.append)
    logger.info("two %s %s", "one")  # noqa: PLE1206 - the filter must not raise into the caller
    assert len(errors) == 1


def _logging_conf(log_file):
    conf = config.load([])
    conf.set_override("log_file", str(log_file))
    return conf


def test_setup_logging_installs_the_filter_on_the_root_handler(tmp_path, logging_state):
    setup_logging(_logging_conf(tmp_path / "inspector.log"))
    root = logging.getLogger()
    assert any(isinstance(f, redaction.RedactingFilter) for f in root.handlers[0].filters)
    logging.getLogger("inspector.test").warning("ipmi_password=%s", SECRET)
    root.handlers[0].flush()
    text = (tmp_path / "inspector.log").read_text()
    assert "ipmi_password=***" in text and SECRET not in text


def test_an_exception_escaping_a_thread_is_logged_masked(tmp_path, logging_state):
    import threading  # noqa: PLC0415

    log = tmp_path / "log"
    setup_logging(_logging_conf(log))

    def fail():
        raise RuntimeError("cannot reach rabbit://inspector:s3cr3t-pass@127.0.0.1/")

    thread = threading.Thread(target=fail, name="doomed")
    thread.start()
    thread.join()
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = log.read_text()
    assert "Uncaught exception in doomed" in text
    assert "RuntimeError" in text
    assert "s3cr3t-pass" not in text
