"""Unit-test fixtures: configuration and the Flask test client."""

import logging
import sys
import threading

import pytest

from inspector import conf as config
from inspector.api import app as app_factory
from inspector.store import Store, schema
from tests.api_steps import RecordingQueue
from tests.fakes.ironic import FakeIronic


@pytest.fixture
def logging_state():
    """Whatever a test's logging set-up (inspector.api.logs) changes, put back after it:
    every logger's handlers (those set up closed), level and propagation
    (default_log_levels, a log_config_append file), the exception hooks."""
    saved = {logger: (logger.level, logger.handlers[:], logger.propagate) for logger in _loggers()}
    hooks = threading.excepthook, sys.excepthook
    yield
    kept = {id(handler) for _level, handlers, _propagate in saved.values() for handler in handlers}
    for logger in _loggers():
        for handler in logger.handlers:
            if id(handler) not in kept:
                handler.close()
        level, handlers, propagate = saved.get(logger, (logging.NOTSET, [], True))
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate = propagate
    threading.excepthook, sys.excepthook = hooks


def _loggers() -> list[logging.Logger]:
    others = logging.Logger.manager.loggerDict.values()
    return [logging.getLogger(), *(x for x in others if isinstance(x, logging.Logger))]


@pytest.fixture
def conf(tmp_path):
    conf = config.build()
    conf = config.load([], conf=conf)
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("auth_strategy", "noauth")
    return conf


@pytest.fixture
def store(tmp_path):
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    schema.upgrade(url)
    db = Store.from_url(url)
    yield db
    db.close()


@pytest.fixture
def queue():
    return RecordingQueue()


@pytest.fixture
def ironic():
    return FakeIronic()


@pytest.fixture
def app(conf, store, queue, ironic):
    return app_factory.create_app(conf, store=store, queue=queue, ironic=ironic)


@pytest.fixture
def client(app):
    return app.test_client()
