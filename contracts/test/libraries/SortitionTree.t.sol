// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {SortitionTree} from "../../src/libraries/SortitionTree.sol";

/// @notice Exposes the library's internal functions, and keeps each member's weight beside the tree
///         the way the registry does (the library's `update` needs the old weight).
contract SortitionTreeHarness {
    using SortitionTree for SortitionTree.Tree;

    SortitionTree.Tree private _tree;
    mapping(uint256 index => uint256) public weightOf;

    function append(address member, uint256 weight) external returns (uint256 index) {
        index = _tree.append(member, weight);
        weightOf[index] = weight;
    }

    function update(uint256 index, uint256 newWeight) external {
        _tree.update(index, weightOf[index], newWeight);
        weightOf[index] = newWeight;
    }

    /// @dev Passes `oldWeight` through unchecked, to reach the library's own index check.
    function rawUpdate(uint256 index, uint256 oldWeight, uint256 newWeight) external {
        _tree.update(index, oldWeight, newWeight);
    }

    function prefixSum(uint256 index) external view returns (uint256) {
        return _tree.prefixSum(index);
    }

    function total() external view returns (uint256) {
        return _tree.total();
    }

    function size() external view returns (uint256) {
        return _tree.size;
    }

    function draw(uint256 value) external view returns (address member, uint256 index) {
        return _tree.draw(value);
    }
}

