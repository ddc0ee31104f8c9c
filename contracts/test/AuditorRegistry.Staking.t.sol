// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AuditorRegistryDrawBase} from "./AuditorRegistryDrawBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {Params} from "../src/types/Params.sol";
import {ParamsLib} from "../src/libraries/ParamsLib.sol";

/// @notice Top-ups, the two-step unstake, availability and draw eligibility.
contract AuditorRegistryStakingTest is AuditorRegistryDrawBase {
    address internal alice;

    function setUp() public override {
        super.setUp();
        alice = addAuditor("alice", 1, 200e18);
        token.transfer(alice, 1_000e18);
        vm.prank(alice);
        token.approve(address(registry), type(uint256).max);
    }

    function requestUnstakeAs(address a, uint256 amount) internal {
        vm.prank(a);
        registry.requestUnstake(amount);
    }

    /// @dev Mines past the last block at which a draw on a snapshot taken before an unstake
    ///      requested at `requestBlock` may still charge it.
    function rollPastReach(uint256 requestBlock) internal {
        vm.roll(requestBlock + ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS + 1);
    }

    // ------------------------------------------------------------------ stake

    function test_stake_topsUp() public {
        vm.roll(block.number + 1); // a block after alice registered
        uint256 b = block.number;
        uint256 balanceBefore = token.balanceOf(alice);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.Staked(alice, 50e18, 250e18, 250e18);
        vm.prank(alice);
        registry.stake(50e18);
        assertEq(registry.stakeOf(alice), 250e18);
        assertEq(registry.totalStake(), 250e18);
        assertEq(registry.eligibleStake(1), 250e18, "draw weight follows the stake");
        assertEq(registry.eligibleCount(1), 1);
        assertEq(token.balanceOf(alice), balanceBefore - 50e18);
        assertEq(token.balanceOf(address(registry)), 250e18);
        vm.roll(b + 1);
        assertEq(registry.eligibleStakeAt(1, b), 250e18, "the tree of this block holds the increase");
        assertEq(registry.drawWeightAt(alice, b), 250e18);
        assertEq(registry.drawWeightAt(alice, b - 1), 200e18, "earlier blocks keep the old weight");
    }

    function test_stake_emitsDrawWeightChanged() public {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.DrawWeightChanged(alice, 250e18);
        vm.prank(alice);
        registry.stake(50e18);
    }

    function test_stake_revertsForZeroAmount() public {
        vm.expectRevert(IAuditorRegistry.RegistryZeroAmount.selector);
        vm.prank(alice);
        registry.stake(0);
    }

    function test_stake_revertsWhenNotRegistered() public {
        fund(stranger, 100e18);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.stake(100e18);
    }

    function test_stake_revertsAboveUint96() public {
        uint256 amount = uint256(type(uint96).max) - 200e18 + 1;
        fund(alice, amount);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryStakeOverflow.selector, alice, amount + 200e18));
        vm.prank(alice);
        registry.stake(amount);
    }

    function test_stake_afterFullExitRestoresEligibility() public {
        requestUnstakeAs(alice, 200e18);
        assertEq(registry.eligibleCount(1), 0);
        vm.prank(alice);
        registry.stake(100e18);
        assertEq(registry.eligibleCount(1), 1);
        assertEq(registry.eligibleStake(1), 100e18);
    }

    function test_stake_belowMinimumAfterExitIsNotDrawable() public {
        requestUnstakeAs(alice, 200e18);
        vm.prank(alice);
        registry.stake(99e18);
        assertEq(registry.stakeOf(alice), 99e18);
        assertEq(registry.eligibleCount(1), 0);
        assertEq(registry.eligibleStake(1), 0);
    }

    // ------------------------------------------------------------------ requestUnstake

    function test_requestUnstake_partial() public {
        vm.roll(block.number + 1); // a block after alice registered
        uint256 b = block.number;
        uint256 readyAt = block.timestamp + UNBONDING;
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.UnstakeRequested(alice, 60e18, 140e18, readyAt);
        requestUnstakeAs(alice, 60e18);
        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertEq(a.stake, 140e18);
        assertEq(a.unbonding, 60e18);
        assertEq(a.unbondingReadyAt, readyAt);
        assertEq(registry.totalStake(), 140e18, "unbonding stake stops counting at once");
        assertEq(registry.eligibleStake(1), 140e18, "a decrease reaches the tree at once");
        assertEq(registry.eligibleCount(1), 1);
        assertEq(token.balanceOf(address(registry)), 200e18, "tokens stay until executeUnstake");
        vm.roll(b + 1);
        assertEq(registry.eligibleStakeAt(1, b), 140e18, "a draw from this block reads the decrease");
        assertEq(registry.drawWeightAt(alice, b), 140e18);
        assertEq(registry.eligibleStakeAt(1, b - 1), 200e18, "a draw from an earlier block does not");
        assertEq(registry.drawWeightAt(alice, b - 1), 200e18);
    }

    function test_requestUnstake_fullExitAllowed() public {
        vm.roll(block.number + 1); // a block after alice registered
        uint256 b = block.number;
        requestUnstakeAs(alice, 200e18);
        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertEq(a.stake, 0);
        assertEq(a.unbonding, 200e18);
        assertTrue(a.registered, "still registered, with nothing staked");
        assertEq(registry.totalStake(), 0);
        assertEq(registry.eligibleCount(1), 0);
        assertEq(registry.eligibleStake(1), 0);
        vm.roll(b + 1);
        assertEq(registry.drawWeightAt(alice, b), 0, "out of the tree from this block");
        assertEq(registry.drawWeightAt(alice, b - 1), 200e18, "still weighed for draws of earlier randomness");
        assertEq(registry.eligibleStakeAt(1, b - 1), 200e18);
    }

    function test_requestUnstake_downToExactlyTheMinimum() public {
        requestUnstakeAs(alice, 100e18);
        assertEq(registry.stakeOf(alice), MIN_TIER1);
        assertEq(registry.eligibleCount(1), 1);
    }

    function test_requestUnstake_revertsForZeroAmount() public {
        vm.expectRevert(IAuditorRegistry.RegistryZeroAmount.selector);
        requestUnstakeAs(alice, 0);
    }

    function test_requestUnstake_revertsWhenNotRegistered() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotRegistered.selector, stranger));
        requestUnstakeAs(stranger, 1);
    }

    /// @notice Each seated member locked units * P and cannot start unbonding until its seat
    ///         settles; the error carries its lock.
    function test_requestUnstake_revertsWithOpenSeats() public {
        address bob = addAuditor("bob", 1, 150e18);
        address carol = addAuditor("carol", 1, 300e18);
        (uint256 sessionId,) = openSeatedSession();
        (address[] memory members, uint96[] memory units) = seatUnits(sessionId, 0);
        assertCommittee(members, units, 3);
        for (uint256 i; i < members.length; ++i) {
            uint256 lock = units[i] * PENALTY;
            assertEq(info(members[i]).locked, lock, "locked = units * P");
            vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryHasOpenSeats.selector, members[i], lock));
            requestUnstakeAs(members[i], 1);
        }
        // Once the seats settle, the stake can leave.
        settleAligned(sessionId);
        address[3] memory everyone = [alice, bob, carol];
        uint256[3] memory staked = [uint256(200e18), 150e18, 300e18];
        for (uint256 k; k < 3; ++k) {
            assertEq(info(everyone[k]).locked, 0);
            requestUnstakeAs(everyone[k], staked[k]);
            assertEq(info(everyone[k]).unbonding, staked[k]);
        }
    }

    function test_requestUnstake_revertsWhileUnbondingPending() public {
        requestUnstakeAs(alice, 50e18);
        uint256 readyAt = block.timestamp + UNBONDING;
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryUnbondingPending.selector, alice, 50e18, readyAt)
        );
        requestUnstakeAs(alice, 10e18);
        // Still pending once ready, until executed.
        vm.warp(readyAt);
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryUnbondingPending.selector, alice, 50e18, readyAt)
        );
        requestUnstakeAs(alice, 10e18);
    }

    function test_requestUnstake_revertsWhenExceedingStake() public {
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryExceedsStake.selector, alice, 200e18 + 1, 200e18)
        );
        requestUnstakeAs(alice, 200e18 + 1);
    }

    function test_requestUnstake_revertsWhenRemainderBelowMinimum() public {
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryInsufficientStake.selector, alice, MIN_TIER1 - 1, MIN_TIER1)
        );
        requestUnstakeAs(alice, 100e18 + 1);
    }

    function testFuzz_requestUnstake_leavesZeroOrAtLeastTheMinimum(uint256 amount) public {
        amount = bound(amount, 1, 200e18);
        uint256 remaining = 200e18 - amount;
        if (remaining != 0 && remaining < MIN_TIER1) {
            vm.expectRevert(
                abi.encodeWithSelector(IAuditorRegistry.RegistryInsufficientStake.selector, alice, remaining, MIN_TIER1)
            );
            requestUnstakeAs(alice, amount);
        } else {
            requestUnstakeAs(alice, amount);
            assertEq(registry.stakeOf(alice), remaining);
            assertEq(info(alice).unbonding, amount);
            assertEq(registry.totalStake(), remaining);
            assertEq(registry.eligibleStake(1), remaining);
        }
    }

    // ------------------------------------------------------------------ executeUnstake

    function test_executeUnstake_revertsWithNothingUnbonding() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingUnbonding.selector, alice));
        vm.prank(alice);
        registry.executeUnstake();
    }

    function test_executeUnstake_revertsForStranger() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingUnbonding.selector, stranger));
        vm.prank(stranger);
        registry.executeUnstake();
    }

    function test_executeUnstake_revertsBeforeTheDelay() public {
        requestUnstakeAs(alice, 50e18);
        uint256 readyAt = block.timestamp + UNBONDING;
        vm.warp(readyAt - 1);
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryUnbondingNotReady.selector, alice, readyAt, readyAt - 1)
        );
        vm.prank(alice);
        registry.executeUnstake();
    }

    /// @notice Ready by time, but a draw on a snapshot taken before the request may still charge
    ///         the unbonding stake (issue M2) until `MAX_SNAPSHOT_AGE_BLOCKS` blocks have passed:
    ///         the stake stays until the block after.
    function test_executeUnstake_revertsWhileADrawMayStillChargeIt() public {
        uint256 requested = block.number;
        requestUnstakeAs(alice, 50e18);
        vm.warp(block.timestamp + UNBONDING);
        uint256 reach = requested + ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS;
        uint256[3] memory tooSoon = [requested, requested + 1, reach];
        for (uint256 i; i < tooSoon.length; ++i) {
            vm.roll(tooSoon[i]);
            vm.expectRevert(
                abi.encodeWithSelector(IAuditorRegistry.RegistryUnbondingInReach.selector, alice, reach, tooSoon[i])
            );
            vm.prank(alice);
            registry.executeUnstake();
        }
        vm.roll(reach + 1);
        vm.prank(alice);
        registry.executeUnstake();
        assertEq(info(alice).unbonding, 0);
    }

    /// @notice Out of reach by blocks, but not yet ready by time: the delay still holds.
    function test_executeUnstake_needsBothTheDelayAndTheBlocks() public {
        requestUnstakeAs(alice, 50e18);
        uint256 readyAt = block.timestamp + UNBONDING;
        rollPastReach(block.number);
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryUnbondingNotReady.selector, alice, readyAt, block.timestamp)
        );
        vm.prank(alice);
        registry.executeUnstake();
    }

    function test_executeUnstake_paysOutAfterTheDelay() public {
        requestUnstakeAs(alice, 50e18);
        rollPastReach(block.number);
        uint256 balanceBefore = token.balanceOf(alice);
        vm.warp(block.timestamp + UNBONDING);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.Unstaked(alice, 50e18);
        vm.prank(alice);
        registry.executeUnstake();
        assertEq(token.balanceOf(alice), balanceBefore + 50e18);
        assertEq(token.balanceOf(address(registry)), 150e18);
        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertEq(a.unbonding, 0);
        assertEq(a.unbondingReadyAt, 0);
        assertEq(a.stake, 150e18);

        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingUnbonding.selector, alice));
        vm.prank(alice);
        registry.executeUnstake();
    }

    function test_executeUnstake_thenRequestAgain() public {
        requestUnstakeAs(alice, 50e18);
        rollPastReach(block.number);
        vm.warp(block.timestamp + UNBONDING);
        vm.prank(alice);
        registry.executeUnstake();
        requestUnstakeAs(alice, 50e18);
        assertEq(info(alice).unbonding, 50e18);
        assertEq(registry.stakeOf(alice), 100e18);
    }

    function test_executeUnstake_usesTheDelayInForceAtTheRequest() public {
        requestUnstakeAs(alice, 50e18);
        rollPastReach(block.number);
        uint256 readyAt = block.timestamp + UNBONDING;
        Params memory p = defaultParams();
        p.unbondingDelaySeconds = 30 days;
        params.setParams(p);
        vm.warp(readyAt);
        vm.prank(alice);
        registry.executeUnstake();
        assertEq(info(alice).unbonding, 0);
    }

    // ------------------------------------------------------------------ setAvailable and eligibility

    function test_setAvailable_falseRemovesDrawWeight() public {
        address bob = addAuditor("bob", 1, 300e18);
        uint256 b = block.number;
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.AvailabilityChanged(alice, false);
        vm.prank(alice);
        registry.setAvailable(false);
        assertFalse(info(alice).available);
        assertEq(registry.eligibleCount(1), 1);
        assertEq(registry.eligibleStake(1), 300e18, "a decrease reaches the tree at once");
        assertEq(registry.totalStake(), 500e18, "still staked, just not drawn");

        vm.roll(b + 1);
        assertEq(registry.eligibleStakeAt(1, b), 300e18);
        assertEq(registry.drawWeightAt(alice, b), 0);
        vm.prank(alice);
        registry.setAvailable(true);
        assertEq(registry.eligibleCount(1), 2);
        assertEq(registry.eligibleStake(1), 500e18);
        assertEq(info(bob).stake, 300e18);
        vm.roll(b + 2);
        assertEq(registry.drawWeightAt(alice, b), 0, "the block it was away keeps its zero");
        assertEq(registry.drawWeightAt(alice, b + 1), 200e18);
    }

    function test_setAvailable_isIdempotent() public {
        vm.startPrank(alice);
        registry.setAvailable(false);
        registry.setAvailable(false);
        vm.stopPrank();
        assertEq(registry.eligibleCount(1), 0);
        vm.startPrank(alice);
        registry.setAvailable(true);
        registry.setAvailable(true);
        vm.stopPrank();
        assertEq(registry.eligibleCount(1), 1);
        assertEq(registry.eligibleStake(1), 200e18);
    }

    function test_setAvailable_revertsWhenNotRegistered() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.setAvailable(true);
    }

    /// @dev The subject is availability, not the draw: with P = 100 each of the others (150)
    ///      backs exactly one unit, so the three draws seat three distinct members (issue L2's
    ///      fixture): all three others, never alice.
    function test_setAvailable_unavailableAuditorIsNeverDrawn() public {
        Params memory p = defaultParams();
        p.penaltyPerSeat = uint96(MIN_TIER1);
        params.setParams(p);
        address[] memory others = addAuditors("other", 1, 3, 150e18);
        vm.prank(alice);
        registry.setAvailable(false);
        (, address[] memory members) = openSeatedSession();
        assertFalse(contains(members, alice));
        for (uint256 i; i < others.length; ++i) {
            assertTrue(contains(members, others[i]), "exactly three units are backed: all of them");
            assertEq(info(others[i]).locked, MIN_TIER1);
        }
        assertEq(info(alice).locked, 0);
    }

    /// @notice Two of three tier-1 auditors available, and under P = 120 each backs one unit: two
    ///         units for three draws, so the registry seats nobody and says so, and the segment
    ///         waits for another draw with nothing locked. Under the default P the same two back
    ///         the three draws between them: two seats, three units.
    function test_setAvailable_tooFewAvailableLeavesTheCommitteeUndrawn() public {
        Params memory p = defaultParams();
        (p.penaltyPerSeat, p.minStakeTier1) = (120e18, 120e18); // every minimum backs one unit
        params.setParams(p);
        address bob = addAuditor("bob", 1, 150e18);
        address carol = addAuditor("carol", 1, 150e18);
        vm.prank(carol);
        registry.setAvailable(false);
        uint256 sessionId = openSession(uniformSegments(1, 1));
        vm.roll(audit.session(sessionId).randomnessBlock + 1);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 3, 2);
        audit.assignAuditors(sessionId, 0);
        assertEq(uint8(audit.segment(sessionId, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(audit.committee(sessionId, 0).length, 0, "no committee seated");
        assertEq(info(alice).locked, 0, "nothing locked");
        assertEq(info(bob).locked, 0, "nothing locked");

        params.setParams(defaultParams());
        uint256 second = openSession(uniformSegments(1, 1));
        drawAll(second);
        (address[] memory members, uint96[] memory units) = seatUnits(second, 0);
        assertCommittee(members, units, 3);
        assertEq(members.length, 2, "two seats, one of two units");
        assertFalse(contains(members, carol));
        assertEq(info(alice).locked + info(bob).locked, 3 * PENALTY);
    }

    /// @dev Locks do not enter the draw weight: a member short of unlocked stake keeps its weight,
    ///      its place in eligibleCount and eligibleStake, and is passed over by the draw instead.
    ///      Under P = 100, alice (200) backs two units, bob (150) and carol (100) one each.
    function test_eligibility_memberShortOfUnlockedStakeKeepsItsWeightButIsSkipped() public {
        Params memory p = defaultParams();
        p.penaltyPerSeat = uint96(MIN_TIER1); // one unit locks a whole minimum stake
        params.setParams(p);
        address bob = addAuditor("bob", 1, 150e18);
        address carol = addAuditor("carol", 1, 100e18);
        address[] memory everyone = new address[](3);
        (everyone[0], everyone[1], everyone[2]) = (alice, bob, carol);
        uint256[3] memory backed = [uint256(2), 1, 1];
        assertEq(registry.eligibleCount(1), 3);
        (uint256 sessionId,) = openSeatedSession();
        (address[] memory members, uint96[] memory units) = seatUnits(sessionId, 0);
        assertCommittee(members, units, 3);
        uint256[3] memory lockedAfterFirst;
        for (uint256 k; k < 3; ++k) {
            uint256 u = unitsIn(members, units, everyone[k]);
            assertLe(u, backed[k], "no more units than its stake backs");
            assertEq(info(everyone[k]).locked, u * MIN_TIER1);
            lockedAfterFirst[k] = u * MIN_TIER1;
        }
        // Three of the four units backed are locked. No weight changes.
        assertEq(registry.eligibleCount(1), 3);
        assertEq(registry.eligibleStake(1), 450e18);

        // A second committee of three: one unit is left to back, so the draw passes over every
        // member in turn with one unit drawn.
        uint256 second = openSession(uniformSegments(1, 1));
        vm.roll(audit.session(second).randomnessBlock + 1);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 3, 1);
        audit.assignAuditors(second, 0);
        for (uint256 k; k < 3; ++k) {
            assertEq(info(everyone[k]).locked, lockedAfterFirst[k], "the failed draw locked nothing");
        }
        assertEq(audit.committee(second, 0).length, 0);

        // Once the first seats settle, the four units are backed again (the retry draws from the
        // new randomness block the failed attempt fixed).
        settleAligned(sessionId);
        assertEq(registry.eligibleCount(1), 3);
        assertEq(registry.eligibleStake(1), 450e18);
        vm.roll(audit.segment(second, 0).randomnessBlock + 1);
        audit.assignAuditors(second, 0);
        (members, units) = seatUnits(second, 0);
        assertCommittee(members, units, 3);
        for (uint256 k; k < 3; ++k) {
            uint256 u = unitsIn(members, units, everyone[k]);
            assertLe(u, backed[k], "no more units than its stake backs");
            assertEq(info(everyone[k]).locked, u * MIN_TIER1);
        }
    }

    function test_eligibility_drawWeightIsTheWholeStakeWhileSeated() public {
        addAuditor("bob", 1, 150e18);
        addAuditor("carol", 1, 300e18);
        openSeatedSession();
        assertEq(registry.eligibleStake(1), 650e18, "locked stake still counts toward draw weight");
        assertEq(registry.totalStake(), 650e18);
    }
}
