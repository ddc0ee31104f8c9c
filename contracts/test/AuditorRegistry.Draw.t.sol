// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AuditorRegistryDrawBase} from "./AuditorRegistryDrawBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {DrawRequest} from "../src/types/Settlement.sol";

/// @notice The committee draw, called as the audit contract (issue L2): `size` stake-weighted
///         draws with replacement, returned as the distinct members (in the order of their first
///         draw) with the draws each won (its units, adding up to `size`); each unit locks the
///         session's penalty P, never the excluded account, and the pool is left as it was.
contract AuditorRegistryDrawTest is AuditorRegistryDrawBase {
    function drawAsAudit(uint8 tier, uint256 size, bytes32 seed, address excluded, uint96 lock)
        internal
        returns (address[] memory members, uint96[] memory weights)
    {
        // Randomness from the previous block: weights as of then (every auditor registered earlier).
        vm.roll(block.number + 1);
        return requestDraw(drawRequest(tier, block.number - 1, size, seed, excluded, lock));
    }

    function assertEmptyCommittee(address[] memory members, uint96[] memory weights) internal pure {
        assertEq(members.length, 0, "no members when the committee cannot be seated");
        assertEq(weights.length, 0, "no weights when the committee cannot be seated");
    }

    // ------------------------------------------------------------------ units and locks

    /// @notice Five draws over seven equal tier-2 members: distinct members whose units add up to
    ///         five, each locking units * P; the members not drawn lock nothing, and no lock
    ///         changes a draw weight.
    function test_drawCommittee_locksUnitsTimesThePenaltyAndReturnsUnits() public {
        address[] memory list = addAuditors("t2-", 2, 7, 1_500e18);
        (address[] memory members, uint96[] memory units) = drawAsAudit(2, 5, keccak256("seed"), address(0), PENALTY);
        assertCommittee(members, units, 5);
        for (uint256 i; i < list.length; ++i) {
            IAuditorRegistry.AuditorInfo memory a = info(list[i]);
            assertEq(a.tier, 2);
            assertEq(a.locked, unitsIn(members, units, list[i]) * PENALTY, "locked = units * P");
            assertEq(a.stake, 1_500e18, "a draw takes no stake");
        }
        assertEq(registry.eligibleStake(2), 7 * 1_500e18, "locks change no draw weight");
        assertEq(registry.eligibleCount(2), 7);
        vm.roll(block.number + 1);
        assertEq(registry.eligibleStakeAt(2, block.number - 1), 7 * 1_500e18, "nor the tree of the draw's block");
    }

    function test_drawCommittee_neverSeatsTheExcludedAccount() public {
        address[] memory list = addAuditors("t1-", 1, 4, 200e18);
        for (uint256 s; s < 10; ++s) {
            (address[] memory members, uint96[] memory units) =
                drawAsAudit(1, 3, keccak256(abi.encode(s)), list[1], PENALTY);
            assertCommittee(members, units, 3);
            assertFalse(contains(members, list[1]));
        }
        assertEq(info(list[1]).locked, 0);
    }

    /// @notice A tier with ONE auditor whose stake backs three units seats a committee of three:
    ///         one seat of weight 3 locking 3P. Four units it cannot back: the draw fails, says it
    ///         drew three, and locks nothing.
    function test_drawCommittee_oneAuditorBackingEveryUnitHoldsOneSeatOfWeightSize() public {
        address solo = addAuditor("solo", 1, 120e18);
        uint96 lock = 40e18; // 120 backs exactly three units
        uint256 snapshot = vm.snapshotState();
        (address[] memory members, uint96[] memory units) = drawAsAudit(1, 3, keccak256("solo"), address(0), lock);
        assertEq(members.length, 1, "one seat");
        assertEq(members[0], solo);
        assertEq(units[0], 3, "weight = the committee size");
        assertEq(info(solo).locked, 120e18, "3 units * P");
        vm.revertToStateAndDelete(snapshot);

        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 4, 3);
        (members, units) = drawAsAudit(1, 4, keccak256("solo"), address(0), lock);
        assertEmptyCommittee(members, units);
        assertEq(info(solo).locked, 0, "a failed draw locks nothing");
    }

    /// @notice One auditor holds almost all the stake and backs every unit: each of the five
    ///         draws lands on it, and the committee is one seat of weight 5 locking 5P; the small
    ///         members, drawn with replacement, stay as unlikely as their stake says.
    function test_drawCommittee_dominantStakerTakesEveryUnitInOneSeat() public {
        address whale = addAuditor("whale", 1, 1e27);
        address[] memory small = addAuditors("t1-", 1, 4, 100e18);
        for (uint256 s; s < 8; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory units) =
                drawAsAudit(1, 5, keccak256(abi.encode("whale", s)), address(0), PENALTY);
            assertEq(members.length, 1, "1e27 against 4e20: every draw lands on the whale");
            assertEq(members[0], whale);
            assertEq(units[0], 5);
            assertEq(info(whale).locked, 5 * PENALTY);
            for (uint256 i; i < small.length; ++i) {
                assertEq(info(small[i]).locked, 0);
            }
            assertEq(registry.eligibleStake(1), 1e27 + 4 * 100e18);
            vm.revertToStateAndDelete(snapshot);
        }
    }

    /// @notice The same whale with only 2P unlocked (an earlier committee locked the rest): the
    ///         first two draws seat it with two units, the third lands on it again, it cannot back
    ///         a third unit and leaves the draw, and the small members fill the other three units
    ///         (drawn with replacement among themselves). Exactly the reference model's draw.
    function test_drawCommittee_memberDrawnAgainThatCannotBackAnotherUnitLeavesAndOthersFill() public {
        address whale = addAuditor("whale", 1, 1e27);
        address[] memory small = addAuditors("t1-", 1, 4, 100e18);
        uint96 earlierLock = uint96(1e27 - 2 * uint256(PENALTY));
        // Only the whale can back that lock: the earlier committee is the whale alone.
        (address[] memory earlier,) = drawAsAudit(1, 1, keccak256("earlier"), address(0), earlierLock);
        assertEq(earlier[0], whale);
        assertEq(info(whale).locked, earlierLock);

        address[] memory pool = new address[](5);
        uint256[] memory weights = new uint256[](5);
        (pool[0], weights[0]) = (whale, 1e27);
        for (uint256 i; i < 4; ++i) {
            (pool[i + 1], weights[i + 1]) = (small[i], 100e18);
        }
        vm.roll(block.number + 1);
        for (uint256 s; s < 8; ++s) {
            uint256 snapshot = vm.snapshotState();
            DrawRequest memory request =
                drawRequest(1, block.number - 1, 5, keccak256(abi.encode("capped whale", s)), address(0), PENALTY);
            (ModelDraw memory m, address[] memory members, uint96[] memory units) =
                assertDrawMatchesModel(request, pool, candidatesOf(pool, weights, PENALTY), type(uint256).max);
            assertEq(members[0], whale, "the whale wins the first draw");
            assertEq(units[0], 2, "and one more: the two units its unlocked stake backs");
            assertEq(m.passedOver.length, 1, "drawn a third time, it leaves the draw");
            assertEq(m.passedOver[0], 0);
            assertEq(sumOf(units) - units[0], 3, "the small members fill the other three units");
            assertEq(info(whale).locked, 1e27, "its whole stake is locked now");
            vm.revertToStateAndDelete(snapshot);
        }
    }

    /// @notice Too little stake to back the committee: the draw returns nothing, locks nothing
    ///         and says how many units it drew; it does not revert, so the caller can try again.
    ///         With a lock of 60, each member of 100 backs one unit, so with one member excluded
    ///         only two of three units are backed. With the default lock, the same two members
    ///         back the committee of three between them (one holds two units).
    function test_drawCommittee_returnsNothingWhenTooFewUnitsAreBacked() public {
        address[] memory list = addAuditors("t1-", 1, 3, 100e18);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 3, 2);
        (address[] memory members, uint96[] memory units) = drawAsAudit(1, 3, bytes32(0), list[0], 60e18);
        assertEmptyCommittee(members, units);
        for (uint256 i; i < list.length; ++i) {
            assertEq(info(list[i]).locked, 0, "a failed draw locks nothing");
        }

        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(2, 1, 0);
        (members, units) = drawAsAudit(2, 1, bytes32(0), address(0), PENALTY);
        assertEmptyCommittee(members, units);

        // The same pool seats a committee it can back.
        (members, units) = drawAsAudit(1, 2, bytes32(0), list[0], 60e18);
        assertEq(members.length, 2);
        assertEq(units[0], 1);
        assertEq(units[1], 1);
        assertFalse(contains(members, list[0]));
        (members, units) = drawAsAudit(1, 3, bytes32(0), list[0], PENALTY);
        assertCommittee(members, units, 3);
        assertEq(members.length, 2, "two members, three units");
        assertFalse(contains(members, list[0]));
    }

    function test_drawCommittee_skipsMembersShortOfTheSessionLock() public {
        address rich = addAuditor("rich", 1, 400e18);
        address[] memory poor = addAuditors("poor", 1, 3, 100e18);
        // A session whose snapshot locks more than the poor auditors hold: only `rich` may sit.
        (address[] memory members, uint96[] memory units) = drawAsAudit(1, 1, keccak256("x"), address(0), 300e18);
        assertEq(members[0], rich);
        assertEq(units[0], 1);
        assertEq(info(rich).locked, 300e18);
        // No count is checked up front: the draw exhausts the tree with no unit drawn (rich now has
        // 100 unlocked, the others 100 each): the event's last value is how many units it drew.
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 2, 0);
        (address[] memory none, uint96[] memory noWeights) = drawAsAudit(1, 2, keccak256("y"), address(0), 300e18);
        assertEmptyCommittee(none, noWeights);
        assertEq(info(rich).locked, 300e18, "the failed draw locked nothing more");
        for (uint256 i; i < poor.length; ++i) {
            assertEq(info(poor[i]).locked, 0);
        }
    }

    // ------------------------------------------------------------------ the distribution

    /// @dev Eq. 3.2: a one-seat committee picks each auditor with probability stake / total. With
    ///      stakes 1 : 3 over 400 seeds, the larger is drawn 300 times in expectation (sd 8.7); the
    ///      bounds are four standard deviations and the seeds are fixed, so the test is deterministic.
    function test_drawCommittee_proportionalToStake() public {
        addAuditor("small", 1, 100e18);
        address large = addAuditor("large", 1, 300e18);
        uint256 snapshot = vm.snapshotState();
        uint256 largeDrawn;
        for (uint256 s; s < 400; ++s) {
            (address[] memory members,) =
                drawAsAudit(1, 1, keccak256(abi.encode("proportional", s)), address(0), PENALTY);
            if (members[0] == large) ++largeDrawn;
            vm.revertToState(snapshot);
        }
        assertGe(largeDrawn, 265);
        assertLe(largeDrawn, 335);
    }

    /// @notice Issue L2: a member's expected units are size * stake / total. Stakes 1 : 2 : 3 : 4,
    ///         committees of five, 400 fixed seeds: 2,000 units in all. Every member backs far more
    ///         than five units, so nobody leaves a draw and the 2,000 draws are independent: each
    ///         member's total is binomial(2,000, stake / total), 200 to 800 expected. The tolerance
    ///         is four standard deviations per member (13.4 units for the 10% member, 21.9 for the
    ///         40% one). (Draws without replacement could not even seat five units over four
    ///         members.)
    function test_drawCommittee_expectedUnitsAreSizeTimesStakeShare() public {
        address[] memory list = new address[](4);
        for (uint256 i; i < 4; ++i) {
            list[i] = addAuditor(string.concat("share-", vm.toString(i)), 1, (i + 1) * 100e18);
        }
        uint256 n = 400;
        uint256 size = 5;
        uint256[4] memory won;
        vm.roll(block.number + 1);
        for (uint256 s; s < n; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory units) = requestDraw(
                drawRequest(1, block.number - 1, size, keccak256(abi.encode("units", s)), address(0), PENALTY)
            );
            assertCommittee(members, units, size);
            for (uint256 i; i < 4; ++i) {
                won[i] += unitsIn(members, units, list[i]);
            }
            vm.revertToStateAndDelete(snapshot);
        }
        assertEq(won[0] + won[1] + won[2] + won[3], n * size);
        for (uint256 i; i < 4; ++i) {
            assertWithinFourSigma(won[i], n * size, i + 1, 10, "units off size * stake / total");
        }
    }

    /// @notice Fuzz: any pool of 1 to 12 members (stakes from the minimum to a million tokens,
    ///         each backing at least twelve units) and any committee of 1 to 12 draws: the draw is
    ///         exactly the reference model's, its distinct members' units add up to the size, each
    ///         locks units * P, the excluded account never sits, and no draw weight changes.
    function testFuzz_drawCommittee_unitsAddUpToSizeAndLockUnitsTimesP(
        bytes32 seed,
        uint256 count,
        uint256 size,
        uint256 stakeSeed
    ) public {
        count = _bound(count, 1, 12);
        size = _bound(size, 1, 12);
        address[] memory list = new address[](count);
        uint256[] memory weights = new uint256[](count);
        uint256 total;
        for (uint256 i; i < count; ++i) {
            weights[i] = _bound(uint256(keccak256(abi.encode(stakeSeed, i))), MIN_TIER1, 1e24);
            list[i] = addAuditor(string.concat("a", vm.toString(i)), 1, weights[i]);
            total += weights[i];
        }
        uint256 excludedIndex = count > 1 && uint256(seed) % 2 == 0 ? uint256(seed) % count : type(uint256).max;
        vm.roll(block.number + 1);
        DrawRequest memory request = drawRequest(1, block.number - 1, size, seed, address(0), PENALTY);
        (, address[] memory members, uint96[] memory units) =
            assertDrawMatchesModel(request, list, candidatesOf(list, weights, PENALTY), excludedIndex);
        assertCommittee(members, units, size);
        for (uint256 i; i < members.length; ++i) {
            assertTrue(excludedIndex >= count || members[i] != list[excludedIndex], "the excluded account was seated");
            assertEq(info(members[i]).locked, units[i] * PENALTY);
        }
        assertEq(registry.eligibleStake(1), total, "locks change no draw weight");
        assertEq(registry.eligibleStakeAt(1, block.number - 1), total, "the tree the draw read");
    }
}
