"""Protocol settings under which every auditor's stake backs one committee draw at a time.

Every auditor stakes the tier minimum, 100 tokens, and a draw locks P = 60: a member drawn again
(or already seated elsewhere) cannot back a second unit and leaves the draw. Committees, drawn with
replacement (issue L2), are then successive sampling without replacement: k draws seat k distinct
members of one vote each. Tests whose subject is not the draw (votes, settlement, reports, the
explorer) are written against that; seats of several units are the subject of
tests/api/index/test_refresh.py and of `trust bench attacks` (L2).
"""

from __future__ import annotations

ONE_UNIT_STAKES: dict[str, int] = {
    "min_stake_tier1_tokens": 100,
    "min_stake_tier2_tokens": 100,
    "min_stake_tier3_tokens": 100,
    "penalty_per_seat_tokens": 60,
}
"""`ProtocolSettings` fields: spread them into the settings (`ProtocolSettings(..., **ONE_UNIT_STAKES)`)."""
