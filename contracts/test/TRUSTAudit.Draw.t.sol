// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {CommitteeUnitsBase} from "./CommitteeUnitsBase.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {Params} from "../src/types/Params.sol";

/// @notice Committee draws: randomness timing, committee size and membership (eq. 3.2: stake-weighted,
///         of the segment's tier, available, credentialed, never the provider) and seat locks.
///         A round makes k_t draws with replacement (issue L2): a member drawn several times holds
///         one seat weighing the draws it won (its units, each locking P), so a committee seats
///         `seatCount` <= k_t distinct members whose units add up to k_t, and a tier cannot seat it
///         only when its unlocked stake cannot back k_t units.
contract TRUSTAuditDrawTest is CommitteeUnitsBase {
    uint256 internal constant PENALTY = 8e18;

    address internal stranger = makeAddr("stranger");

    /// @notice P = 60 tokens, with stakes of 100 (`ONE_UNIT_STAKE`): no auditor backs a second unit,
    ///         so a committee of k draws needs k distinct auditors, for the tests of what happens
    ///         when a tier is too thin (see `CommitteeUnitsBase`).
    function useOneUnitStakes() internal {
        applyParams(oneUnitParams());
    }

    // ------------------------------------------------------------------ randomness timing

    function test_assignAuditors_revertsWhileRandomnessPending() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;
        assertEq(randomnessBlock, block.number + 2);

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, randomnessBlock));
        audit.assignAuditors(id, 0);

        // The randomness block itself is not mined yet while it is the current block.
        vm.roll(randomnessBlock);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, randomnessBlock));
        audit.assignAuditors(id, 0);

        vm.roll(randomnessBlock + 1);
        audit.assignAuditors(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
    }

    function test_assignAuditors_refreshesExpiredRandomnessWithoutDrawing() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;

        // BLOCKHASH reaches 256 blocks back: one block more and the value is gone.
        vm.roll(randomnessBlock + 257);
        uint64 next = uint64(block.number + 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 0, next);
        audit.assignAuditors(id, 0);

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(g.randomnessBlock, next);
        assertEq(g.commitDeadline, 0);
        assertEq(audit.committee(id, 0).length, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.AwaitingDraw));
        for (uint256 i; i < pool.length; ++i) {
            assertEq(registry.auditor(pool[i]).locked, 0);
        }

        // The new block must be mined before the draw.
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, next));
        audit.assignAuditors(id, 0);
        vm.roll(next + 1);
        audit.assignAuditors(id, 0);
        assertSeated(id, 0);
    }

    function test_assignAuditors_drawsAtTheEdgeOfTheBlockhashWindow() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        vm.roll(audit.segment(id, 0).randomnessBlock + 256);
        audit.assignAuditors(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
    }

    function test_assignAuditorsBatch_refreshesEveryExpiredSegment() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSession(uniformSegments(2, 1));
        vm.roll(audit.session(id).randomnessBlock + 300);
        uint64 next = uint64(block.number + 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 0, next);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 1, next);
        audit.assignAuditorsBatch(id, ids(0, 1));
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(uint8(audit.segment(id, 1).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));

        vm.roll(next + 1);
        audit.assignAuditorsBatch(id, ids(0, 1));
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertEq(uint8(audit.segment(id, 1).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
    }

    // ------------------------------------------------------------------ committee shape

    /// @notice Each segment makes k_t draws from its own tier: its seats hold distinct members of
    ///         that tier, each seat weighs the draws it won, the weights add up to k_t, and each
    ///         member locks P per unit (every member here sits on one committee only).
    function test_assignAuditors_drawsKTimesFromTheSegmentTier() public {
        addAuditors("t1-", 1, 6, 1_000e18);
        addAuditors("t2-", 2, 8, 2_000e18);
        addAuditors("t3-", 3, 8, 20_000e18);
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](3);
        segs[0] = segmentInput(1, 1, false, false, keccak256("s0"));
        segs[1] = segmentInput(2, 1, false, false, keccak256("s1"));
        segs[2] = segmentInput(3, 1, false, false, keccak256("s2"));
        uint256 id = openSession(segs);
        drawAll(id);

        uint8[3] memory k = [3, 5, 5];
        for (uint256 s; s < 3; ++s) {
            assertEq(audit.segment(id, s).committeeSize, k[s], "k_t draws");
            address[] memory members = assertSeated(id, s);
            for (uint256 i; i < members.length; ++i) {
                IAuditorRegistry.AuditorInfo memory info = registry.auditor(members[i]);
                assertEq(info.tier, s + 1, "member of the segment's tier");
                ITRUSTAudit.SeatView memory st = audit.seat(id, s, 0, i);
                assertEq(info.locked, st.weight * PENALTY, "P locked per unit");
                assertFalse(st.committed);
                assertFalse(st.revealed);
            }
        }
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_assignAuditors_emitsCommitteeDrawn() public {
        addAuditors("t2-", 2, 7, 2_000e18);
        uint256 id = openSingle(2);
        rollPastRandomness(id, 0);

        // The draw is deterministic given the randomness: learn the committee, then replay.
        uint256 snapshot = vm.snapshotState();
        audit.assignAuditors(id, 0);
        address[] memory members = audit.committee(id, 0);
        vm.revertToState(snapshot);

        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeDrawn(
            id, 0, 0, 2, members, uint48(block.timestamp + 1 hours), uint48(block.timestamp + 2 hours)
        );
        audit.assignAuditors(id, 0);
        vm.snapshotGasLastCall("TRUSTAudit", "assignAuditors_tier2_k5");
        // The event names each seated member once, in seat order: committee(), the seatCount seats.
        assertEq(abi.encode(assertSeated(id, 0)), abi.encode(members));
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_assignAuditors_setsDeadlinesAndOpensCommitPhase() public {
        addAuditors("t1-", 1, 4, 1_000e18);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        vm.warp(1_800_000_000);
        audit.assignAuditors(id, 0);
        vm.snapshotGasLastCall("TRUSTAudit", "assignAuditors_tier1_k3");

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertEq(g.commitDeadline, 1_800_000_000 + 1 hours);
        assertEq(g.revealDeadline, 1_800_000_000 + 2 hours);
        assertEq(g.revealedCount, 0);
        assertEq(g.round, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
    }

    function test_assignAuditors_locksPenaltyPerUnit() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSession(uniformSegments(2, 1));
        uint256 eligibleBefore = registry.eligibleStake(1);
        drawAll(id);
        // Each member locks P for every draw it won, over both committees: six units in all.
        uint256 units;
        for (uint256 i; i < pool.length; ++i) {
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(pool[i]);
            uint256 won = unitsOf(id, 0, pool[i]) + unitsOf(id, 1, pool[i]);
            assertEq(info.locked, won * PENALTY);
            assertEq(info.stake, 1_000e18, "a lock is not a forfeit");
            units += won;
        }
        assertEq(units, 2 * 3, "two committees of three draws");
        // Locking does not change the draw weights (stake, not unlocked stake).
        assertEq(registry.eligibleStake(1), eligibleBefore);
    }

    function test_assignAuditors_neverSeatsBeyondUnlockedStake() public {
        Params memory p = defaultParams();
        p.committeeSizeTier1 = 1;
        applyParams(p);
        // 100 tokens back 12 seats of 8 (4 tokens stay unlocked, short of a 13th seat).
        address[] memory pool = addAuditors("t1-", 1, 3, 100e18);
        uint256 id = openSession(uniformSegments(37, 1));
        vm.roll(audit.session(id).randomnessBlock + 1);
        for (uint256 s; s < 36; ++s) {
            audit.assignAuditors(id, s);
        }
        for (uint256 i; i < pool.length; ++i) {
            assertEq(registry.auditor(pool[i]).locked, 12 * PENALTY);
        }
        // Locks change no draw weight: all three still count, and the draw passes over them instead.
        assertEq(registry.eligibleCount(1), 3);
        assertEq(registry.eligibleStake(1), 300e18);
        vm.expectEmit(address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 1, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeUnavailable(id, 36, 0, 1);
        audit.assignAuditors(id, 36);
        assertEq(uint8(audit.segment(id, 36).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        for (uint256 i; i < pool.length; ++i) {
            assertEq(registry.auditor(pool[i]).locked, 12 * PENALTY, "an unavailable draw locks nothing");
        }
    }

    /// @notice The draw reads stakes as of the randomness block: stake added after it changes no
    ///         committee and no seat's units (the same draws, taken with and without the top-up,
    ///         seat the same members), while stake added in the randomness block itself counts.
    function test_assignAuditors_stakeAddedAfterTheRandomnessBlockChangesNoDraw() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSession(uniformSegments(4, 1));
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;
        vm.roll(randomnessBlock);
        stakeMore(pool[1], 2_000e18); // in the randomness block: counts
        vm.roll(randomnessBlock + 1);
        assertEq(registry.eligibleStakeAt(1, randomnessBlock), 5_000e18);
        uint256 snapshot = vm.snapshotState();
        drawAll(id);
        bytes[4] memory drawn = committeesWithUnits(id);
        vm.revertToState(snapshot);

        stakeMore(pool[0], 5_000e18); // after it: does not
        drawAll(id);
        bytes[4] memory again = committeesWithUnits(id);
        for (uint256 s; s < 4; ++s) {
            assertEq(again[s], drawn[s], "committee or units changed");
        }
        assertEq(registry.auditor(pool[0]).stake, 6_000e18);
    }

    /// @notice Draws tier-1 segment `segmentId` (committees of three) when the tier backs only
    ///         `units` of its draws: the registry says so, nothing is seated, and the segment keeps
    ///         awaiting its draw (a retry with fresh randomness).
    function assignUnavailable(uint256 id, uint256 segmentId, uint256 units) internal {
        vm.expectEmit(address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 3, units);
        audit.assignAuditors(id, segmentId);
        assertEq(uint8(audit.segment(id, segmentId).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
    }

    /// @notice Eight tier-1 auditors staking 200 to 900 tokens and a session of four tier-1 segments
    ///         whose randomness block is mined (nothing drawn yet).
    function eightAuditorsAndFourSegments() internal returns (address[] memory pool, uint256 id) {
        pool = new address[](8);
        for (uint256 i; i < pool.length; ++i) {
            pool[i] = addAuditor(string.concat("t1-", vm.toString(i)), 1, (i + 2) * 100e18);
        }
        id = openSession(uniformSegments(4, 1));
        rollPastRandomness(id, 0);
    }

    /// @notice Once the randomness block is mined, auditors switching off before the draw change
    ///         no committee: the same draws, taken with and without the change, seat the same
    ///         members with the same units.
    function test_assignAuditors_switchingOffAfterTheRandomnessBlockMovesNoSeat() public {
        (address[] memory pool, uint256 id) = eightAuditorsAndFourSegments();
        uint256 snapshot = vm.snapshotState();
        drawAll(id);
        bytes[4] memory drawn = committeesWithUnits(id);
        vm.revertToState(snapshot);

        for (uint256 i; i < pool.length; ++i) {
            vm.prank(pool[i]);
            registry.setAvailable(false);
        }
        assertEq(registry.eligibleCount(1), 0);
        drawAll(id);
        for (uint256 s; s < 4; ++s) {
            assertEq(committeesWithUnits(id)[s], drawn[s], "committee changed");
        }
    }

    /// @notice A member that asks to unstake after the randomness block, even a part of its stake,
    ///         leaves every draw that reads that block (issue L2: stake that may leave backs no
    ///         unit), and each draw that lands on it charges it P out of its unbonding stake (issue
    ///         M2). The others fill every committee.
    function test_assignAuditors_unbondingAfterTheRandomnessBlockLeavesTheDraw() public {
        (address[] memory pool, uint256 id) = eightAuditorsAndFourSegments();
        uint256[4] memory unbonding;
        for (uint256 i; i < 4; ++i) {
            // Keep the tier minimum: the leaver stays registered, eligible and bonded at 100.
            unbonding[i] = registry.stakeOf(pool[i]) - 100e18;
            vm.prank(pool[i]);
            registry.requestUnstake(unbonding[i]);
        }
        uint256 insuranceBefore = registry.claimableTokens(insurance);
        drawAll(id);

        uint256 charged;
        for (uint256 s; s < 4; ++s) {
            address[] memory members = assertSeated(id, s);
            for (uint256 i; i < 4; ++i) {
                assertFalse(contains(members, pool[i]), "a leaver was seated");
            }
        }
        for (uint256 i; i < 4; ++i) {
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(pool[i]);
            uint256 paid = unbonding[i] - info.unbonding;
            assertEq(paid % PENALTY, 0, "charged P per draw that landed on it");
            assertLe(paid, 4 * PENALTY, "at most once per segment");
            assertEq(info.locked, 0);
            charged += paid;
        }
        assertGt(charged, 0, "draws landed on 1,400 of 4,400 tokens");
        assertEq(registry.claimableTokens(insurance) - insuranceBefore, charged, "to the insurance fund");
    }

    /// @notice Each of the session's committees as seated, with the units of each seat.
    function committeesWithUnits(uint256 id) internal view returns (bytes[4] memory out) {
        for (uint256 s; s < 4; ++s) {
            address[] memory members = audit.committee(id, s);
            uint256[] memory units = new uint256[](members.length);
            for (uint256 i; i < members.length; ++i) {
                units[i] = audit.seat(id, s, 0, i).weight;
            }
            out[s] = abi.encode(members, units);
        }
    }

    /// @notice A seat's weight is the units it won at the draw: stake added later changes nothing.
    function test_assignAuditors_seatWeightIsFixedAtTheDraw() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        address member = audit.committee(id, 0)[0];
        uint256 units = audit.seat(id, 0, 0, 0).weight;
        assertGe(units, 1);
        stakeMore(member, 5_000e18);
        assertEq(registry.auditor(member).stake, 6_000e18);
        assertEq(audit.seat(id, 0, 0, 0).weight, units);
        assertEq(registry.auditor(member).locked, units * PENALTY);
        assertTrue(contains(pool, member));
    }

    function test_assignAuditors_seedsDifferAcrossSegments() public {
        addAuditors("t1-", 1, 8, 1_000e18);
        uint256 id = openSession(uniformSegments(8, 1));
        drawAll(id);
        bytes32 first = keccak256(abi.encode(audit.committee(id, 0)));
        bool differs;
        for (uint256 s = 1; s < 8; ++s) {
            if (keccak256(abi.encode(audit.committee(id, s))) != first) differs = true;
        }
        assertTrue(differs, "every segment drew the same committee");
    }

    // ------------------------------------------------------------------ who is never drawn

    function test_assignAuditors_neverDrawsTheProvider() public {
        // The provider is an auditor too, and by far the largest staker of tier 1.
        address self = addAuditor("provider", 1, 100_000e18);
        assertEq(self, provider);
        address[] memory others = addAuditors("t1-", 1, 5, 1_000e18);
        uint256 id = openSession(uniformSegments(20, 1));
        drawAll(id);
        for (uint256 s; s < 20; ++s) {
            address[] memory members = assertSeated(id, s);
            assertFalse(contains(members, provider), "provider drawn");
            for (uint256 i; i < members.length; ++i) {
                assertTrue(contains(others, members[i]));
            }
        }
        assertEq(registry.auditor(provider).locked, 0);
    }

    function test_assignAuditors_unavailableWhenOnlyTheProviderCompletesACommittee() public {
        useOneUnitStakes();
        addAuditor("provider", 1, ONE_UNIT_STAKE);
        address[] memory pool = addAuditors("t1-", 1, 2, ONE_UNIT_STAKE);
        assertEq(registry.eligibleCount(1), 3);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        // Three eligible auditors backing one unit each, but one is the provider: two units.
        assignUnavailable(id, 0, 2);
        assertEq(registry.auditor(provider).locked, 0);
        assertEq(registry.auditor(pool[0]).locked, 0);
        assertEq(registry.auditor(pool[1]).locked, 0);
    }

    function test_assignAuditors_neverDrawsUnavailableAuditors() public {
        address[] memory pool = addAuditors("t1-", 1, 4, 1_000e18);
        address away1 = addAuditor("away1", 1, 100_000e18);
        address away2 = addAuditor("away2", 1, 100_000e18);
        vm.prank(away1);
        registry.setAvailable(false);
        vm.prank(away2);
        registry.setAvailable(false);

        uint256 id = openSession(uniformSegments(20, 1));
        drawAll(id);
        for (uint256 s; s < 20; ++s) {
            address[] memory members = audit.committee(id, s);
            assertFalse(contains(members, away1));
            assertFalse(contains(members, away2));
            for (uint256 i; i < members.length; ++i) {
                assertTrue(contains(pool, members[i]));
            }
        }
        assertEq(registry.auditor(away1).locked, 0);
        assertEq(registry.auditor(away2).locked, 0);
    }

    function test_assignAuditors_neverDrawsOtherTiers() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        address[] memory big2 = addAuditors("t2-", 2, 3, 1_000_000e18);
        address[] memory big3 = addAuditors("t3-", 3, 3, 1_000_000e18);
        uint256 id = openSession(uniformSegments(10, 1));
        drawAll(id);
        for (uint256 s; s < 10; ++s) {
            address[] memory members = audit.committee(id, s);
            for (uint256 i; i < 3; ++i) {
                assertFalse(contains(members, big2[i]));
                assertFalse(contains(members, big3[i]));
            }
        }
    }

    function test_assignAuditors_neverDrawsTier3WithoutCredential() public {
        address[] memory pool = addAuditors("t3-", 3, 5, 10_000e18);
        address revoked = addAuditor("revoked", 3, 1_000_000e18);
        registry.revokeCredential(revoked);
        assertFalse(registry.auditor(revoked).credentialed);

        uint256 id = openSession(uniformSegments(10, 3));
        drawAll(id);
        for (uint256 s; s < 10; ++s) {
            address[] memory members = assertSeated(id, s);
            assertFalse(contains(members, revoked));
            for (uint256 i; i < members.length; ++i) {
                assertTrue(contains(pool, members[i]));
            }
        }
        assertEq(registry.auditor(revoked).locked, 0);
    }

    // ------------------------------------------------------------------ reverts

    // ------------------------------------------------------------------ unavailable committees

    /// @notice Too little stake: two auditors back two units of the three draws. The registry seats
    ///         nobody and says how many units it found, and the audit contract counts the attempt
    ///         and fixes fresh randomness. Nothing is locked, no seat is written, and the segment
    ///         keeps waiting for a draw.
    function test_assignAuditors_retriesWithFreshRandomnessWhenCommitteeUnavailable() public {
        useOneUnitStakes();
        address[] memory pool = addAuditors("t1-", 1, 2, ONE_UNIT_STAKE);
        uint256 id = openSingle(1);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;
        rollPastRandomness(id, 0);
        uint64 next = uint64(block.number + 2);

        vm.expectEmit(address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 3, 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeUnavailable(id, 0, 0, 1);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 0, next);
        audit.assignAuditors(id, 0);

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.AwaitingDraw));
        assertEq(g.randomnessBlock, next);
        assertTrue(next > randomnessBlock);
        assertEq(g.round, 0);
        assertEq(g.commitDeadline, 0);
        assertEq(g.seatCount, 0);
        assertEq(audit.committee(id, 0).length, 0);
        for (uint256 i; i < 3; ++i) {
            assertEq(audit.seat(id, 0, 0, i).auditor, address(0), "no seat written");
        }
        for (uint256 i; i < pool.length; ++i) {
            assertEq(registry.auditor(pool[i]).locked, 0, "nothing locked");
        }
        assertEq(audit.session(id).finalizedCount, 0);

        // The retry waits for its own block.
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, next));
        audit.assignAuditors(id, 0);
    }

    /// @notice An auditor who joins after the randomness block does not count for it: the draw is
    ///         unavailable; the retry's block comes after the join, and that draw seats it.
    function test_assignAuditors_anAuditorWhoJoinsAfterTheRandomnessBlockCountsAtTheRetry() public {
        useOneUnitStakes(); // two auditors back two of the three draws; the late one the third
        addAuditors("t1-", 1, 2, ONE_UNIT_STAKE);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        address late = addAuditor("late", 1, ONE_UNIT_STAKE);
        assertEq(registry.eligibleCount(1), 3);
        assignUnavailable(id, 0, 2);

        drawSegment(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        address[] memory members = assertSeated(id, 0);
        assertEq(members.length, 3);
        assertTrue(contains(members, late));
        assertEq(registry.auditor(late).locked, ONE_UNIT_PENALTY);
    }

    /// @notice Two unavailable draws, then enough auditors join: the third attempt seats the
    ///         committee and voting opens as usual.
    function test_assignAuditors_seatsTheCommitteeOnALaterAttempt() public {
        useOneUnitStakes(); // two auditors back two of the three draws; the late one the third
        addAuditors("t1-", 1, 2, ONE_UNIT_STAKE);
        uint256 id = openSingle(1);
        drawUnavailable(id, 0, 1);
        drawUnavailable(id, 0, 2);
        address late = addAuditor("late", 1, ONE_UNIT_STAKE);
        rollPastRandomness(id, 0);
        vm.warp(1_800_000_000);
        audit.assignAuditors(id, 0);

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertEq(g.commitDeadline, 1_800_000_000 + 1 hours);
        assertTrue(contains(audit.committee(id, 0), late));
        voteAll(id, 0, true);
        assertTrue(audit.finalizeSegment(id, 0));
    }

    /// @notice Randomness that expired before a draw is refreshed without drawing: it is no attempt.
    function test_assignAuditors_expiredRandomnessIsNoDrawAttempt() public {
        useOneUnitStakes(); // two auditors back two of the three draws
        addAuditors("t1-", 1, 2, ONE_UNIT_STAKE);
        uint256 id = openSingle(1);
        drawUnavailable(id, 0, 1);
        vm.roll(audit.segment(id, 0).randomnessBlock + 257);
        vm.recordLogs();
        audit.assignAuditors(id, 0);
        assertEq(vm.getRecordedLogs().length, 1, "only RandomnessRefreshed");
        drawUnavailable(id, 0, 2);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
    }

    /// @notice The third unavailable draw of a round ends the segment Undetermined, as a failed
    ///         segment: a critical one invalidates the trace and a contradiction counts as
    ///         confirmed. The session then finalizes and splits its fee; with no aligned seat, the
    ///         auditors' share goes to the treasury.
    function test_assignAuditors_endsUndeterminedAfterThreeUnavailableDraws() public {
        address[] memory pool = addAuditors("t1-", 1, 3, 1_000e18); // no auditor of tiers 2 and 3
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](2);
        segs[0] = segmentInput(2, 3, true, false, keccak256("critical"));
        segs[1] = segmentInput(3, 4, false, true, keccak256("contradiction"));
        uint256 id = openSession(segs);
        uint256 fee = audit.session(id).feeWei;

        for (uint8 attempt = 1; attempt < 3; ++attempt) {
            drawUnavailable(id, 0, attempt);
            drawUnavailable(id, 1, attempt);
        }
        rollPastRandomness(id, 0);
        uint64 lastBlock = audit.segment(id, 0).randomnessBlock;
        vm.expectEmit(address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(2, 5, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeUnavailable(id, 0, 0, 3);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, false);
        vm.expectEmit(address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(3, 5, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeUnavailable(id, 1, 0, 3);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 1, false);
        audit.assignAuditorsBatch(id, ids(0, 1));

        for (uint256 s; s < 2; ++s) {
            ITRUSTAudit.SegmentView memory g = audit.segment(id, s);
            assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
            assertEq(uint8(audit.phase(id, s)), uint8(ITRUSTAudit.Phase.Final));
            assertEq(g.randomnessBlock, lastBlock, "no new randomness after the last attempt");
            assertEq(g.round, 0);
            assertEq(audit.committee(id, s).length, 0);
            vm.expectRevert(
                abi.encodeWithSelector(
                    ITRUSTAudit.AuditWrongSegmentStatus.selector, id, s, ITRUSTAudit.SegmentStatus.Undetermined
                )
            );
            audit.assignAuditors(id, s);
        }
        ITRUSTAudit.SessionView memory v = audit.session(id);
        assertEq(v.finalizedCount, 2);
        assertEq(v.passWeight, 0);
        assertEq(v.criticalFailed, 1, "undetermined critical segment counts as failed");
        assertEq(v.contradictionsConfirmed, 1, "undetermined contradiction counts as confirmed");
        assertEq(v.alignedSeats, 0);

        vm.expectEmit(address(audit));
        emit ITRUSTAudit.TraceFinalized(id, false);
        assertFalse(audit.finalizeTrace(id));

        uint256 auditorsWei = fee * 7_000 / BPS;
        uint256 treasuryWei = fee * 1_500 / BPS;
        uint256 stakersWei = fee * 1_000 / BPS;
        uint256 insuranceWei = fee - auditorsWei - treasuryWei - stakersWei;
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsDistributed(id, 0, 0, treasuryWei + auditorsWei, stakersWei, insuranceWei);
        audit.distributeRewards(id);
        assertEq(withdrawAs(treasury), treasuryWei + auditorsWei, "the auditors' share goes to the treasury");
        assertEq(withdrawAs(insurance), insuranceWei);
        assertEq(address(audit).balance, 0);
        for (uint256 i; i < pool.length; ++i) {
            assertEq(registry.auditor(pool[i]).locked, 0);
        }
    }

    /// @notice The "fee locked forever" case: a round escalates into a tier that cannot seat
    ///         2k + 1 auditors. The earlier round's seats were settled at the escalation; the
    ///         escalated round is tried three times, then the segment ends Undetermined and the
    ///         session finalizes and splits its fee.
    function test_assignAuditors_escalationIntoAThinTierEndsUndetermined() public {
        (uint256 id, address[3] memory round0, address[] memory thin) = escalatedIntoThinTier();
        // Round 0's revealed seats stay locked after it escalated, to be judged by the verdict (M1).
        uint96[3] memory stakes = [ONE_UNIT_STAKE, ONE_UNIT_STAKE, ONE_UNIT_STAKE + 10e18];
        for (uint256 i; i < 3; ++i) {
            assertEq(registry.auditor(round0[i]).locked, ONE_UNIT_PENALTY, "round-0 seat locked until the verdict");
        }
        // The escalated round is not seated yet: no seat, whatever round 0 seated.
        assertEq(audit.segment(id, 0).seatCount, 0, "reset at the escalation");
        assertEq(audit.segment(id, 0).committeeSize, 7);
        assertEq(audit.committee(id, 0).length, 0);

        drawUnavailable(id, 0, 1);
        drawUnavailable(id, 0, 2);
        rollPastRandomness(id, 0);
        // Five tier-2 auditors back one unit each: five of the seven draws.
        vm.expectEmit(address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(2, 7, 5);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeUnavailable(id, 0, 1, 3);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, false);
        audit.assignAuditors(id, 0);

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertEq(g.round, 1);
        assertEq(g.tier, 2);
        assertTrue(audit.seat(id, 0, 0, 0).auditor != address(0), "round 0 stays on record");
        assertEq(audit.seat(id, 0, 1, 0).auditor, address(0), "round 1 never seated");
        for (uint256 i; i < thin.length; ++i) {
            assertEq(registry.auditor(thin[i]).locked, 0);
        }
        // No verdict will come: the round-0 seats are released untouched (a draw that gives up
        // must never leave an earlier round's stake locked forever).
        for (uint256 i; i < 3; ++i) {
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(round0[i]);
            assertEq(info.locked, 0, "round-0 lock released");
            assertEq(info.stake, stakes[i], "round-0 seat released untouched");
            assertEq(info.reputationWad, 0.5e18, "undetermined: reputation unchanged");
        }
        assertEq(audit.session(id).finalizedCount, 1);
        assertEq(audit.session(id).alignedSeats, 0);

        assertFalse(audit.finalizeTrace(id));
        uint256 fee = audit.session(id).feeWei;
        uint256 treasuryBefore = audit.claimable(treasury);
        audit.distributeRewards(id);
        assertEq(audit.claimable(treasury) - treasuryBefore, fee * 7_000 / BPS + fee * 1_500 / BPS);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Distributed));
    }

    /// @notice Attempts count per round: an unavailable draw in round 0 does not shorten round 1,
    ///         which gets its own three attempts after the escalation.
    function test_assignAuditors_escalationResetsDrawAttempts() public {
        applyParams(thinTierParams());
        addAuditors("t2-", 2, 5, ONE_UNIT_STAKE); // five units, short of the 7 an escalated round needs
        (address a, address b) = (addAuditor("a", 1, ONE_UNIT_STAKE), addAuditor("b", 1, ONE_UNIT_STAKE));
        uint256 id = openSingle(1);
        drawUnavailable(id, 0, 1); // two tier-1 auditors: two units, round 0 short of 3
        drawUnavailable(id, 0, 2);
        address c = addAuditor("c", 1, ONE_UNIT_STAKE);
        drawSegment(id, 0); // third attempt: seated
        castVotes(id, 0, addrs(a, b, c), bools(true, true, false)); // 2 of 3 units: below tau 0.70
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(g.round, 1);
        assertEq(g.committeeSize, 7, "2k + 1 draws");
        assertEq(g.seatCount, 0, "reset at the escalation");

        drawUnavailable(id, 0, 1);
        drawUnavailable(id, 0, 2);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        addAuditors("t2-late-", 2, 2, ONE_UNIT_STAKE);
        drawSegment(id, 0);
        assertEq(assertSeated(id, 0).length, 7, "seven one-unit members");
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
    }

    /// @notice One-unit stakes (see `useOneUnitStakes`) and tau 0.70: round 0's three seats of
    ///         one unit each, two for Pass and one for Fail (2 of 3 = 0.667), decide nothing.
    function thinTierParams() internal pure returns (Params memory p) {
        p = oneUnitParams();
        p.tauBps = 7_000;
    }

    /// @notice Rolls past the segment's randomness block and draws it when its tier cannot seat the
    ///         committee: expects attempt `attempt` (of three) and, before the last, a fresh block.
    function drawUnavailable(uint256 id, uint256 segmentId, uint8 attempt) internal {
        rollPastRandomness(id, segmentId);
        ITRUSTAudit.SegmentView memory before = audit.segment(id, segmentId);
        uint64 next = uint64(block.number + 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeUnavailable(id, segmentId, before.round, attempt);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, segmentId, next);
        audit.assignAuditors(id, segmentId);
        ITRUSTAudit.SegmentView memory g = audit.segment(id, segmentId);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(g.randomnessBlock, next);
        assertEq(g.round, before.round);
    }

    /// @notice A one-segment session of tier 1 decided by nobody in round 0 (three seats of one
    ///         unit: Pass 2 of 3 is below tau 0.70), escalated into tier 2, whose five auditors
    ///         back one unit each where round 1 makes seven draws.
    function escalatedIntoThinTier() internal returns (uint256 id, address[3] memory round0, address[] memory thin) {
        applyParams(thinTierParams());
        thin = addAuditors("t2-", 2, 5, ONE_UNIT_STAKE);
        round0 = [
            addAuditor("a", 1, ONE_UNIT_STAKE),
            addAuditor("b", 1, ONE_UNIT_STAKE),
            addAuditor("c", 1, ONE_UNIT_STAKE + 10e18) // 110 < 2P: still one unit
        ];
        id = openSingle(1);
        drawSegment(id, 0);
        castVotes(id, 0, addrs(round0[0], round0[1], round0[2]), bools(true, true, false));
        toRevealEnd(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentEscalated(id, 0, 1, 2, 7, uint64(block.number + 2));
        audit.finalizeSegment(id, 0);
    }

    /// @notice An auditor who joins in the randomness block itself counts for it.
    function test_assignAuditors_countsAnAuditorWhoJoinsByTheRandomnessBlock() public {
        addAuditors("t1-", 1, 2, 1_000e18);
        uint256 id = openSingle(1);
        vm.roll(audit.segment(id, 0).randomnessBlock);
        address late = addAuditor("late", 1, 1_000e18);
        rollPastRandomness(id, 0);
        audit.assignAuditors(id, 0);
        assertTrue(contains(audit.committee(id, 0), late));
    }

    function test_assignAuditors_revertsWhenAlreadyDrawn() public {
        addAuditors("t1-", 1, 6, 1_000e18);
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditWrongSegmentStatus.selector, id, 0, ITRUSTAudit.SegmentStatus.Voting
            )
        );
        audit.assignAuditors(id, 0);
    }

    function test_assignAuditors_revertsOnUnknownSegment() public {
        uint256 id = openSingle(1);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSegment.selector, id, 1));
        audit.assignAuditors(id, 1);
    }

    function test_assignAuditors_revertsOnUnknownSession() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 5));
        audit.assignAuditors(5, 0);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 5));
        audit.assignAuditorsBatch(5, ids(0));
    }

    function test_assignAuditors_revertsWhileSegmentsAreRegistering() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        vm.prank(provider);
        uint256 id = audit.createSession(keccak256("root"), 2);
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(1, 1));
        vm.roll(block.number + 10);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Registering)
        );
        audit.assignAuditors(id, 0);
    }

    function test_assignAuditors_isCallableByAnyone() public {
        addAuditors("t1-", 1, 3, 1_000e18);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        vm.prank(stranger);
        audit.assignAuditors(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertSeated(id, 0);
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_assignAuditorsBatch_drawsEverySegment() public {
        addAuditors("t1-", 1, 5, 1_000e18);
        uint256 id = openSession(uniformSegments(3, 1));
        vm.roll(audit.session(id).randomnessBlock + 1);
        uint256[] memory all = new uint256[](3);
        (all[0], all[1], all[2]) = (2, 0, 1); // any order
        audit.assignAuditorsBatch(id, all);
        vm.snapshotGasLastCall("TRUSTAudit", "assignAuditorsBatch_3x_tier1");
        for (uint256 s; s < 3; ++s) {
            assertEq(uint8(audit.segment(id, s).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
            assertSeated(id, s);
        }
    }

    /// @notice A segment no longer awaiting its draw is skipped, not drawn twice and not a revert
    ///         of the batch (issue L4: someone drawing one segment first cannot undo a batch); the
    ///         single-segment call still reverts for it.
    function test_assignAuditorsBatch_skipsSegmentsAlreadyDrawn() public {
        address[] memory pool = addAuditors("t1-", 1, 5, 1_000e18);
        uint256 id = openSession(uniformSegments(2, 1));
        vm.roll(audit.session(id).randomnessBlock + 1);
        audit.assignAuditorsBatch(id, ids(1, 1)); // the second entry finds it drawn
        assertEq(uint8(audit.segment(id, 1).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        address[] memory first = audit.committee(id, 1);
        uint256 locked;
        for (uint256 i; i < pool.length; ++i) {
            locked += registry.auditor(pool[i]).locked;
        }
        assertEq(locked, 3 * PENALTY, "one committee locked, once");

        audit.assignAuditorsBatch(id, ids(0, 1));
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertEq(abi.encode(audit.committee(id, 1)), abi.encode(first), "segment 1 kept its committee");
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditWrongSegmentStatus.selector, id, 1, ITRUSTAudit.SegmentStatus.Voting
            )
        );
        audit.assignAuditors(id, 1);
    }

    /// @notice One segment of a batch that cannot be seated no longer reverts the batch: the
    ///         others are drawn, and it waits for fresh randomness.
    function test_assignAuditorsBatch_drawsTheOthersWhenOneSegmentIsUnavailable() public {
        addAuditors("t1-", 1, 4, 1_000e18); // no tier-2 auditor
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](3);
        segs[0] = segmentInput(1, 1, false, false, keccak256("s0"));
        segs[1] = segmentInput(2, 1, false, false, keccak256("s1"));
        segs[2] = segmentInput(1, 1, false, false, keccak256("s2"));
        uint256 id = openSession(segs);
        vm.roll(audit.session(id).randomnessBlock + 1);
        uint64 next = uint64(block.number + 2);
        uint256[] memory all = new uint256[](3);
        (all[0], all[1], all[2]) = (0, 1, 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeUnavailable(id, 1, 0, 1);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 1, next);
        audit.assignAuditorsBatch(id, all);

        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertEq(uint8(audit.segment(id, 2).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertSeated(id, 0);
        assertSeated(id, 2);
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 1);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(g.randomnessBlock, next);
        assertEq(audit.committee(id, 1).length, 0);
    }

    // ------------------------------------------------------------------ units (issue L2)

    /// @notice A tier whose only auditor backs k units seats a committee of k draws: one seat of
    ///         weight k, locking k * P, named once in `CommitteeDrawn`. It votes once, with the
    ///         committee's whole weight.
    function test_assignAuditors_oneAuditorBackingKUnitsHoldsTheWholeCommittee() public {
        address solo = addAuditor("solo", 1, 1_000e18);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeDrawn(
            id, 0, 0, 1, addrs(solo), uint48(block.timestamp + 1 hours), uint48(block.timestamp + 2 hours)
        );
        audit.assignAuditors(id, 0);

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(g.committeeSize, 3);
        assertEq(g.seatCount, 1);
        assertEq(abi.encode(assertSeated(id, 0)), abi.encode(addrs(solo)));
        assertEq(audit.seat(id, 0, 0, 0).weight, 3);
        assertEq(registry.auditor(solo).locked, 3 * PENALTY);

        commitAs(solo, id, 0, true);
        assertEq(audit.segment(id, 0).commitDeadline, block.timestamp - 1, "its commit closes the window");
        revealAs(solo, id, 0, true);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        assertTrue(audit.finalizeSegment(id, 0));
        assertEq(audit.session(id).alignedSeats, 3, "three aligned units");
        assertEq(registry.auditor(solo).locked, 0);
    }

    /// @notice A committee is unavailable exactly when the tier's unlocked stake cannot back its
    ///         draws. With P = 60, stakes of 2P - 1 wei and of 100 tokens back one unit each: two
    ///         of three, and nothing is locked. One wei more and the first backs two units (its
    ///         stake covers units * P at equality): the retry seats both, three units on two seats.
    function test_assignAuditors_unavailableOnlyWhenTheUnitsCannotBeBacked() public {
        useOneUnitStakes();
        address x = addAuditor("x", 1, 2 * uint256(ONE_UNIT_PENALTY) - 1);
        address y = addAuditor("y", 1, ONE_UNIT_STAKE);
        uint256 id = openSingle(1);
        rollPastRandomness(id, 0);
        assignUnavailable(id, 0, 2);
        assertEq(registry.auditor(x).locked, 0);
        assertEq(registry.auditor(y).locked, 0);

        stakeMore(x, 1);
        drawSegment(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertEq(assertSeated(id, 0).length, 2);
        assertEq(unitsOf(id, 0, x), 2);
        assertEq(unitsOf(id, 0, y), 1);
        assertEq(registry.auditor(x).locked, 2 * uint256(ONE_UNIT_PENALTY));
        assertEq(registry.auditor(y).locked, ONE_UNIT_PENALTY);
    }

    /// @notice A member takes no more units than its unlocked stake backs over all its open seats.
    ///         With P = 25, 100 tokens back four units: the first committee takes three, and the
    ///         next segment's draws find one unit, short of three: unavailable, nothing locked. Once
    ///         another auditor joins, the retry seats the first with one unit at most.
    function test_assignAuditors_unitsAreCappedByTheUnlockedStake() public {
        Params memory p = defaultParams();
        p.penaltyPerSeat = 25e18;
        applyParams(p);
        address solo = addAuditor("solo", 1, 100e18);
        uint256 id = openSession(uniformSegments(2, 1));
        drawSegment(id, 0);
        assertEq(unitsOf(id, 0, solo), 3);
        assertEq(registry.auditor(solo).locked, 75e18);

        assignUnavailable(id, 1, 1);
        assertEq(registry.auditor(solo).locked, 75e18, "an unavailable draw locks nothing");

        address other = addAuditor("other", 1, 100e18);
        drawSegment(id, 1);
        assertSeated(id, 1);
        uint256 soloUnits = unitsOf(id, 1, solo);
        assertLe(soloUnits, 1, "one unit left to back");
        assertEq(soloUnits + unitsOf(id, 1, other), 3);
        assertEq(registry.auditor(solo).locked, (3 + soloUnits) * 25e18);
        assertEq(registry.auditor(other).locked, unitsOf(id, 1, other) * 25e18);
    }

    /// @notice Splitting stake over accounts wins nothing (issue L2): 20,000 tokens in one account,
    ///         20,000 split over four accounts and 20,000 in a third party's account each expect a
    ///         third of the units. Over 300 committees of three draws (900 units) each group's
    ///         units stay within 5 standard deviations of 300 (sigma^2 = 900 * 1/3 * 2/3 = 200),
    ///         which a correct draw misses with probability below 1e-6. Drawn one seat per account
    ///         (without replacement), the four accounts would take about 1.36 seats per committee
    ///         (some 407 of 900), beyond the bound.
    function test_assignAuditors_splittingStakeWinsNoUnits() public {
        Params memory p = defaultParams();
        p.maxSegmentsPerSession = 300;
        applyParams(p);
        address whole = addAuditor("whole", 1, 20_000e18);
        address[] memory split = addAuditors("split-", 1, 4, 5_000e18);
        address third = addAuditor("third", 1, 20_000e18);
        uint256 id = openSession(uniformSegments(300, 1));
        drawAll(id);

        uint256[3] memory units;
        for (uint256 s; s < 300; ++s) {
            units[0] += unitsOf(id, s, whole);
            for (uint256 i; i < split.length; ++i) {
                units[1] += unitsOf(id, s, split[i]);
            }
            units[2] += unitsOf(id, s, third);
        }
        assertEq(units[0] + units[1] + units[2], 900, "every draw seated a unit");
        for (uint256 g; g < 3; ++g) {
            uint256 diff = units[g] > 300 ? units[g] - 300 : 300 - units[g];
            assertLe(diff * diff, 25 * 200, "units beyond 5 sigma of a third");
        }
        assertEq(registry.auditor(whole).locked, units[0] * PENALTY, "P locked per unit");
    }

    // ------------------------------------------------------------------ eq. 3.2, statistically

    /// @notice With committee size 1, each draw picks auditor i with probability S_i / sum(S).
    ///         2,000 draws from stakes 1:2:3:4; the bounds (chi-square < 35 with 3 degrees of
    ///         freedom, and each count within 5 standard deviations) fail a correct draw with
    ///         probability below 1e-6, while a uniform draw (500 each) misses them by far.
    function test_assignAuditors_drawFrequenciesFollowStake() public {
        Params memory p = defaultParams();
        p.committeeSizeTier1 = 1;
        p.maxSegmentsPerSession = 500;
        applyParams(p);
        address[4] memory pool;
        for (uint256 i; i < 4; ++i) {
            pool[i] = addAuditor(string.concat("w", vm.toString(i + 1)), 1, (i + 1) * 10_000e18);
        }

        uint256 sessions = 4;
        uint256 perSession = 500;
        uint256[4] memory counts;
        for (uint256 n; n < sessions; ++n) {
            uint256 id = openSession(uniformSegments(perSession, 1));
            drawAll(id);
            for (uint256 s; s < perSession; ++s) {
                address member = audit.committee(id, s)[0];
                for (uint256 i; i < 4; ++i) {
                    if (member == pool[i]) ++counts[i];
                }
            }
        }

        uint256 draws = sessions * perSession;
        uint256 chiSquareMilli;
        for (uint256 i; i < 4; ++i) {
            uint256 expected = draws * (i + 1) / 10;
            uint256 diff = counts[i] > expected ? counts[i] - expected : expected - counts[i];
            chiSquareMilli += diff * diff * 1_000 / expected;
            // sigma = sqrt(N p (1 - p)); 5 sigma, squared: 25 N p (1 - p).
            assertLe(diff * diff * 100, 25 * draws * (i + 1) * (9 - i), "count beyond 5 sigma");
        }
        assertEq(counts[0] + counts[1] + counts[2] + counts[3], draws);
        assertLt(chiSquareMilli, 35_000, "chi-square too large");
    }
}
