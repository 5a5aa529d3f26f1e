"""Hostile framing and parsing: bodies over the limit however framed, broken chunked
framing, version headers of any length, JSON nested past the parser, lone surrogates,
node ids that are Ironic routes. Each is a 4xx with the API's error format, never a 500."""

import io
import json
import time

import pytest

from inspector.api import bodies

RULE = b'{"conditions": [], "actions": [{"action": "fail", "message": "x"}]}'


class Exploding(io.RawIOBase):
    """A wsgi.input whose chunk decoder fails, as a server's does on a bad chunk size."""

    def read(self, size=-1):
        raise ValueError("Bad chunked transfer size: 'zz'")


def call(app, environ) -> tuple[str, dict, bytes]:
    """The app's answer to a WSGI environ, as a server hands it over."""
    answer = []

    def start_response(status, headers, exc_info=None):
        answer.extend([status, dict(headers)])

    body = b"".join(app.wsgi_app(environ, start_response))
    return answer[0], answer[1], body


def chunked(app, path, stream) -> tuple[str, dict, bytes]:
    """A POST whose body came chunked: the server decodes the chunks and gives no length
    (cheroot and gunicorn alike)."""
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": stream,
        "wsgi.errors": io.StringIO(),
        "CONTENT_TYPE": "application/json",
        "HTTP_TRANSFER_ENCODING": "chunked",
        "REMOTE_ADDR": "127.0.0.1",
    }
    return call(app, environ)


def test_a_chunked_body_over_the_limit_is_413_before_the_app_reads_it(app, client, conf):
    limit = conf.api.max_request_body_size
    stream = io.BytesIO(b'{"description": "' + b"a" * (limit + 1) + b'"}')
    status, headers, body = chunked(app, "/v1/rules", stream)
    assert status.startswith("413")
    assert b"limit" in body
    assert headers["Connection"] == "close"
    assert headers["X-OpenStack-Ironic-Inspector-API-Maximum-Version"] == "1.19"
    # Read no further than the limit and one more piece.
    assert stream.tell() <= limit + bodies.READ_SIZE
    assert client.get("/v1/rules").json["rules"] == []


def test_a_chunked_body_within_the_limit_is_served(app, client):
    status, _, body = chunked(app, "/v1/rules", io.BytesIO(RULE))
    assert status.startswith("201"), body
    assert len(client.get("/v1/rules").json["rules"]) == 1


def test_continue_has_its_own_larger_limit_for_chunked_bodies_too(app, conf):
    size = conf.api.max_request_body_size + 10
    assert size < conf.api.max_continue_body_size
    data = b'{"inventory": {}, "logs": "' + b"A" * size + b'"}'
    status, _, body = chunked(app, "/v1/continue", io.BytesIO(data))
    # Past the body reader: refused for what it says, not for its size.
    assert status.startswith("400"), body
    assert b"limit" not in body
    too_big = b"A" * (conf.api.max_continue_body_size + 1)
    status, _, body = chunked(app, "/v1/continue", io.BytesIO(too_big))
    assert status.startswith("413"), body


def test_broken_chunked_framing_is_400(app):
    status, _, body = chunked(app, "/v1/rules", Exploding())
    assert status.startswith("400")
    assert json.loads(body) == {"error": {"message": "Malformed chunked request body"}}


@pytest.mark.parametrize("length", ["9" * 5000, "12abc", "-1", "١٢"])
def test_a_content_length_that_is_no_number_is_400(app, length):
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/v1/rules",
        "CONTENT_LENGTH": length,
        "wsgi.input": io.BytesIO(RULE),
    }
    status, _, body = call(app, environ)
    assert status.startswith("400"), status
    assert b"Content-Length" in body


def test_a_content_length_over_the_limit_is_413(client, conf):
    response = client.post(
        "/v1/rules",
        data=b"x" * (conf.api.max_request_body_size + 1),
        content_type="application/json",
    )
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("1." + "1" * 5000, 400),  # int() would refuse over 4300 digits: a 500 before
        ("1" * 40, 400),
        ("1.1111111111", 406),
        ("99999999.0", 406),
        ("1.٣", 400),  # a digit, but not an ASCII one
        ("1.2 1", 400),
        ("latest", 200),
        ("1.18", 200),
    ],
)
def test_version_headers_of_any_shape_are_never_a_500(client, value, status):
    for path in ("/", "/v1/rules"):
        response = client.get(path, headers={"X-OpenStack-Ironic-Inspector-API-Version": value})
        assert response.status_code == status, (path, response.json)
        assert response.headers["X-OpenStack-Ironic-Inspector-API-Maximum-Version"] == "1.19"


