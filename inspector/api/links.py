"""Absolute links under the API root, right behind a proxy (X-Forwarded-* and prefix)."""

import flask


def link(path: str, rel: str = "self") -> dict[str, str]:
    return {"rel": rel, "href": flask.request.url_root.rstrip("/") + "/" + path}
