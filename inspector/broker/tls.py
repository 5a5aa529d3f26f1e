"""TLS to RabbitMQ: [oslo_messaging_rabbit] ssl, ssl_ca_file, ssl_cert_file and
ssl_key_file as kombu's `ssl` argument (the queue, the messaging notification driver) and
as oslo.messaging's own options (the firewall channel).

TLS is on with `ssl = true` or an `amqps://` URL. The broker's certificate is then always
verified, chain and host name, against ssl_ca_file or else the system's CAs; a client
certificate is presented when ssl_cert_file is set. Redis and memory URLs are untouched:
a `rediss://` URL carries kombu's own `ssl_*` query parameters.
"""

import dataclasses
import os
import ssl
import urllib.parse
from typing import Any

from oslo_config import cfg

from inspector.conf.oslo_messaging_rabbit import GROUP
from inspector.errors import ConfigError

#: URL schemes of RabbitMQ for kombu; amqps is TLS whatever the options say.
AMQP_SCHEMES = ("amqp", "pyamqp", "amqps")
TLS_SCHEMES = ("amqps",)


@dataclasses.dataclass(frozen=True)
class Tls:
    """What [oslo_messaging_rabbit] says about TLS."""

    enabled: bool = False
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> "Tls":
        group = conf[GROUP]
        return cls(group.ssl, group.ssl_ca_file, group.ssl_cert_file, group.ssl_key_file)

    def check(self) -> None:
        """ConfigError naming the option when a file TLS would use cannot be read: at
        start-up, not at each connection attempt."""
        for name, path in (
            ("ssl_ca_file", self.ca_file),
            ("ssl_cert_file", self.cert_file),
            ("ssl_key_file", self.key_file),
        ):
            if path and not os.access(path, os.R_OK):
                raise ConfigError(f"[{GROUP}] {name}: cannot read {path}")
        if self.key_file and not self.cert_file:
            raise ConfigError(f"[{GROUP}] ssl_key_file is set without ssl_cert_file")

    def applies_to(self, url: str) -> bool:
        """Whether a kombu connection to url uses TLS: RabbitMQ with `ssl` or amqps."""
        scheme = url.partition("://")[0].lower()
        return scheme in TLS_SCHEMES or (self.enabled and scheme in AMQP_SCHEMES)

    def kombu_ssl(self, url: str) -> dict[str, Any] | None:
        """kombu.Connection's `ssl` for url: None without TLS. The certificate is checked
        against the URL's host as written (kombu would check `localhost` as 127.0.0.1);
        for a failover URL (`;`), against the host each attempt connects to (None: kombu
        writes it in, so each connection gets a dict of its own)."""
        if not self.applies_to(url):
            return None
        self.check()
        host = None if ";" in url else urllib.parse.urlsplit(url).hostname
        options: dict[str, Any] = {"cert_reqs": ssl.CERT_REQUIRED, "server_hostname": host}
        if self.ca_file:
            options["ca_certs"] = self.ca_file
        if self.cert_file:
            options["certfile"] = self.cert_file
            options["keyfile"] = self.key_file or None
        return options

    def oslo_messaging_options(self, *, force: bool = False) -> dict[str, Any]:
        """The same as oslo.messaging's [oslo_messaging_rabbit] options; `force` turns TLS
        on (an amqps:// URL, which oslo.messaging writes rabbit:// with ssl)."""
        if self.enabled or force:
            self.check()
        return {
            "ssl": self.enabled or force,
            "ssl_ca_file": self.ca_file,
            "ssl_cert_file": self.cert_file,
            "ssl_key_file": self.key_file,
        }


#: The options' defaults (immutable): TLS only for amqps:// URLs, with the system's CAs.
DEFAULT_TLS = Tls()
