// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";

import {AuditorRegistryDrawBase} from "./AuditorRegistryDrawBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {DrawRequest} from "../src/types/Settlement.sol";
import {Params} from "../src/types/Params.sol";

/// @notice The draw reads the registry as of its snapshot block: the sortition tree, its size and
///         total, and every member's weight are recorded by block, so nothing done after the block
///         (staking, even 1 wei; registering; switching availability; credentials; slashes;
///         syncing a raised minimum) changes the odds of a draw or which committee a seed yields,
///         as long as each member's stake still backs the units it wins.
///         The draw itself (issue L2): `size` draws with replacement, exactly as the reference
///         model of `AuditorRegistryDrawBase` makes them; a seat weighs its units (draws won), and
///         three checks read the present: a member leaves the draw when it is the excluded
///         account, when it asked to unstake (even part of its stake) after the block, charged P
///         then, or when its unlocked stake cannot back one more unit; at most 64 members are
///         passed over. Also the history views `eligibleStakeAt` and `drawWeightAt`.
/// @dev Draws are made as the audit contract, with an explicit randomness block. A "frozen" draw is
///      taken inside a state snapshot and reverted, so that its locks do not reach the next draw.
contract AuditorRegistryDrawHistoryTest is AuditorRegistryDrawBase {
    uint256 internal constant SEEDS = 30;
    /// @dev The pool's stakes: 200, 300, ..., 700 tokens, registered in that order.
    uint256 internal constant POOL_STAKE = 2_700e18;
    /// @dev Each pool member's spare tokens, for top-ups.
    uint256 internal constant SPARE = 1e27;
    /// @dev An excluded index past every pool: nobody excluded.
    uint256 internal constant NOBODY = type(uint256).max;

    /// @dev The committees and seat weights (units) that one list of seeds yields.
    struct Draws {
        address[][] members;
        uint256[][] weights;
    }

    address[] internal pool;
    uint256 internal newcomers;
    /// @dev The pool members `act` made ask to unstake (after the randomness block).
    mapping(address member => bool) internal unbondedAfterTheBlock;

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

    function drawAs(DrawRequest memory request) internal returns (address[] memory members, uint96[] memory weights) {
        return requestDraw(request);
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

    /// @dev `assertDrawMatchesModel` on a draw whose effects (locks, charges) are reverted.
    function frozenModelCheck(
        DrawRequest memory request,
        address[] memory members,
        Candidate[] memory candidates,
        uint256 excludedIndex
    ) internal returns (ModelDraw memory m, address[] memory drawn, uint96[] memory units) {
        uint256 snapshot = vm.snapshotState();
        (m, drawn, units) = assertDrawMatchesModel(request, members, candidates, excludedIndex);
        vm.revertToStateAndDelete(snapshot);
    }

    /// @dev The pool's draw weights as registered: 200, 300, ..., 700 tokens.
    function poolWeights() internal pure returns (uint256[] memory weights) {
        weights = new uint256[](6);
        for (uint256 i; i < 6; ++i) {
            weights[i] = (i + 2) * 100e18;
        }
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

    /// @dev How many seeds draw a different committee in `a` than in `b`.
    function countChanged(Draws memory a, Draws memory b) internal pure returns (uint256 changed) {
        for (uint256 s; s < a.members.length; ++s) {
            if (keccak256(abi.encode(a.members[s])) != keccak256(abi.encode(b.members[s]))) ++changed;
        }
    }

    /// @dev How many of the committees in `d` seat `who`.
    function countSeating(Draws memory d, address who) internal pure returns (uint256 seated) {
        for (uint256 s; s < d.members.length; ++s) {
            if (contains(d.members[s], who)) ++seated;
        }
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

    function expectUnavailable(uint8 tier, uint256 needed, uint256 unitsDrawn) internal {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CommitteeUnavailable(tier, needed, unitsDrawn);
    }

    function assertEmpty(address[] memory members, uint96[] memory weights) internal pure {
        assertEq(members.length, 0, "an unavailable committee returns no members");
        assertEq(weights.length, 0, "an unavailable committee returns no weights");
    }

    /// @dev One action that any party may take after the randomness block, chosen by `r`. An
    ///      unstake request is recorded in `unbondedAfterTheBlock` (it takes the member out of
    ///      every draw from the block); a slash leaves at least the lock P at stake.
    function act(uint256 r) internal {
        address who = pool[(r >> 8) % pool.length];
        uint256 amount = 1 + (r >> 16) % 1e24;
        uint256 kind = r % 7;
        if (kind == 0) {
            stakeAs(who, amount % 2 == 0 ? 1 + amount % 6 : amount); // a few wei, or a lot
        } else if (kind == 1) {
            uint256 needed = params.params().minStakeTier1;
            uint256 stakeNow = registry.stakeOf(who);
            if (info(who).unbonding == 0 && stakeNow > needed) {
                unstakeAs(who, 1 + amount % (stakeNow - needed));
                unbondedAfterTheBlock[who] = true;
            }
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
        (address[] memory newest, uint96[] memory newestUnits) = drawAt(n - 1, 3, seedOf(0));
        assertCommittee(newest, newestUnits, 3);
        (address[] memory old, uint96[] memory oldUnits) = drawAt(n - 500, 3, seedOf(0));
        assertCommittee(old, oldUnits, 3); // no window: any past block after the registrations
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

    /// @notice A member that asks to unstake even part of its stake after the block (it keeps 100
    ///         bonded, enough for twelve units of P) leaves every draw from the block that reaches
    ///         it, and each such draw charges it P from its unbonding stake (issues M2 and L2: the
    ///         stake that may leave backs nothing, and a partial unbonder no longer sits). A draw
    ///         that never reaches it seats the very committee it seated before, units and all.
    ///         Then every member asks to unstake part: a draw from the block passes over all six,
    ///         charges each P, and seats nobody.
    function test_drawCommittee_partialUnbondAfterTheBlockTakesTheMemberOutAndChargesP() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 3);
        address x = pool[5];
        unstakeAs(x, 600e18); // 100 stays bonded
        assertEq(registry.drawWeightAt(x, r), 700e18, "weighed at the block");
        bool[] memory deserted = new bool[](6);
        deserted[5] = true;
        uint256 reached;
        for (uint256 s; s < SEEDS; ++s) {
            (ModelDraw memory m, address[] memory members, uint96[] memory units) = frozenModelCheck(
                drawRequest(1, r, 3, seedOf(s), address(0), PENALTY),
                pool,
                candidatesOf(pool, poolWeights(), deserted, PENALTY),
                NOBODY
            );
            assertFalse(contains(members, x), "an unbonder never sits");
            if (contains(before.members[s], x)) {
                // The same numbers up to its first draw: the draw reaches it exactly where it
                // won a unit before.
                assertEq(m.charged.length, 1, "reached: charged P, once");
                ++reached;
            } else {
                assertEq(m.charged.length, 0, "never reached: not charged");
                assertEq(members, before.members[s], "never reached: the committee is as before");
                assertEq(asUints(units), before.weights[s], "and so are its units");
            }
        }
        assertGt(reached, 0);
        assertLt(reached, SEEDS);

        for (uint256 i; i < 5; ++i) {
            unstakeAs(pool[i], registry.stakeOf(pool[i]) - MIN_TIER1);
            deserted[i] = true;
        }
        (ModelDraw memory all, address[] memory none, uint96[] memory noUnits) = assertDrawMatchesModel(
            drawRequest(1, r, 3, seedOf(0), address(0), PENALTY),
            pool,
            candidatesOf(pool, poolWeights(), deserted, PENALTY),
            NOBODY
        );
        assertEmpty(none, noUnits);
        assertEq(all.charged.length, 6, "every member passed over and charged");
        for (uint256 i; i < pool.length; ++i) {
            assertEq(info(pool[i]).unbonding, (i + 2) * 100e18 - MIN_TIER1 - PENALTY, "charged P");
            assertEq(registry.stakeOf(pool[i]), MIN_TIER1, "the bonded stake is not touched");
        }
        assertEq(registry.claimableTokens(insurance), 6 * uint256(PENALTY));
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

    /// @notice Governance slashes every pool member down to 50 after the block: their draw weight
    ///         now is zero, yet the odds of a draw from the block are the block's, and 50 still
    ///         backs six units of P: every committee of three sits as before, units and all.
    ///         Slashed further down to 10, each member backs one unit only: a member drawn a
    ///         second time leaves the draw and a later draw fills the unit (the model's draw), so
    ///         exactly the committees in which a member held two or more units change, into three
    ///         members of one unit each.
    function test_drawCommittee_slashAfterTheBlockMovesNoSeatWhileTheStakeBacksTheUnits() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        Draws memory before = drawSeeds(r, 3);
        for (uint256 i; i < pool.length; ++i) {
            audit.slashAuditor(pool[i], registry.stakeOf(pool[i]) - 50e18, "after the block");
        }
        assertEq(registry.eligibleStake(1), 0);
        assertEq(registry.eligibleCount(1), 0);
        assertSameDraws(drawSeeds(r, 3), before, "slashes down to 50");

        for (uint256 i; i < pool.length; ++i) {
            audit.slashAuditor(pool[i], 40e18, "after the block");
        }
        uint256 changed;
        for (uint256 s; s < SEEDS; ++s) {
            (, address[] memory members, uint96[] memory units) = frozenModelCheck(
                drawRequest(1, r, 3, seedOf(s), address(0), PENALTY),
                pool,
                candidatesOf(pool, poolWeights(), PENALTY),
                NOBODY
            );
            if (before.members[s].length < 3) {
                assertEq(members.length, 3, "one unit each: three members");
                ++changed;
            } else {
                assertEq(members, before.members[s], "nobody held two units: as before");
                assertEq(asUints(units), before.weights[s]);
            }
        }
        assertGt(changed, 0, "some committee had a member of two units");
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
        assertGt(countSeating(afterSync, pool[0]), 0, "stale weights still count at the block");
    }

    /// @notice Everything at once, over more than one block: a member tops up, one asks to unstake
    ///         part of its stake, one switches off, a newcomer registers, one is slashed (down to
    ///         50, which still backs six units) and the minimum is raised and synced. For sizes 1
    ///         to 6, every draw from the block is the model's over the block's weights with the
    ///         unbonder passed over: no committee seats the unbonder, and every committee that
    ///         never reached it is as before, units and all.
    function test_drawCommittee_allActionsAfterTheBlockMoveNoSeatButTheUnbonders() public {
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
        bool[] memory deserted = new bool[](6);
        deserted[5] = true;
        uint256 unchanged;
        uint256 reached;
        for (uint256 size = 1; size <= 6; ++size) {
            for (uint256 s; s < 10; ++s) {
                (ModelDraw memory m, address[] memory members, uint96[] memory units) = frozenModelCheck(
                    drawRequest(1, r, size, seedOf(s), address(0), PENALTY),
                    pool,
                    candidatesOf(pool, poolWeights(), deserted, PENALTY),
                    NOBODY
                );
                assertFalse(contains(members, pool[5]), "the unbonder never sits");
                if (contains(before[size - 1].members[s], pool[5])) {
                    assertEq(m.charged.length, 1);
                    ++reached;
                } else {
                    assertEq(members, before[size - 1].members[s], "many actions: committee changed");
                    assertEq(asUints(units), before[size - 1].weights[s], "many actions: units changed");
                    ++unchanged;
                }
            }
        }
        assertGt(unchanged, 0);
        assertGt(reached, 0);
    }

    /// @notice Fuzz: one top-up of any amount by any member, or a registration of any size, after
    ///         the block changes neither the committee nor its units, for any seed and size.
    function testFuzz_drawCommittee_topUpOrRegistrationAfterTheBlockChangesNothing(
        bytes32 seed,
        uint256 who,
        uint256 amount,
        uint256 size
    ) public {
        who = bound(who, 0, pool.length);
        amount = bound(amount, 1, SPARE);
        size = bound(size, 1, 12);
        uint256 r = block.number;
        vm.roll(r + 1);
        DrawRequest memory request = drawRequest(1, r, size, seed, address(0), PENALTY);
        (address[] memory members, uint96[] memory weights) = frozenDraw(request);
        assertCommittee(members, weights, size);
        if (who < pool.length) stakeAs(pool[who], amount);
        else join(1, MIN_TIER1 + amount);
        (address[] memory again, uint96[] memory againWeights) = frozenDraw(request);
        assertEq(again, members, "committee changed");
        assertEq(asUints(againWeights), asUints(weights), "seat weights changed");
    }

    /// @notice Fuzz: any sequence of up to twelve actions after the block (top-ups of a few wei or
    ///         a lot, unstake requests, availability switches, registrations, slashes, raised
    ///         minimums with a sync, new blocks): the draw of any seed and size is the model's over
    ///         the weights at the block, with the unbonders passed over and each member seated up
    ///         to the units its stake backs now; and when every member of the committee drawn
    ///         before the actions still backs its units and did not unbond, the committee and its
    ///         units are exactly as before.
    function testFuzz_drawCommittee_anyActionsAfterTheBlockMoveNoSeatThatStaysBacked(
        bytes32 seed,
        uint256 actions,
        uint256 size
    ) public {
        size = bound(size, 1, 12);
        uint256 r = block.number;
        vm.roll(r + 1);
        DrawRequest memory request = drawRequest(1, r, size, seed, address(0), PENALTY);
        (address[] memory members, uint96[] memory weights) = frozenDraw(request);
        uint256 count = bound(actions, 1, 12);
        for (uint256 i; i < count; ++i) {
            act(uint256(keccak256(abi.encode(actions, i))));
        }
        bool[] memory deserted = new bool[](pool.length);
        for (uint256 i; i < pool.length; ++i) {
            deserted[i] = unbondedAfterTheBlock[pool[i]];
        }
        Candidate[] memory candidates = candidatesOf(pool, poolWeights(), deserted, PENALTY);
        bool stillBacked = true;
        for (uint256 i; i < members.length; ++i) {
            Candidate memory c = candidates[indexIn(pool, members[i])];
            if (c.deserted || c.capacity < weights[i]) stillBacked = false;
        }
        (, address[] memory again, uint96[] memory againWeights) = frozenModelCheck(request, pool, candidates, NOBODY);
        if (stillBacked) {
            assertEq(again, members, "committee changed");
            assertEq(asUints(againWeights), asUints(weights), "seat weights changed");
        }
    }

    // ------------------------------------------------------------------ odds at the block, units backed by the stake now

    /// @notice The odds come from the block, the units from the stake now: after the block the
    ///         three smallest members top up by 1,000 each. Under a lock of 150, the pool backed
    ///         1 + 2 + 2 + 3 + 4 + 4 = 16 units at the block, and backs 8 + 8 + 9 + 3 + 4 + 4 = 36
    ///         now: a committee of twenty drawn from the block fills, with the block's odds
    ///         (200 : 300 : ... : 700), each member seated up to what its stake backs now, exactly
    ///         the model's draw. A seat weighs its units, not its stake. From the next block the
    ///         odds include the top-ups.
    function test_drawCommittee_oddsReadTheBlockAndUnitsTheStakeNow() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 i; i < 3; ++i) {
            stakeAs(pool[i], 1_000e18);
        }
        uint96 lock = 150e18;
        uint256 atCapacity;
        for (uint256 s; s < 10; ++s) {
            (ModelDraw memory m, address[] memory members, uint96[] memory units) = frozenModelCheck(
                drawRequest(1, r, 20, seedOf(s), address(0), lock),
                pool,
                candidatesOf(pool, poolWeights(), lock),
                NOBODY
            );
            assertCommittee(members, units, 20);
            if (m.passedOver.length != 0) ++atCapacity;
        }
        assertGt(atCapacity, 0, "some draws reach a member at its capacity and pass it over");
        vm.roll(r + 2);
        uint256[] memory later = poolWeights();
        for (uint256 i; i < 3; ++i) {
            later[i] += 1_000e18;
        }
        for (uint256 s; s < 10; ++s) {
            (, address[] memory members, uint96[] memory units) = frozenModelCheck(
                drawRequest(1, r + 1, 20, seedOf(s), address(0), lock), pool, candidatesOf(pool, later, lock), NOBODY
            );
            assertCommittee(members, units, 20);
        }
    }

    /// @notice A member that leaves entirely after the block has no stake left to back a unit and
    ///         unbonded after the snapshot that counted it (issue M2): every draw from the block
    ///         that reaches it passes it over and charges it the lock from its unbonding stake, and
    ///         the others back the committee between them.
    function test_drawCommittee_memberWithNothingLeftIsPassedOverAndCharged() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        address leaver = pool[2];
        unstakeAs(leaver, 400e18);
        assertEq(registry.drawWeightAt(leaver, r), 400e18, "still weighed at the block");
        bool[] memory deserted = new bool[](6);
        deserted[2] = true;
        // The first seed whose committee of six reaches the leaver.
        uint256 s;
        while (
            modelDraw(candidatesOf(pool, poolWeights(), deserted, PENALTY), seedOf(s), 6, NOBODY).charged.length == 0
        ) {
            ++s;
        }
        assertLt(s, SEEDS, "400 of 2,700 at the block: a committee of six soon reaches it");
        for (uint256 k = 1; k <= 2; ++k) {
            (, address[] memory members, uint96[] memory units) = assertDrawMatchesModel(
                drawRequest(1, r, 6, seedOf(s), address(0), PENALTY),
                pool,
                candidatesOf(pool, poolWeights(), deserted, PENALTY),
                NOBODY
            );
            assertCommittee(members, units, 6);
            assertFalse(contains(members, leaver), "passed over");
            assertEq(info(leaver).unbonding, 400e18 - k * PENALTY, "each draw that reaches it charges the lock");
            assertEq(registry.claimableTokens(insurance), k * PENALTY);
        }
    }

    /// @notice Auditors who join after the block (a registration, a switch back on, a top-up back to
    ///         the minimum) weighed nothing at it: a draw from it never seats them, whatever its
    ///         size. One who joins in the block itself counts, and a draw from a later block counts
    ///         everyone. Both are the model's draws over the weights of their blocks.
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

        Draws memory d = drawSeeds(1, r, 30, SEEDS);
        for (uint256 s; s < SEEDS; ++s) {
            assertFalse(contains(d.members[s], late), "registered after the block");
            assertFalse(contains(d.members[s], away), "switched on after the block");
            assertFalse(contains(d.members[s], exited), "staked again after the block");
        }
        assertEq(countSeating(d, early), SEEDS, "5,000 of 6,800 tokens at the block: in every committee of 30");

        // In tree order: the pool, `early`, `late`.
        address[] memory tree = new address[](8);
        uint256[] memory atR = new uint256[](8);
        uint256[] memory atNext = new uint256[](8);
        for (uint256 i; i < 6; ++i) {
            tree[i] = pool[i];
            atR[i] = i == 0 || i == 5 ? 0 : (i + 2) * 100e18;
            atNext[i] = i == 0 ? 500e18 : (i + 2) * 100e18;
        }
        (tree[6], atR[6], atNext[6]) = (early, 5_000e18, 5_000e18);
        (tree[7], atR[7], atNext[7]) = (late, 0, 50_000e18);
        vm.roll(r + 2);
        frozenModelCheck(
            drawRequest(1, r, 30, seedOf(0), address(0), PENALTY), tree, candidatesOf(tree, atR, PENALTY), NOBODY
        );
        frozenModelCheck(
            drawRequest(1, r + 1, 30, seedOf(0), address(0), PENALTY), tree, candidatesOf(tree, atNext, PENALTY), NOBODY
        );
        Draws memory later = drawSeeds(1, r + 1, 30, SEEDS);
        assertGt(countSeating(later, late), 0);
        assertGt(countSeating(later, away), 0, "700 of 58,000: in some committees of 30");
        assertGt(countSeating(later, exited), 0, "500 of 58,000: in some committees of 30");
    }

    /// @notice Changes made up to the randomness block count: the largest staker leaves and the
    ///         smallest triples its stake, in the block itself. Every draw is the model's over those
    ///         weights.
    function test_drawCommittee_changesUpToTheBlockCount() public {
        address largest = pool[5];
        address smallest = pool[0];
        setAvailableAs(largest, false);
        stakeAs(smallest, 400e18); // 200 -> 600
        uint256 r = block.number;
        vm.roll(r + 1);
        uint256[] memory atR = poolWeights();
        (atR[0], atR[5]) = (600e18, 0);
        uint256 smallestSeated;
        for (uint256 s; s < SEEDS; ++s) {
            (, address[] memory members,) = frozenModelCheck(
                drawRequest(1, r, 3, seedOf(s), address(0), PENALTY), pool, candidatesOf(pool, atR, PENALTY), NOBODY
            );
            assertFalse(contains(members, largest), "unavailable at the block");
            if (contains(members, smallest)) ++smallestSeated;
        }
        assertGt(smallestSeated, 0);
    }

    /// @notice The weight history, block by block, of a member who changed after the block: each
    ///         draw reads the weight it had at the end of its snapshot block (the model's draw over
    ///         it). Its unstake request in block r + 4 makes it a deserter for the draws from the
    ///         blocks before (passed over, charged), not for those from r + 4 on. Slashed down to
    ///         120 after every block, it still backs fifteen units of P: no draw changes; under a
    ///         lock of 100 it backs one unit, and each draw is the model's again.
    /// @notice A member that asked to unstake after the block but staked back at least what the
    ///         block counted still risks that much: it is not a deserter, sits as any member, and
    ///         its unbonding stake is not charged. Below the block's weight it is one.
    function test_drawCommittee_aMemberToppedBackUpAfterUnstakingIsNoDeserter() public {
        address x = pool[0]; // 200 at the block
        uint256 r = block.number;
        vm.roll(r + 1);
        unstakeAs(x, 50e18); // 150
        stakeAs(x, 60e18); // 210 >= 200
        vm.roll(r + 2);
        bool[] memory deserted = new bool[](6);
        deserted[0] = true; // it asked to unstake after block r
        bool sat = false;
        for (uint256 s; s < 8; ++s) {
            (ModelDraw memory m, address[] memory members,) = frozenModelCheck(
                drawRequest(1, r, 6, seedOf(900 + s), address(0), PENALTY),
                pool,
                candidatesOf(pool, poolWeights(), deserted, PENALTY),
                NOBODY
            );
            assertEq(m.charged.length, 0, "nobody charged");
            sat = sat || contains(members, x);
        }
        assertTrue(sat, "x sits in some committee of the block");
        // A forfeit-sized slash takes it below the block's weight: now it deserted.
        audit.slashAuditor(x, 20e18, "below the block's weight");
        for (uint256 s; s < 8; ++s) {
            (, address[] memory members,) = frozenModelCheck(
                drawRequest(1, r, 6, seedOf(900 + s), address(0), PENALTY),
                pool,
                candidatesOf(pool, poolWeights(), deserted, PENALTY),
                NOBODY
            );
            assertFalse(contains(members, x), "a deserter never sits");
        }
    }

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

        uint256[6] memory blocks = [r, r + 1, r + 2, r + 3, r + 4, r + 9];
        uint256[6] memory weightsAt = [uint256(200e18), 300e18, 0, 300e18, 151e18, 1_151e18];
        for (uint256 k; k < blocks.length; ++k) {
            assertEq(registry.drawWeightAt(x, blocks[k]), weightsAt[k]);
        }
        assertHistoryDraws(x, blocks, weightsAt, PENALTY);

        vm.roll(r + 11);
        audit.slashAuditor(x, 1_031e18, "after the blocks");
        assertEq(registry.stakeOf(x), 120e18);
        assertHistoryDraws(x, blocks, weightsAt, PENALTY);
        assertHistoryDraws(x, blocks, weightsAt, 100e18);
    }

    /// @dev For each block, committees of six over several seeds are the model's with pool[0] = x
    ///      weighing `weightsAt` and asking to unstake after every block before r + 4 (`blocks[4]`);
    ///      x never sits where it weighed nothing or deserted (asked to unstake after the block and
    ///      now holds less than it weighed there).
    function assertHistoryDraws(address x, uint256[6] memory blocks, uint256[6] memory weightsAt, uint96 lock)
        internal
    {
        for (uint256 k; k < blocks.length; ++k) {
            uint256[] memory weights = poolWeights();
            weights[0] = weightsAt[k];
            bool[] memory deserted = new bool[](6);
            deserted[0] = blocks[k] < blocks[4];
            for (uint256 s; s < 5; ++s) {
                (, address[] memory members,) = frozenModelCheck(
                    drawRequest(1, blocks[k], 6, seedOf(10 * k + s), address(0), lock),
                    pool,
                    candidatesOf(pool, weights, deserted, lock),
                    NOBODY
                );
                // A deserter is one that asked to unstake after the block and holds less than its
                // weight at the block now (topped back up, it risks what the block counted).
                bool gone = deserted[0] && registry.stakeOf(x) < weightsAt[k];
                if (weightsAt[k] == 0 || gone) assertFalse(contains(members, x));
            }
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

    /// @notice Draws with replacement, exactly: over 2,000 seeds the two draws of a committee of
    ///         two land on members i then j with probability s_i / S * s_j / S, i = j included (one
    ///         seat of two units), within four binomial standard deviations per ordered pair (the
    ///         rarest, the 10% member twice, is expected 20 times, sd 4.4). Sampling without
    ///         replacement would never give i = j, and would shift the other pairs by far more.
    function test_drawCommittee_twoDrawsFollowTheStakesAtTheBlockWithReplacement() public {
        (address[4] memory members, uint256[4] memory stakes, uint256 r) = setUpWeightedPool();
        uint256 n = 2_000;
        uint256[4][4] memory drawn;
        uint256 twice;
        for (uint256 s; s < n; ++s) {
            (address[] memory seated, uint96[] memory units) =
                drawAs(drawRequest(2, r, 2, keccak256(abi.encode("two draws", s)), address(0), 0));
            assertCommittee(seated, units, 2);
            uint256 i = 0;
            while (i < 4 && members[i] != seated[0]) ++i;
            uint256 j = i;
            if (seated.length == 2) {
                j = 0;
                while (j < 4 && members[j] != seated[1]) ++j;
            } else {
                ++twice;
            }
            assertLt(i, 4, "only the members at the block");
            assertLt(j, 4, "only the members at the block");
            ++drawn[i][j];
        }
        for (uint256 i; i < 4; ++i) {
            for (uint256 j; j < 4; ++j) {
                assertWithinFourSigma(drawn[i][j], n, stakes[i] * stakes[j], 100, "pair frequency off s_i s_j / S^2");
            }
        }
        // P(one seat of two units) = (16 + 1 + 9 + 4) / 100.
        assertWithinFourSigma(twice, n, 30, 100, "one seat of two units");
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

    /// @dev About a quarter of the members ask to unstake, half of them everything, the others a
    ///      part. Returns who did.
    function desertSome(uint256 stakeSeed, address[] memory members) internal returns (bool[] memory deserted) {
        deserted = new bool[](members.length);
        for (uint256 i; i < members.length; ++i) {
            uint256 r = uint256(keccak256(abi.encode(stakeSeed, "desert", i)));
            uint256 stakeNow = registry.stakeOf(members[i]);
            if (r % 4 != 0 || stakeNow == 0) continue;
            unstakeAs(members[i], (r >> 8) % 2 == 0 ? stakeNow : 1 + (r >> 16) % stakeNow);
            deserted[i] = true;
        }
    }

    /// @notice Fuzz: the draw is exactly the reference model's (draws with replacement over the
    ///         weights at the block, passing over the excluded account, the members that asked to
    ///         unstake after the block, charged the lock when their unbonding stake covers it, and
    ///         members whose unlocked stake cannot back one more unit) for pools of 1 to 16
    ///         members (some away, one maybe excluded, some unbonding part or all of their stake)
    ///         with stakes of a few wei (where every interval boundary is hit) or up to a million
    ///         tokens, committees of 1 to 32 draws and locks from zero (any number of units) to
    ///         large, whatever each member does after the block. The checker holds the committee,
    ///         its units, every lock, every charge and the events to the model.
    /// @dev Governance lowers the penalty and the tier-2 minimum to 1 wei so that stakes of a few
    ///      wei are drawable.
    function testFuzz_drawCommittee_matchesTheReferenceModel(
        bytes32 seed,
        uint256 stakeSeed,
        uint256 count,
        uint256 size,
        uint256 excludedIndex,
        uint256 lockSeed
    ) public {
        allowWeiStakes();
        count = bound(count, 1, 16);
        bool tiny = stakeSeed % 2 == 0;
        // The snapshot block is the pool's registration block, set below.
        DrawRequest memory request = drawRequest(2, 0, bound(size, 1, 32), seed, address(0), 0);
        request.lockPerSeat = lockSeed % 8 == 0 ? 0 : uint96(bound(lockSeed, 1, tiny ? 4 : 4e23));
        (address[] memory members, uint256[] memory weights) = joinRandomPool(stakeSeed, count, tiny);
        request.snapshotBlock = block.number;
        vm.roll(block.number + 1);
        shufflePool(stakeSeed, members);
        bool[] memory deserted = desertSome(stakeSeed, members);
        assertDrawMatchesModel(
            request,
            members,
            candidatesOf(members, weights, deserted, request.lockPerSeat),
            bound(excludedIndex, 0, 2 * count) // half the time: nobody excluded
        );
    }

    /// @dev Governance lowers the penalty and the tier-1 and tier-2 minimums to 1 wei.
    function allowWeiStakes() internal {
        Params memory p = defaultParams();
        p.penaltyPerSeat = 1;
        p.minStakeTier1 = 1;
        p.minStakeTier2 = 1;
        params.setParams(p);
    }

    // ------------------------------------------------------------------ passing over

    /// @notice With a lock of 450, the members of 200, 300 and 400 cannot back a unit, the one of
    ///         700 is excluded, and those of 500 and 600 back one unit each: every committee of two
    ///         is those two, one unit each, and no one passed over is locked.
    function test_drawCommittee_passesOverTheShortAndTheExcludedAndStillFills() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        for (uint256 s; s < SEEDS; ++s) {
            uint256 snapshot = vm.snapshotState();
            (address[] memory members, uint96[] memory units) = drawAs(drawRequest(1, r, 2, seedOf(s), pool[5], 450e18));
            assertEq(members.length, 2);
            assertTrue(contains(members, pool[3]) && contains(members, pool[4]), "the two who can sit");
            assertEq(units[0], 1);
            assertEq(units[1], 1);
            assertEq(info(pool[3]).locked, 450e18);
            assertEq(info(pool[4]).locked, 450e18);
            for (uint256 i; i < 3; ++i) {
                assertEq(info(pool[i]).locked, 0, "short of unlocked stake: not locked");
            }
            assertEq(info(pool[5]).locked, 0, "excluded: not locked");
            vm.revertToStateAndDelete(snapshot);
        }
    }

    /// @notice Passing a member over takes its interval out at its first draw and changes no draw
    ///         before it. With nobody passed over, a committee of k draws is the first k draws of
    ///         one of k + 1 (the same members and units plus one unit). Excluding x, the member a
    ///         committee of eight reaches last, leaves a committee of t - 1 draws as it was (t: the
    ///         first size that reaches x), and a committee of eight never seats x.
    function test_drawCommittee_passingOverChangesNoEarlierDraw() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        uint256 checked;
        for (uint256 s; s < SEEDS; ++s) {
            Draws memory bySize = drawSizes(r, seedOf(s), 8, address(0));
            for (uint256 k = 1; k < 8; ++k) {
                assertOneMoreUnit(bySize, k - 1);
            }
            address[] memory eight = bySize.members[7];
            if (eight.length < 2) continue;
            address x = eight[eight.length - 1];
            uint256 t = 1;
            while (!contains(bySize.members[t - 1], x)) ++t;
            Draws memory excluding = drawSizes(r, seedOf(s), 8, x);
            assertEq(excluding.members[t - 2], bySize.members[t - 2], "the draws before x's first are unchanged");
            assertEq(excluding.weights[t - 2], bySize.weights[t - 2]);
            for (uint256 k; k < 8; ++k) {
                assertFalse(contains(excluding.members[k], x), "the excluded account never sits");
                assertEq(sumOfUints(excluding.weights[k]), k + 1, "the others fill every unit");
            }
            ++checked;
        }
        assertGt(checked, 0);
    }

    /// @dev Frozen committees of 1 .. `sizes` draws of one seed, `excluded` passed over.
    function drawSizes(uint256 r, bytes32 seed, uint256 sizes, address excluded) internal returns (Draws memory d) {
        d.members = new address[][](sizes);
        d.weights = new uint256[][](sizes);
        for (uint256 k; k < sizes; ++k) {
            (address[] memory members, uint96[] memory units) =
                frozenDraw(drawRequest(1, r, k + 1, seed, excluded, PENALTY));
            d.members[k] = members;
            d.weights[k] = asUints(units);
        }
    }

    function sumOfUints(uint256[] memory list) internal pure returns (uint256 total) {
        for (uint256 i; i < list.length; ++i) {
            total += list[i];
        }
    }

    /// @dev Committee k + 1 of `d` is committee k with one more unit: the same members in the same
    ///      order, one of them with one unit more, or a new member last with one unit.
    function assertOneMoreUnit(Draws memory d, uint256 k) internal pure {
        address[] memory a = d.members[k];
        address[] memory b = d.members[k + 1];
        uint256[] memory ua = d.weights[k];
        uint256[] memory ub = d.weights[k + 1];
        assertTrue(b.length == a.length || b.length == a.length + 1, "one more draw adds at most one member");
        uint256 grown;
        for (uint256 i; i < a.length; ++i) {
            assertEq(b[i], a[i], "the members of the smaller committee, in order");
            if (ub[i] == ua[i] + 1) ++grown;
            else assertEq(ub[i], ua[i], "units change by one draw at most");
        }
        if (b.length == a.length + 1) {
            assertEq(ub[a.length], 1, "a new member wins one unit");
            ++grown;
        }
        assertEq(grown, 1, "exactly one more unit");
    }

    /// @dev Registers `count` tier-2 auditors of 1e24 each, seats them all in one committee that
    ///      locks all but 1 token of each (each backs only that unit, so the committee is all of
    ///      them), then registers a small member of 1,000 tokens that can back two units of 500.
    ///      Returns the tree (the whales, then the small member), its weights, the small member
    ///      and the randomness block (the small member's registration block, now past).
    function setUpLockedWhales(uint256 count)
        internal
        returns (address[] memory tree, uint256[] memory weights, address minnow, uint256 r)
    {
        address[] memory whales = addAuditors("whale-", 2, count, 1e24);
        vm.roll(block.number + 1);
        (address[] memory seated,) =
            drawAs(drawRequest(2, block.number - 1, count, seedOf(999), address(0), uint96(1e24 - 1e18)));
        assertEq(seated.length, count, "every whale locked");
        minnow = addAuditor("minnow", 2, 1_000e18);
        r = block.number;
        vm.roll(r + 1);
        tree = new address[](count + 1);
        weights = new uint256[](count + 1);
        for (uint256 i; i < count; ++i) {
            (tree[i], weights[i]) = (whales[i], 1e24);
        }
        (tree[count], weights[count]) = (minnow, 1_000e18);
    }

    /// @notice A draw passes over at most 64 members, drawing again after each of the first 63:
    ///         with 63 whales that cannot back a unit of 500 and one small member that can, a
    ///         one-unit draw always seats the small one, even when it comes after all 63 whales.
    function test_drawCommittee_seatsAfter63PassedOver() public {
        (address[] memory tree, uint256[] memory weights, address minnow, uint256 r) = setUpLockedWhales(63);
        uint256 lastInLine;
        for (uint256 s; s < 10; ++s) {
            (ModelDraw memory m, address[] memory members, uint96[] memory units) = frozenModelCheck(
                drawRequest(2, r, 1, seedOf(s), address(0), 500e18), tree, candidatesOf(tree, weights, 500e18), NOBODY
            );
            assertEq(members.length, 1);
            assertEq(members[0], minnow);
            assertEq(units[0], 1);
            if (m.passedOver.length == 63) ++lastInLine;
        }
        assertGt(lastInLine, 0, "some seeds reach the small member only after all 63 whales");
        assertEq(info(tree[0]).locked, 1e24 - 1e18);
    }

    /// @notice One more whale: a draw that has passed over 64 members gives up, even though its
    ///         next draw could land only on the small member: it seats nobody, locks nothing and
    ///         says so. A seed that reaches the small member sooner seats it.
    function test_drawCommittee_givesUpAfter64PassedOver() public {
        (address[] memory tree, uint256[] memory weights, address minnow, uint256 r) = setUpLockedWhales(64);
        uint256 gaveUp;
        for (uint256 s; s < 10; ++s) {
            (ModelDraw memory m, address[] memory members,) = frozenModelCheck(
                drawRequest(2, r, 1, seedOf(s), address(0), 500e18), tree, candidatesOf(tree, weights, 500e18), NOBODY
            );
            if (m.unitsDrawn == 0) {
                assertEq(m.passedOver.length, 64, "gave up after 64 passed over");
                ++gaveUp;
            } else {
                assertEq(members[0], minnow, "reached within 64 passed over");
            }
        }
        assertGt(gaveUp, 0, "the whales hold 99.999% of the weight: the small member mostly comes last");
    }

    /// @notice Issue M2 with the bound of 64: seventy members all asked to unstake after the
    ///         snapshot; a draw passes over 64 of them, charges each of those the lock, and gives up.
    function test_drawCommittee_chargesEveryDeserterItPassesOver() public {
        address[] memory gone = addAuditors("deserter-", 2, 70, 1_000e18);
        uint256 r = block.number;
        vm.roll(r + 1);
        uint256[] memory weights = new uint256[](70);
        bool[] memory deserted = new bool[](70);
        for (uint256 i; i < gone.length; ++i) {
            unstakeAs(gone[i], 1_000e18);
            (weights[i], deserted[i]) = (1_000e18, true);
        }
        (ModelDraw memory m, address[] memory none, uint96[] memory noUnits) = assertDrawMatchesModel(
            drawRequest(2, r, 3, seedOf(0), address(0), PENALTY),
            gone,
            candidatesOf(gone, weights, deserted, PENALTY),
            NOBODY
        );
        assertEmpty(none, noUnits);
        assertEq(m.charged.length, 64, "the 64 passed over");
        uint256 charged;
        for (uint256 i; i < gone.length; ++i) {
            if (info(gone[i]).unbonding == 1_000e18 - PENALTY) ++charged;
            else assertEq(info(gone[i]).unbonding, 1_000e18, "charged the lock or nothing");
        }
        assertEq(charged, 64);
        assertEq(registry.claimableTokens(insurance), 64 * uint256(PENALTY));
    }

    /// @notice Only an unstake after the snapshot block is a desertion: a member that unstaked in
    ///         the block itself (counted with the 200 it kept) and cannot back the lock is passed
    ///         over without a charge; the same unstake one block later is charged. Under a lock of
    ///         250 the others back 0 + 1 + 1 + 2 + 2 = 6 units: a committee of ten visits everyone.
    function test_drawCommittee_chargesOnlyUnstakesAfterTheSnapshot() public {
        address x = pool[5]; // 700
        uint256 r = block.number;
        uint256 snapshot = vm.snapshotState();
        unstakeAs(x, 500e18); // in block r: 200 left, counted at r
        vm.roll(r + 1);
        uint256[] memory atR = poolWeights();
        atR[5] = 200e18;
        (ModelDraw memory m,,) = assertDrawMatchesModel(
            drawRequest(1, r, 10, seedOf(0), address(0), 250e18), pool, candidatesOf(pool, atR, 250e18), NOBODY
        );
        assertEq(m.unitsDrawn, 6);
        assertEq(m.passedOver.length, 6, "every member visited and passed over in the end");
        assertEq(info(x).unbonding, 500e18, "unstaked before the snapshot: not charged");
        assertEq(registry.claimableTokens(insurance), 0);

        vm.revertToStateAndDelete(snapshot);
        vm.roll(r + 1);
        unstakeAs(x, 500e18); // after block r: counted at r with 700
        bool[] memory deserted = new bool[](6);
        deserted[5] = true;
        (m,,) = assertDrawMatchesModel(
            drawRequest(1, r, 10, seedOf(0), address(0), 250e18),
            pool,
            candidatesOf(pool, poolWeights(), deserted, 250e18),
            NOBODY
        );
        assertEq(m.unitsDrawn, 6);
        assertEq(info(x).unbonding, 500e18 - 250e18, "unstaked after the snapshot: charged the lock");
        assertEq(registry.claimableTokens(insurance), 250e18);
    }

    /// @notice Fewer units backed at the block than the committee's draws: under a lock of 250 the
    ///         pool backs 0 + 1 + 1 + 2 + 2 + 2 = 8 units. A committee of nine fails (eight drawn),
    ///         one of eight seats every member with exactly the units it backs, and with the
    ///         member of 700 excluded six units are left for a committee of seven. An empty tier
    ///         seats nobody. A failed draw locks nothing.
    function test_drawCommittee_returnsNothingWhenTooFewUnitsAreBacked() public {
        uint256 r = block.number;
        vm.roll(r + 1);
        expectUnavailable(1, 9, 8);
        (address[] memory none, uint96[] memory noUnits) = drawAs(drawRequest(1, r, 9, seedOf(0), address(0), 250e18));
        assertEmpty(none, noUnits);

        (, address[] memory members, uint96[] memory units) = frozenModelCheck(
            drawRequest(1, r, 8, seedOf(0), address(0), 250e18), pool, candidatesOf(pool, poolWeights(), 250e18), NOBODY
        );
        uint256[6] memory backed = [uint256(0), 1, 1, 2, 2, 2];
        for (uint256 i; i < pool.length; ++i) {
            assertEq(unitsIn(members, units, pool[i]), backed[i], "every unit it backs");
        }

        expectUnavailable(1, 7, 6);
        (none, noUnits) = drawAs(drawRequest(1, r, 7, seedOf(0), pool[5], 250e18));
        assertEmpty(none, noUnits);
        expectUnavailable(2, 1, 0);
        (none, noUnits) = drawAs(drawRequest(2, r, 1, seedOf(0), address(0), PENALTY));
        assertEmpty(none, noUnits);
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
        assertEq(countSeating(drawSeeds(b, 5), x), 0, "away from the block of the decrease");
        assertGt(countSeating(drawSeeds(b - 1, 5), x), 0, "still weighed in the block before");
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
        Draws memory stale = drawSeeds(g, 6);
        assertGt(countSeating(stale, pool[0]), 0, "stale weights still count before the sync");
        assertGt(countSeating(stale, pool[1]), 0, "stale weights still count before the sync");

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
        Draws memory before = drawSeeds(s - 1, 6);
        assertGt(countSeating(before, pool[0]) * countSeating(before, pool[1]), 0, "a draw from before the sync");
        uint256[] memory atSync = poolWeights();
        (atSync[0], atSync[1]) = (0, 0);
        frozenModelCheck(
            drawRequest(1, s, 6, seedOf(2), address(0), PENALTY), pool, candidatesOf(pool, atSync, PENALTY), NOBODY
        );
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
