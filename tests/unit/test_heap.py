"""Start-up's heap settled out of the garbage collector's reach (lifecycle.settle_heap)."""

import gc
import weakref

import pytest

from inspector.api.wsgi import LazyApplication
from inspector.lifecycle import settle_heap


class Node:
    pass


@pytest.fixture(autouse=True)
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_start_up_garbage_is_collected_and_what_lives_is_frozen():
    cycle = Node()
    cycle.self = cycle
    dead = weakref.ref(cycle)
    alive = Node()
    del cycle
    frozen = settle_heap()
    assert dead() is None  # collected first, not frozen with the rest
    # At least what it froze: a thread another test left behind may freeze more since.
    assert 0 < frozen <= gc.get_freeze_count()
    assert not any(obj is alive for obj in gc.get_objects())  # out of the collector's reach


def test_the_wsgi_application_settles_the_heap_once_built(tmp_path):
    config = tmp_path / "inspector.conf"
    config.write_text(
        f"[DEFAULT]\nauth_strategy = noauth\n"
        f"[database]\nconnection = sqlite:///{tmp_path / 'db.sqlite'}\n"
    )
    application = LazyApplication({"INSPECTOR_CONFIG_FILES": str(config)})
    statuses = []
    body = application(
        {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": "/",
            "SERVER_NAME": "x",
            "SERVER_PORT": "80",
            "wsgi.url_scheme": "http",
            "wsgi.input": None,
        },
        lambda status, headers: statuses.append(status),
    )
    b"".join(body)
    assert statuses and statuses[0].startswith("200")
    assert gc.get_freeze_count() > 0
