"""systemd's % specifiers: known ones expand, unknown letters and digits are an error, %% is %."""

from __future__ import annotations

import pytest

from proxyfleet.core.systemd.specifiers import SpecifierContext, SpecifierError, expand

KUBELET = SpecifierContext("kubelet.service", fragment_path="/etc/systemd/system/kubelet.service",
                           hostname="worker-3.lab")


def test_a_url_encoded_password_is_an_unknown_specifier() -> None:
    with pytest.raises(SpecifierError, match="Invalid slot"):
        expand("HTTP_PROXY=http://u:p%40ss@proxy:3128", KUBELET)
    assert expand("HTTP_PROXY=http://u:p%%40ss@proxy:3128", KUBELET) == "HTTP_PROXY=http://u:p%40ss@proxy:3128"


def test_a_known_specifier_silently_changes_the_value() -> None:
    assert expand("P=%C3", KUBELET) == "P=/var/cache3"  # "%C3%A9" is not é here
    assert expand("U=%n/%N/%p/%H/%l/%y/%Y", KUBELET) == (
        "U=kubelet.service/kubelet/kubelet/worker-3.lab/worker-3/"
        "/etc/systemd/system/kubelet.service//etc/systemd/system")
    assert expand("E=%A", KUBELET) == "E="  # an empty os-release field expands to nothing


def test_a_percent_before_anything_else_or_at_the_end_stays() -> None:
    assert expand("X=%-%/%", KUBELET) == "X=%-%/%"
