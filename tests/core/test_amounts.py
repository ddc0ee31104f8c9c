"""`trust.core.amounts`: amounts written exactly from integers, for every layer (worker logs, the command
line, the SDK's errors and the explorer)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.amounts import amount_text, decimal_text, eth_text, tokens_text

WEI = 10**18


def test_a_fee_of_0_0102_eth_is_written_as_such_where_a_float_is_not() -> None:
    fee = 102 * 10**14
    assert f"{fee / WEI}" == "0.0102" and f"{3 * fee / WEI - 2 * fee / WEI}" != "0.0102"  # the bug
    assert eth_text(3 * fee - 2 * fee) == "0.0102 ETH"
    # What the contract's floor division leaves is exact too, not a rounding artefact to hide.
    assert eth_text(10199999999999997) == "0.010199999999999997 ETH"


@pytest.mark.parametrize(
    ("units", "text"),
    [
        (0, "0"),
        (1, "0.000000000000000001"),
        (WEI, "1"),
        (15 * 10**17, "1.5"),
        (2000 * WEI, "2000"),
        (-15 * 10**17, "-1.5"),
        (2**96 - 1, "79228162514.264337593543950335"),  # a full uint96 stake: 29 digits
    ],
)
def test_decimal_text_is_exact_without_trailing_zeros(units: int, text: str) -> None:
    assert decimal_text(units) == text


def test_symbols() -> None:
    assert tokens_text(250 * WEI) == "250 TRUST" and amount_text(5, "ETH") == eth_text(5) == "0.000000000000000005 ETH"


@pytest.mark.parametrize("value", [0.0102, True, Decimal("1"), "1"])
def test_anything_but_an_integer_is_refused(value: object) -> None:
    with pytest.raises(TypeError, match="integer count of base units"):
        decimal_text(value)  # type: ignore[arg-type]


@given(st.integers(min_value=-(2**256), max_value=2**256))
def test_the_text_reads_back_as_the_amount(units: int) -> None:
    text = decimal_text(units)
    whole, _, fraction = text.lstrip("-").partition(".")
    assert int(whole + fraction.ljust(18, "0")) == abs(units) and text.startswith("-") == (units < 0)


def test_amounts_typed_in_whole_units() -> None:
    from trust.core.amounts import parse_amount
    from trust.errors import ConfigError

    assert parse_amount("250", "the stake") == 250 * WEI and parse_amount(" 0.5 ", "x") == WEI // 2
    assert parse_amount("0.000000000000000001", "x") == 1 and parse_amount("0", "--eth", allow_zero=True) == 0
    for text, words in (
        ("ten", "the stake: 'ten' is not an amount; write it in whole tokens"),
        ("0", "the stake must be a positive amount of tokens"),
        ("-1", "the stake must be a positive amount"),
        ("inf", "the stake must be a positive amount"),
        ("0.0000000000000000001", "has more than 18 decimals"),
    ):
        with pytest.raises(ConfigError, match=words):
            parse_amount(text, "the stake")
