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
    /// @notice How many times a round's committee is drawn, each time with fresh randomness, while
    ///         its tier cannot seat it; after that the segment ends Undetermined.
    uint256 internal constant MAX_DRAW_ATTEMPTS = 3;

    /// @notice A parameter lies outside the range the protocol can run with.
    /// @param name The parameter's field name in `Params`.
    /// @param value The rejected value.
    error ParamsOutOfRange(string name, uint256 value);

    /// @notice Reverts with `ParamsOutOfRange` naming the first field that is out of range.
    function validate(Params memory p) internal pure {
        // tau > 1/2 makes Pass and Fail mutually exclusive (eq. 3.3).
        _check(p.tauBps > BPS / 2 && p.tauBps <= BPS, "tauBps", p.tauBps);
        _check(p.betaBps > 0 && p.betaBps < BPS, "betaBps", p.betaBps);
        _check(p.gammaWad > 0 && p.gammaWad <= WAD, "gammaWad", p.gammaWad);
        // 0 < p_min < p_max <= 1 (eq. 3.9).
        _check(p.pMinBps > 0 && p.pMinBps < p.pMaxBps, "pMinBps", p.pMinBps);
        _check(p.pMaxBps <= BPS, "pMaxBps", p.pMaxBps);
        _check(p.maxRounds >= 1 && p.maxRounds <= 4, "maxRounds", p.maxRounds);
        _checkCommittee(p.committeeSizeTier1, p.maxRounds, "committeeSizeTier1");
        _checkCommittee(p.committeeSizeTier2, p.maxRounds, "committeeSizeTier2");
        _checkCommittee(p.committeeSizeTier3, p.maxRounds, "committeeSizeTier3");
        _check(p.commitWindowSeconds > 0 && p.commitWindowSeconds <= MAX_WINDOW_SECONDS, "commitWindowSeconds", p.commitWindowSeconds);
        _check(p.revealWindowSeconds > 0 && p.revealWindowSeconds <= MAX_WINDOW_SECONDS, "revealWindowSeconds", p.revealWindowSeconds);
        _check(
            p.randomnessDelayBlocks > 0 && p.randomnessDelayBlocks <= MAX_RANDOMNESS_DELAY_BLOCKS,
            "randomnessDelayBlocks",
            p.randomnessDelayBlocks
        );
        _check(
            p.maxSegmentsPerSession > 0 && p.maxSegmentsPerSession <= MAX_SEGMENTS_PER_SESSION,
            "maxSegmentsPerSession",
            p.maxSegmentsPerSession
        );
        // A zero penalty would let a seat be held with nothing at risk.
        _check(p.penaltyPerSeat > 0, "penaltyPerSeat", p.penaltyPerSeat);
        _check(p.unbondingDelaySeconds <= MAX_UNBONDING_SECONDS, "unbondingDelaySeconds", p.unbondingDelaySeconds);
        // Table 2: low <= medium <= high, and every tier's minimum backs at least one seat.
        _check(p.minStakeTier1 >= p.penaltyPerSeat, "minStakeTier1", p.minStakeTier1);
        _check(p.minStakeTier2 >= p.minStakeTier1, "minStakeTier2", p.minStakeTier2);
        _check(p.minStakeTier3 >= p.minStakeTier2, "minStakeTier3", p.minStakeTier3);
        _check(p.initialReputationWad <= WAD, "initialReputationWad", p.initialReputationWad);
        // The minimum fee is R * seats / auditor share: the auditors' share cannot be zero.
        _check(p.auditorShareBps > 0, "auditorShareBps", p.auditorShareBps);
        uint256 split = uint256(p.auditorShareBps) + p.treasuryShareBps + p.stakerShareBps + p.insuranceShareBps;
        _check(split == BPS, "feeSplitBps", split);
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

    function _checkCommittee(uint8 size, uint8 maxRounds, string memory name) private pure {
        uint256 largest = size;
        for (uint256 round = 1; round < maxRounds; ++round) {
            largest = escalatedSize(largest);
        }
        _check(size >= 1 && largest <= MAX_COMMITTEE_SIZE, name, size);
    }

    function _check(bool ok, string memory name, uint256 value) private pure {
        if (!ok) revert ParamsOutOfRange(name, value);
    }
}
