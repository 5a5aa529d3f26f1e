"""/v1/rules: create, list, show and delete introspection rules, and check them against
nodes' stored data (evaluation is inspector.processing's)."""

import flask
from flask.typing import ResponseReturnValue

from inspector.api import params, schemas, versions
from inspector.api.context import services
from inspector.api.links import path_link, path_root
from inspector.processing import rule_check
from inspector.processing.rule_schema import validate_rule

blueprint = flask.Blueprint("rules", __name__)


def authorize(rule: str) -> None:
    services().policy.authorize(rule, flask.g.credentials)


def _with_links(rule: dict, under: str | None = None) -> dict:
    # A path, not a URL: ironic-inspector's rule links are relative (its introspection
    # links are absolute, and so are ours).
    return {**rule, "links": [path_link(f"v1/rules/{rule['uuid']}", under=under)]}


@blueprint.post("/v1/rules")
def create() -> ResponseReturnValue:
    authorize("introspection:rule:create")
    params.only()
    body = schemas.validate(params.json_object(), schemas.RULE, "rule")
    rule = services().store.create_rule(validate_rule(body))
    code = 201 if flask.g.api_version >= (1, 6) else 200
    return _with_links(rule), code


@blueprint.post("/v1/rules/check")
def check() -> ResponseReturnValue:
    """Evaluate rules against nodes' stored processed data, applying nothing (1.19)."""
    versions.require(versions.HISTORY, "POST /v1/rules/check")
    authorize("introspection:rule:check")
    params.only()
    body = schemas.validate(params.json_object(), schemas.RULES_CHECK, "rules check")
    svc = services()
    if "uuids" in body:
        body = {**body, "uuids": [params.rule_uuid(uuid) for uuid in body["uuids"]]}
    rules = rule_check.rules_of(
        body, svc.store, lambda rule: schemas.validate(rule, schemas.RULE, "rule")
    )
    idents = rule_check.nodes_of(body, svc.conf.api.max_rules_check_nodes)
    nodes = rule_check.load_nodes(map(params.node_ident, idents), svc.store, svc.ironic)
    return {"nodes": rule_check.check(svc.conf, rules, nodes)}


@blueprint.get("/v1/rules")
def list_rules() -> ResponseReturnValue:
    authorize("introspection:rule:get")
    params.only()
    under = path_root()
    return {"rules": [_with_links(rule, under) for rule in services().store.rule_summaries()]}


@blueprint.delete("/v1/rules")
def delete_all() -> ResponseReturnValue:
    authorize("introspection:rule:delete")
    params.only()
    services().store.delete_rules()
    return "", 204


@blueprint.get("/v1/rules/<uuid>")
def get(uuid: str) -> ResponseReturnValue:
    authorize("introspection:rule:get")
    params.only()
    return _with_links(services().store.get_rule(params.rule_uuid(uuid)))


@blueprint.delete("/v1/rules/<uuid>")
def delete(uuid: str) -> ResponseReturnValue:
    authorize("introspection:rule:delete")
    params.only()
    services().store.delete_rule(params.rule_uuid(uuid))
    return "", 204
