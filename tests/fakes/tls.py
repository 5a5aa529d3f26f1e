"""TLS for tests: a throw-away CA with a server certificate for 127.0.0.1 and a client
certificate (cryptography), and a TLS-terminating server on 127.0.0.1 that requires a
client certificate of that CA, records who connected, and forwards the clear stream to a
TCP service (or, without one, closes after the handshake)."""

import contextlib
import dataclasses
import datetime
import ipaddress
import pathlib
import select
import socket
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Seconds between two looks at the stop flag; the longest a handshake may take.
TICK = 0.05
HANDSHAKE_TIMEOUT = 10.0
#: The client certificate's common name.
CLIENT_NAME = "inspector-client"


@dataclasses.dataclass(frozen=True)
class Pki:
    ca: pathlib.Path
    server_cert: pathlib.Path
    server_key: pathlib.Path
    client_cert: pathlib.Path
    client_key: pathlib.Path
    #: Another CA, which signed nothing here.
    other_ca: pathlib.Path
    #: A server certificate of the CA for another address (192.0.2.1).
    misnamed_cert: pathlib.Path
    misnamed_key: pathlib.Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: pathlib.Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _ca(common_name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    usage: x509.ObjectIdentifier,
    addresses: tuple[str, ...] = (),
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
    )
    if addresses:
        names = [x509.IPAddress(ipaddress.ip_address(address)) for address in addresses]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def make_pki(directory: pathlib.Path) -> Pki:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = _ca("inspector test CA")
    other, _other_key = _ca("another CA")
    server, server_key = _leaf(
        ca, ca_key, "127.0.0.1", ExtendedKeyUsageOID.SERVER_AUTH, ("127.0.0.1",)
    )
    client, client_key = _leaf(ca, ca_key, CLIENT_NAME, ExtendedKeyUsageOID.CLIENT_AUTH)
    misnamed, misnamed_key = _leaf(
        ca, ca_key, "192.0.2.1", ExtendedKeyUsageOID.SERVER_AUTH, ("192.0.2.1",)
    )
    pki = Pki(
        ca=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        other_ca=directory / "other-ca.pem",
        misnamed_cert=directory / "misnamed.pem",
        misnamed_key=directory / "misnamed.key",
    )
    for cert, path in (
        (ca, pki.ca),
        (server, pki.server_cert),
        (client, pki.client_cert),
        (other, pki.other_ca),
        (misnamed, pki.misnamed_cert),
    ):
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(server_key, pki.server_key)
    _write_key(client_key, pki.client_key)
    _write_key(misnamed_key, pki.misnamed_key)
    return pki


class TlsTerminator:
    """TLS on 127.0.0.1:`port`, a client certificate of the CA required; `clients` lists
    the common names of the clients whose handshake succeeded, `refused` the reasons of
    the handshakes that failed. With `upstream` (host, port), the clear stream goes there.
    `misnamed`: it presents a certificate of the CA for another address."""

    def __init__(
        self, pki: Pki, upstream: tuple[str, int] | None = None, *, misnamed: bool = False
    ) -> None:
        self.upstream = upstream
        self.clients: list[str] = []
        self.refused: list[str] = []
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if misnamed:
            self._context.load_cert_chain(pki.misnamed_cert, pki.misnamed_key)
        else:
            self._context.load_cert_chain(pki.server_cert, pki.server_key)
        self._context.load_verify_locations(pki.ca)
        self._context.verify_mode = ssl.CERT_REQUIRED
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(TICK)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._guard = threading.Lock()
        self._accepting = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> "TlsTerminator":
        self._accepting.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._accepting.join()
        self._listener.close()
        for thread in list(self._threads):
            thread.join()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            with self._guard:
                self._threads.append(thread)
            thread.start()

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(HANDSHAKE_TIMEOUT)
        try:
            tls = self._context.wrap_socket(client, server_side=True)
        except (ssl.SSLError, OSError) as error:
            with self._guard:
                self.refused.append(str(error))
            client.close()
            return
        subject = dict(item[0] for item in tls.getpeercert()["subject"])
        with self._guard:
            self.clients.append(subject["commonName"])
        with contextlib.closing(tls):
            if self.upstream is not None:
                with socket.create_connection(self.upstream, timeout=HANDSHAKE_TIMEOUT) as plain:
                    self._pipe(tls, plain)

    def _pipe(self, tls: ssl.SSLSocket, plain: socket.socket) -> None:
        peers = {tls: plain, plain: tls}
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select(list(peers), [], [], TICK)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    # Decrypted bytes select cannot see: what the last record held.
                    while isinstance(sock, ssl.SSLSocket) and sock.pending():
                        data += sock.recv(sock.pending())
                    peers[sock].sendall(data)
        except OSError:
            return
