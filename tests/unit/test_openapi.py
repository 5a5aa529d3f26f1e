"""docs/openapi.yaml: a valid OpenAPI 3.0 document that describes exactly the app's routes."""

import pathlib
import re

import pytest
import yaml
from openapi_spec_validator import OpenAPIV30SpecValidator, validate

from inspector.api import auth

DOCUMENT = pathlib.Path(__file__).parents[2] / "docs" / "openapi.yaml"
METHODS = {"get", "put", "post", "delete", "patch"}
#: Methods Flask adds by itself to every route.
IMPLICIT = {"HEAD", "OPTIONS"}
MIN_HEADER = "X-OpenStack-Ironic-Inspector-API-Minimum-Version"
MAX_HEADER = "X-OpenStack-Ironic-Inspector-API-Maximum-Version"


@pytest.fixture(scope="module")
def document():
    return yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))


def operations(document):
    """(path, METHOD) -> operation object."""
    return {
        (path, method.upper()): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def deref(document, obj):
    """obj with its local $ref followed (components only)."""
    while isinstance(obj, dict) and "$ref" in obj:
        target = document
        for part in obj["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        obj = target
    return obj


def app_routes(app):
    """(path, METHOD) -> view function, in OpenAPI path syntax, without Flask's extras."""
    routes = {}
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        for method in rule.methods - IMPLICIT:
            routes[(path, method)] = app.view_functions[rule.endpoint]
    return routes


def test_document_is_valid_openapi_30(document):
    assert document["openapi"].startswith("3.0.")
    validate(document, cls=OpenAPIV30SpecValidator)


def test_every_route_is_documented(app, document):
    undocumented = set(app_routes(app)) - set(operations(document))
    assert not undocumented, f"routes missing from {DOCUMENT.name}: {sorted(undocumented)}"


def test_every_documented_operation_exists(app, document):
    unknown = set(operations(document)) - set(app_routes(app))
    assert not unknown, f"{DOCUMENT.name} documents routes the app lacks: {sorted(unknown)}"


def test_public_routes_have_empty_security(app, document):
    routes = app_routes(app)
    for key, operation in operations(document).items():
        public = auth.is_public(routes[key])
        assert (operation.get("security") == []) is public, key


def test_version_and_auth_errors_are_documented(app, document):
    """Version negotiation runs on every route; authentication on the protected ones."""
    routes = app_routes(app)
    for key, operation in operations(document).items():
        codes = set(operation["responses"])
        assert {"400", "406"} <= codes, key
        if auth.is_public(routes[key]):
            assert not {"401"} & codes, key
        else:
            assert {"401", "403"} <= codes, key


def test_every_answer_carries_the_version_range(document):
    for key, operation in operations(document).items():
        for code, response in operation["responses"].items():
            headers = deref(document, response).get("headers", {})
            assert {MIN_HEADER, MAX_HEADER} <= set(headers), (key, code)


def test_errors_use_the_error_body(document):
    error = {"$ref": "#/components/schemas/Error"}
    for key, operation in operations(document).items():
        for code, response in operation["responses"].items():
            if int(code) < 400 or (key == ("/healthcheck", "GET") and code == "503"):
                continue
            content = deref(document, response)["content"]
            assert content == {"application/json": {"schema": error}}, (key, code)


def test_path_parameters_match_the_path(document):
    for path, item in document["paths"].items():
        declared = {
            deref(document, p)["name"]
            for p in item.get("parameters", [])
            if deref(document, p)["in"] == "path"
        }
        assert declared == set(re.findall(r"{([^}]+)}", path)), path
