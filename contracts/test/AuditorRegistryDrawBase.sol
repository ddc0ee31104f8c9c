// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AuditorRegistryBase} from "./AuditorRegistryBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {DrawRequest} from "../src/types/Settlement.sol";

/// @notice Helpers of the draw suites (`AuditorRegistry.Draw`, `AuditorRegistry.DrawHistory`): a
///         reference model of the committee draw (issue L2: `size` stake-weighted draws with
///         replacement), a checker that holds `drawCommittee` to it exactly, and assertions on
///         units.
/// @dev The model, in plain loops over the pool in tree order (the order the members joined the
///      tier's tree): each draw takes keccak256(seed, nonce) modulo the weight still in range and
///      maps it onto the members still in range by a linear scan. A member won over stays in range.
///      A member leaves the range (its weight with it) when it is drawn and cannot take the unit:
///      it is the excluded account, it asked to unstake after the snapshot block and holds less
///      than its snapshot weight now (a deserter, charged the lock when its unbonding stake covers
///      it), or its unlocked stake does not back
///      one more unit. After `MAX_PASSED_OVER` members left, the draw gives up; it fails when fewer
///      than `size` units were drawn.
abstract contract AuditorRegistryDrawBase is AuditorRegistryBase {
    /// @dev The most members one draw passes over (`AuditorRegistry._MAX_SKIPPED`).
    uint256 internal constant MAX_PASSED_OVER = 64;
    /// @dev The capacity of a member when the lock is zero: any number of units.
    uint256 internal constant UNLIMITED = type(uint256).max;

    /// @dev One member of the pool as a draw sees it.
    /// @param weight Its draw weight at the snapshot block (its odds).
    /// @param capacity The units its unlocked stake backs now: (stake - locked) / lock.
    /// @param deserted It asked to unstake after the snapshot block and its stake is now below its
    ///        snapshot weight.
    /// @param chargeable Its unbonding stake covers the lock (a deserter is then charged).
    struct Candidate {
        uint256 weight;
        uint256 capacity;
        bool deserted;
        bool chargeable;
    }

    /// @dev What the model draws: pool indices in the order of their first draw with their units,
    ///      the units drawn in all, and the indices passed over and charged, in draw order.
    struct ModelDraw {
        uint256[] order;
        uint256[] units;
        uint256 unitsDrawn;
        uint256[] passedOver;
        uint256[] charged;
    }

    // ------------------------------------------------------------------ the reference model

    /// @dev The model's running counts (a struct: the loop would run out of stack slots).
    struct ModelState {
        bool[] out;
        uint256[] unitsOf;
        uint256 seated;
        uint256 passed;
        uint256 charged;
        uint256 left;
    }

    /// @dev The reference draw over `pool` (tree order); `excludedIndex` past the end: nobody.
    function modelDraw(Candidate[] memory pool, bytes32 seed, uint256 size, uint256 excludedIndex)
        internal
        pure
        returns (ModelDraw memory m)
    {
        ModelState memory st;
        st.out = new bool[](pool.length);
        st.unitsOf = new uint256[](pool.length);
        m.order = new uint256[](pool.length);
        m.passedOver = new uint256[](MAX_PASSED_OVER);
        m.charged = new uint256[](MAX_PASSED_OVER);
        for (uint256 i; i < pool.length; ++i) {
            st.left += pool[i].weight;
        }
        for (uint256 nonce; m.unitsDrawn < size; ++nonce) {
            if (st.left == 0 || st.passed == MAX_PASSED_OVER) break;
            uint256 c = pickInRange(pool, st.out, uint256(keccak256(abi.encode(seed, nonce))) % st.left);
            Candidate memory x = pool[c];
            if (c != excludedIndex && !x.deserted && st.unitsOf[c] < x.capacity) {
                if (st.unitsOf[c] == 0) m.order[st.seated++] = c;
                ++st.unitsOf[c];
                ++m.unitsDrawn;
                continue;
            }
            st.out[c] = true;
            st.left -= x.weight;
            m.passedOver[st.passed++] = c;
            if (c != excludedIndex && x.deserted && x.chargeable) m.charged[st.charged++] = c;
        }
        m.units = new uint256[](st.seated);
        for (uint256 i; i < st.seated; ++i) {
            m.units[i] = st.unitsOf[m.order[i]];
        }
        m.order = truncated(m.order, st.seated);
        m.passedOver = truncated(m.passedOver, st.passed);
        m.charged = truncated(m.charged, st.charged);
    }

    function truncated(uint256[] memory list, uint256 length) internal pure returns (uint256[] memory out) {
        out = new uint256[](length);
        for (uint256 i; i < length; ++i) {
            out[i] = list[i];
        }
    }

    /// @dev The member in range whose interval, counting only members in range, holds `value`.
    function pickInRange(Candidate[] memory pool, bool[] memory out, uint256 value) internal pure returns (uint256) {
        for (uint256 i; i < pool.length; ++i) {
            if (out[i] || pool[i].weight == 0) continue;
            if (value < pool[i].weight) return i;
            value -= pool[i].weight;
        }
        revert("value beyond the weight in range");
    }

    /// @dev The model's view of `members` with draw weights `weights` at the snapshot block, read
    ///      from the registry now for what the draw reads now: unlocked stake (capacity under
    ///      `lock`) and unbonding stake (chargeable). `deserted[i]`: member i asked to unstake
    ///      after the snapshot block (the test knows when each did).
    function candidatesOf(address[] memory members, uint256[] memory weights, bool[] memory deserted, uint256 lock)
        internal
        view
        returns (Candidate[] memory pool)
    {
        pool = new Candidate[](members.length);
        for (uint256 i; i < members.length; ++i) {
            IAuditorRegistry.AuditorInfo memory a = registry.auditor(members[i]);
            pool[i] = Candidate({
                weight: weights[i],
                capacity: lock == 0 ? UNLIMITED : (uint256(a.stake) - a.locked) / lock,
                // The registry reads the unbonding slot only for a member now below its snapshot
                // weight: one that asked to unstake and topped its stake back up is not passed over.
                deserted: deserted[i] && a.stake < weights[i],
                chargeable: a.unbonding >= lock
            });
        }
    }

    /// @dev `candidatesOf` with nobody deserted.
    function candidatesOf(address[] memory members, uint256[] memory weights, uint256 lock)
        internal
        view
        returns (Candidate[] memory)
    {
        return candidatesOf(members, weights, new bool[](members.length), lock);
    }

    // ------------------------------------------------------------------ drawing and checking

    /// @dev A draw of `size` draws from `tier` at block `randomnessBlock` (the snapshot).
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

    function requestDraw(DrawRequest memory request)
        internal
        returns (address[] memory members, uint96[] memory weights)
    {
        vm.prank(address(audit));
        (members, weights) = registry.drawCommittee(request);
    }

    /// @dev Expects each charged deserter's `StakeForfeited`: `lock` out of its unbonding stake
    ///      alone (its stake stays), with the stake and unbonding left after it.
    function expectDeserterCharges(
        address[] memory members,
        uint256[] memory charged,
        uint256[] memory unbondingBefore,
        uint96 lock
    ) internal {
        for (uint256 k; k < charged.length; ++k) {
            address deserter = members[charged[k]];
            uint256 stake = info(deserter).stake;
            vm.expectEmit(true, true, true, true, address(registry));
            emit IAuditorRegistry.StakeForfeited(
                deserter, lock, insurance, "unbonded after the draw's snapshot", stake, unbondingBefore[charged[k]] - lock
            );
        }
    }

    /// @dev Draws `request` over `members` (tree order, seen as `pool`) with `members[excludedIndex]`
    ///      excluded (nobody past the end), and holds the draw to the model exactly: the members in
    ///      the order of their first draw and their units, or no committee and
    ///      `CommitteeUnavailable(tier, size, units drawn)`; each member's lock grows by units * P;
    ///      each charged deserter (and only they) loses P of its unbonding stake to the insurance
    ///      fund, with its `StakeForfeited` event. Returns the model's draw and the committee.
    function assertDrawMatchesModel(
        DrawRequest memory request,
        address[] memory members,
        Candidate[] memory pool,
        uint256 excludedIndex
    ) internal returns (ModelDraw memory m, address[] memory drawn, uint96[] memory units) {
        request.excluded = excludedIndex < members.length ? members[excludedIndex] : address(0);
        m = modelDraw(pool, request.seed, request.size, excludedIndex);
        bool fails = m.unitsDrawn < request.size;
        uint256[] memory lockedBefore = new uint256[](members.length);
        uint256[] memory unbondingBefore = new uint256[](members.length);
        for (uint256 i; i < members.length; ++i) {
            lockedBefore[i] = info(members[i]).locked;
            unbondingBefore[i] = info(members[i]).unbonding;
        }
        uint256 insuranceBefore = registry.claimableTokens(insurance);
        expectDeserterCharges(members, m.charged, unbondingBefore, request.lockPerSeat);
        if (fails) {
            vm.expectEmit(true, true, true, true, address(registry));
            emit IAuditorRegistry.CommitteeUnavailable(request.tier, request.size, m.unitsDrawn);
        }
        (drawn, units) = requestDraw(request);

        uint256[] memory unitsOf = new uint256[](members.length);
        if (fails) {
            assertEq(drawn.length, 0, "an unavailable committee returns no members");
            assertEq(units.length, 0, "an unavailable committee returns no units");
        } else {
            assertEq(drawn.length, m.order.length, "the model's number of members");
            for (uint256 i; i < drawn.length; ++i) {
                assertEq(drawn[i], members[m.order[i]], "the model's member, in the order of its first draw");
                assertEq(units[i], m.units[i], "the model's units");
                unitsOf[m.order[i]] = m.units[i];
            }
            assertEq(sumOf(units), request.size, "the units add up to the committee size");
        }
        bool[] memory charged = new bool[](members.length);
        for (uint256 k; k < m.charged.length; ++k) {
            charged[m.charged[k]] = true;
        }
        for (uint256 i; i < members.length; ++i) {
            assertEq(info(members[i]).locked, lockedBefore[i] + unitsOf[i] * request.lockPerSeat, "locked += units * P");
            assertEq(
                info(members[i]).unbonding,
                unbondingBefore[i] - (charged[i] ? request.lockPerSeat : 0),
                "a charged deserter loses P of its unbonding stake, nobody else anything"
            );
        }
        assertEq(
            registry.claimableTokens(insurance),
            insuranceBefore + m.charged.length * request.lockPerSeat,
            "the insurance fund receives P per charged deserter"
        );
    }

    // ------------------------------------------------------------------ units

    function sumOf(uint96[] memory list) internal pure returns (uint256 total) {
        for (uint256 i; i < list.length; ++i) {
            total += list[i];
        }
    }

    /// @dev The units `who` won in a committee; zero when not seated.
    function unitsIn(address[] memory members, uint96[] memory units, address who) internal pure returns (uint256) {
        for (uint256 i; i < members.length; ++i) {
            if (members[i] == who) return units[i];
        }
        return 0;
    }

    function assertDistinct(address[] memory members) internal pure {
        for (uint256 i; i < members.length; ++i) {
            for (uint256 j; j < i; ++j) {
                assertTrue(members[i] != members[j], "a member holds two seats");
            }
        }
    }

    /// @dev A drawn committee: distinct members, each with at least one unit, the units adding up
    ///      to `size`.
    function assertCommittee(address[] memory members, uint96[] memory units, uint256 size) internal pure {
        assertEq(members.length, units.length, "one weight per member");
        assertGt(members.length, 0, "a committee was drawn");
        assertDistinct(members);
        for (uint256 i; i < units.length; ++i) {
            assertGe(units[i], 1, "every seat won at least one draw");
        }
        assertEq(sumOf(units), size, "the units add up to the committee size");
    }

    /// @dev The units of each seat of a segment's current round (as the audit contract recorded
    ///      them), in seat order, and the members.
    function seatUnits(uint256 sessionId, uint256 segmentId)
        internal
        view
        returns (address[] memory members, uint96[] memory units)
    {
        ITRUSTAudit.SegmentView memory g = audit.segment(sessionId, segmentId);
        members = new address[](g.seatCount);
        units = new uint96[](g.seatCount);
        for (uint256 i; i < g.seatCount; ++i) {
            ITRUSTAudit.SeatView memory v = audit.seat(sessionId, segmentId, g.round, i);
            (members[i], units[i]) = (v.auditor, v.weight);
        }
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
}
