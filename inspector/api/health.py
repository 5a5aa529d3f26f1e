"""GET /healthcheck: is this API process able to serve (its database answers)?"""

import flask

from inspector import errors
from inspector.api import auth
from inspector.api.context import services

blueprint = flask.Blueprint("health", __name__)


@blueprint.get("/healthcheck")
@auth.public
def healthcheck():
    try:
        services().store.ping()
    except errors.InspectorError as exc:
        return {"status": "unavailable", "reason": exc.message}, 503
    return {"status": "ok"}