@pytest.mark.parametrize("depth", [101, 5000, 200_000])
def test_json_nested_deeper_than_the_limit_is_400(client, depth):
    body = b'{"conditions": ' + b"[" * depth + b"]" * depth + b"}"
    response = client.post("/v1/rules", data=body, content_type="application/json")
    assert response.status_code == 400
    assert "nested" in response.json["error"]["message"]


@pytest.mark.parametrize("escape", [b"\\ud800", b"\\uDFFF", b"x\\udc00y"])
def test_a_lone_surrogate_is_400(client, escape):
    body = RULE[:-1] + b', "description": "' + escape + b'"}'
    response = client.post("/v1/rules", data=body, content_type="application/json")
    assert response.status_code == 400
    assert "surrogate" in response.json["error"]["message"]


def test_a_surrogate_pair_is_one_character_and_accepted(client):
    body = RULE[:-1] + b', "description": "\\ud83d\\ude00"}'
    response = client.post("/v1/rules", data=body, content_type="application/json")
    assert response.status_code == 201
    assert response.json["description"] == "\U0001f600"


def test_invalid_utf8_is_400(client):
    body = RULE[:-1] + b', "description": "\xff\xfe"}'
    response = client.post("/v1/rules", data=body, content_type="application/json")
    assert response.status_code == 400
    assert "Malformed JSON" in response.json["error"]["message"]


@pytest.mark.parametrize("route", ["detail", "validate"])
def test_a_node_name_that_is_an_ironic_route_is_not_found_without_asking_ironic(
    client, ironic, route
):
    before = ironic.calls
    response = client.get(f"/v1/introspection/{route}")
    assert response.status_code == 404
    assert route in response.json["error"]["message"]
    assert ironic.calls == before


@pytest.mark.parametrize("ident", ["a" * 256, "no spaces", "caf\u00e9", "x/y"])
def test_a_node_id_neither_uuid_nor_name_is_400(client, ident):
    response = client.get(f"/v1/introspection/{ident}")
    assert response.status_code in (400, 404)
    if response.status_code == 400:
        assert "Invalid node UUID or name" in response.json["error"]["message"]


def cheroot_chunked(data: bytes):
    """cheroot's own chunked reader over `data` (its wire form)."""
    from cheroot import server as cheroot_server  # noqa: PLC0415

    return cheroot_server.ChunkedRFile(io.BufferedReader(io.BytesIO(data)), 0)


def wire(*chunks: bytes) -> bytes:
    return b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks) + b"0\r\n\r\n"


def test_cheroot_chunks_are_taken_whole_through_the_shim():
    """The shim uses cheroot's private `_fetch` and `buffer`: this fails if cheroot
    changes them (the reader would then fall back to read(), quadratic on one large
    chunk)."""
    from inspector.api import server  # noqa: PLC0415

    stream = cheroot_chunked(wire(b"abc", b"d" * 100_000))
    pieces = server.chunks(stream, 1024 * 1024)
    assert pieces is not None, "cheroot's ChunkedRFile changed: see inspector.api.server"
    assert [len(p) for p in pieces] == [3, 100_000]
    assert server.chunks(io.BytesIO(b"x"), 1024 * 1024) is None
    # A chunk past the limit it is given is refused before it is read (`maxlen`).
    past = cheroot_chunked(wire(b"x" * 100))
    with pytest.raises(OSError, match="Too Large"):
        next(server.chunks(past, 50))
    assert past.bytes_read < 10


def test_one_large_chunk_is_read_in_linear_time():
    body = b"A" * (32 * 1024 * 1024)
    started = time.process_time()
    assert bodies.read_bounded(cheroot_chunked(wire(body)), len(body)) == body
    # Read 64 KiB at a time through cheroot's read(), this took over 10 s of CPU.
    assert time.process_time() - started < 2.0


def test_too_many_chunks_is_refused_before_reading_them_all():
    many = wire(*[b"x"] * (bodies.MIN_CHUNKS + 1))
    with pytest.raises(bodies.TooManyChunks):
        bodies.read_bounded(cheroot_chunked(many), 1024 * 1024)
    fine = wire(*[b"x"] * bodies.MIN_CHUNKS)
    assert bodies.read_bounded(cheroot_chunked(fine), 1024 * 1024) == b"x" * bodies.MIN_CHUNKS


def test_a_cheroot_chunk_past_the_servers_maximum_is_413(app):
    from cheroot import server as cheroot_server  # noqa: PLC0415

    stream = cheroot_server.ChunkedRFile(io.BufferedReader(io.BytesIO(wire(b"x" * 5000))), 100)
    status, _, body = chunked(app, "/v1/rules", stream)
    assert status.startswith("413"), body
