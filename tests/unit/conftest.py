"""Unit-test fixtures: configuration and the Flask test client."""

import pytest

from inspector import conf as config
from inspector.api import app as app_factory


@pytest.fixture
def conf(tmp_path):
    conf = config.build()
    conf = config.load([], conf=conf)
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("auth_strategy", "noauth")
    return conf


@pytest.fixture
def app(conf):
    return app_factory.create_app(conf)


@pytest.fixture
def client(app):
    return app.test_client()
