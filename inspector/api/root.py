"""Public discovery routes: GET / (API versions) and GET /v1 (resources)."""

import flask
from flask.typing import ResponseReturnValue

from inspector.api import auth, versions
from inspector.api.links import link

blueprint = flask.Blueprint("root", __name__)

#: Resources listed by GET /v1, as ironic-inspector lists them.
RESOURCES = ("continue", "introspection", "rules")


@blueprint.get("/")
@auth.public
def root() -> ResponseReturnValue:
    return {
        "versions": [
            {
                "id": versions.format_version(versions.MAXIMUM),
                "status": "CURRENT",
                "links": [link("v1")],
            }
        ]
    }


@blueprint.get("/v1")
@auth.public
def version_root() -> ResponseReturnValue:
    return {"resources": [{"name": name, "links": [link(f"v1/{name}")]} for name in RESOURCES]}
