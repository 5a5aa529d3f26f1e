"""Public discovery routes: GET / (API versions) and GET /v1 (resources)."""

import flask

from inspector.api import versions

blueprint = flask.Blueprint("root", __name__)

#: Resources listed by GET /v1, as ironic-inspector lists them.
RESOURCES = ("continue", "introspection", "rules")


def link(path: str, rel: str = "self") -> dict[str, str]:
    """An absolute link under the API root (correct behind a proxy with a prefix)."""
    return {"rel": rel, "href": flask.request.url_root.rstrip("/") + "/" + path}


@blueprint.get("/")
def root():
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
def version_root():
    return {"resources": [{"name": name, "links": [link(f"v1/{name}")]} for name in RESOURCES]}
