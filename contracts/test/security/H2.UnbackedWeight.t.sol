// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";

/// @notice Issue H2, voting weight not backed by stake at risk. The attack: a whale with 1,000,000
///         tokens staked in tier 1 beside four honest members of 100 each waits for the randomness
///         block, unbonds all but the tier minimum (100) before the draw, is drawn with its weight
///         at the block, votes against the honest seats and out-votes them, then gets its tokens
///         back after the unbonding delay.
///         On 96c3011 (a seat weighs the stake at the randomness block) the whale sat with weight
///         1,000,000 tokens against 200 for the two honest seats, the segment ended Failed against
///         the honest majority, and 7 days later the whale withdrew its 999,900 tokens in full.
///         The defence asserted here: a seat weighs the snapshot weight capped by the stake still
///         bonded at the draw, so the whale votes with 100 and the honest seats (200 of 300, above
///         tau = 0.66) decide; its bonded stake cannot leave while the seat is open.
contract H2UnbackedWeightTest is TRUSTAuditBase {
    uint256 internal constant WHALE = 1_000_000e18;
    uint256 internal constant HONEST = 100e18; // the tier-1 minimum

    address internal whale;
    address[] internal honest;

    function setUp() public override {
        super.setUp();
        honest = addAuditors("honest-", 1, 4, HONEST);
        whale = addAuditor("whale", 1, WHALE);
    }

    function test_H2_unbondingAfterTheSnapshotLeavesTheWhaleOnlyItsBondedStake() public {
        uint256 id = openSingle(1);
        uint256 b = audit.session(id).randomnessBlock;
        vm.roll(b + 1); // the seed is public; the draw has not happened

        vm.prank(whale);
        registry.requestUnstake(WHALE - HONEST); // all but the tier minimum
        assertEq(registry.drawWeightAt(whale, b), WHALE, "counted in full at the snapshot");

        audit.assignAuditors(id, 0);
        address[] memory members = audit.committee(id, 0);
        assertTrue(contains(members, whale), "drawn: 99.96% of the weight at the snapshot");
        address[] memory voters = new address[](3);
        bool[] memory votes = new bool[](3);
        uint256 honestWeight;
        for (uint256 i; i < members.length; ++i) {
            uint256 weight = audit.seat(id, 0, 0, i).weight;
            if (members[i] == whale) {
                assertEq(weight, HONEST, "the whale votes with what it left at stake");
            } else {
                assertEq(weight, HONEST);
                honestWeight += weight;
            }
            voters[i] = members[i];
            votes[i] = members[i] != whale; // honest: Pass; the whale: Fail
        }
        assertEq(honestWeight, 2 * HONEST);

        // Its bonded stake backs the seat until it settles.
        vm.expectRevert(
            abi.encodeWithSelector(
                IAuditorRegistry.RegistryHasOpenSeats.selector, whale, registry.auditor(whale).locked
            )
        );
        vm.prank(whale);
        registry.requestUnstake(HONEST);

        castVotes(id, 0, voters, votes);
        toRevealEnd(id, 0);
        assertTrue(audit.finalizeSegment(id, 0), "the honest seats decide: 200 of 300 >= tau");
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
        assertEq(registry.auditor(whale).locked, 0, "settled");
    }

    /// @notice The converse: stake added after the snapshot adds no weight. An honest member that
    ///         tops up by a million tokens once the seed is public still sits with its 100.
    function test_H2_stakeAddedAfterTheSnapshotAddsNothing() public {
        uint256 id = openSingle(1);
        vm.roll(audit.session(id).randomnessBlock + 1);
        for (uint256 i; i < honest.length; ++i) {
            token.transfer(honest[i], WHALE);
            vm.startPrank(honest[i]);
            token.approve(address(registry), WHALE);
            registry.stake(WHALE);
            vm.stopPrank();
        }
        audit.assignAuditors(id, 0);
        address[] memory members = audit.committee(id, 0);
        for (uint256 i; i < members.length; ++i) {
            uint256 expected = members[i] == whale ? WHALE : HONEST;
            assertEq(audit.seat(id, 0, 0, i).weight, expected, "the snapshot's weight, never more");
        }
    }
}
