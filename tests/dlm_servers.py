"""The DLM servers of scripts/services besides Redis: etcd, ZooKeeper and memcached.

`dlm_url("etcd")` is the tooz URL in INSPECTOR_TEST_ETCD_URL once a coordinator could
connect to it; like the fixtures of tests/conftest.py, a missing server skips the test
on a laptop and fails it when CI is set.
"""

from inspector.coordination import connect
from inspector.errors import ConfigError, ServiceUnavailable
from tests.conftest import service_unavailable, service_url

#: The DLMs scripts/services starts for the coordinator's tests (Redis has its fixture).
SERVICES = ("etcd", "zookeeper", "memcached")

_answered: dict[str, str] = {}


def dlm_url(service: str) -> str:
    """The URL of service's test server, once a tooz coordinator connected to it."""
    if service in _answered:
        return _answered[service]
    url = service_url(f"INSPECTOR_TEST_{service.upper()}_URL", service)
    try:
        coordinator = connect(url, "tests-probe", max_retries=0)
    except ConfigError as exc:  # its client library is missing
        service_unavailable(exc.message)
    try:
        coordinator.start()
    except ServiceUnavailable as exc:
        service_unavailable(f"{service} at {url} does not answer: {exc.message}")
    finally:
        coordinator.stop()
    _answered[service] = url
    return url