contract SortitionTreeTest is Test {
    /// @dev Keeps the sums of a few hundred members below 2^256 (the registry stores uint96 weights).
    uint256 internal constant MAX_WEIGHT = type(uint96).max;

    SortitionTreeHarness internal tree;
    /// @dev The naive model: weights[i] is the weight of member index i + 1.
    uint256[] internal weights;

    function setUp() public {
        tree = new SortitionTreeHarness();
    }

    // ------------------------------------------------------------------ helpers

    function memberAt(uint256 index) internal pure returns (address) {
        return address(uint160(0x1000 + index));
    }

    function appendMember(uint256 weight) internal returns (uint256 index) {
        index = tree.append(memberAt(weights.length + 1), weight);
        weights.push(weight);
    }

    function updateMember(uint256 index, uint256 weight) internal {
        tree.update(index, weight);
        weights[index - 1] = weight;
    }

    function naivePrefix(uint256 index) internal view returns (uint256 sum) {
        for (uint256 i; i < index; ++i) {
            sum += weights[i];
        }
    }

    /// @dev The 1-based index whose interval [prefix(i - 1), prefix(i)) contains `value`.
    function naiveDraw(uint256 value) internal view returns (uint256) {
        uint256 sum;
        for (uint256 i; i < weights.length; ++i) {
            sum += weights[i];
            if (value < sum) return i + 1;
        }
        revert("value out of range");
    }

    /// @dev Applies `ops` pseudo-random appends and updates derived from `seed`. Roughly one in four
    ///      weights is zero, as for members who may not be drawn.
    function applyRandomOps(uint256 seed, uint256 ops) internal {
        for (uint256 i; i < ops; ++i) {
            uint256 r = uint256(keccak256(abi.encode(seed, i)));
            uint256 weight = (r >> 8) % 4 == 0 ? 0 : bound(r >> 16, 1, MAX_WEIGHT >> ((r >> 112) % 80));
            if (weights.length == 0 || r % 3 == 0) {
                assertEq(appendMember(weight), weights.length, "append returns the next index");
            } else {
                updateMember(1 + (r >> 128) % weights.length, weight);
            }
        }
    }

    function assertMatchesModel() internal view {
        assertEq(tree.size(), weights.length, "size");
        for (uint256 i; i <= weights.length; ++i) {
            assertEq(tree.prefixSum(i), naivePrefix(i), "prefix sum");
        }
        assertEq(tree.total(), naivePrefix(weights.length), "total");
    }

    // ------------------------------------------------------------------ append / update / prefix sums

    function test_append_returnsConsecutiveIndices() public {
        for (uint256 i = 1; i <= 9; ++i) {
            assertEq(appendMember(i * 10), i);
        }
        assertMatchesModel();
        assertEq(tree.total(), 450);
    }

    function test_prefixSum_ofEmptyTreeIsZero() public view {
        assertEq(tree.total(), 0);
        assertEq(tree.prefixSum(0), 0);
    }

    function test_update_raisesAndLowersWeights() public {
        for (uint256 i; i < 7; ++i) {
            appendMember(5);
        }
        updateMember(3, 12);
        updateMember(6, 0);
        updateMember(1, 1);
        updateMember(3, 12); // unchanged
        assertMatchesModel();
        assertEq(tree.total(), 1 + 5 + 12 + 5 + 5 + 0 + 5);
    }

    function test_update_revertsForIndexZero() public {
        appendMember(1);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeUnknownIndex.selector, 0, 1));
        tree.rawUpdate(0, 0, 1);
    }

    function test_update_revertsForIndexPastSize() public {
        appendMember(1);
        appendMember(1);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeUnknownIndex.selector, 3, 2));
        tree.rawUpdate(3, 0, 1);
    }

    function testFuzz_prefixSums_matchNaiveModel(uint256 seed, uint256 ops) public {
        applyRandomOps(seed, bound(ops, 1, 80));
        assertMatchesModel();
    }

    /// @dev Appends after updates must include the updated weights of the earlier members that the
    ///      new node covers (the `prefixSum(index - 1) - prefixSum(index - lowbit)` term).
    function testFuzz_append_afterUpdatesCoversEarlierMembers(uint256 seed, uint8 before) public {
        uint256 n = bound(before, 1, 40);
        for (uint256 i; i < n; ++i) {
            appendMember(1);
        }
        for (uint256 i; i < n; ++i) {
            updateMember(i + 1, bound(uint256(keccak256(abi.encode(seed, i))), 0, MAX_WEIGHT));
        }
        for (uint256 i; i < n; ++i) {
            appendMember(bound(uint256(keccak256(abi.encode(seed, "append", i))), 0, MAX_WEIGHT));
        }
        assertMatchesModel();
    }

    // ------------------------------------------------------------------ draw

    function test_draw_returnsTheMemberOfEachInterval() public {
        appendMember(3); // [0, 3)
        appendMember(0); // never
        appendMember(2); // [3, 5)
        appendMember(5); // [5, 10)
        uint256[10] memory expected = [uint256(1), 1, 1, 3, 3, 4, 4, 4, 4, 4];
        for (uint256 v; v < 10; ++v) {
            (address member, uint256 index) = tree.draw(v);
            assertEq(index, expected[v], "index");
            assertEq(member, memberAt(expected[v]), "member");
        }
    }

    function test_draw_skipsLeadingAndTrailingZeroWeights() public {
        appendMember(0);
        appendMember(0);
        appendMember(7);
        appendMember(0);
        (, uint256 first) = tree.draw(0);
        (, uint256 last) = tree.draw(6);
        assertEq(first, 3);
        assertEq(last, 3);
    }

    function test_draw_revertsAtTotal() public {
        appendMember(4);
        appendMember(6);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 10, 10));
        tree.draw(10);
    }

    function test_draw_revertsOnEmptyTree() public {
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 0, 0));
        tree.draw(0);
    }

    function test_draw_revertsWhenEveryWeightIsZero() public {
        appendMember(0);
        appendMember(0);
        appendMember(0);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 0, 0));
        tree.draw(0);
    }

    function testFuzz_draw_revertsAboveTotal(uint256 seed, uint256 ops, uint256 value) public {
        applyRandomOps(seed, bound(ops, 1, 40));
        uint256 total = tree.total();
        value = bound(value, total, type(uint256).max);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, value, total));
        tree.draw(value);
    }

    function testFuzz_draw_matchesNaiveModel(uint256 seed, uint256 ops, uint256 value) public {
        applyRandomOps(seed, bound(ops, 1, 80));
        if (tree.total() == 0) appendMember(1); // every weight zero: nothing to draw from
        uint256 total = tree.total();
        value = bound(value, 0, total - 1);
        (address member, uint256 index) = tree.draw(value);
        uint256 expected = naiveDraw(value);
        assertEq(index, expected, "index");
        assertEq(member, memberAt(expected), "member");
        assertGt(weights[index - 1], 0, "a zero-weight member is never drawn");
        assertLe(naivePrefix(index - 1), value, "interval start");
        assertGt(naivePrefix(index), value, "interval end");
    }

    /// @dev Every interval boundary: the first and the last value of each member's interval.
    function testFuzz_draw_boundariesOfEveryInterval(uint256 seed, uint256 ops) public {
        applyRandomOps(seed, bound(ops, 1, 60));
        uint256 start;
        for (uint256 i; i < weights.length; ++i) {
            uint256 w = weights[i];
            if (w == 0) continue;
            (, uint256 atStart) = tree.draw(start);
            (, uint256 atEnd) = tree.draw(start + w - 1);
            assertEq(atStart, i + 1, "first value of the interval");
            assertEq(atEnd, i + 1, "last value of the interval");
            start += w;
        }
        assertEq(start, tree.total());
    }

    /// @dev Small weights, every value: the draw is the naive draw for all of [0, total).
    function testFuzz_draw_everyValueOfSmallTree(uint256 seed, uint256 members) public {
        members = bound(members, 1, 24);
        for (uint256 i; i < members; ++i) {
            appendMember(uint256(keccak256(abi.encode(seed, i))) % 6); // 0..5
        }
        uint256 total = tree.total();
        for (uint256 v; v < total; ++v) {
            (, uint256 index) = tree.draw(v);
            assertEq(index, naiveDraw(v));
        }
    }
}
