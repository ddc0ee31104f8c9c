// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AuditorRegistryBase} from "./AuditorRegistryBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {DrawRequest} from "../src/types/Settlement.sol";

/// @notice The committee draw, called as the audit contract: distinct members of the tier, never
///         the excluded account, each with the seat's lock unlocked, and the pool left as it was.
contract AuditorRegistryDrawTest is AuditorRegistryBase {
    function drawAsAudit(uint8 tier, uint256 size, bytes32 seed, address excluded, uint96 lock)
        internal
        returns (address[] memory members, uint96[] memory weights)
    {
        // Randomness from the previous block: weights as of then (every auditor registered earlier).
        vm.roll(block.number + 1);
        vm.prank(address(audit));
        return registry.drawCommittee(
            DrawRequest({
                tier: tier,
                size: uint8(size),
                seed: seed,
                snapshotBlock: block.number - 1,
                excluded: excluded,
                lockPerSeat: lock
            })
        );
    }

    function assertDistinct(address[] memory members) internal pure {
        for (uint256 i; i < members.length; ++i) {
            for (uint256 j; j < i; ++j) {
                assertTrue(members[i] != members[j], "a member seated twice");
            }
        }
    }

    function test_drawCommittee_locksEachMemberAndReturnsStakes() public {
        addAuditors("t2-", 2, 7, 1_500e18);
        (address[] memory members, uint96[] memory weights) = drawAsAudit(2, 5, keccak256("seed"), address(0), PENALTY);
        assertEq(members.length, 5);
        assertDistinct(members);
        for (uint256 i; i < members.length; ++i) {
            IAuditorRegistry.AuditorInfo memory a = info(members[i]);
            assertEq(a.tier, 2);
            assertEq(a.locked, PENALTY);
            assertEq(weights[i], a.stake, "voting weight = stake at the draw");
        }
        assertEq(registry.eligibleStake(2), 7 * 1_500e18, "locks change no draw weight");
        assertEq(registry.eligibleCount(2), 7);
        vm.roll(block.number + 1);
        assertEq(registry.eligibleStakeAt(2, block.number - 1), 7 * 1_500e18, "nor the tree of the draw's block");
    }

    function test_drawCommittee_neverSeatsTheExcludedAccount() public {
        address[] memory list = addAuditors("t1-", 1, 4, 200e18);
        for (uint256 s; s < 10; ++s) {
            (address[] memory members,) = drawAsAudit(1, 3, keccak256(abi.encode(s)), list[1], PENALTY);
            assertFalse(contains(members, list[1]));
        }
        assertEq(info(list[1]).locked, 0);
    }

    function assertEmptyCommittee(address[] memory members, uint96[] memory weights) internal pure {
        assertEq(members.length, 0, "no members when the committee cannot be seated");
        assertEq(weights.length, 0, "no weights when the committee cannot be seated");
    }

    /// @notice Too few eligible members: the draw returns nothing, locks nothing and says how many
    ///         it could have seated; it does not revert, so the caller can try again later.
    function test_drawCommittee_returnsNothingWhenTooFewEligible() public {
        address[] memory list = addAuditors("t1-", 1, 3, 100e18);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 3, 2);
        (address[] memory members, uint96[] memory weights) = drawAsAudit(1, 3, bytes32(0), list[0], PENALTY);
        assertEmptyCommittee(members, weights);
        for (uint256 i; i < list.length; ++i) {
            assertEq(info(list[i]).locked, 0, "a failed draw locks nothing");
        }

        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(2, 1, 0);
        (members, weights) = drawAsAudit(2, 1, bytes32(0), address(0), PENALTY);
        assertEmptyCommittee(members, weights);

        // The same pool seats a committee it can fill.
        (members,) = drawAsAudit(1, 2, bytes32(0), list[0], PENALTY);
        assertEq(members.length, 2);
        assertFalse(contains(members, list[0]));
    }

    function test_drawCommittee_skipsMembersShortOfTheSessionLock() public {
        address rich = addAuditor("rich", 1, 400e18);
        address[] memory poor = addAuditors("poor", 1, 3, 100e18);
        // A session whose snapshot locks more than the poor auditors hold: only `rich` may sit.
        (address[] memory members,) = drawAsAudit(1, 1, keccak256("x"), address(0), 300e18);
        assertEq(members[0], rich);
        assertEq(info(rich).locked, 300e18);
        // No count is checked up front: the draw exhausts the tree with none seated (rich now has
        // 100 unlocked, the others 100 each): the event's last value is how many it seated.
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(1, 2, 0);
        (address[] memory none, uint96[] memory noWeights) = drawAsAudit(1, 2, keccak256("y"), address(0), 300e18);
        assertEmptyCommittee(none, noWeights);
        assertEq(info(rich).locked, 300e18, "the failed draw locked nothing more");
        for (uint256 i; i < poor.length; ++i) {
            assertEq(info(poor[i]).locked, 0);
        }
    }

    /// @dev One auditor holds almost all the stake: once it is seated, every later value is drawn
    ///      over the weight left (its interval stepped over), so the draw never lands on it again
    ///      and seats the four small members in four more draws; the tree is never written.
    function test_drawCommittee_dominantStakerDoesNotStallTheDraw() public {
        address whale = addAuditor("whale", 1, 1e27);
        address[] memory small = addAuditors("t1-", 1, 4, 100e18);
        for (uint256 s; s < 8; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory weights) =
                drawAsAudit(1, 5, keccak256(abi.encode("whale", s)), address(0), PENALTY);
            assertEq(members.length, 5);
            assertDistinct(members);
            assertEq(members[0], whale, "1e27 against 4e20: the whale is drawn first");
            assertEq(weights[0], 1e27);
            for (uint256 i; i < small.length; ++i) {
                assertTrue(contains(members, small[i]), "every small member seated");
            }
            assertEq(registry.eligibleStake(1), 1e27 + 4 * 100e18);
            vm.revertToState(snapshot);
        }
    }

    /// @dev Eq. 3.2: a one-seat committee picks each auditor with probability stake / total. With
    ///      stakes 1 : 3 over 400 seeds, the larger is drawn 300 times in expectation (sd 8.7); the
    ///      bounds are four standard deviations and the seeds are fixed, so the test is deterministic.
    function test_drawCommittee_proportionalToStake() public {
        addAuditor("small", 1, 100e18);
        address large = addAuditor("large", 1, 300e18);
        uint256 snapshot = vm.snapshotState();
        uint256 largeDrawn;
        for (uint256 s; s < 400; ++s) {
            (address[] memory members,) = drawAsAudit(1, 1, keccak256(abi.encode("proportional", s)), address(0), PENALTY);
            if (members[0] == large) ++largeDrawn;
            vm.revertToState(snapshot);
        }
        assertGe(largeDrawn, 265);
        assertLe(largeDrawn, 335);
    }

    function testFuzz_drawCommittee_distinctEligibleMembers(bytes32 seed, uint256 count, uint256 size, uint256 stakeSeed)
        public
    {
        count = _bound(count, 1, 12);
        size = _bound(size, 1, count);
        address[] memory list = new address[](count);
        uint256 total;
        for (uint256 i; i < count; ++i) {
            uint256 amount = _bound(uint256(keccak256(abi.encode(stakeSeed, i))), MIN_TIER1, 1e24);
            list[i] = addAuditor(string.concat("a", vm.toString(i)), 1, amount);
            total += amount;
        }
        address excluded = count > size && uint256(seed) % 2 == 0 ? list[uint256(seed) % count] : address(0);
        (address[] memory members, uint96[] memory weights) = drawAsAudit(1, size, seed, excluded, PENALTY);
        assertEq(members.length, size);
        assertDistinct(members);
        for (uint256 i; i < size; ++i) {
            assertTrue(members[i] != excluded, "the excluded account was seated");
            assertTrue(contains(list, members[i]));
            assertEq(info(members[i]).locked, PENALTY);
            assertEq(weights[i], info(members[i]).stake);
        }
        assertEq(registry.eligibleStake(1), total, "locks change no draw weight");
        assertEq(registry.eligibleStakeAt(1, block.number - 1), total, "the tree the draw read");
    }
}
