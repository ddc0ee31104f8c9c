"""Amounts as people read them, exactly: wei and the staking token's base units written from the
integers, never through a binary float.

A float cannot hold 0.0102 and prints sums of such amounts as `0.010199999999999997`; `Decimal`
rounds to its context's 28 digits, which a uint96 stake (29 digits) already exceeds. So the
digits come from integer division only. The policy everywhere (command line, worker logs,
explorer):

- exact: every significant decimal is shown (up to 18), so the text read back is the amount;
- no trailing zeros and no exponent: 1.5 ETH, 2000 TRUST, 0.000000000000000001 ETH (one wei), 0 ETH;
- no thousands separators (a copied figure parses as it is), a leading "-" for a negative amount.

Shared by every layer (it imports only `trust.errors`), like `trust.errors` itself.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from trust.errors import ConfigError

__all__ = [
    "TOKEN_DECIMALS",
    "amount_text",
    "decimal_text",
    "eth_text",
    "parse_amount",
    "require_integer",
    "tokens_text",
]

TOKEN_DECIMALS = 18
"""Decimals of ETH (wei) and of the staking token (its base units)."""


def require_integer(value: int, what: str) -> int:
    # A float here is the bug this module exists to prevent: refuse it instead of rounding it.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer count of base units, not {type(value).__name__} {value!r}")
    return value


def decimal_text(units: int, decimals: int = TOKEN_DECIMALS) -> str:
    """`units` x 10^-decimals as an exact decimal without trailing zeros or exponent: "0.0102",
    "2000", "-1.5", "0". Raises `TypeError` for anything but an int (a float would be inexact)."""
    value = require_integer(units, "an amount")
    whole, fraction = divmod(abs(value), 10**decimals)
    digits = str(fraction).rjust(decimals, "0").rstrip("0") if decimals else ""
    sign = "-" if value < 0 else ""
    return f"{sign}{whole}.{digits}" if digits else f"{sign}{whole}"


def amount_text(base_units: int, symbol: str) -> str:
    """An amount of 18 decimals, exact, without trailing zeros: "0.00042 ETH", "2000 TRUST"."""
    return f"{decimal_text(base_units)} {symbol}"


def eth_text(wei: int) -> str:
    """Wei as ETH, exact: "0.0102 ETH"."""
    return amount_text(wei, "ETH")


def tokens_text(base_units: int) -> str:
    """Staking-token base units as whole tokens, exact: "250 TRUST"."""
    return amount_text(base_units, "TRUST")


def parse_amount(text: str, what: str, *, unit: str = "tokens", allow_zero: bool = False) -> int:
    """An amount typed in whole units ("250", "0.5"; ETH and the token both have 18 decimals) in base
    units. `ConfigError` naming `what` for anything else: not a number, negative (or zero unless
    `allow_zero`), infinite, or more than 18 decimals."""
    try:
        amount = Decimal(text.strip())
    except InvalidOperation:
        raise ConfigError(f"{what}: {text!r} is not an amount; write it in whole {unit}, e.g. 250 or 0.5") from None
    if not amount.is_finite() or amount < 0 or (amount == 0 and not allow_zero):
        least = "zero or a positive" if allow_zero else "a positive"
        raise ConfigError(f"{what} must be {least} amount of {unit}, not {text!r}")
    units = amount.scaleb(TOKEN_DECIMALS)
    if units != units.to_integral_value():
        raise ConfigError(f"{what}: {text!r} has more than {TOKEN_DECIMALS} decimals")
    return int(units)
