// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice Every protocol parameter of TRUST, packed into four storage slots.
/// @dev The values are the TRUST paper's, with units in the names:
///      - tau (eq. 3.3) and beta (eq. 3.6) are ratios in basis points (10_000 = 1).
///      - gamma (eq. 3.8) and reputations are WAD fixed point (1e18 = 1).
///      - p_min, p_max (eq. 3.9) are probabilities in basis points.
///      - R, the reward of one seat that agrees with consensus (eq. 3.10), is paid in wei from the
///        auditors' share of the session fee; it sets the minimum fee (every seat of the first round
///        must be able to earn R). P, the penalty (eq. 3.10), is in staking-token units and is the
///        collateral each seat locks, so that every penalty is backed.
///      Slot layout (declaration order, each slot filled to 256 bits):
///      0: tauBps 16 | betaBps 16 | gammaWad 64 | pMinBps 16 | pMaxBps 16 | committeeSizeTier1..3 8x3 |
///         maxRounds 8 | commitWindowSeconds 32 | revealWindowSeconds 32 | randomnessDelayBlocks 16 |
///         maxSegmentsPerSession 16
///      1: rewardPerSeatWei 128 | penaltyPerSeat 96 | unbondingDelaySeconds 32
///      2: minStakeTier1 96 | minStakeTier2 96 | initialReputationWad 64
///      3: minStakeTier3 96 | auditorShareBps 16 | treasuryShareBps 16 | stakerShareBps 16 | insuranceShareBps 16 |
///         maxWeightRatio 16
///      `maxWeightRatio` bounds the weights a provider may declare (issue M5): within a session, no
///      segment may weigh more than this many times the lightest, so that a failed step cannot be
///      drowned by a passing one declared a thousand times heavier (eq. 3.6 weighs the trace).
struct Params {
    uint16 tauBps;
    uint16 betaBps;
    uint64 gammaWad;
    uint16 pMinBps;
    uint16 pMaxBps;
    uint8 committeeSizeTier1;
    uint8 committeeSizeTier2;
    uint8 committeeSizeTier3;
    uint8 maxRounds;
    uint32 commitWindowSeconds;
    uint32 revealWindowSeconds;
    uint16 randomnessDelayBlocks;
    uint16 maxSegmentsPerSession;
    uint128 rewardPerSeatWei;
    uint96 penaltyPerSeat;
    uint32 unbondingDelaySeconds;
    uint96 minStakeTier1;
    uint96 minStakeTier2;
    uint64 initialReputationWad;
    uint96 minStakeTier3;
    uint16 auditorShareBps;
    uint16 treasuryShareBps;
    uint16 stakerShareBps;
    uint16 insuranceShareBps;
    uint16 maxWeightRatio;
}
