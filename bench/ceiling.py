"""The ceiling for bench/api.py: the cheapest Flask JSON endpoint, under the same server."""

import flask

application = flask.Flask("ceiling")


@application.get("/")
@application.get("/ping")
def ping():
    return {"ok": True}
