"""GET / and GET /v1, version negotiation, headers and the error format."""

import pytest

from inspector.api import versions

MIN_HEADER = "X-OpenStack-Ironic-Inspector-API-Minimum-Version"
MAX_HEADER = "X-OpenStack-Ironic-Inspector-API-Maximum-Version"
VERSION_HEADER = "X-OpenStack-Ironic-Inspector-API-Version"


def assert_version_headers(response):
    assert response.headers[MIN_HEADER] == "1.0"
    assert response.headers[MAX_HEADER] == "1.19"


def test_root_lists_the_current_version(client):
    response = client.get("/")
    assert response.status_code == 200
    assert response.json == {
        "versions": [
            {
                "id": "1.19",
                "status": "CURRENT",
                "links": [{"rel": "self", "href": "http://localhost/v1"}],
            }
        ]
    }
    assert_version_headers(response)


def test_v1_lists_resources(client):
    response = client.get("/v1")
    assert response.status_code == 200
    names = [r["name"] for r in response.json["resources"]]
    assert names == ["continue", "introspection", "rules"]
    for resource in response.json["resources"]:
        assert resource["links"] == [
            {"rel": "self", "href": f"http://localhost/v1/{resource['name']}"}
        ]
    assert_version_headers(response)


def test_trailing_slash_is_accepted(client):
    assert client.get("/v1/").status_code == 200


def test_links_follow_the_host_header(client):
    response = client.get("/", base_url="https://inspector.example.com:13050")
    href = response.json["versions"][0]["links"][0]["href"]
    assert href == "https://inspector.example.com:13050/v1"


def test_unknown_route_is_a_json_404_with_headers(client):
    response = client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert set(response.json) == {"error"}
    assert response.json["error"]["message"]
    assert_version_headers(response)


def test_wrong_method_is_a_json_405(client):
    response = client.delete("/")
    assert response.status_code == 405
    assert "message" in response.json["error"]
    assert_version_headers(response)


@pytest.mark.parametrize("value", ["1.0", "1.12", "1.18", "1.19", "latest", " 1.5 "])
def test_supported_versions(client, value):
    response = client.get("/v1", headers={VERSION_HEADER: value})
    assert response.status_code == 200
    expected = "1.19" if value == "latest" else value.strip()
    assert response.headers[VERSION_HEADER] == expected


@pytest.mark.parametrize("value", ["1.20", "2.0", "0.9"])
def test_out_of_range_version_is_406_with_the_range(client, value):
    response = client.get("/v1", headers={VERSION_HEADER: value})
    assert response.status_code == 406
    assert "1.0 to 1.19" in response.json["error"]["message"]
    assert_version_headers(response)


@pytest.mark.parametrize("value", ["one", "1", "1.x", "1.2.3", ""])
def test_malformed_version_is_400(client, value):
    response = client.get("/v1", headers={VERSION_HEADER: value})
    assert response.status_code == 400
    assert "Malformed API version" in response.json["error"]["message"]
    assert_version_headers(response)


def test_standard_header_is_honoured(client):
    response = client.get("/v1", headers={"OpenStack-API-Version": "baremetal-introspection 1.7"})
    assert response.headers[VERSION_HEADER] == "1.7"
    response = client.get("/v1", headers={"OpenStack-API-Version": "baremetal-introspection 3.0"})
    assert response.status_code == 406


def test_an_unversioned_request_is_served_at_ironic_inspectors_newest(client):
    """1.19 and on are Inspector's own: a client that names no version gets what
    ironic-inspector 12.5 gave it, 1.18, and never sees them."""
    response = client.get("/v1")
    assert response.headers[VERSION_HEADER] == "1.18"
    assert response.headers["OpenStack-API-Version"] == "baremetal-introspection 1.18"


def test_standard_header_for_another_service_is_ignored(client):
    response = client.get("/v1", headers={"OpenStack-API-Version": "compute 2.90"})
    assert response.status_code == 200
    assert response.headers[VERSION_HEADER] == "1.18"


def test_ironic_inspector_header_wins_over_standard(client):
    response = client.get(
        "/v1",
        headers={
            VERSION_HEADER: "1.3",
            "OpenStack-API-Version": "baremetal-introspection 1.9",
        },
    )
    assert response.headers[VERSION_HEADER] == "1.3"


def test_no_header_means_ironic_inspectors_newest():
    assert versions.requested({}) == versions.DEFAULT == (1, 18) < versions.MAXIMUM


def test_unexpected_error_is_generic_500(app):
    @app.get("/boom")
    def boom():
        raise RuntimeError("secret detail")

    response = app.test_client().get("/boom")
    assert response.status_code == 500
    assert "secret detail" not in response.get_data(as_text=True)
    assert response.json["error"]["message"]
    assert_version_headers(response)


def test_every_answer_varies_on_the_version_header(client):
    response = client.get("/v1", headers={VERSION_HEADER: "1.5"})
    assert response.headers["Vary"] == VERSION_HEADER
    assert response.headers["OpenStack-API-Version"] == "baremetal-introspection 1.5"
    refused = client.get("/v1", headers={VERSION_HEADER: "1.x"})
    assert refused.headers["Vary"] == VERSION_HEADER
    assert VERSION_HEADER not in refused.headers  # no version was negotiated


def test_a_body_over_the_limit_is_413_with_the_range(client, conf):
    body = b"{" + b" " * conf.api.max_request_body_size + b"}"
    response = client.post("/v1/rules", data=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert_version_headers(response)


def test_stamping_keeps_an_existing_vary():
    headers = [("Content-Type", "application/json"), ("vary", "Accept")]
    versions.stamped(headers, (1, 3))
    assert headers[1] == ("vary", f"Accept, {VERSION_HEADER}")
    assert (MIN_HEADER, "1.0") in headers
    assert (VERSION_HEADER, "1.3") in headers
    assert [name for name, _ in headers].count("vary") == 1
