"""A read model of one TRUST deployment, built only from the chain: its events and its views.

The explorer shows what the chain holds about audit sessions (paper 1.10: submission, committee
draw, commit, reveal, finalization, rewards), so it keeps no database of its own. `ChainIndex`
replays the protocol contracts' events in chain order (block, log index) into an in-memory model,
and `refresh()` reads only the blocks mined since the last call. Three modules, one job each:

- `ingest`: the logs of the protocol's contracts in bounded block ranges, block times,
  reorganizations (the model is rebuilt from the start block), and the segment view that tells a
  "not passed" verdict apart into Failed and Undetermined;
- `projection`: the events applied to the model (sessions, segments, rounds, seats, auditors'
  ledgers), with the attribution the events leave implicit (see its docstring); pure;
- `queries`: what the pages ask (`ChainIndex`), the model joined with the contracts' current views
  (stakes, locks, reputation, a seat's units and claimed flag, a session's fee and parameters) and an
  auditor's history replayed as the registry computes it.

`values` holds what the queries return.

What comes from where:
- events (`ITRUSTAudit`, `IAuditorRegistry`, `ISegmentKeys`) give everything that happened and
  when: sessions and their segments as registered, each round's committee and windows
  (`CommitteeDrawn`), draws that found too few auditors (`CommitteeUnavailable`), fresh randomness,
  every commit and reveal with its block and block time, escalations, finalizations, the fee split
  (`RewardsDistributed`), claims, key envelopes per seat, reputation changes and forfeits;
- views give the current figures of the entities a page shows: an auditor's stake, locks,
  reputation and availability (`AuditorRegistry.auditor`), its pending stakers' reward, a seat's
  units and claimed flag (`TRUSTAudit.seat`), a session's parameters and fee, and whether a
  segment that did not pass `Failed` or ended `Undetermined` (`TRUSTAudit.segment`; the event says
  only "not passed"). Views are read at the latest block, so they can be a few blocks ahead of the
  events indexed; auditor and session views are cached and re-read only after an event touched them.
"""

from trust.api.index.ingest import DEFAULT_LOG_BLOCK_RANGE
from trust.api.index.queries import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ChainIndex
from trust.api.index.values import (
    AuditorDetail,
    AuditorHistoryPoint,
    AuditorPage,
    AuditorSeat,
    AuditorSort,
    AuditorSummary,
    DrawAttempt,
    EnvelopeRef,
    FeeSplit,
    Forfeit,
    RandomnessRefresh,
    RefreshReport,
    ReputationChange,
    RewardClaim,
    RoundDetail,
    RoundResult,
    SeatDetail,
    SeatOutcome,
    SegmentDetail,
    SegmentState,
    SegmentSummary,
    SessionDetail,
    SessionPage,
    SessionState,
    SessionSummary,
    StakerClaim,
    TxRef,
    UnknownEntity,
    VoteEvent,
    parse_address,
)

__all__ = [
    "DEFAULT_LOG_BLOCK_RANGE",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "AuditorDetail",
    "AuditorHistoryPoint",
    "AuditorPage",
    "AuditorSeat",
    "AuditorSort",
    "AuditorSummary",
    "ChainIndex",
    "DrawAttempt",
    "EnvelopeRef",
    "FeeSplit",
    "Forfeit",
    "RandomnessRefresh",
    "RefreshReport",
    "ReputationChange",
    "RewardClaim",
    "RoundDetail",
    "RoundResult",
    "SeatDetail",
    "SeatOutcome",
    "SegmentDetail",
    "SegmentState",
    "SegmentSummary",
    "SessionDetail",
    "SessionPage",
    "SessionState",
    "SessionSummary",
    "StakerClaim",
    "TxRef",
    "UnknownEntity",
    "VoteEvent",
    "parse_address",
]
