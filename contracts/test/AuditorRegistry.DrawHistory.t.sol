// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";

import {AuditorRegistryBase} from "./AuditorRegistryBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {DrawRequest} from "../src/types/Settlement.sol";
import {Params} from "../src/types/Params.sol";

/// @notice The draw reads the registry as of its snapshot block: the sortition tree, its size and
///         total, and every member's weight are recorded by block, so nothing done after the block
///         (staking, even 1 wei; registering; unstaking; switching availability; credentials;
///         slashes; syncing a raised minimum) changes which committee a seed yields or raises a
///         seat's weight. A seat's weight is the snapshot weight capped by the member's bonded stake
///         at the draw (issue H2): unstaking or a slash after the block lowers it at once.
///         Also: successive sampling without replacement is exact (eq. 3.2), members short of
///         unlocked stake and the excluded account are passed over (at most 64 of them), and the
///         history views `eligibleStakeAt` and `drawWeightAt`.
/// @dev Draws are made as the audit contract, with an explicit randomness block. A "frozen" draw is
///      taken inside a state snapshot and reverted, so that its locks do not reach the next draw.
contract AuditorRegistryDrawHistoryTest is AuditorRegistryBase {
    uint256 internal constant SEEDS = 30;
    /// @dev The pool's stakes: 200, 300, ..., 700 tokens, registered in that order.
    uint256 internal constant POOL_STAKE = 2_700e18;
    /// @dev Each pool member's spare tokens, for top-ups.
    uint256 internal constant SPARE = 1e27;

    /// @dev The committees and seat weights that one list of seeds yields.
    struct Draws {
        address[][] members;
        uint256[][] weights;
    }

    address[] internal pool;
    uint256 internal newcomers;

    function setUp() public override {
        super.setUp();
        for (uint256 i; i < 6; ++i) {
            address a = addAuditor(string.concat("t1-", vm.toString(i)), 1, (i + 2) * 100e18);
            fund(a, SPARE);
            pool.push(a);
        }
        vm.roll(1_000); // well after every registration
    }

    // ------------------------------------------------------------------ helpers

    function seedOf(uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("draw history", i));
    }

    function drawRequest(uint8 tier, uint256 randomnessBlock, uint256 size, bytes32 seed, address excluded, uint96 lock)
        internal
        pure
        returns (DrawRequest memory)
    {
        return DrawRequest({
            tier: tier,
            size: uint8(size),
            seed: seed,
            snapshotBlock: randomnessBlock,
            excluded: excluded,
            lockPerSeat: lock
        });
    }

    function drawAs(DrawRequest memory request) internal returns (address[] memory members, uint96[] memory weights) {
        vm.prank(address(audit));
        (members, weights) = registry.drawCommittee(request);
    }

    /// @dev A tier-1 draw with no excluded account and the default lock.
    function drawAt(uint256 randomnessBlock, uint256 size, bytes32 seed)
        internal
        returns (address[] memory members, uint96[] memory weights)
    {
        return drawAs(drawRequest(1, randomnessBlock, size, seed, address(0), PENALTY));
    }

    /// @dev A draw whose effects (locks) are reverted.
    function frozenDraw(DrawRequest memory request)
        internal
        returns (address[] memory members, uint96[] memory weights)
    {
        uint256 snapshot = vm.snapshotState();
        (members, weights) = drawAs(request);
        vm.revertToStateAndDelete(snapshot);
    }

    /// @dev Frozen draws of seeds 0 .. count - 1.
    function drawSeeds(uint8 tier, uint256 randomnessBlock, uint256 size, uint256 count)
        internal
        returns (Draws memory d)
    {
        d.members = new address[][](count);
        d.weights = new uint256[][](count);
        for (uint256 s; s < count; ++s) {
            (address[] memory members, uint96[] memory weights) =
                frozenDraw(drawRequest(tier, randomnessBlock, size, seedOf(s), address(0), PENALTY));
            d.members[s] = members;
            d.weights[s] = asUints(weights);
        }
    }

    function drawSeeds(uint256 randomnessBlock, uint256 size) internal returns (Draws memory) {
        return drawSeeds(1, randomnessBlock, size, SEEDS);
    }

    function assertSameDraws(Draws memory actual, Draws memory expected, string memory what) internal pure {
        assertEq(actual.members.length, expected.members.length);
        for (uint256 s; s < expected.members.length; ++s) {
            assertEq(actual.members[s], expected.members[s], string.concat(what, ": committee changed"));
            assertEq(actual.weights[s], expected.weights[s], string.concat(what, ": seat weights changed"));
        }
    }

    /// @dev The committees of `actual` are those of `expected`, and each seat weighs its weight in
    ///      `expected` capped by the member's bonded stake now (never more than at the block).
    function assertSameDrawsCapped(Draws memory actual, Draws memory expected, string memory what) internal view {
        assertEq(actual.members.length, expected.members.length);
        for (uint256 s; s < expected.members.length; ++s) {
            assertEq(actual.members[s], expected.members[s], string.concat(what, ": committee changed"));
            assertEq(
                actual.weights[s],
                cappedWeights(expected.members[s], expected.weights[s]),
                string.concat(what, ": seat weight != min(weight at the block, stake now)")
            );
        }
    }

    /// @dev `weights` (of `members`) each capped by the member's bonded stake now.
    function cappedWeights(address[] memory members, uint256[] memory weights)
        internal
        view
        returns (uint256[] memory out)
    {
        out = new uint256[](weights.length);
        for (uint256 i; i < weights.length; ++i) {
            uint256 bonded = registry.stakeOf(members[i]);
            out[i] = weights[i] < bonded ? weights[i] : bonded;
        }
    }

    /// @dev How many seeds draw a different committee in `a` than in `b`.
    function countChanged(Draws memory a, Draws memory b) internal pure returns (uint256 changed) {
        for (uint256 s; s < a.members.length; ++s) {
            if (keccak256(abi.encode(a.members[s])) != keccak256(abi.encode(b.members[s]))) ++changed;
        }
    }

    function weightOf(address[] memory members, uint96[] memory weights, address who) internal pure returns (uint256) {
        for (uint256 i; i < members.length; ++i) {
            if (members[i] == who) return weights[i];
        }
        revert("not seated");
    }

    function indexIn(address[] memory list, address who) internal pure returns (uint256) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == who) return i;
        }
        return type(uint256).max;
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

    /// @dev Registers a fresh account in `tier` with `amount` staked, now.
    function join(uint8 tier, uint256 amount) internal returns (address a) {
        a = makeAddr(string.concat("newcomer-", vm.toString(++newcomers)));
        fund(a, amount);
        if (tier == 3) registry.grantCredential(a);
        vm.prank(a);
        registry.register(tier, keyOf(a), "ipfs://late", amount);
    }

    function expectUnavailable(uint8 tier, uint256 needed, uint256 seated) internal {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(tier, needed, seated);
    }

    function assertEmpty(address[] memory members, uint96[] memory weights) internal pure {
        assertEq(members.length, 0, "an unavailable committee returns no members");
        assertEq(weights.length, 0, "an unavailable committee returns no weights");
    }

    /// @dev One action that any party may take after the randomness block, chosen by `r`, which
    ///      never takes a pool member's unlocked stake below the draw's lock (that would pass it
    ///      over, the one present-time check of the draw).
    function act(uint256 r) internal {
        address who = pool[(r >> 8) % pool.length];
        uint256 amount = 1 + (r >> 16) % 1e24;
        uint256 kind = r % 7;
        if (kind == 0) {
            stakeAs(who, amount % 2 == 0 ? 1 + amount % 6 : amount); // a few wei, or a lot
        } else if (kind == 1) {
            uint256 needed = params.params().minStakeTier1;
            uint256 stakeNow = registry.stakeOf(who);
            if (info(who).unbonding == 0 && stakeNow > needed) unstakeAs(who, 1 + amount % (stakeNow - needed));
        } else if (kind == 2) {
            setAvailableAs(who, !info(who).available);
        } else if (kind == 3) {
            join(1, MIN_TIER1 + amount);
        } else if (kind == 4) {
            uint256 stakeNow = registry.stakeOf(who);
            if (stakeNow > PENALTY) audit.slashAuditor(who, 1 + amount % (stakeNow - PENALTY), "after the block");
        } else if (kind == 5) {
            Params memory p = defaultParams();
            p.minStakeTier1 = uint96(100e18 + amount % 600e18); // below 700e18
            params.setParams(p);
            registry.syncDrawWeights(pool);
        } else {
            vm.roll(block.number + 1);
        }
    }

    // ------------------------------------------------------------------ the randomness block

    function test_drawCommittee_revertsUnlessTheRandomnessBlockIsPast() public {
        uint256 n = block.number;
        uint256[3] memory notPast = [n, n + 1, n + 1_000];
        for (uint256 i; i < notPast.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryRandomnessNotPast.selector, notPast[i], n));
            drawAt(notPast[i], 3, seedOf(0));
        }
        (address[] memory newest,) = drawAt(n - 1, 3, seedOf(0));
        assertEq(newest.length, 3);
        (address[] memory old,) = drawAt(n - 500, 3, seedOf(0));
        assertEq(old.length, 3, "no window: any past block after the registrations");
    }

    // ------------------------------------------------------------------ no steering after the block

    /// @notice The previous design's steering attack: once the seed is public, a member tops up by
    ///         1 to 6 wei, or an outsider registers with the minimum plus 0 to 5 wei, trying each
    ///         variation for a committee it prefers. No variation changes any of the 30 committees
    ///         drawn from the block. The control: the same variations, read from the block they were
    ///         made in, do change committees, so it is the history that keeps the draw fixed.
    function test_drawCommittee_topUpsOfAFewWeiOrLateRegistrationsCannotSteer() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 3);
        uint256 variations;
        uint256 wouldHaveSteered;
        for (uint256 m; m <= pool.length; ++m) {
            for (uint256 k = 1; k <= 6; ++k) {
                uint256 snapshot = vm.snapshotState();
                if (m < pool.length) stakeAs(pool[m], k);
                else join(1, MIN_TIER1 + k - 1);
                assertSameDraws(drawSeeds(r, 3), before, "a late top-up or registration");
                vm.roll(block.number + 1);
                if (countChanged(drawSeeds(block.number - 1, 3), before) != 0) ++wouldHaveSteered;
                ++variations;
                vm.revertToStateAndDelete(snapshot);
            }
        }
        assertEq(variations, 42);
        assertEq(wouldHaveSteered, variations, "read from their own block, every variation changes a committee");
    }

    /// @notice Every pool member tops up once the randomness block is mined, by 1 wei and by a lot.
    function test_drawCommittee_topUpAfterTheBlockChangesNothing() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 3);
        for (uint256 i; i < pool.length; ++i) {
            stakeAs(pool[i], 1);
        }
        assertEq(registry.eligibleStake(1), POOL_STAKE + 6, "the tree now holds the top-ups");
        assertSameDraws(drawSeeds(r, 3), before, "1 wei top-ups");
        for (uint256 i; i < pool.length; ++i) {
            stakeAs(pool[i], (i + 1) * 10_000e18);
        }
        vm.roll(r + 2);
        assertSameDraws(drawSeeds(r, 3), before, "large top-ups");
        assertEq(registry.eligibleStakeAt(1, r), POOL_STAKE);
    }

    /// @notice A newcomer registers with a hundred times the pool's stake after the block: it is
    ///         never seated from that block, and nobody else's seat moves.
    function test_drawCommittee_registrationAfterTheBlockChangesNothing() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 3);
        address whale = join(1, 100 * POOL_STAKE);
        assertEq(registry.eligibleCount(1), 7);
        assertSameDraws(drawSeeds(r, 3), before, "a late registration");
        vm.roll(r + 2);
        Draws memory later = drawSeeds(r + 1, 3);
        uint256 whaleSeated;
        for (uint256 s; s < SEEDS; ++s) {
            if (contains(later.members[s], whale)) ++whaleSeated;
        }
        assertEq(whaleSeated, SEEDS, "the control: from its own block on it holds 99% of the weight");
    }

    /// @notice Every member unstakes down to the minimum after the block: the same committees sit,
    ///         but each seat weighs only the stake still bonded (issue H2: the stake that left votes
    ///         with nothing), not its stake at the block.
    function test_drawCommittee_unstakingAfterTheBlockLowersWeightsToTheBondedStake() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 3);
        for (uint256 i; i < pool.length; ++i) {
            unstakeAs(pool[i], registry.stakeOf(pool[i]) - MIN_TIER1);
        }
        assertEq(registry.eligibleStake(1), 6 * MIN_TIER1, "decreases reach the tree at once");
        Draws memory afterUnstaking = drawSeeds(r, 3);
        for (uint256 s; s < SEEDS; ++s) {
            assertEq(afterUnstaking.members[s], before.members[s], "unstaking: committee changed");
            for (uint256 i; i < 3; ++i) {
                assertGt(before.weights[s][i], MIN_TIER1, "at the block every member held more");
                assertEq(afterUnstaking.weights[s][i], MIN_TIER1, "the bonded stake, not the stake at the block");
            }
        }
    }

    /// @notice Members switch themselves off after the block, and someone who was off at the
    ///         block switches on: neither moves a seat.
    function test_drawCommittee_availabilityAfterTheBlockChangesNothing() public {
        address away = pool[5];
        setAvailableAs(away, false);
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 3);
        for (uint256 s; s < SEEDS; ++s) {
            assertFalse(contains(before.members[s], away), "off at the block");
        }
        setAvailableAs(away, true);
        assertSameDraws(drawSeeds(r, 3), before, "switching on after the block");
        for (uint256 i; i < 5; ++i) {
            setAvailableAs(pool[i], false);
        }
        assertEq(registry.eligibleCount(1), 1);
        assertSameDraws(drawSeeds(r, 3), before, "switching off after the block");
        vm.roll(r + 2);
        setAvailableAs(pool[0], true); // back on in a later block
        assertSameDraws(drawSeeds(r, 3), before, "switching off and on again");
    }

    /// @notice Governance revokes the credential of two seated humans and grants it back to one
    ///         revoked before the block: the tier-3 committees stay as they were.
    function test_drawCommittee_credentialChangesAfterTheBlockChangeNothing() public {
        address[] memory humans = new address[](5);
        for (uint256 i; i < humans.length; ++i) {
            humans[i] = addAuditor(string.concat("human-", vm.toString(i)), 3, MIN_TIER3 + i * 1_000e18);
        }
        registry.revokeCredential(humans[4]);
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(3, r, 3, SEEDS);
        for (uint256 s; s < SEEDS; ++s) {
            assertFalse(contains(before.members[s], humans[4]), "revoked at the block");
        }
        registry.revokeCredential(humans[0]);
        registry.revokeCredential(humans[1]);
        registry.grantCredential(humans[4]);
        assertEq(registry.eligibleCount(3), 3);
        assertEq(registry.eligibleStake(3), 3 * MIN_TIER3 + (2 + 3 + 4) * 1_000e18);
        assertSameDraws(drawSeeds(3, r, 3, SEEDS), before, "credential changes");
    }

    /// @notice Governance slashes every pool member below the tier minimum after the block: their
    ///         draw weight now is zero, yet each keeps its seat (with unlocked stake to back the
    ///         lock), which weighs only the 50 tokens left at stake.
    function test_drawCommittee_slashAfterTheBlockMovesNoSeatAndLowersItsWeight() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 3);
        for (uint256 i; i < pool.length; ++i) {
            audit.slashAuditor(pool[i], registry.stakeOf(pool[i]) - 50e18, "after the block");
        }
        assertEq(registry.eligibleStake(1), 0);
        assertEq(registry.eligibleCount(1), 0);
        Draws memory afterSlashes = drawSeeds(r, 3);
        for (uint256 s; s < SEEDS; ++s) {
            assertEq(afterSlashes.members[s], before.members[s], "slashes: committee changed");
            for (uint256 i; i < 3; ++i) {
                assertEq(afterSlashes.weights[s][i], 50e18, "what is left at stake");
            }
        }
    }

    /// @notice Governance raises the tier-1 minimum to 450 before the block but nobody syncs until
    ///         after it: the draw keeps the stale weights of the block, and the sync moves no seat.
    function test_drawCommittee_syncAfterARaisedMinimumChangesNothing() public {
        Params memory p = defaultParams();
        p.minStakeTier1 = 450e18;
        params.setParams(p);
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 6);
        registry.syncDrawWeights(pool); // 200, 300 and 400 fall below the minimum
        assertEq(registry.eligibleCount(1), 3);
        assertEq(registry.eligibleStake(1), 1_800e18);
        p.minStakeTier1 = 550e18;
        params.setParams(p); // raised again after the block, and synced
        registry.syncDrawWeights(pool);
        assertEq(registry.eligibleCount(1), 2);
        Draws memory afterSync = drawSeeds(r, 6);
        assertSameDraws(afterSync, before, "syncing a raised minimum");
        assertTrue(contains(afterSync.members[0], pool[0]), "stale weights still count at the block");
    }

    /// @notice Everything at once, over more than one block: a member tops up, one unstakes, one
    ///         switches off, a newcomer registers, one is slashed and the minimum is raised and
    ///         synced; for size 1 to 6, every committee is as before, and only the seats of the
    ///         unstaked and the slashed member weigh less (their bonded stake).
    function test_drawCommittee_allActionsAfterTheBlockMoveNoSeat() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws[] memory before = new Draws[](6);
        for (uint256 size = 1; size <= 6; ++size) {
            before[size - 1] = drawSeeds(1, r, size, 10);
        }
        stakeAs(pool[0], 3);
        unstakeAs(pool[5], 600e18);
        vm.roll(r + 2);
        setAvailableAs(pool[2], false);
        join(1, 5_000e18);
        audit.slashAuditor(pool[3], 450e18, "after the block");
        Params memory p = defaultParams();
        p.minStakeTier1 = 250e18;
        params.setParams(p);
        registry.syncDrawWeights(pool);
        vm.roll(r + 3);
        assertEq(registry.stakeOf(pool[5]), 100e18);
        assertEq(registry.stakeOf(pool[3]), 50e18);
        for (uint256 size = 1; size <= 6; ++size) {
            Draws memory again = drawSeeds(1, r, size, 10);
            assertSameDrawsCapped(again, before[size - 1], "many actions");
            for (uint256 s; s < 10; ++s) {
                for (uint256 i; i < size; ++i) {
                    address m = again.members[s][i];
                    uint256 expected = m == pool[5] ? 100e18 : m == pool[3] ? 50e18 : before[size - 1].weights[s][i];
                    assertEq(again.weights[s][i], expected, "only the unstaked and the slashed weigh less");
                }
            }
        }
    }

    /// @notice Fuzz: one top-up of any amount by any member, or a registration of any size, after
    ///         the block changes neither the committee nor its weights, for any seed and size.
    function testFuzz_drawCommittee_topUpOrRegistrationAfterTheBlockChangesNothing(
        bytes32 seed,
        uint256 who,
        uint256 amount,
        uint256 size
    ) public {
        who = bound(who, 0, pool.length);
        amount = bound(amount, 1, SPARE);
        size = bound(size, 1, pool.length);
        uint256 r = block.number;
        vm.roll(r + 1);
        DrawRequest memory request = drawRequest(1, r, size, seed, address(0), PENALTY);
        (address[] memory members, uint96[] memory weights) = frozenDraw(request);
        assertEq(members.length, size);
        if (who < pool.length) stakeAs(pool[who], amount);
        else join(1, MIN_TIER1 + amount);
        (address[] memory again, uint96[] memory againWeights) = frozenDraw(request);
        assertEq(again, members, "committee changed");
        assertEq(asUints(againWeights), asUints(weights), "seat weights changed");
    }

    /// @notice Fuzz: any sequence of up to twelve actions after the block (top-ups of a few wei or
    ///         a lot, unstakes, availability switches, registrations, slashes, raised minimums with
    ///         a sync, new blocks) leaves the committee of any seed as it was, and no seat weighs
    ///         more than at the block: each weighs that weight capped by the member's stake now.
    function testFuzz_drawCommittee_anyActionsAfterTheBlockMoveNoSeat(bytes32 seed, uint256 actions, uint256 size)
        public
    {
        size = bound(size, 1, pool.length);
        uint256 r = block.number;
        vm.roll(r + 1);
        DrawRequest memory request = drawRequest(1, r, size, seed, address(0), PENALTY);
        (address[] memory members, uint96[] memory weights) = frozenDraw(request);
        uint256 count = bound(actions, 1, 12);
        for (uint256 i; i < count; ++i) {
            act(uint256(keccak256(abi.encode(actions, i))));
        }
        (address[] memory again, uint96[] memory againWeights) = frozenDraw(request);
        assertEq(again, members, "committee changed");
        assertEq(asUints(againWeights), cappedWeights(members, asUints(weights)), "seat weights");
        for (uint256 i; i < size; ++i) {
            assertLe(againWeights[i], weights[i], "a weight rose after the block");
        }
    }

    // ------------------------------------------------------------------ weights: the stake at the block, capped by the stake now

    /// @notice A member sits with its stake at the snapshot block capped by its bonded stake now: a
    ///         top-up since adds nothing, an unstake since counts at once (issue H2); a draw from a
    ///         later block reads the later stake.
    function test_drawCommittee_seatWeightIsTheStakeAtTheBlockCappedByTheStakeNow() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 i; i < 3; ++i) {
            stakeAs(pool[i], 1_000e18);
        }
        for (uint256 i = 3; i < pool.length; ++i) {
            unstakeAs(pool[i], 200e18);
        }
        (address[] memory members, uint96[] memory weights) =
            frozenDraw(drawRequest(1, r, 6, seedOf(0), address(0), PENALTY));
        for (uint256 i; i < pool.length; ++i) {
            uint256 expected = i < 3 ? (i + 2) * 100e18 : (i + 2) * 100e18 - 200e18;
            assertEq(weightOf(members, weights, pool[i]), expected, "stake at the block, capped by the stake now");
        }
        vm.roll(r + 2);
        (members, weights) = frozenDraw(drawRequest(1, r + 1, 6, seedOf(1), address(0), PENALTY));
        for (uint256 i; i < pool.length; ++i) {
            uint256 expected = i < 3 ? (i + 2) * 100e18 + 1_000e18 : (i + 2) * 100e18 - 200e18;
            assertEq(weightOf(members, weights, pool[i]), expected, "stake at the later block");
        }
    }

    /// @notice A member that leaves entirely after the block has no unlocked stake left to back a
    ///         seat: it is passed over, and a full committee of all six can no longer be seated
    ///         from the block. The others keep their weights. It left after the snapshot that
    ///         counted it (issue M2): the draw charges it the lock from its unbonding stake, even
    ///         though the draw then fails.
    function test_drawCommittee_memberWithNothingLeftIsPassedOverAndCharged() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        address leaver = pool[2];
        unstakeAs(leaver, 400e18);
        assertEq(registry.drawWeightAt(leaver, r), 400e18, "still weighed at the block");
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakeForfeited(leaver, PENALTY, insurance, "unbonded after the draw's snapshot");
        expectUnavailable(1, 6, 5);
        (address[] memory none, uint96[] memory noWeights) = drawAt(r, 6, seedOf(0));
        assertEmpty(none, noWeights);
        assertEq(info(leaver).unbonding, 400e18 - PENALTY, "charged the lock");
        assertEq(registry.claimableTokens(insurance), PENALTY);
        (address[] memory members, uint96[] memory weights) = drawAt(r, 5, seedOf(0));
        assertFalse(contains(members, leaver), "passed over");
        for (uint256 i; i < pool.length; ++i) {
            if (pool[i] != leaver) assertEq(weightOf(members, weights, pool[i]), (i + 2) * 100e18);
        }
    }

    /// @notice Auditors who join after the block (a registration, a switch back on, a top-up back to
    ///         the minimum) weighed nothing at it: a draw from it never seats them. One who joins in
    ///         the block itself counts, and a draw from a later block counts everyone.
    function test_drawCommittee_neverSeatsWhoJoinedAfterTheBlock() public {
        address away = pool[5];
        setAvailableAs(away, false);
        address exited = pool[0];
        unstakeAs(exited, 200e18);
        vm.roll(block.number + 1);

        uint256 r = block.number;
        address early = join(1, 5_000e18); // in the randomness block: counts
        vm.roll(r + 1);
        address late = join(1, 50_000e18);
        setAvailableAs(away, true);
        stakeAs(exited, 500e18);
        assertEq(registry.eligibleCount(1), 8);

        uint256 earlySeated;
        Draws memory d = drawSeeds(r, 3);
        for (uint256 s; s < SEEDS; ++s) {
            assertFalse(contains(d.members[s], late), "registered after the block");
            assertFalse(contains(d.members[s], away), "switched on after the block");
            assertFalse(contains(d.members[s], exited), "staked again after the block");
            if (contains(d.members[s], early)) ++earlySeated;
        }
        assertGt(earlySeated, SEEDS / 2, "5,000 of 6,800 tokens at the block");

        // Five could sit at block r (four of the pool and `early`), eight at block r + 1.
        vm.roll(r + 2);
        expectUnavailable(1, 6, 5);
        (address[] memory none, uint96[] memory noWeights) = drawAt(r, 6, seedOf(0));
        assertEmpty(none, noWeights);
        (address[] memory everyone,) = drawAt(r + 1, 8, seedOf(0));
        assertTrue(contains(everyone, late) && contains(everyone, away) && contains(everyone, exited));
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
            (address[] memory members, uint96[] memory weights) =
                frozenDraw(drawRequest(1, r, 3, seedOf(s), address(0), PENALTY));
            assertFalse(contains(members, largest), "unavailable at the block");
            if (contains(members, smallest)) {
                ++smallestSeated;
                assertEq(weightOf(members, weights, smallest), 600e18);
            }
        }
        assertGt(smallestSeated, 0);
    }

    /// @notice The weight history, block by block, of a member who changed after the block: each
    ///         draw reads the weight it had at the end of its snapshot block (the member ends with
    ///         more stake than it ever had, so no cap applies); then it unstakes down to 120 and every
    ///         draw's seat weighs at most that.
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
        vm.roll(r + 5);
        stakeAs(x, 1_000e18); // 1,151
        vm.roll(r + 10);

        uint256[5] memory blocks = [r, r + 1, r + 3, r + 4, r + 9];
        uint256[5] memory expected = [uint256(200e18), 300e18, 300e18, 151e18, 1_151e18];
        for (uint256 k; k < blocks.length; ++k) {
            (address[] memory members, uint96[] memory weights) =
                frozenDraw(drawRequest(1, blocks[k], 6, seedOf(k), address(0), PENALTY));
            assertEq(weightOf(members, weights, x), expected[k]);
        }
        expectUnavailable(1, 6, 5);
        drawAt(r + 2, 6, seedOf(0));

        // Slashed down to 120 bonded after every block above: the draws that read more than 120
        // seat it with 120.
        vm.roll(r + 11);
        audit.slashAuditor(x, 1_031e18, "after the blocks");
        assertEq(registry.stakeOf(x), 120e18);
        for (uint256 k; k < blocks.length; ++k) {
            (address[] memory members, uint96[] memory weights) =
                frozenDraw(drawRequest(1, blocks[k], 6, seedOf(k), address(0), PENALTY));
            assertEq(weightOf(members, weights, x), expected[k] < 120e18 ? expected[k] : 120e18);
        }
    }

    // ------------------------------------------------------------------ the exact distribution

    /// @dev Four tier-2 members with stakes 4 : 1 : 3 : 2 (thousands of tokens), in that tree order.
    ///      After the block, the smallest stakes nine thousand more and a newcomer registers with
    ///      ten thousand: the draws below must still follow the stakes at the block.
    function setUpWeightedPool() internal returns (address[4] memory members, uint256[4] memory stakes, uint256 r) {
        stakes = [uint256(4), 1, 3, 2];
        for (uint256 i; i < 4; ++i) {
            members[i] = addAuditor(string.concat("weighted-", vm.toString(i)), 2, stakes[i] * 1_000e18);
        }
        r = block.number;
        vm.roll(r + 1);
        fund(members[1], 9_000e18);
        stakeAs(members[1], 9_000e18);
        join(2, 10_000e18);
    }

    /// @dev |observed - n p| <= 4 sqrt(n p (1 - p)) for p = num / den, in integers:
    ///      (observed den - n num)^2 <= 16 n num (den - num).
    function assertWithinFourSigma(uint256 observed, uint256 n, uint256 num, uint256 den, string memory what)
        internal
        pure
    {
        int256 diff = int256(observed * den) - int256(n * num);
        uint256 bound2 = 16 * n * num * (den - num);
        assertLe(uint256(diff * diff), bound2, what);
    }

    /// @notice Eq. 3.2 for one seat: over 2,000 seeds each member is drawn in proportion to its
    ///         stake at the block. The tolerance is four binomial standard deviations per member
    ///         (sd = sqrt(n p (1 - p)): 13.4 draws for the 10% member, 21.9 for the 40% one), and the
    ///         seeds are fixed, so the test is deterministic. Read after the top-up and the newcomer
    ///         (4 : 10 : 3 : 2 : 10), the 10% member would be drawn 34% of the time.
    /// @dev The lock is zero so that a draw changes no state and needs no snapshot.
    function test_drawCommittee_oneSeatFollowsStakeSharesAtTheBlock() public {
        (address[4] memory members, uint256[4] memory stakes, uint256 r) = setUpWeightedPool();
        uint256 n = 2_000;
        uint256[4] memory drawn;
        for (uint256 s; s < n; ++s) {
            (address[] memory seated,) =
                drawAs(drawRequest(2, r, 1, keccak256(abi.encode("one seat", s)), address(0), 0));
            uint256 i = 0;
            while (i < 4 && members[i] != seated[0]) ++i;
            assertLt(i, 4, "only the members at the block");
            ++drawn[i];
        }
        for (uint256 i; i < 4; ++i) {
            assertWithinFourSigma(drawn[i], n, stakes[i], 10, "one-seat frequency off its stake share");
        }
    }

    /// @notice Successive sampling without replacement, exactly: over 2,000 seeds each ordered pair
    ///         (i, j) is drawn with probability s_i / S * s_j / (S - s_i), within four binomial
    ///         standard deviations per pair (the rarest pair, 1 then 2 of 10, is expected 44 times,
    ///         sd 6.6). A draw that did not step over the taken interval, or that moved to the next
    ///         member on a collision, would shift these probabilities by far more.
    function test_drawCommittee_twoSeatsFollowSuccessiveSamplingAtTheBlock() public {
        (address[4] memory members, uint256[4] memory stakes, uint256 r) = setUpWeightedPool();
        uint256 n = 2_000;
        uint256[4][4] memory drawn;
        for (uint256 s; s < n; ++s) {
            (address[] memory seated,) =
                drawAs(drawRequest(2, r, 2, keccak256(abi.encode("two seats", s)), address(0), 0));
            uint256 i = 0;
            while (i < 4 && members[i] != seated[0]) ++i;
            uint256 j = 0;
            while (j < 4 && members[j] != seated[1]) ++j;
            assertLt(i, 4, "only the members at the block");
            assertLt(j, 4, "only the members at the block");
            assertTrue(i != j, "a member seated twice");
            ++drawn[i][j];
        }
        for (uint256 i; i < 4; ++i) {
            for (uint256 j; j < 4; ++j) {
                if (i == j) continue;
                // p(i, j) = s_i / 10 * s_j / (10 - s_i)
                assertWithinFourSigma(
                    drawn[i][j],
                    n,
                    stakes[i] * stakes[j],
                    10 * (10 - stakes[i]),
                    "pair frequency off successive sampling"
                );
            }
        }
    }

    /// @dev The draw's reference model: successive sampling over `weights` (tree order) with the
    ///      draw's own numbers, keccak256(seed, nonce) modulo the weight not yet taken, mapped onto
    ///      the members not taken by a linear scan. A member at `passedOver` is taken but not
    ///      seated; the model gives up as the draw does, when the weight runs out or size + 64
    ///      members are taken. Returns the seated indices (fewer than `size` when it gave up).
    function referenceDraw(uint256[] memory weights, bytes32 seed, uint256 size, uint256 passedOver)
        internal
        pure
        returns (uint256[] memory seated, uint256 seatedCount)
    {
        seated = new uint256[](size);
        bool[] memory taken = new bool[](weights.length);
        uint256 left;
        for (uint256 i; i < weights.length; ++i) {
            left += weights[i];
        }
        uint256 takenCount;
        for (uint256 nonce; seatedCount < size; ++nonce) {
            if (left == 0 || takenCount == size + 64) break;
            uint256 candidate = pickUntaken(weights, taken, uint256(keccak256(abi.encode(seed, nonce))) % left);
            taken[candidate] = true;
            ++takenCount;
            left -= weights[candidate];
            if (candidate != passedOver) seated[seatedCount++] = candidate;
        }
    }

    /// @dev The member not taken whose interval, counting only members not taken, holds `value`.
    function pickUntaken(uint256[] memory weights, bool[] memory taken, uint256 value) internal pure returns (uint256) {
        for (uint256 i; i < weights.length; ++i) {
            if (taken[i] || weights[i] == 0) continue;
            if (value < weights[i]) return i;
            value -= weights[i];
        }
        revert("value beyond the weight left");
    }

    /// @dev Registers `count` tier-2 members from `stakeSeed`, with stakes of 1 to 8 wei when
    ///      `tiny`, else up to a million tokens; about one in five switches off. Returns the members
    ///      and their draw weights now (in tree order).
    function joinRandomPool(uint256 stakeSeed, uint256 count, bool tiny)
        internal
        returns (address[] memory members, uint256[] memory weights)
    {
        members = new address[](count);
        weights = new uint256[](count);
        for (uint256 i; i < count; ++i) {
            uint256 r = uint256(keccak256(abi.encode(stakeSeed, i)));
            uint256 amount = tiny ? 1 + r % 8 : bound(r, 1, 1e24);
            members[i] = join(2, amount);
            if ((r >> 128) % 5 == 0) setAvailableAs(members[i], false);
            else weights[i] = amount;
        }
    }

    /// @dev About half the members top up and a third switch their availability.
    function shufflePool(uint256 stakeSeed, address[] memory members) internal {
        for (uint256 i; i < members.length; ++i) {
            uint256 r = uint256(keccak256(abi.encode(stakeSeed, "after", i)));
            if (r % 2 == 0) {
                fund(members[i], 1 + r % 1e20);
                stakeAs(members[i], 1 + r % 1e20);
            }
            if ((r >> 8) % 3 == 0) setAvailableAs(members[i], !info(members[i]).available);
        }
    }

    /// @notice Fuzz: the draw is exactly the reference model's successive sampling, over the
    ///         weights at the block, for pools of 1 to 16 members (some away, one maybe excluded)
    ///         with stakes of a few wei (where every interval boundary is hit) or up to a million
    ///         tokens, whatever each member does after the block.
    /// @dev Governance lowers the penalty and the tier-2 minimum to 1 wei so that stakes of a few
    ///      wei are drawable; the lock is 1 wei, which every member can back.
    function testFuzz_drawCommittee_matchesReferenceSuccessiveSampling(
        bytes32 seed,
        uint256 stakeSeed,
        uint256 count,
        uint256 size,
        uint256 excludedIndex
    ) public {
        allowWeiStakes();
        count = bound(count, 1, 16);
        size = bound(size, 1, count);
        excludedIndex = bound(excludedIndex, 0, 2 * count); // half the time: nobody excluded
        (address[] memory members, uint256[] memory weights) = joinRandomPool(stakeSeed, count, stakeSeed % 2 == 0);
        uint256 r = block.number;
        vm.roll(r + 1);
        shufflePool(stakeSeed, members);

        assertDrawMatchesReference(drawRequest(2, r, size, seed, address(0), 1), members, weights, excludedIndex);
    }

    /// @dev Governance lowers the penalty and the tier-1 and tier-2 minimums to 1 wei.
    function allowWeiStakes() internal {
        Params memory p = defaultParams();
        p.penaltyPerSeat = 1;
        p.minStakeTier1 = 1;
        p.minStakeTier2 = 1;
        params.setParams(p);
    }

    /// @dev Draws `request` with `members[excludedIndex]` excluded (nobody past the end) and checks
    ///      it against the reference model over `weights`.
    function assertDrawMatchesReference(
        DrawRequest memory request,
        address[] memory members,
        uint256[] memory weights,
        uint256 excludedIndex
    ) internal {
        if (excludedIndex < members.length) request.excluded = members[excludedIndex];
        (uint256[] memory expected, uint256 expectedCount) =
            referenceDraw(weights, request.seed, request.size, excludedIndex);
        if (expectedCount < request.size) expectUnavailable(request.tier, request.size, expectedCount);
        (address[] memory drawn, uint96[] memory drawnWeights) = drawAs(request);
        if (expectedCount < request.size) {
            assertEmpty(drawn, drawnWeights);
            return;
        }
        assertEq(drawn.length, request.size);
        for (uint256 i; i < drawn.length; ++i) {
            assertEq(drawn[i], members[expected[i]], "the reference model's member");
            assertEq(drawnWeights[i], weights[expected[i]], "its weight at the block");
        }
    }

    // ------------------------------------------------------------------ passing over

    /// @notice With a lock of 450, the members of 200, 300 and 400 cannot back a seat, and the one
    ///         of 700 is excluded: every committee of two is the members of 500 and 600, and no one
    ///         passed over is locked.
    function test_drawCommittee_passesOverTheShortAndTheExcludedAndStillFills() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 s; s < SEEDS; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory weights) =
                drawAs(drawRequest(1, r, 2, seedOf(s), pool[5], 450e18));
            assertEq(members.length, 2);
            assertTrue(contains(members, pool[3]) && contains(members, pool[4]), "the two who can sit");
            assertEq(weightOf(members, weights, pool[3]), 500e18);
            assertEq(info(pool[3]).locked, 450e18);
            for (uint256 i; i < 3; ++i) {
                assertEq(info(pool[i]).locked, 0, "short of unlocked stake: not locked");
            }
            assertEq(info(pool[5]).locked, 0, "excluded: not locked");
            vm.revertToStateAndDelete(snapshot);
        }
    }

    /// @notice Passing a member over takes its interval exactly as seating it does, so the draw
    ///         goes on with the same numbers: excluding a member (or a member short of stake) only
    ///         removes it from the committee, and the next member in line takes the last seat.
    function test_drawCommittee_passingOverOnlyRemovesThatMember() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 s; s < SEEDS; ++s) {
            (address[] memory line,) = frozenDraw(drawRequest(1, r, 4, seedOf(s), address(0), PENALTY));
            for (uint256 k; k < 3; ++k) {
                (address[] memory members,) = frozenDraw(drawRequest(1, r, 3, seedOf(s), line[k], PENALTY));
                uint256 next;
                for (uint256 i; i < 4; ++i) {
                    if (i == k) continue;
                    assertEq(members[next++], line[i], "the order of the others is unchanged");
                }
            }
        }
    }

    /// @dev Registers `count` tier-2 auditors of 1e24 each, seats them all in one committee that
    ///      locks all but 1 token of each, then registers a small member of 1,000 tokens that can
    ///      back a seat of 500. Returns the whales, the small member and the randomness block (the
    ///      small member's registration block, now past).
    function setUpLockedWhales(uint256 count) internal returns (address[] memory whales, address minnow, uint256 r) {
        whales = addAuditors("whale-", 2, count, 1e24);
        vm.roll(block.number + 1);
        (address[] memory seated,) =
            drawAs(drawRequest(2, block.number - 1, count, seedOf(999), address(0), uint96(1e24 - 1e18)));
        assertEq(seated.length, count, "every whale locked");
        minnow = addAuditor("minnow", 2, 1_000e18);
        r = block.number;
        vm.roll(r + 1);
    }

    /// @notice 64 members passed over is the most a draw tolerates: with 64 whales that cannot back
    ///         a seat and one small member that can, a one-seat draw always seats the small one,
    ///         however late it comes.
    function test_drawCommittee_passesOverUpTo64() public {
        (address[] memory whales, address minnow, uint256 r) = setUpLockedWhales(64);
        uint256 lastInLine;
        for (uint256 s; s < 10; ++s) {
            (address[] memory line,) = frozenDraw(drawRequest(2, r, 65, seedOf(s), address(0), 0));
            if (indexIn(line, minnow) == 64) ++lastInLine;
            (address[] memory members, uint96[] memory weights) =
                frozenDraw(drawRequest(2, r, 1, seedOf(s), address(0), 500e18));
            assertEq(members.length, 1);
            assertEq(members[0], minnow);
            assertEq(weights[0], 1_000e18);
        }
        assertGt(lastInLine, 0, "some seeds reach the small member only after all 64 whales");
        assertEq(info(whales[0]).locked, 1e24 - 1e18);
    }

    /// @notice One more whale: a draw that reaches the small member only after 65 passed over
    ///         gives up at 64 (size + 64 intervals taken), seats nobody, locks nothing and says so;
    ///         a seed that reaches it sooner seats it. The candidate order comes from the same seed
    ///         drawn with no lock (nobody passed over).
    function test_drawCommittee_givesUpAfter64PassedOver() public {
        (address[] memory whales, address minnow, uint256 r) = setUpLockedWhales(65);
        uint256 gaveUp;
        for (uint256 s; s < 10; ++s) {
            (address[] memory line,) = frozenDraw(drawRequest(2, r, 66, seedOf(s), address(0), 0));
            uint256 position = indexIn(line, minnow);
            assertLt(position, 66);
            uint256 snapshot = vm.snapshotState();
            if (position == 65) {
                expectUnavailable(2, 1, 0);
                (address[] memory none, uint96[] memory noWeights) =
                    drawAs(drawRequest(2, r, 1, seedOf(s), address(0), 500e18));
                assertEmpty(none, noWeights);
                assertEq(info(minnow).locked, 0, "nothing locked");
                for (uint256 i; i < whales.length; ++i) {
                    assertEq(info(whales[i]).locked, 1e24 - 1e18, "the passed over are never locked");
                }
                ++gaveUp;
            } else {
                (address[] memory members,) = drawAs(drawRequest(2, r, 1, seedOf(s), address(0), 500e18));
                assertEq(members[0], minnow, "reached within 64 passed over");
                assertEq(info(minnow).locked, 500e18);
            }
            vm.revertToStateAndDelete(snapshot);
        }
        assertGt(gaveUp, 0, "the whales hold 99.999% of the weight: the small member mostly comes last");
    }

    /// @notice Issue M2: when nobody can sit, a draw passes over `size + 64` members, and each of
    ///         them that unbonded after the snapshot is charged the lock. (The list of deserters
    ///         once held only 64, and such a draw reverted with an out-of-bounds panic.)
    function test_drawCommittee_chargesEveryDeserterWhenNobodyCanSit() public {
        address[] memory gone = addAuditors("deserter-", 2, 70, 1_000e18);
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 i; i < gone.length; ++i) {
            unstakeAs(gone[i], 1_000e18);
        }
        expectUnavailable(2, 3, 0);
        (address[] memory none, uint96[] memory noWeights) = drawAs(drawRequest(2, r, 3, seedOf(0), address(0), PENALTY));
        assertEmpty(none, noWeights);
        uint256 charged;
        for (uint256 i; i < gone.length; ++i) {
            if (info(gone[i]).unbonding == 1_000e18 - PENALTY) ++charged;
            else assertEq(info(gone[i]).unbonding, 1_000e18, "charged the lock or nothing");
        }
        assertEq(charged, 3 + 64, "every member passed over");
        assertEq(registry.claimableTokens(insurance), 67 * uint256(PENALTY));
    }

    /// @notice Only an unstake after the snapshot block is a desertion: a member that unstaked in
    ///         the block itself (counted with what it kept) and cannot back the lock is passed over
    ///         without a charge; the same unstake one block later is charged.
    function test_drawCommittee_chargesOnlyUnstakesAfterTheSnapshot() public {
        address x = pool[5]; // 700
        uint256 r = block.number;
        uint256 snapshot = vm.snapshotState();
        unstakeAs(x, 500e18); // in block r: 200 left, counted at r
        vm.roll(r + 1);
        // A lock of 250: four members can sit, x and the member of 200 cannot; five seats make the
        // draw visit everyone.
        expectUnavailable(1, 5, 4);
        drawAs(drawRequest(1, r, 5, seedOf(0), address(0), 250e18));
        assertEq(info(x).unbonding, 500e18, "unstaked before the snapshot: not charged");
        assertEq(registry.claimableTokens(insurance), 0);

        vm.revertToStateAndDelete(snapshot);
        vm.roll(r + 1);
        unstakeAs(x, 500e18); // after block r: counted at r with 700
        expectUnavailable(1, 5, 4);
        drawAs(drawRequest(1, r, 5, seedOf(0), address(0), 250e18));
        assertEq(info(x).unbonding, 500e18 - 250e18, "unstaked after the snapshot: charged the lock");
        assertEq(registry.claimableTokens(insurance), 250e18);
    }

    /// @notice Fewer members at the block than seats: the weight runs out, nothing is locked.
    function test_drawCommittee_returnsNothingWhenTheWeightRunsOut() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        expectUnavailable(1, 7, 6);
        (address[] memory none, uint96[] memory noWeights) = drawAt(r, 7, seedOf(0));
        assertEmpty(none, noWeights);
        expectUnavailable(1, 6, 5);
        (none, noWeights) = drawAs(drawRequest(1, r, 6, seedOf(0), pool[0], PENALTY));
        assertEmpty(none, noWeights);
        expectUnavailable(2, 1, 0);
        (none, noWeights) = drawAs(drawRequest(2, r, 1, seedOf(0), address(0), PENALTY));
        assertEmpty(none, noWeights);
        for (uint256 i; i < pool.length; ++i) {
            assertEq(info(pool[i]).locked, 0, "nothing locked");
        }
    }

    // ------------------------------------------------------------------ eligibleStakeAt / drawWeightAt

    /// @notice The history views, block by block: several changes in one block keep the last,
    ///         blocks without a change read the last one before, older blocks are preserved.
    function test_eligibleStakeAtAndDrawWeightAt_readEachBlock() public {
        address x = pool[0]; // 200
        uint256 r = block.number;
        vm.roll(r + 1);
        stakeAs(x, 100e18); // 300
        vm.roll(r + 2);
        setAvailableAs(x, false); // 0
        vm.roll(r + 3);
        setAvailableAs(x, true);
        unstakeAs(x, 150e18);
        stakeAs(x, 1e18);
        setAvailableAs(x, false);
        setAvailableAs(x, true); // the block ends at 151
        vm.roll(r + 4);
        join(1, 1_000e18); // another member: x's weight stays, the total grows
        vm.roll(r + 10);

        uint256[7] memory blocks = [uint256(99), r, r + 1, r + 2, r + 3, r + 4, r + 9];
        uint256[7] memory weightsAt = [uint256(0), 200e18, 300e18, 0, 151e18, 151e18, 151e18];
        uint256[7] memory totalsAt = [
            uint256(0),
            POOL_STAKE,
            POOL_STAKE + 100e18,
            POOL_STAKE - 200e18,
            POOL_STAKE - 49e18,
            POOL_STAKE - 49e18 + 1_000e18,
            POOL_STAKE - 49e18 + 1_000e18
        ];
        for (uint256 k; k < blocks.length; ++k) {
            assertEq(registry.drawWeightAt(x, blocks[k]), weightsAt[k], "drawWeightAt");
            assertEq(registry.eligibleStakeAt(1, blocks[k]), totalsAt[k], "eligibleStakeAt");
        }
        assertEq(registry.drawWeightAt(x, 100), 200e18, "the registration block");
        assertEq(registry.drawWeightAt(stranger, r), 0, "not registered");
        assertEq(registry.eligibleStakeAt(2, r), 0, "an empty tier");
        assertEq(registry.eligibleStake(1), POOL_STAKE - 49e18 + 1_000e18);
    }

    /// @notice A decrease reaches eligibleStake and the tree at once: a draw from the block of the
    ///         decrease reads it, a draw from the block before does not.
    function test_eligibleStakeAt_takesADecreaseAtOnce() public {
        address x = pool[0];
        uint256 b = block.number;
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.DrawWeightChanged(x, 0);
        setAvailableAs(x, false);
        assertEq(registry.eligibleStake(1), POOL_STAKE - 200e18);
        assertEq(registry.eligibleCount(1), 5);
        vm.roll(b + 1);
        assertEq(registry.eligibleStakeAt(1, b), POOL_STAKE - 200e18);
        assertEq(registry.eligibleStakeAt(1, b - 1), POOL_STAKE);
        Draws memory fromB = drawSeeds(b, 5);
        for (uint256 s; s < SEEDS; ++s) {
            assertFalse(contains(fromB.members[s], x), "away from the block of the decrease");
        }
        (address[] memory all,) = drawAt(b - 1, 6, seedOf(0));
        assertTrue(contains(all, x), "still weighed in the block before");
    }

    function test_eligibleStakeAtAndDrawWeightAt_revertUnlessTheBlockIsPast() public {
        uint256 n = block.number;
        uint256[2] memory notPast = [n, n + 1];
        for (uint256 i; i < notPast.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryRandomnessNotPast.selector, notPast[i], n));
            registry.eligibleStakeAt(1, notPast[i]);
            vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryRandomnessNotPast.selector, notPast[i], n));
            registry.drawWeightAt(pool[0], notPast[i]);
        }
        assertEq(registry.eligibleStakeAt(1, n - 1), POOL_STAKE);
        assertEq(registry.drawWeightAt(pool[0], n - 1), 200e18);
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
    ///         weight until someone syncs them; after the sync they leave eligibleStake and the tree
    ///         at once, no draw from the sync's block on seats them, and a draw from an earlier block
    ///         still does.
    function test_syncDrawWeights_appliesARaisedMinimum() public {
        Params memory p = defaultParams();
        p.minStakeTier1 = 350e18;
        params.setParams(p);
        assertEq(registry.eligibleCount(1), 6, "nothing changes by itself");
        assertEq(registry.eligibleStake(1), POOL_STAKE);
        uint256 g = block.number;
        vm.roll(g + 1);
        (address[] memory all,) = frozenDraw(drawRequest(1, g, 6, seedOf(0), address(0), PENALTY));
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
        assertEq(registry.eligibleStake(1), POOL_STAKE - 500e18, "the decrease reaches the tree at once");
        assertFalse(info(stranger).registered);

        vm.roll(s + 1);
        assertEq(registry.eligibleStakeAt(1, s), POOL_STAKE - 500e18);
        (all,) = frozenDraw(drawRequest(1, s - 1, 6, seedOf(1), address(0), PENALTY));
        assertTrue(contains(all, pool[0]) && contains(all, pool[1]), "a draw from before the sync");
        expectUnavailable(1, 6, 4);
        drawAt(s, 6, seedOf(2));
        Draws memory d = drawSeeds(s, 3);
        for (uint256 k; k < SEEDS; ++k) {
            assertFalse(contains(d.members[k], pool[0]) || contains(d.members[k], pool[1]), "below the minimum");
        }

        // Its own top-up to the new minimum brings an auditor back.
        stakeAs(pool[0], 150e18);
        assertEq(registry.eligibleCount(1), 5);
        assertEq(registry.eligibleStake(1), POOL_STAKE - 300e18 + 150e18);
    }

    /// @notice Lowering a minimum brings an auditor below the old one back once synced.
    function test_syncDrawWeights_appliesALoweredMinimum() public {
        address a = join(2, 1_000e18);
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
        uint256 b = block.number;
        registry.syncDrawWeights(one);
        assertEq(registry.eligibleCount(2), 1);
        assertEq(registry.eligibleStake(2), 600e18);
        vm.roll(b + 1);
        assertEq(registry.drawWeightAt(a, b), 600e18);
        (address[] memory members,) = drawAs(drawRequest(2, b, 1, seedOf(0), address(0), PENALTY));
        assertEq(members[0], a);
    }
}
