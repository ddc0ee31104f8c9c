// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";
import {ParamsLib} from "../../src/libraries/ParamsLib.sol";

/// @notice Issue H2, voting weight not backed by stake at risk. The attack: a whale with 1,000,000
///         tokens staked in tier 1 beside four honest members of 100 each waits for the randomness
///         block, unbonds all but the tier minimum (100) before the draw, is drawn with its weight
///         at the block, votes against the honest seats and out-votes them, then gets its tokens
///         back after the unbonding delay.
///         On 96c3011 (a seat weighs the stake at the randomness block) the whale sat with weight
///         1,000,000 tokens against 200 for the two honest seats, the segment ended Failed against
///         the honest majority, and 7 days later the whale withdrew its 999,900 tokens in full.
///         The defence asserted here (draws with replacement, 7430925): a seat weighs the draws
///         it won (its units), and each unit locks P until the seat settles, so every unit of
///         voting weight is P of stake that cannot leave. A member that asked to unstake after the
///         snapshot, even in part, is passed over for the rest of the draw and charged P of its
///         unbonding stake: the whale, 99.96% of the weight at the snapshot, sits nowhere, pays
///         8 tokens, and the three draws seat honest members, who decide.
contract H2UnbackedWeightTest is TRUSTAuditBase {
    uint256 internal constant WHALE = 1_000_000e18;
    uint256 internal constant HONEST = 100e18; // the tier-1 minimum
    uint256 internal constant PENALTY = 8e18; // P, locked per unit
    uint256 internal constant SIZE = 3; // tier-1 draws

    address internal whale;
    address[] internal honest;

    function setUp() public override {
        super.setUp();
        honest = addAuditors("honest-", 1, 4, HONEST);
        whale = addAuditor("whale", 1, WHALE);
    }

    /// @dev The members of the segment's first round and the draws each won.
    function seatsOf(uint256 id) internal view returns (address[] memory members, uint256[] memory units) {
        members = audit.committee(id, 0);
        units = new uint256[](members.length);
        for (uint256 i; i < members.length; ++i) {
            ITRUSTAudit.SeatView memory v = audit.seat(id, 0, 0, i);
            assertEq(v.auditor, members[i]);
            units[i] = v.weight;
        }
    }

    function test_H2_unbondingAfterTheSnapshotLeavesTheWhaleNoSeatAndCostsP() public {
        uint256 id = openSingle(1);
        uint256 b = audit.session(id).randomnessBlock;
        vm.roll(b + 1); // the seed is public; the draw has not happened

        vm.prank(whale);
        registry.requestUnstake(WHALE - HONEST); // all but the tier minimum: a partial unbond
        assertEq(registry.drawWeightAt(whale, b), WHALE, "counted in full at the snapshot");

        vm.expectEmit(address(registry));
        emit IAuditorRegistry.StakeForfeited(
            whale, PENALTY, insurance, "unbonded after the draw's snapshot", HONEST, WHALE - HONEST - PENALTY
        );
        audit.assignAuditors(id, 0);
        (address[] memory members, uint256[] memory units) = seatsOf(id);
        assertFalse(contains(members, whale), "passed over: 99.96% of the snapshot's weight, no seat");
        IAuditorRegistry.AuditorInfo memory w = registry.auditor(whale);
        assertEq(w.unbonding, WHALE - HONEST - PENALTY, "charged P of its unbonding stake");
        assertEq(w.locked, 0);
        assertEq(registry.claimableTokens(insurance), PENALTY, "to the insurance fund");

        // The three draws went to honest members; each unit is P of their stake, locked.
        uint256 total;
        address[] memory voters = new address[](members.length);
        bool[] memory votes = new bool[](members.length);
        for (uint256 i; i < members.length; ++i) {
            assertTrue(contains(honest, members[i]), "an honest member");
            assertEq(registry.auditor(members[i]).locked, units[i] * PENALTY, "every unit of weight backed by P");
            total += units[i];
            (voters[i], votes[i]) = (members[i], true);
        }
        assertEq(total, SIZE, "the committee's weight is its three draws");

        // The locked stake backs the seat until it settles.
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryHasOpenSeats.selector, members[0], units[0] * PENALTY)
        );
        vm.prank(members[0]);
        registry.requestUnstake(HONEST);

        castVotes(id, 0, voters, votes);
        toRevealEnd(id, 0);
        assertTrue(audit.finalizeSegment(id, 0), "the honest seats decide, all three draws");
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
        for (uint256 i; i < members.length; ++i) {
            assertEq(registry.auditor(members[i]).locked, 0, "settled");
        }

        // The whale gets back what it unbonded less P, once no draw can count it any more.
        vm.warp(block.timestamp + 7 days);
        vm.roll(b + 1 + ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS + 1);
        uint256 before = token.balanceOf(whale);
        vm.prank(whale);
        registry.executeUnstake();
        assertEq(token.balanceOf(whale) - before, WHALE - HONEST - PENALTY);
    }

    /// @notice The converse: stake added after the snapshot adds no draws. The four honest members
    ///         top up by a million tokens each once the seed is public (4,000,400 against the
    ///         whale's 1,000,000, were it counted now), and the committee is the one the snapshot
    ///         gives without the top-ups: the same members with the same units.
    function test_H2_stakeAddedAfterTheSnapshotAddsNoDraws() public {
        uint256 id = openSingle(1);
        vm.roll(audit.session(id).randomnessBlock + 1);

        uint256 state = vm.snapshotState();
        audit.assignAuditors(id, 0);
        (address[] memory plainMembers, uint256[] memory plainUnits) = seatsOf(id);
        vm.revertToState(state);

        for (uint256 i; i < honest.length; ++i) {
            token.transfer(honest[i], WHALE);
            vm.startPrank(honest[i]);
            token.approve(address(registry), WHALE);
            registry.stake(WHALE);
            vm.stopPrank();
        }
        audit.assignAuditors(id, 0);
        (address[] memory members, uint256[] memory units) = seatsOf(id);
        assertEq(abi.encode(members), abi.encode(plainMembers), "the snapshot's members, never others");
        assertEq(abi.encode(units), abi.encode(plainUnits), "the snapshot's draws, never more");
        uint256 total;
        for (uint256 i; i < members.length; ++i) {
            assertEq(registry.auditor(members[i]).locked, units[i] * PENALTY, "every unit of weight backed by P");
            total += units[i];
        }
        assertEq(total, SIZE);
    }
}
