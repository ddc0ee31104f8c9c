// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Params} from "../types/Params.sol";

/// @title ParamsLib
/// @notice Range checks and per-tier lookups for the protocol parameters.
/// @dev Pure functions, shared by the parameter store (which refuses an out-of-range value) and the
///      contracts that read a session's snapshot.
library ParamsLib {
    uint256 internal constant BPS = 10_000;
    uint256 internal constant WAD = 1e18;

    /// @notice Tiers, as in the paper's Table 2.
    uint8 internal constant TIER_COMPUTATIONAL = 1;
    uint8 internal constant TIER_LLM = 2;
    uint8 internal constant TIER_HUMAN = 3;

    /// @notice The largest committee any round may seat (escalation grows k to 2k+1 per round).
    uint256 internal constant MAX_COMMITTEE_SIZE = 127;
    /// @notice Upper bounds that keep a misconfigured parameter from freezing the protocol.
    uint256 internal constant MAX_WINDOW_SECONDS = 30 days;
    uint256 internal constant MAX_UNBONDING_SECONDS = 365 days;
    /// @dev Randomness is read with BLOCKHASH, which only reaches 256 blocks back.
    uint256 internal constant MAX_RANDOMNESS_DELAY_BLOCKS = 128;
    uint256 internal constant MAX_SEGMENTS_PER_SESSION = 4096;
    /// @notice How long after its block a randomness value may seed a draw. The audit contract
    ///         refuses older values whatever the source says (the block hash is unreadable past
    ///         256 blocks anyway) and fixes a fresh block instead.
    uint256 internal constant RANDOMNESS_WINDOW_BLOCKS = 256;
    /// @notice How long a stake snapshot can still be drawn from: a draw reads the state at the end
    ///         of its randomness block and happens at most `RANDOMNESS_WINDOW_BLOCKS` after it.
    ///         Unbonding stake stays in the registry at least this many blocks after the request,
    ///         so any draw that counted it can still charge it.
    uint256 internal constant MAX_SNAPSHOT_AGE_BLOCKS = RANDOMNESS_WINDOW_BLOCKS;
    /// @notice How many times a round's committee is drawn, each time with fresh randomness, while
    ///         its tier cannot seat it; after that the segment ends Undetermined.
    uint256 internal constant MAX_DRAW_ATTEMPTS = 3;
    /// @notice How long each notification of the stakers' share streams (issue L1). A week: a
    ///         staker who joins just before a notification and leaves just after earns its seconds
    ///         over a week's (12 s of a week is 0.002%); it spans many sessions, so the rate is
    ///         smooth; and it is no longer than the default unbonding delay, so a staker who waits
    ///         out the whole stream holds its stake at risk about as long as it takes to leave.
    uint256 internal constant STAKER_REWARD_PERIOD_SECONDS = 7 days;

    /// @notice A parameter lies outside the range the protocol can run with.
    /// @param name The parameter's field name in `Params`.
    /// @param value The rejected value.
    error ParamsOutOfRange(string name, uint256 value);

    /// @notice The worst-case gas of one committee draw, per seat, with thousands of members in
    ///         the tier (a draw walks the sortition tree's history once per seat and locks a seat),
    ///         and of one seat's settlement (the worst case is a forfeit: the member's leaf is
    ///         rewritten in a tree of thousands, O(log n) history writes). Measured by
    ///         `test/gas/SettlementGas.t.sol` with 2,048 members, each call a transaction of its
    ///         own (cold storage): 62,400 a seat to draw 127, about 231,000 a forfeiting seat in a
    ///         step; kept above the measurement.
    uint256 internal constant DRAW_GAS_PER_SEAT = 70_000;
    uint256 internal constant SETTLEMENT_GAS_PER_SEAT = 250_000;
    /// @notice The gas, per draw of every round, of building a segment's settlement list, which
    ///         each step of a settlement in steps does again (cold reads of every seat of every
    ///         round; about 1,500 measured); and of one released seat's settlement (its stake
    ///         unlocked, nothing rewritten), all an abandoned segment settles (29,800 measured,
    ///         the failed draw's share included). Kept above the measurements.
    uint256 internal constant RECOMPUTE_GAS_PER_SEAT = 4_000;
    uint256 internal constant RELEASE_GAS_PER_SEAT = 32_000;
    /// @notice The fixed gas of a finalization step besides its seats (the segment, session and
    ///         parameter reads, the library and registry calls, the verdict or the escalation's
    ///         randomness request). Kept above the measurement.
    uint256 internal constant SETTLEMENT_GAS_OVERHEAD = 300_000;
    /// @notice The seats one step of a settlement in chunks (`ITRUSTAudit.settleSegment`) may
    ///         settle within `SETTLEMENT_GAS_BUDGET` at any committee `validate` accepts: what
    ///         keepers pass, and what a settlement list longer than it is split by.
    uint256 internal constant SETTLEMENT_CHUNK_SEATS = 32;
    /// @notice The most gas one draw or one finalization step may need (issue M4): well under the
    ///         16,777,216 a transaction may use (EIP-7825), so that a round can always be drawn
    ///         and settled, and the fee and stakes it holds never lock. `validate` rejects
    ///         committee sizes and round counts whose worst case exceeds it.
    uint256 internal constant SETTLEMENT_GAS_BUDGET = 12_000_000;

    /// @notice Reverts with `ParamsOutOfRange` naming the first field that is out of range.
    function validate(Params memory p) internal pure {
        (bool ok, string memory name, uint256 value) = check(p);
        if (!ok) revert ParamsOutOfRange(name, value);
    }

    /// @notice Whether `validate` accepts `p`.
    function isValid(Params memory p) internal pure returns (bool ok) {
        (ok,,) = check(p);
    }

    /// @notice The first field of `p` that is out of range, with its value (`ok` when none is).
    function check(Params memory p) internal pure returns (bool ok, string memory name, uint256 value) {
        // tau > 1/2 makes Pass and Fail mutually exclusive (eq. 3.3).
        if (!(p.tauBps > BPS / 2 && p.tauBps <= BPS)) return (false, "tauBps", p.tauBps);
        if (!(p.betaBps > 0 && p.betaBps < BPS)) return (false, "betaBps", p.betaBps);
        if (!(p.gammaWad > 0 && p.gammaWad <= WAD)) return (false, "gammaWad", p.gammaWad);
        // 0 < p_min < p_max <= 1 (eq. 3.9).
        if (!(p.pMinBps > 0 && p.pMinBps < p.pMaxBps)) return (false, "pMinBps", p.pMinBps);
        if (!(p.pMaxBps <= BPS)) return (false, "pMaxBps", p.pMaxBps);
        if (!(p.maxRounds >= 1 && p.maxRounds <= 4)) return (false, "maxRounds", p.maxRounds);
        if (!_committeeFits(p.committeeSizeTier1, p.maxRounds)) {
            return (false, "committeeSizeTier1", p.committeeSizeTier1);
        }
        if (!_committeeFits(p.committeeSizeTier2, p.maxRounds)) {
            return (false, "committeeSizeTier2", p.committeeSizeTier2);
        }
        if (!_committeeFits(p.committeeSizeTier3, p.maxRounds)) {
            return (false, "committeeSizeTier3", p.committeeSizeTier3);
        }
        if (!(p.commitWindowSeconds > 0 && p.commitWindowSeconds <= MAX_WINDOW_SECONDS)) {
            return (false, "commitWindowSeconds", p.commitWindowSeconds);
        }
        if (!(p.revealWindowSeconds > 0 && p.revealWindowSeconds <= MAX_WINDOW_SECONDS)) {
            return (false, "revealWindowSeconds", p.revealWindowSeconds);
        }
        if (!(p.randomnessDelayBlocks > 0 && p.randomnessDelayBlocks <= MAX_RANDOMNESS_DELAY_BLOCKS)) {
            return (false, "randomnessDelayBlocks", p.randomnessDelayBlocks);
        }
        if (!(p.maxSegmentsPerSession > 0 && p.maxSegmentsPerSession <= MAX_SEGMENTS_PER_SESSION)) {
            return (false, "maxSegmentsPerSession", p.maxSegmentsPerSession);
        }
        // A zero penalty would let a seat be held with nothing at risk.
        if (!(p.penaltyPerSeat > 0)) return (false, "penaltyPerSeat", p.penaltyPerSeat);
        if (!(p.unbondingDelaySeconds <= MAX_UNBONDING_SECONDS)) {
            return (false, "unbondingDelaySeconds", p.unbondingDelaySeconds);
        }
        // Table 2: low <= medium <= high, and every tier's minimum backs at least one seat.
        if (!(p.minStakeTier1 >= p.penaltyPerSeat)) return (false, "minStakeTier1", p.minStakeTier1);
        if (!(p.minStakeTier2 >= p.minStakeTier1)) return (false, "minStakeTier2", p.minStakeTier2);
        if (!(p.minStakeTier3 >= p.minStakeTier2)) return (false, "minStakeTier3", p.minStakeTier3);
        if (!(p.initialReputationWad <= WAD)) return (false, "initialReputationWad", p.initialReputationWad);
        // The minimum fee is R * seats / auditor share: the auditors' share cannot be zero.
        if (!(p.auditorShareBps > 0)) return (false, "auditorShareBps", p.auditorShareBps);
        if (!(p.maxWeightRatio >= 1)) return (false, "maxWeightRatio", p.maxWeightRatio);
        uint256 split = uint256(p.auditorShareBps) + p.treasuryShareBps + p.stakerShareBps + p.insuranceShareBps;
        if (!(split == BPS)) return (false, "feeSplitBps", split);
        return (true, "", 0);
    }

    /// @notice k_t, the first-round committee size of `tier`.
    function committeeSize(Params memory p, uint8 tier) internal pure returns (uint8) {
        return _byTier(tier, p.committeeSizeTier1, p.committeeSizeTier2, p.committeeSizeTier3);
    }

    /// @notice k_t from a session's stored snapshot (reads one slot, copies nothing).
    function storedCommitteeSize(Params storage p, uint8 tier) internal view returns (uint8) {
        return _byTier(tier, p.committeeSizeTier1, p.committeeSizeTier2, p.committeeSizeTier3);
    }

    function _byTier(uint8 tier, uint8 computational, uint8 llm, uint8 human) private pure returns (uint8) {
        if (tier == TIER_COMPUTATIONAL) return computational;
        if (tier == TIER_LLM) return llm;
        return human;
    }

    /// @notice The minimum stake of `tier` (Table 2: low / medium / high).
    function minStake(Params memory p, uint8 tier) internal pure returns (uint96) {
        if (tier == TIER_COMPUTATIONAL) return p.minStakeTier1;
        if (tier == TIER_LLM) return p.minStakeTier2;
        return p.minStakeTier3;
    }

    /// @notice Whether `tier` is one of the three auditor tiers.
    function isTier(uint256 tier) internal pure returns (bool) {
        return tier >= TIER_COMPUTATIONAL && tier <= TIER_HUMAN;
    }

    /// @notice The committee size of the round after one that seated `size`: 2k+1 (escalation).
    function escalatedSize(uint256 size) internal pure returns (uint256) {
        return 2 * size + 1;
    }

    /// @dev Whether a tier whose first round seats `size` stays within the largest committee and
    ///      within the gas budget through `maxRounds` rounds (issue M4):
    ///      - the largest round is drawn in one transaction;
    ///      - a step of `SETTLEMENT_CHUNK_SEATS` settlements fits, with the rebuild of the deciding
    ///        round's settlement list, which reads every seat of every round (settlement in chunks
    ///        lifts the bound the whole list in one transaction used to put on committees);
    ///      - the draw that abandons a segment (the largest round's, finding too few members) fits
    ///        with the release of every earlier round's seats, settled in the same transaction.
    function _committeeFits(uint8 size, uint8 maxRounds) private pure returns (bool) {
        if (size < 1) return false;
        uint256 largest = size;
        uint256 seats = size;
        for (uint256 round = 1; round < maxRounds; ++round) {
            largest = escalatedSize(largest);
            seats += largest;
        }
        uint256 chunk = seats < SETTLEMENT_CHUNK_SEATS ? seats : SETTLEMENT_CHUNK_SEATS;
        uint256 step = SETTLEMENT_GAS_OVERHEAD + chunk * SETTLEMENT_GAS_PER_SEAT + seats * RECOMPUTE_GAS_PER_SEAT;
        uint256 abandon = SETTLEMENT_GAS_OVERHEAD + largest * DRAW_GAS_PER_SEAT
            + (seats - largest) * (RELEASE_GAS_PER_SEAT + RECOMPUTE_GAS_PER_SEAT);
        return largest <= MAX_COMMITTEE_SIZE && largest * DRAW_GAS_PER_SEAT <= SETTLEMENT_GAS_BUDGET
            && step <= SETTLEMENT_GAS_BUDGET && abandon <= SETTLEMENT_GAS_BUDGET;
    }
}
