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
                randomnessBlock: block.number - 1,
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
        assertEq(registry.sortitionWeight(2), 7 * 1_500e18, "the tree is whole again after the draw");
        assertEq(registry.eligibleStake(2), 7 * 1_500e18, "locks change no draw weight");
        assertEq(registry.eligibleCount(2), 7);
    }

    function test_drawCommittee_neverSeatsTheExcludedAccount() public {
        address[] memory list = addAuditors("t1-", 1, 4, 200e18);
        for (uint256 s; s < 10; ++s) {
            (address[] memory members,) = drawAsAudit(1, 3, keccak256(abi.encode(s)), list[1], PENALTY);
            assertFalse(contains(members, list[1]));
        }
        assertEq(info(list[1]).locked, 0);
    }

    function test_drawCommittee_revertsWhenTooFewEligible() public {
        address[] memory list = addAuditors("t1-", 1, 3, 100e18);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 3, 2));
        drawAsAudit(1, 3, bytes32(0), list[0], PENALTY);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 2, 1, 0));
        drawAsAudit(2, 1, bytes32(0), address(0), PENALTY);
    }

    function test_drawCommittee_skipsMembersShortOfTheSessionLock() public {
        address rich = addAuditor("rich", 1, 400e18);
        address[] memory poor = addAuditors("poor", 1, 3, 100e18);
        // A session whose snapshot locks more than the poor auditors hold: only `rich` may sit.
        (address[] memory members,) = drawAsAudit(1, 1, keccak256("x"), address(0), 300e18);
        assertEq(members[0], rich);
        // No count is checked up front: the draw exhausts the tree with none seated (rich now has
        // 100 unlocked, the others 100 each): the last value is how many it seated.
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 2, 0));
        drawAsAudit(1, 2, keccak256("y"), address(0), 300e18);
        for (uint256 i; i < poor.length; ++i) {
            assertEq(info(poor[i]).locked, 0);
        }
    }

    /// @dev One auditor holds almost all the stake: after a few rejections the draw corrects the
    ///      tree for its own duration (the seated members weigh zero), so it still ends, and it
    ///      restores the tree afterwards.
    function test_drawCommittee_dominantStakerDoesNotStallTheDraw() public {
        address whale = addAuditor("whale", 1, 1e27);
        addAuditors("t1-", 1, 4, 100e18);
        (address[] memory members,) = drawAsAudit(1, 5, keccak256("whale"), address(0), PENALTY);
        assertDistinct(members);
        assertTrue(contains(members, whale));
        assertEq(registry.sortitionWeight(1), 1e27 + 4 * 100e18, "the corrected tree is restored");
        assertEq(registry.eligibleStake(1), 1e27 + 4 * 100e18);
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
        assertEq(registry.sortitionWeight(1), total, "every member is back in the tree");
        assertEq(registry.eligibleStake(1), total);
    }
}
