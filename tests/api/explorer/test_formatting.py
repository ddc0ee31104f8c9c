"""How the explorer writes amounts, times, ratios and addresses, and how it reads addresses."""

from __future__ import annotations

from decimal import Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.api.explorer.formatting import (
    amount_text,
    bps_text,
    brief_amount_text,
    decimal_text,
    duration_text,
    ratio_text,
    short_hex,
    utc_text,
    wad_text,
)
from trust.api.index import parse_address


@pytest.mark.parametrize(
    ("units", "text"),
    [
        (0, "0 ETH"),
        (1, "0.000000000000000001 ETH"),
        (6 * 10**14, "0.0006 ETH"),
        (10_285_714_285_714_286, "0.010285714285714286 ETH"),
        (2 * 10**21, "2000 ETH"),
        (10**18 + 5 * 10**17, "1.5 ETH"),
        (10_200_000_000_000_000, "0.0102 ETH"),  # 17 seats of 0.0006 ETH: a float sum prints 0.010199999999999999
        (10**18, "1 ETH"),
        (10**30 + 1, "1000000000000.000000000000000001 ETH"),  # past 2^53 and past a float's 17 digits
        (2**96 - 1, "79228162514.264337593543950335 ETH"),  # the largest stake a uint96 holds
        (-(5 * 10**15), "-0.005 ETH"),
    ],
)
def test_amounts_are_exact_without_trailing_zeros(units: int, text: str) -> None:
    assert amount_text(units, "ETH") == text


@given(st.integers(-(10**40), 10**40))
def test_an_amount_read_back_is_the_amount(units: int) -> None:
    text = decimal_text(units)
    with localcontext() as exact:
        exact.prec = 80  # the default 28 digits would round the check itself
        assert Decimal(text).scaleb(18) == units
    assert "e" not in text.lower() and not text.endswith(".") and ("." not in text or not text.endswith("0"))


def test_a_float_is_refused_rather_than_rounded() -> None:
    with pytest.raises(TypeError, match="integer count of base units, not float 0.0102"):
        amount_text(0.0102, "ETH")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not bool"):
        decimal_text(True)
    assert decimal_text(6_550, 2) == "65.5" and decimal_text(0, 2) == "0"


def test_brief_amounts_cut_at_six_decimals_and_say_so() -> None:
    assert brief_amount_text(10_285_714_285_714_286, "ETH") == "0.010285… ETH"
    assert brief_amount_text(6 * 10**14, "ETH") == "0.0006 ETH"  # exact already: nothing cut
    assert brief_amount_text(1_992 * 10**18, "TRUST") == "1992 TRUST"


def test_ratios_times_and_hashes() -> None:
    assert bps_text(6_600) == "66%" and bps_text(6_550) == "65.5%" and bps_text(10_000) == "100%"
    assert wad_text(595 * 10**15) == "0.5950"
    assert ratio_text(2, 4) == "50.0%" and ratio_text(0, 0) == "–"
    assert [duration_text(s) for s in (0, 14, 123, -5, 3_720)] == [
        "+0 s",
        "+14 s",
        "+2 min 03 s",
        "-5 s",
        "+1 h 02 min",
    ]
    assert utc_text(0) == "1970-01-01 00:00:00 UTC"
    address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"
    assert short_hex(address) == "0x90F79b…93b906"
    assert short_hex("0x1234") == "0x1234"


@pytest.mark.parametrize(
    "text",
    [
        "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
        "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
        "0x90F79BF6EB2C4F870365E785982E1F101E93B906",
    ],
)
def test_addresses_in_any_single_case_or_checksummed(text: str) -> None:
    assert parse_address(text) == "0x90F79bf6EB2c4f870365E785982E1f101E93b906"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0x90f79bf6eb2c4f870365e785982e1f101e93b90", "not an address"),
        ("90f79bf6eb2c4f870365e785982e1f101e93b906", "not an address"),
        ("0x90f79bf6eb2c4f870365e785982e1f101e93b9zz", "not an address"),
        ("0x90F79bf6EB2c4f870365E785982E1f101E93B906", "wrong EIP-55 checksum"),
    ],
)
def test_malformed_addresses_are_refused_by_name(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as refused:
        parse_address(text)
    assert repr(text) in str(refused.value)
