"""GET /healthcheck: is this API process able to serve (its database answers)?

200 {"status": "ok"}, or 503 with the usual error body.
"""

import flask
from flask.typing import ResponseReturnValue

from inspector import errors
from inspector.api import auth
from inspector.api.context import services

blueprint = flask.Blueprint("health", __name__)


@blueprint.get("/healthcheck")
@auth.public
def healthcheck() -> ResponseReturnValue:
    try:
        services().store.ping()
    except errors.InspectorError as exc:
        raise errors.ServiceUnavailable(f"Not healthy: {exc.message}") from exc
    return {"status": "ok"}
