"""/v1/rules: create, list, show and delete introspection rules (evaluation is elsewhere)."""

import flask

from inspector.api import params, schemas
from inspector.api.context import services
from inspector.api.links import path_link, path_root
from inspector.processing.rule_schema import validate_rule

blueprint = flask.Blueprint("rules", __name__)


def authorize(rule: str) -> None:
    services().policy.authorize(rule, flask.g.credentials)


def _with_links(rule: dict, under: str | None = None) -> dict:
    # A path, not a URL: ironic-inspector's rule links are relative (its introspection
    # links are absolute, and so are ours).
    return {**rule, "links": [path_link(f"v1/rules/{rule['uuid']}", under=under)]}


@blueprint.post("/v1/rules")
def create():
    authorize("introspection:rule:create")
    params.only()
    body = schemas.validate(params.json_object(), schemas.RULE, "rule")
    rule = services().store.create_rule(validate_rule(body))
    code = 201 if flask.g.api_version >= (1, 6) else 200
    return _with_links(rule), code


@blueprint.get("/v1/rules")
def list_rules():
    authorize("introspection:rule:get")
    params.only()
    under = path_root()
    return {"rules": [_with_links(rule, under) for rule in services().store.rule_summaries()]}


@blueprint.delete("/v1/rules")
def delete_all():
    authorize("introspection:rule:delete")
    params.only()
    services().store.delete_rules()
    return "", 204


@blueprint.get("/v1/rules/<uuid>")
def get(uuid: str):
    authorize("introspection:rule:get")
    params.only()
    return _with_links(services().store.get_rule(params.rule_uuid(uuid)))


@blueprint.delete("/v1/rules/<uuid>")
def delete(uuid: str):
    authorize("introspection:rule:delete")
    params.only()
    services().store.delete_rule(params.rule_uuid(uuid))
    return "", 204
