"""The openstacksdk connection to Ironic, built from the [ironic] keystoneauth options.

Owns the choice of microversion and switches off the library's own retries: the client's
retry policy ([ironic] max_retries, retry_interval) is the only one.
"""

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading, noauth
from openstack import connection as sdk_connection
from openstack import exceptions as sdk_exceptions
from oslo_config import cfg

from inspector.conf.ironic import GROUP
from inspector.errors import ConfigError

#: The Bare Metal API microversion of every request. What we use exists by 1.34 (port
#: physical_network); 1.81 (Ironic 2023.1, node inventory) is what our tests and the real
#: Ironic peers run, and pinning it keeps replies the same whatever Ironic's maximum.
API_VERSION = "1.81"
#: Seconds a request may take when [ironic] timeout is unset: a hung Ironic must not hang
#: a worker for ever.
DEFAULT_TIMEOUT = 30.0


def connect(conf: cfg.ConfigOpts) -> sdk_connection.Connection:
    """A Connection whose baremetal proxy talks to the Ironic that conf names. No I/O yet.

    `auth_type = none` with `endpoint_override` reaches a standalone Ironic; any other
    keystoneauth plugin (password, v3applicationcredential...) finds Ironic in the catalog
    unless endpoint_override says where it is.
    """
    group = conf[GROUP]
    try:
        auth = loading.load_auth_from_conf_options(conf, GROUP)
    except (ks_exceptions.ClientException, cfg.Error) as exc:
        raise ConfigError(f"[{GROUP}] authentication options: {exc}") from exc
    if auth is None:
        if not group.endpoint_override:
            raise ConfigError(
                f"[{GROUP}] sets neither auth_type nor endpoint_override: set auth_type = none "
                "and endpoint_override for a standalone Ironic, or keystone credentials"
            )
        auth = noauth.NoAuth()
    session = loading.load_session_from_conf_options(conf, GROUP, auth=auth)
    if session.timeout is None:
        session.timeout = DEFAULT_TIMEOUT
    options = {
        "baremetal_api_version": API_VERSION,
        "baremetal_connect_retries": 0,
        "baremetal_status_code_retries": 0,
    }
    if group.endpoint_override:
        options["baremetal_endpoint_override"] = group.endpoint_override
    if group.region_name:
        options["region_name"] = group.region_name
    if group.valid_interfaces:
        options["baremetal_interface"] = group.valid_interfaces
    if group.service_name:
        options["baremetal_service_name"] = group.service_name
    try:
        return sdk_connection.Connection(session=session, **options)
    except (sdk_exceptions.SDKException, ks_exceptions.ClientException) as exc:
        raise ConfigError(f"cannot set up the connection to Ironic: {exc}") from exc
