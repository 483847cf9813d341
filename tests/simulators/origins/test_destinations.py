"""A customer's own destinations: parsed from a URL or an image reference, refused when the lab
cannot serve them, grouped one origin per host and port, and served over a real socket."""

from __future__ import annotations

import aiohttp
import pytest

from proxyfleet.simulators.origins.catalog import STANDARD_HOSTS
from proxyfleet.simulators.origins.destinations import (
    DestinationError,
    destination_application,
    group_destinations,
    parse_destination,
)
from tests.support import serving


def test_a_url_is_fetched_and_an_image_is_pulled() -> None:
    site = parse_destination("https://API.Partner.example:8443/health?x=1", "internet")
    assert (site.host, site.port, site.scheme, site.image, site.client) == ("api.partner.example", 8443, "https",
                                                                           None, "curl")
    assert site.route_url == "https://API.Partner.example:8443/health?x=1"
    plain = parse_destination("http://10.20.30.40/", "intranet")
    assert (plain.host, plain.port, plain.tls) == ("10.20.30.40", 80, False)
    image = parse_destination("registry.acme.example:5000/team/app:1.0", "internet")
    assert image.image is not None and image.client == "go" and (image.host, image.port) == ("registry.acme.example", 5000)
    assert image.route_url == "https://registry.acme.example:5000/v2/" and image.text.endswith("team/app:1.0")
    assert parse_destination("registry.acme.example/app", "intranet").text == "registry.acme.example/app:latest"
    assert parse_destination("docker.io/library/busybox:1", "internet").host == "registry-1.docker.io"


@pytest.mark.parametrize(("text", "message"), [
    ("app:1.0", "names no registry host"),
    ("team/app:1.0", "names no registry host"),
    ("ftp://files.acme.example/", "only http:// and https://"),
    ("https://user:pw@x.acme.example/", "must not carry credentials"),
    ("https://x.acme.example:99999/", "not a number from 1 to 65535"),
    ("https://bad_name.acme.example/", "is not a host name"),
    ("Registry.Acme.example/UPPER:1", "neither a URL"),
    ("registry.acme.example/app@sha256:" + "a" * 64, "not a digest"),
    # what a node's probe could not carry as one plain word (core.probetargets)
    ("https://x.acme.example/?a=1&echo x>C:\\k\\f.txt", "' ' .* is not a URL character"),
    ('https://x.acme.example/"quoted"', "is not a URL character"),
    ("https://x.acme.example/\x00", "is not a URL character"),
    ("https://x.acme.example/[1-3]", "only around an IPv6 address"),
    ("https://[fd00::1/", "not a URL"),
    ("-registry.acme.example/app:1", "neither a URL"),
])
def test_what_the_lab_cannot_serve_is_refused_saying_why(text: str, message: str) -> None:
    with pytest.raises(DestinationError, match=message) as error:
        parse_destination(text, "internet")
    assert "pw@" not in str(error.value)


def test_one_origin_per_host_and_port_and_no_host_two_ways() -> None:
    a = parse_destination("https://a.example/x", "internet")
    b = parse_destination("a.example/team/app:1", "internet")
    c = parse_destination("https://a.example:8443/", "internet")
    groups = group_destinations([a, b, c], STANDARD_HOSTS)
    assert [(g.host, g.port, len(g.destinations)) for g in groups] == [("a.example", 443, 2), ("a.example", 8443, 1)]
    with pytest.raises(DestinationError, match="both an internet and an intranet"):
        group_destinations([a, parse_destination("https://a.example:444/", "intranet")], STANDARD_HOSTS)
    with pytest.raises(DestinationError, match="both http:// and https://"):
        group_destinations([parse_destination("http://a.example:8080/", "internet"),
                            parse_destination("https://a.example:8080/", "internet")], STANDARD_HOSTS)
    with pytest.raises(DestinationError, match="one of the lab's own"):
        group_destinations([parse_destination("https://quay.io/v2/", "internet")], STANDARD_HOSTS)
    with pytest.raises(DestinationError):
        parse_destination("https://a.example/", "extranet")


async def test_an_origin_serves_its_images_and_any_path() -> None:
    [origin] = group_destinations([parse_destination("https://a.example/deep/path?q", "internet"),
                                   parse_destination("a.example/team/app:2", "internet")], set())
    app, images = destination_application(origin)
    assert list(images) == ["a.example/team/app:2"]
    async with serving(app) as base, aiohttp.ClientSession() as http:
        async with http.get(f"{base}/deep/path") as response:
            assert response.status == 200 and await response.text() == "hello from a.example/deep/path\n"
        async with http.get(f"{base}/v2/team/app/manifests/2") as response:
            assert response.status == 200
            assert response.headers["Docker-Content-Digest"] == images["a.example/team/app:2"].digest
        async with http.get(f"{base}/v2/team/other/manifests/2") as response:
            assert response.status == 404  # the registry's own answer, not the site's
