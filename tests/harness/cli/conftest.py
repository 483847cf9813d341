"""Input files for the ``proxyfleet`` commands' tests, good and bad."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cli.commands import PROXY


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "broken.yaml").write_text('spec:\n  httpProxy: "http://unterminated\n')
    (tmp_path / "ftp.yaml").write_text("spec:\n  httpProxy: ftp://proxy.acme.example:21\n")
    (tmp_path / "unknown.yaml").write_text("spec:\n  httpProxi: http://proxy.acme.example:8080\n")
    (tmp_path / "ok.yaml").write_text(PROXY)
    (tmp_path / "empty.pem").write_text("# no certificates here\n")
    (tmp_path / "garbage.pem").write_text("-----BEGIN CERTIFICATE-----\n!!notbase64!!\n-----END CERTIFICATE-----\n")
    (tmp_path / "badconfig.yaml").write_text("apiVersion: v1\nproxi: {}\n")
    (tmp_path / "badproxy.yaml").write_text("apiVersion: v1\nproxy:\n  httpProxy: http://p:3128\n  noProxy: a b\n")
    (tmp_path / "networking.yaml").write_text('apiVersion: v1\nnetworking: "x"\n')
    (tmp_path / "metadata.yaml").write_text("apiVersion: v1\nmetadata: lab\n")
    (tmp_path / "bundle5.yaml").write_text("apiVersion: v1\nadditionalTrustBundle: 5\n")
    # the value is the customer's URL, credentials included: the error must not echo it
    (tmp_path / "proxystring.yaml").write_text("apiVersion: v1\nproxy: http://svc-proxy:S3cr3t@proxy.acme.example:8080\n")
    (tmp_path / "recursive.yaml").write_text("proxy: &a {x: *a}\n")
    (tmp_path / "bomb.yaml").write_text("a: &a [S3cr3t, S3cr3t]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n")
    (tmp_path / "cidr.yaml").write_text("apiVersion: v1\nnetworking:\n  clusterNetwork: [10.128.0.0/14]\n")
    return tmp_path
