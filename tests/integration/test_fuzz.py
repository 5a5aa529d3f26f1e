"""Fuzzing the real WSGI app against docs/openapi.yaml with schemathesis.

Every operation of the document gets its examples, schemathesis' coverage cases and a few
generated requests (valid and invalid), sent in-process to the app built as in production
but with a SQLite store, the recording queue and the fake Ironic (two nodes: the ones the
document's `node_id` examples name, so the examples reach a real node). Each answer must not
be a 5xx, and its status code, content type, headers and body must be documented.

Reproducible: derandomized, no example database. Bounded: a few examples per operation.
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
MAX_EXAMPLES = 25


def node_examples(document: dict) -> dict[str, str]:
    examples = document["components"]["parameters"]["NodeId"]["examples"]
    return {name: example["value"] for name, example in examples.items()}


@pytest.fixture
def api_schema(tmp_path):
    conf = config.load([], conf=config.build())
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("auth_strategy", "noauth")
    conf.set_override("store_data", "database", group="processing")
    # The token bucket depends on the wall clock: no 429 keeps the run reproducible.
    conf.set_override("continue_rate_limit", 0, group="api")
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    schema.upgrade(url)
    store = Store.from_url(url)

    document = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    nodes = node_examples(document)
    ironic = FakeIronic()
    ironic.add_node(uuid=nodes["uuid"], name="fuzz-0")
    ironic.add_node(name=nodes["name"], provision_state="active")
    app = app_factory.create_app(conf, store=store, queue=RecordingQueue(), ironic=ironic)

    loaded = schemathesis.openapi.from_dict(document)
    loaded.app = app
    yield loaded
    store.close()


fuzz = schemathesis.pytest.from_fixture("api_schema")


@fuzz.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_api_conforms_to_openapi(case):
    case.call_and_validate(checks=CHECKS)
