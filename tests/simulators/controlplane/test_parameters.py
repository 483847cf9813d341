"""Query parameters decode as apimachinery's conversions do (the oracle is kube-apiserver's
``Convert_Slice_string_To_bool`` and ``strconv.ParseInt``)."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.parameters import flag, integer


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "1", "t", "T", "yes", "", "2"])
def test_every_value_but_false_and_zero_is_true(value: str) -> None:
    # `True` is what the Python client 36.x sends for watch=True (str(True)).
    assert flag({"watch": value}, "watch") is True


@pytest.mark.parametrize("value", ["false", "False", "FALSE", "fAlSe", "0"])
def test_false_and_zero_are_false(value: str) -> None:
    assert flag({"watch": value}, "watch") is False


def test_an_absent_flag_is_false() -> None:
    assert flag({}, "watch") is False


@pytest.mark.parametrize(("value", "expected"), [("5", 5), ("+7", 7), ("-1", -1), ("0", 0),
                                                 ("9223372036854775807", 2**63 - 1)])
def test_integers_parse_like_go(value: str, expected: int) -> None:
    assert integer({"timeoutSeconds": value}, "timeoutSeconds") == expected


@pytest.mark.parametrize(("value", "problem"), [
    ("abc", "invalid syntax"), ("nan", "invalid syntax"), ("1e3", "invalid syntax"), ("1.5", "invalid syntax"),
    (" 5", "invalid syntax"), ("1_000", "invalid syntax"), ("", "invalid syntax"), ("٣", "invalid syntax"),
    ("9223372036854775808", "value out of range"), ("9" * 5000, "value out of range"),
])
def test_other_integers_are_bad_requests(value: str, problem: str) -> None:
    with pytest.raises(APIError) as error:
        integer({"timeoutSeconds": value}, "timeoutSeconds")
    assert (error.value.code, error.value.reason) == (400, "BadRequest")
    assert problem in error.value.message
    assert len(error.value.message) < 200  # a 5,000-digit value is not echoed whole


def test_an_absent_integer_is_none() -> None:
    assert integer({}, "timeoutSeconds") is None
