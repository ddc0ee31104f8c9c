// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ParamsLib} from "../../src/libraries/ParamsLib.sol";
import {Params} from "../../src/types/Params.sol";
import {ProtocolInvariantTest} from "./ProtocolInvariants.t.sol";

/// @notice Every protocol invariant again, at the largest committees `ParamsLib.validate` allows
///         (issue M4): two rounds, a tier-1 segment of 63 draws and, escalated, 127 of tier 2
///         (`MAX_COMMITTEE_SIZE`), so that the deciding round settles up to 190 seats (its own and
///         the revealed seats it deferred), more than one transaction could settle at once: the
///         handler settles them in steps of 1 to 7 seats or in one go, and
///         `invariant_everySessionEnds` in steps of `SETTLEMENT_CHUNK_SEATS`, each call within
///         the EIP-7825 gas cap; 64 would be refused. Draws are with replacement (issue L2): a
///         round seats one member per distinct winner, so as many seats as draws only when no
///         member wins twice (likelier under the penalties near the tier-1 minimum that the
///         fixture starts with and `setPenalty` picks half the time, which leave many members
///         backing few units; `test/gas/SettlementGas.t.sol` measures the worst case). Tier 2 has
///         60 auditors; when their stake cannot back the escalated round, the segment is
///         abandoned after three draws (its earlier seats released). Tier 1 has 30. Tier-2 and
///         tier-3 segments (a quarter of them) keep their small committees.
/// @dev A run's calls cost several times those of `ProtocolInvariantTest` (127-seat commits and
///      reveals, 190-seat settlements), so it runs far fewer of them: CI time is budgeted.
/// forge-config: default.invariant.runs = 4
/// forge-config: default.invariant.depth = 48
/// forge-config: ci.invariant.runs = 4
/// forge-config: ci.invariant.depth = 64
contract LargeCommitteeInvariantTest is ProtocolInvariantTest {
    uint8 internal constant LARGEST_TIER1_COMMITTEE = 63;
    uint8 internal constant ROUNDS = 2;

    function tierSizes() internal pure override returns (uint256, uint256, uint256) {
        return (30, 60, 10);
    }

    function invariantParams() internal pure override returns (Params memory p) {
        p = super.invariantParams();
        p.maxRounds = ROUNDS;
        p.committeeSizeTier1 = LARGEST_TIER1_COMMITTEE;
    }

    function setUp() public override {
        super.setUp();
        handler.setTier1Quarters(3); // most segments draw the large committees
        // At the edge: one seat more in the first round and `validate` refuses the parameters.
        Params memory p = invariantParams();
        assertTrue(ParamsLib.isValid(p), "largest committee refused");
        p.committeeSizeTier1 += 1;
        assertFalse(ParamsLib.isValid(p), "not the largest committee validate allows");
    }
}
