// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice How a seat ended, as decided by the audit contract when its segment round finalizes.
enum SeatOutcome {
    Released, // revealed in a round that reached no decision: stake unlocked, reputation unchanged
    Aligned, // revealed the consensus outcome: stake unlocked, reputation up (eq. 3.8)
    Misaligned, // revealed against consensus: reputation down, slashed with probability p_slash(r) (eq. 3.9)
    Silent // never revealed: the seat's locked stake is forfeited, reputation down (sec. 3.2.1)
}

/// @notice One seat to settle in `IAuditorRegistry.settleSeats`.
/// @param auditor The seated auditor.
/// @param outcome How the seat ended.
/// @param slashRollBps A uniform random number in [0, 10_000), used only for Misaligned seats:
///        the seat is slashed when it is below p_slash(r) in basis points.
/// @param units The committee draws the seat won (its voting weight): it locked
///        `units * lockPerSeat`, and forfeits that much when it forfeits.
struct SeatSettlement {
    address auditor;
    SeatOutcome outcome;
    uint16 slashRollBps;
    uint8 units;
}

/// @notice What the audit contract asks of the registry for one committee (`drawCommittee`).
/// @param tier The tier to draw from.
/// @param size The number of draws (with replacement): the committee's total voting weight. A
///        member drawn more than once holds one seat with one unit of weight per draw.
/// @param seed The randomness of this draw.
/// @param snapshotBlock The block whose end state the draw reads (stakes, tiers, availability): the
///        block that fixed the seed's randomness block, so it is final before the seed exists.
/// @param excluded An account never drawn (the session's provider).
/// @param lockPerSeat The stake each unit locks (the session's penalty P).
struct DrawRequest {
    uint8 tier;
    uint8 size;
    bytes32 seed;
    uint256 snapshotBlock;
    address excluded;
    uint96 lockPerSeat;
}

/// @notice The session-level terms of a settlement (from the session's parameter snapshot).
struct SettlementTerms {
    uint96 lockPerSeat;
    uint64 gammaWad;
    uint16 pMinBps;
    uint16 pMaxBps;
    address beneficiary;
}
