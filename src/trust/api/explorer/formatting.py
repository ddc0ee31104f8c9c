"""How the explorer writes amounts, ratios, times and hashes for people.

Amounts on chain are integers: wei for ETH, base units of 10^-18 for the staking token. They are
written from those integers by `trust.core.amounts` (integer arithmetic only), never through a binary
float: a float cannot hold 0.0102 and prints sums of such amounts as `0.010199999999999997`. The
policy, in pages and chart labels alike:

- exact: every significant decimal is shown (up to 18), so the text read back is the amount;
- no trailing zeros and no exponent: 1.5 ETH, 2000 ETH, 0.000000000000000001 ETH (one wei), 0 ETH;
- no thousands separators (a copied figure parses as it is), a leading "-" for a negative amount;
- a list's narrow column may cut an amount at `BRIEF_DECIMALS` decimals, marked with "…", with the
  exact text beside it (the cell's title).

The JSON API keeps amounts as decimal strings of the integers (wei, base units): exact too, and
past the 2^53 that JavaScript numbers hold.
"""

from __future__ import annotations

from decimal import Decimal

from trust.core.amounts import TOKEN_DECIMALS, amount_text, decimal_text, require_integer
from trust.core.times import duration_text as unsigned_duration_text
from trust.core.times import utc_text

__all__ = [
    "BRIEF_DECIMALS",
    "TOKEN_DECIMALS",
    "WAD",
    "amount_text",
    "bps_text",
    "brief_amount_text",
    "decimal_text",
    "duration_text",
    "ratio_text",
    "short_hex",
    "utc_text",
    "wad_text",
]

WAD = 10**18
"""The contracts' fixed-point one (reputations, gamma)."""
BRIEF_DECIMALS = 6
"""Decimals shown in the lists' amount columns (micro-ETH; the pages of one entity show all 18)."""
_SHORT_HEX_CHARS = 6
"""Hex digits kept at each end of a shortened hash or address."""


def brief_amount_text(base_units: int, symbol: str) -> str:
    """An amount for a list's narrow column: at most BRIEF_DECIMALS decimals, cut with "…" when
    more follow (the exact value goes in the cell's title)."""
    number = decimal_text(base_units)
    whole, _, decimals = number.partition(".")
    if len(decimals) <= BRIEF_DECIMALS:
        return f"{number} {symbol}"
    return f"{whole}.{decimals[:BRIEF_DECIMALS]}… {symbol}"


def wad_text(wad: int) -> str:
    """A WAD ratio (1e18 = 1) with four decimals, rounded half-even: reputation 0.5500."""
    return f"{Decimal(require_integer(wad, 'a WAD value')) / WAD:.4f}"


def bps_text(bps: int) -> str:
    """Basis points as a percentage: 6600 -> "66%", 6550 -> "65.5%"."""
    return f"{decimal_text(bps, 2)}%"


def ratio_text(part: int, whole: int) -> str:
    """part / whole as a percentage with one decimal; "–" for an empty whole."""
    if whole == 0:
        return "–"
    return f"{Decimal(part) * 100 / whole:.1f}%"


def duration_text(seconds: int) -> str:
    """A signed offset: "+0 s", "+14 s", "+2 min 03 s", "-5 s", "+1 h 02 min"."""
    return ("-" if seconds < 0 else "+") + unsigned_duration_text(abs(seconds))


def short_hex(text: str) -> str:
    """0x1234ab…cdef56 for a long hash or address (the full value goes in the title)."""
    if len(text) <= 2 + 2 * _SHORT_HEX_CHARS + 1:
        return text
    return f"{text[: 2 + _SHORT_HEX_CHARS]}…{text[-_SHORT_HEX_CHARS:]}"
