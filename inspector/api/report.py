"""/v1/report/hardware (API 1.19): the fleet hardware report over every node's stored
processed data (inspector.processing.hardware_report groups it; the store streams it)."""

import flask
from flask.typing import ResponseReturnValue

from inspector import errors
from inspector.api import params, versions
from inspector.api.context import services
from inspector.processing import hardware_report

blueprint = flask.Blueprint("report", __name__)


@blueprint.get("/v1/report/hardware")
def hardware() -> ResponseReturnValue:
    versions.require(versions.HISTORY, "GET /v1/report/hardware")
    services().policy.authorize("introspection:report", flask.g.credentials)
    params.only("by", "nodes")
    category = flask.request.args.get("by", "system")
    if category not in hardware_report.CATEGORIES:
        raise errors.BadRequest(
            f"Invalid by: {category!r}, use one of {', '.join(hardware_report.CATEGORIES)}"
        )
    members = params.boolean("nodes", default=False)
    rows = services().store.processed_data(names=members)
    return hardware_report.build(category, rows, members=members)
