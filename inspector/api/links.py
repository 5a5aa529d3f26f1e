"""Links under the API root, right behind a proxy (X-Forwarded-* and prefix): absolute,
or as a path from the server's root (rules, as ironic-inspector has them)."""

import functools

import flask
from werkzeug.sansio.utils import get_current_url

#: API roots remembered: the Host header is the client's, so the memo is bounded.
MAX_ROOTS = 256


def link(path: str, rel: str = "self", *, under: str | None = None) -> dict[str, str]:
    """The link to `path` under `under` (the request's root(), read once for a listing's
    many links) or the current request's root."""
    return {"rel": rel, "href": (under or root()) + path}


def path_link(path: str, rel: str = "self", *, under: str | None = None) -> dict[str, str]:
    """The link to `path` as a path from the server's root, prefix included
    (`/v1/rules/<uuid>`, `/inspector/v1/rules/<uuid>` under a prefix): what
    ironic-inspector's flask.url_for gave. `under` is path_root(), read once for a
    listing's many links."""
    return {"rel": rel, "href": (under if under is not None else path_root()) + path}


def path_root() -> str:
    """The path of the current request's API root, with one slash at the end."""
    return flask.request.root_path.rstrip("/") + "/"


def root() -> str:
    """The API root of the current request, with one slash at the end."""
    request = flask.request
    # request.host is already validated (trusted hosts) and set by Flask's routing.
    return _root(request.scheme, request.host, request.root_path)


@functools.lru_cache(maxsize=MAX_ROOTS)
def _root(scheme: str, host: str, root_path: str) -> str:
    """request.url_root with one slash at the end, memoised: building it (IDNA
    decoding, quoting) costs more than serialising a status document."""
    return get_current_url(scheme, host, root_path).rstrip("/") + "/"
