"""Raw HTTP/1.1 on a socket, for the tests that send what no client library would."""

import socket


def answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The first answer on sock: status, headers (lower-case names), body; an answer that
    does not come in the socket's timeout fails the test."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"closed without an answer: {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(":", 1) for line in lines[1:])
    headers = {name.lower(): value.strip() for name, value in headers.items()}
    length = int(headers.get("content-length", 0))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed in the body"
        body += chunk
    return int(lines[0].split(" ", 2)[1]), headers, body[:length]
