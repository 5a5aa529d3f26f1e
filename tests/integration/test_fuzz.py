"""Fuzzing the real WSGI app against docs/openapi.yaml with schemathesis.

Every operation of the document gets its examples, schemathesis' coverage cases (including
undocumented methods) and up to MAX_EXAMPLES generated requests, valid and invalid, sent
in-process to the app built as in production but with a SQLite store, the recording queue
and the fake Ironic (two nodes: the ones the document's `node_id` examples name, so the
examples reach a real node). Each answer must not be a 5xx, and its status code, content
type, headers and body must be documented.

Reproducible: derandomized, no example database, no wall-clock rate limit. Bounded: about
twenty seconds in all.
"""

import pathlib

import pytest
import schemathesis
import yaml
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from inspector import conf as config
from inspector.api import app as app_factory
from inspector.store import Store, schema
from tests.fakes.ironic import FakeIronic
from tests.unit.conftest import RecordingQueue

pytestmark = pytest.mark.integration

DOCUMENT = pathlib.Path(__file__).parents[2] / "docs" / "openapi.yaml"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
#: Generated requests per operation, on top of the document's examples and the coverage
#: cases; the whole run stays well under a minute.
MAX_EXAMPLES = 50


DOCUMENT_DATA = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
#: Loaded at import, not through `schemathesis.pytest.from_fixture`: its lazy loader sets
#: `Function._nodeid`, which pytest 9.2 no longer has. The app comes from a fixture instead.
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT_DATA)


def node_examples(document: dict) -> dict[str, str]:
    examples = document["components"]["parameters"]["NodeId"]["examples"]
    return {name: example["value"] for name, example in examples.items()}


def seed(app, store, node_uuid: str) -> None:
    """State for the examples to reach past 404: an introspection in `starting` whose
    lookup attributes are the document's ramdisk example (so its /v1/continue is a 200),
    with processed and raw data stored, and the rule the document's `uuid` example names."""
    ramdisk = DOCUMENT_DATA["components"]["schemas"]["RamdiskData"]["example"]
    inventory = ramdisk["inventory"]
    macs = [i["mac_address"] for i in inventory["interfaces"]]
    client = app.test_client()
    assert client.post(f"/v1/introspection/{node_uuid}").status_code == 202
    store.set_attributes(node_uuid, {"mac": macs, "bmc_address": [inventory["bmc_address"]]})
    store.store_data(node_uuid, ramdisk, processed=False)
    store.store_data(node_uuid, {"memory_mb": 4096}, processed=True)
    rule = {
        **DOCUMENT_DATA["components"]["schemas"]["RuleDocument"]["example"],
        "uuid": DOCUMENT_DATA["components"]["parameters"]["RuleUuid"]["example"],
    }
    assert client.post("/v1/rules", json=rule).status_code == 201


@pytest.fixture
def fuzzed_app(tmp_path):
    """A fresh app per operation, shared by that operation's examples (state accumulates)."""
    conf = config.load([], conf=config.build())
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("auth_strategy", "noauth")
    conf.set_override("store_data", "database", group="processing")
    # The token bucket depends on the wall clock: no 429 keeps the run reproducible.
    conf.set_override("continue_rate_limit", 0, group="api")
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    schema.upgrade(url)
    store = Store.from_url(url)
    nodes = node_examples(DOCUMENT_DATA)
    ironic = FakeIronic()
    ironic.add_node(uuid=nodes["uuid"], name="fuzz-0")
    ironic.add_node(name=nodes["name"], provision_state="active")
    app = app_factory.create_app(conf, store=store, queue=RecordingQueue(), ironic=ironic)
    seed(app, store, nodes["uuid"])
    yield app
    store.close()


@SCHEMA.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    # The app fixture is function-scoped on purpose: one app for all examples of an
    # operation, so that they build on each other's state.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_api_conforms_to_openapi(case, fuzzed_app):
    case.call_and_validate(app=fuzzed_app, checks=CHECKS)
