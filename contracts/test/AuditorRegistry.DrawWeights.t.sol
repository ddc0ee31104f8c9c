// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";

import {AuditorRegistryBase} from "./AuditorRegistryBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {DrawRequest} from "../src/types/Settlement.sol";
import {Params} from "../src/types/Params.sol";

/// @notice Draw weights by block (no grinding once the randomness is public): a draw reads every
///         auditor's weight as of its randomness block; the sortition tree takes increases at once
///         and decreases after the 256-block draw window (`settleDrawWeight`, or the auditor's next
///         action); governance changes of minimum stakes reach an auditor through `syncDrawWeights`.
/// @dev Draws are made as the audit contract, with an explicit randomness block.
contract AuditorRegistryDrawWeightsTest is AuditorRegistryBase {
    /// @dev ParamsLib.DRAW_HISTORY_BLOCKS.
    uint256 internal constant WINDOW = 256;
    uint256 internal constant SEEDS = 24;
    /// @dev The pool's stakes: 200, 300, ..., 700 tokens.
    uint256 internal constant POOL_STAKE = 2_700e18;

    address[] internal pool;

    function setUp() public override {
        super.setUp();
        for (uint256 i; i < 6; ++i) {
            address a = addAuditor(string.concat("t1-", vm.toString(i)), 1, (i + 2) * 100e18);
            fund(a, 10_000e18);
            pool.push(a);
        }
        vm.roll(1_000); // every registration is older than the draw window
    }

    // ------------------------------------------------------------------ helpers

    function drawAt(uint8 tier, uint256 randomnessBlock, uint256 size, bytes32 seed)
        internal
        returns (address[] memory members, uint96[] memory weights)
    {
        vm.prank(address(audit));
        (members, weights) = registry.drawCommittee(
            DrawRequest({
                tier: tier,
                size: uint8(size),
                seed: seed,
                randomnessBlock: randomnessBlock,
                excluded: address(0),
                lockPerSeat: PENALTY
            })
        );
    }

    function drawAt(uint256 randomnessBlock, uint256 size, bytes32 seed)
        internal
        returns (address[] memory members, uint96[] memory weights)
    {
        return drawAt(1, randomnessBlock, size, seed);
    }

    function seedOf(uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("draw weights", i));
    }

    function weightOf(address[] memory members, uint96[] memory weights, address who) internal pure returns (uint256) {
        for (uint256 i; i < members.length; ++i) {
            if (members[i] == who) return weights[i];
        }
        revert("not seated");
    }

    function asUints(uint96[] memory list) internal pure returns (uint256[] memory out) {
        out = new uint256[](list.length);
        for (uint256 i; i < list.length; ++i) {
            out[i] = list[i];
        }
    }

    function stakeAs(address a, uint256 amount) internal {
        vm.prank(a);
        registry.stake(amount);
    }

    function unstakeAs(address a, uint256 amount) internal {
        vm.prank(a);
        registry.requestUnstake(amount);
    }

    function setAvailableAs(address a, bool available) internal {
        vm.prank(a);
        registry.setAvailable(available);
    }

    /// @dev Registers `name` in `tier` with `amount` staked, now.
    function join(string memory name, uint8 tier, uint256 amount) internal returns (address a) {
        a = makeAddr(name);
        fund(a, amount);
        vm.prank(a);
        registry.register(tier, keyOf(a), "ipfs://late", amount);
    }

    // ------------------------------------------------------------------ the randomness window

    function test_drawCommittee_revertsOutsideTheRandomnessWindow() public {
        uint256 n = block.number;
        uint256[3] memory outside = [n, n + 5, n - WINDOW - 1];
        for (uint256 i; i < outside.length; ++i) {
            vm.expectRevert(
                abi.encodeWithSelector(IAuditorRegistry.RegistryRandomnessOutOfWindow.selector, outside[i], n)
            );
            drawAt(outside[i], 3, seedOf(0));
        }
        (address[] memory oldest,) = drawAt(n - WINDOW, 3, seedOf(0));
        assertEq(oldest.length, 3);
        (address[] memory newest,) = drawAt(n - 1, 3, seedOf(0));
        assertEq(newest.length, 3);
    }

    // ------------------------------------------------------------------ nothing after the block counts

    /// @notice Every member of the committee switches itself off once the randomness block is
    ///         mined: the same seed still draws the same members with the same weights.
    function test_drawCommittee_availabilityOffAfterTheBlockChangesNothing() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 s; s < SEEDS; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory weights) = drawAt(r, 3, seedOf(s));
            vm.revertToState(snapshot);
            for (uint256 i; i < members.length; ++i) {
                setAvailableAs(members[i], false);
            }
            assertEq(registry.eligibleCount(1), 3);
            (address[] memory again, uint96[] memory againWeights) = drawAt(r, 3, seedOf(s));
            assertEq(again, members, "committee changed");
            assertEq(asUints(againWeights), asUints(weights), "seat weights changed");
            vm.revertToState(snapshot);
        }
    }

    /// @notice Every auditor unstakes down to the minimum once the randomness block is mined: the
    ///         same committee sits, with its stake at the block.
    function test_drawCommittee_unstakingAfterTheBlockChangesNothing() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 s; s < SEEDS; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory weights) = drawAt(r, 3, seedOf(s));
            vm.revertToState(snapshot);
            for (uint256 i; i < pool.length; ++i) {
                unstakeAs(pool[i], registry.stakeOf(pool[i]) - MIN_TIER1);
            }
            assertEq(registry.eligibleStake(1), 6 * MIN_TIER1);
            (address[] memory again, uint96[] memory againWeights) = drawAt(r, 3, seedOf(s));
            assertEq(again, members, "committee changed");
            assertEq(asUints(againWeights), asUints(weights), "seat weights changed");
            for (uint256 i; i < again.length; ++i) {
                assertGt(againWeights[i], MIN_TIER1, "weight at the block, not the stake now");
            }
            vm.revertToState(snapshot);
        }
    }

    /// @notice Switching off and back on after the randomness block leaves the tree as it was.
    function test_drawCommittee_availabilityOffAndOnAfterTheBlockChangesNothing() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 s; s < SEEDS; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory weights) = drawAt(r, 3, seedOf(s));
            vm.revertToState(snapshot);
            for (uint256 i; i < pool.length; ++i) {
                setAvailableAs(pool[i], false);
            }
            vm.roll(r + 2);
            for (uint256 i; i < pool.length; ++i) {
                setAvailableAs(pool[i], true);
            }
            (address[] memory again, uint96[] memory againWeights) = drawAt(r, 3, seedOf(s));
            assertEq(again, members, "committee changed");
            assertEq(asUints(againWeights), asUints(weights), "seat weights changed");
            vm.revertToState(snapshot);
        }
    }

    /// @notice Auditors who join after the randomness block (a registration, a switch back on)
    ///         weighed nothing at it: a draw from it never seats them. One who joins in the block
    ///         itself counts, and a draw from a later block counts everyone.
    function test_drawCommittee_neverSeatsWhoJoinedAfterTheBlock() public {
        address away = pool[5];
        setAvailableAs(away, false);
        vm.roll(block.number + WINDOW + 1);
        registry.settleDrawWeight(away);
        assertEq(registry.sortitionWeight(1), POOL_STAKE - 700e18, "out of the tree");

        uint256 r = block.number;
        address early = join("early", 1, 5_000e18); // in the randomness block: counts
        vm.roll(r + 1);
        address late = join("late", 1, 50_000e18);
        setAvailableAs(away, true);
        assertEq(registry.sortitionWeight(1), POOL_STAKE + 55_000e18, "increases enter the tree at once");

        uint256 earlySeated;
        for (uint256 s; s < SEEDS; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members,) = drawAt(r, 3, seedOf(s));
            vm.revertToState(snapshot);
            assertFalse(contains(members, late), "registered after the block");
            assertFalse(contains(members, away), "switched on after the block");
            if (contains(members, early)) ++earlySeated;
        }
        assertGt(earlySeated, SEEDS / 2, "5,000 of 6,500 tokens at the block");

        // Six could sit at block r (five of the pool and `early`), eight at block r + 1.
        vm.roll(r + 2);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 7, 6));
        drawAt(r, 7, seedOf(0));
        (address[] memory everyone,) = drawAt(r + 1, 8, seedOf(0));
        assertTrue(contains(everyone, late) && contains(everyone, away) && contains(everyone, early));
    }

    /// @notice Changes made up to the randomness block count: the largest staker leaves and the
    ///         smallest triples its stake, in the block itself.
    function test_drawCommittee_changesUpToTheBlockCount() public {
        address largest = pool[5];
        address smallest = pool[0];
        setAvailableAs(largest, false);
        stakeAs(smallest, 400e18); // 200 -> 600
        uint256 r = block.number;
        vm.roll(r + 1);
        uint256 smallestSeated;
        for (uint256 s; s < SEEDS; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory weights) = drawAt(r, 3, seedOf(s));
            vm.revertToState(snapshot);
            assertFalse(contains(members, largest), "unavailable at the block");
            if (contains(members, smallest)) {
                ++smallestSeated;
                assertEq(weightOf(members, weights, smallest), 600e18);
            }
        }
        assertGt(smallestSeated, 0);
    }

    /// @notice A member sits with its stake at the randomness block, whatever it staked since;
    ///         a draw from a later block reads the later stake.
    function test_drawCommittee_seatWeightIsTheStakeAtTheBlock() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 i; i < pool.length; ++i) {
            stakeAs(pool[i], 1_000e18);
        }
        (address[] memory members, uint96[] memory weights) = drawAt(r, 6, seedOf(0));
        for (uint256 i; i < pool.length; ++i) {
            assertEq(weightOf(members, weights, pool[i]), (i + 2) * 100e18);
        }
        vm.roll(r + 2);
        (members, weights) = drawAt(r + 1, 6, seedOf(1));
        for (uint256 i; i < pool.length; ++i) {
            assertEq(weightOf(members, weights, pool[i]), (i + 2) * 100e18 + 1_000e18);
        }
    }

    /// @notice The weight history, block by block, of a member who changed after the block: each
    ///         draw reads the weight it had at the end of its randomness block.
    function test_drawCommittee_readsTheWeightHistoryBlockByBlock() public {
        address x = pool[0]; // 200
        uint256 r = block.number;
        vm.roll(r + 1);
        stakeAs(x, 100e18); // 300
        vm.roll(r + 2);
        setAvailableAs(x, false); // 0
        vm.roll(r + 3);
        setAvailableAs(x, true); // 300
        vm.roll(r + 4);
        unstakeAs(x, 150e18); // 150
        stakeAs(x, 1e18); // 151, the same block: the block's last value counts
        vm.roll(r + 10);

        uint256[5] memory blocks = [r, r + 1, r + 3, r + 4, r + 9];
        uint256[5] memory expected = [uint256(200e18), 300e18, 300e18, 151e18, 151e18];
        for (uint256 k; k < blocks.length; ++k) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory weights) = drawAt(blocks[k], 6, seedOf(k));
            assertEq(weightOf(members, weights, x), expected[k]);
            vm.revertToState(snapshot);
        }
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 6, 5));
        drawAt(r + 2, 6, seedOf(0));
    }

    /// @notice Eq. 3.2 at the randomness block, whatever happens after it. Stakes 1 : 3 at the
    ///         block; after it the smaller stakes eight times more (9 : 3) and a newcomer registers
    ///         with 6,000. Over 400 one-seat draws the larger is still drawn 300 times in
    ///         expectation (sd 8.7); the bounds are four standard deviations, the seeds fixed. Were
    ///         the later stakes read, it would be drawn 100 times (or 67 counting the newcomer).
    function test_drawCommittee_proportionalToStakeAtTheRandomnessBlock() public {
        address small = addAuditor("small", 2, 1_000e18);
        address large = addAuditor("large", 2, 3_000e18);
        fund(small, 8_000e18);
        uint256 r = block.number;
        vm.roll(r + 1);
        uint256 largeDrawn;
        uint256 newcomerDrawn;
        for (uint256 s; s < 400; ++s) {
            uint256 snapshot = vm.snapshotState();
            stakeAs(small, 8_000e18);
            address newcomer = join("newcomer", 2, 6_000e18);
            (address[] memory members,) = drawAt(2, r, 1, keccak256(abi.encode("proportional", s)));
            if (members[0] == large) ++largeDrawn;
            if (members[0] == newcomer) ++newcomerDrawn;
            vm.revertToState(snapshot);
        }
        assertEq(newcomerDrawn, 0);
        assertGe(largeDrawn, 265);
        assertLe(largeDrawn, 335);
    }

    /// @notice The control: the same top-up made in the randomness block counts. Stakes 9 : 3 at
    ///         the block: the larger is drawn 100 times in 400 in expectation (sd 8.7).
    function test_drawCommittee_stakeAddedByTheRandomnessBlockCounts() public {
        address small = addAuditor("small", 2, 1_000e18);
        address large = addAuditor("large", 2, 3_000e18);
        fund(small, 8_000e18);
        stakeAs(small, 8_000e18);
        uint256 r = block.number;
        vm.roll(r + 1);
        uint256 largeDrawn;
        for (uint256 s; s < 400; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members,) = drawAt(2, r, 1, keccak256(abi.encode("proportional", s)));
            if (members[0] == large) ++largeDrawn;
            vm.revertToState(snapshot);
        }
        assertGe(largeDrawn, 65);
        assertLe(largeDrawn, 135);
    }

    // ------------------------------------------------------------------ sortition weight

    function test_sortitionWeight_takesAnIncreaseAtOnce() public {
        assertEq(registry.sortitionWeight(1), POOL_STAKE);
        assertEq(registry.eligibleStake(1), POOL_STAKE);
        stakeAs(pool[0], 50e18);
        join("newcomer", 1, 150e18);
        assertEq(registry.sortitionWeight(1), POOL_STAKE + 200e18);
        assertEq(registry.eligibleStake(1), POOL_STAKE + 200e18);
        assertEq(registry.eligibleCount(1), 7);
    }

    /// @notice A decrease leaves eligibleStake at once and the tree only after the draw window:
    ///         a draw may still read the old weight until then.
    function test_sortitionWeight_keepsADecreaseForTheDrawWindow() public {
        address x = pool[0];
        uint256 b = block.number;
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.DrawWeightChanged(x, 0);
        setAvailableAs(x, false);
        assertEq(registry.eligibleStake(1), POOL_STAKE - 200e18);
        assertEq(registry.eligibleCount(1), 5);
        assertEq(registry.sortitionWeight(1), POOL_STAKE);

        vm.roll(b + WINDOW);
        registry.settleDrawWeight(x);
        assertEq(registry.sortitionWeight(1), POOL_STAKE, "only once more than 256 blocks have passed");

        vm.roll(b + WINDOW + 1);
        vm.prank(stranger);
        registry.settleDrawWeight(x);
        assertEq(registry.sortitionWeight(1), POOL_STAKE - 200e18, "anyone settles it");
        assertEq(registry.eligibleStake(1), POOL_STAKE - 200e18);

        // Idempotent, and nothing for an account without a pending decrease.
        registry.settleDrawWeight(x);
        registry.settleDrawWeight(pool[1]);
        registry.settleDrawWeight(stranger);
        assertEq(registry.sortitionWeight(1), POOL_STAKE - 200e18);
    }

    /// @notice The auditor's next action after the window lowers the tree as well.
    function test_sortitionWeight_lowersAtTheAuditorsNextAction() public {
        address x = pool[1]; // 300
        uint256 b = block.number;
        unstakeAs(x, 100e18);
        assertEq(registry.eligibleStake(1), POOL_STAKE - 100e18);
        assertEq(registry.sortitionWeight(1), POOL_STAKE);
        vm.roll(b + WINDOW + 1);
        setAvailableAs(x, true); // already available: the weight stays, the pending decrease settles
        assertEq(registry.sortitionWeight(1), POOL_STAKE - 100e18);
    }

    /// @notice An increase above the tree weight replaces a pending decrease at once.
    function test_sortitionWeight_increaseOverridesAPendingDecrease() public {
        address x = pool[0]; // 200
        uint256 b = block.number;
        setAvailableAs(x, false);
        vm.roll(b + 1);
        setAvailableAs(x, true);
        stakeAs(x, 300e18);
        assertEq(registry.sortitionWeight(1), POOL_STAKE + 300e18);
        assertEq(registry.eligibleStake(1), POOL_STAKE + 300e18);
        vm.roll(b + WINDOW + 10);
        registry.settleDrawWeight(x);
        assertEq(registry.sortitionWeight(1), POOL_STAKE + 300e18, "nothing left to settle");
    }

    /// @notice A revoked credential leaves eligibleStake at once, the tree after the window.
    function test_sortitionWeight_revokedCredentialAfterTheWindow() public {
        address human = addAuditor("human", 3, 12_000e18);
        uint256 b = block.number;
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.DrawWeightChanged(human, 0);
        registry.revokeCredential(human);
        assertEq(registry.eligibleStake(3), 0);
        assertEq(registry.eligibleCount(3), 0);
        assertEq(registry.sortitionWeight(3), 12_000e18);
        vm.roll(b + WINDOW + 1);
        registry.settleDrawWeight(human);
        assertEq(registry.sortitionWeight(3), 0);
    }

    // ------------------------------------------------------------------ DrawWeightChanged

    function test_drawWeightChanged_emittedOnlyWhenTheWeightChanges() public {
        address a = makeAddr("newcomer");
        fund(a, 150e18);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.DrawWeightChanged(a, 150e18);
        vm.prank(a);
        registry.register(1, keyOf(a), "ipfs://newcomer", 150e18);

        vm.recordLogs();
        setAvailableAs(a, true); // already available
        vm.prank(stranger);
        registry.syncDrawWeights(pool); // nothing changed for them
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i; i < logs.length; ++i) {
            assertTrue(logs[i].topics[0] != IAuditorRegistry.DrawWeightChanged.selector, "no weight changed");
        }
    }

    // ------------------------------------------------------------------ syncDrawWeights

    /// @notice Governance raises the tier-1 minimum to 350: the two auditors below it keep their
    ///         weight until someone syncs them, and after the sync no draw from the sync's block on
    ///         seats them; a draw from an earlier block still may.
    function test_syncDrawWeights_appliesARaisedMinimum() public {
        Params memory p = defaultParams();
        p.minStakeTier1 = 350e18;
        params.setParams(p);
        assertEq(registry.eligibleCount(1), 6, "nothing changes by itself");
        assertEq(registry.eligibleStake(1), POOL_STAKE);
        uint256 g = block.number;
        vm.roll(g + 1);
        (address[] memory all,) = drawAt(g, 6, seedOf(0));
        assertTrue(contains(all, pool[0]) && contains(all, pool[1]), "stale weights still count before the sync");

        uint256 s = block.number;
        address[] memory accounts = new address[](4);
        (accounts[0], accounts[1], accounts[2], accounts[3]) = (pool[0], pool[1], pool[2], stranger);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.DrawWeightChanged(pool[0], 0);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.DrawWeightChanged(pool[1], 0);
        vm.prank(stranger); // anyone
        registry.syncDrawWeights(accounts); // pool[2] holds 400: unchanged; the stranger is not registered
        assertEq(registry.eligibleCount(1), 4);
        assertEq(registry.eligibleStake(1), POOL_STAKE - 500e18);
        assertEq(registry.sortitionWeight(1), POOL_STAKE, "the decrease reaches the tree after the window");
        assertFalse(info(stranger).registered);

        vm.roll(s + 1);
        (all,) = drawAt(s - 1, 6, seedOf(1));
        assertTrue(contains(all, pool[0]) && contains(all, pool[1]), "a draw from before the sync");
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCommitteeUnavailable.selector, 1, 6, 4));
        drawAt(s, 6, seedOf(2));
        for (uint256 k; k < SEEDS; ++k) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members,) = drawAt(s, 3, seedOf(k));
            vm.revertToState(snapshot);
            assertFalse(contains(members, pool[0]) || contains(members, pool[1]), "below the minimum");
        }

        // Its own top-up to the new minimum brings an auditor back.
        stakeAs(pool[0], 150e18);
        assertEq(registry.eligibleCount(1), 5);
        assertEq(registry.eligibleStake(1), POOL_STAKE - 300e18 + 150e18);
    }

    /// @notice Lowering a minimum brings an auditor below the old one back once synced.
    function test_syncDrawWeights_appliesALoweredMinimum() public {
        address a = join("short", 2, 1_000e18);
        unstakeAs(a, 1_000e18); // leaves tier 2 entirely
        fund(a, 600e18);
        stakeAs(a, 600e18); // below the tier-2 minimum: registered, not drawable
        assertEq(registry.eligibleCount(2), 0);
        Params memory p = defaultParams();
        p.minStakeTier2 = 500e18;
        params.setParams(p);
        assertEq(registry.eligibleCount(2), 0);
        registry.syncDrawWeights(pool); // other accounts: no effect on tier 2
        assertEq(registry.eligibleCount(2), 0);
        address[] memory one = new address[](1);
        one[0] = a;
        registry.syncDrawWeights(one);
        assertEq(registry.eligibleCount(2), 1);
        assertEq(registry.eligibleStake(2), 600e18);
        assertEq(registry.sortitionWeight(2), 1_000e18, "the old weight is still pending in the tree");
    }
}
