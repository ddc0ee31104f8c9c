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
        return _tree.size();
    }

    function memberAt(uint256 index) external view returns (address) {
        return _tree.memberAt(index);
    }

    function sizeAt(uint256 blockNumber) external view returns (uint256) {
        return _tree.sizeAt(blockNumber);
    }

    function totalAt(uint256 blockNumber) external view returns (uint256) {
        return _tree.totalAt(blockNumber);
    }

    function weightAt(uint256 index, uint256 blockNumber) external view returns (uint256) {
        return _tree.weightAt(index, blockNumber);
    }

    function drawAt(uint256 value, uint256 blockNumber, uint256 count)
        external
        view
        returns (address member, uint256 start, uint256 weight)
    {
        return _tree.drawAt(value, blockNumber, count);
    }

    /// @dev The draw as the registry makes it: over the members that existed at `blockNumber`.
    function drawAtBlock(uint256 value, uint256 blockNumber)
        external
        view
        returns (address member, uint256 start, uint256 weight)
    {
        return _tree.drawAt(value, blockNumber, _tree.sizeAt(blockNumber));
    }
}

/// @notice The block-recorded Fenwick tree: appends and updates at the current block, prefix sums
///         now, and sizes, totals, weights and draws as of any block, checked against a naive model
///         that keeps the weight array of every block.
contract SortitionTreeTest is Test {
    /// @dev Keeps the sums of a few hundred members far below 2^208 (the registry stores uint96 weights).
    uint256 internal constant MAX_WEIGHT = type(uint96).max;
    /// @dev The block the tests start at.
    uint256 internal constant START = 1_000;

    SortitionTreeHarness internal tree;
    /// @dev The naive model: weights[i] is the current weight of member index i + 1.
    uint256[] internal weights;
    /// @dev The model by block: history[k] is `weights` at the end of block historyBlocks[k].
    uint256[][] internal history;
    uint256[] internal historyBlocks;

    function setUp() public {
        vm.roll(START);
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

    function prefixOf(uint256[] memory list, uint256 index) internal pure returns (uint256 sum) {
        for (uint256 i; i < index; ++i) {
            sum += list[i];
        }
    }

    /// @dev The 1-based index whose interval [prefix(i - 1), prefix(i)) contains `value`.
    function naiveDraw(uint256[] memory list, uint256 value) internal pure returns (uint256) {
        uint256 sum;
        for (uint256 i; i < list.length; ++i) {
            sum += list[i];
            if (value < sum) return i + 1;
        }
        revert("value out of range");
    }

    function naiveDraw(uint256 value) internal view returns (uint256) {
        return naiveDraw(weights, value);
    }

    /// @dev A draw at the current block (what the block's own reads see so far).
    function drawNow(uint256 value) internal view returns (address member, uint256 start, uint256 weight) {
        return tree.drawAtBlock(value, block.number);
    }

    /// @dev The index of a member address made by `memberAt`.
    function indexOf(address member) internal pure returns (uint256) {
        return uint160(member) - 0x1000;
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

    /// @dev Records the model as it stands at the end of the current block.
    function recordBlock() internal {
        if (historyBlocks.length != 0 && historyBlocks[historyBlocks.length - 1] == block.number) {
            history[history.length - 1] = weights;
        } else {
            history.push(weights);
            historyBlocks.push(block.number);
        }
    }

    /// @dev The model's weights at the end of `blockNumber`: the last recorded block at or before it.
    function modelAt(uint256 blockNumber) internal view returns (uint256[] memory list) {
        for (uint256 k = historyBlocks.length; k > 0; --k) {
            if (historyBlocks[k - 1] <= blockNumber) return history[k - 1];
        }
        return new uint256[](0);
    }

    function assertMatchesModel() internal view {
        assertEq(tree.size(), weights.length, "size");
        for (uint256 i; i <= weights.length; ++i) {
            assertEq(tree.prefixSum(i), naivePrefix(i), "prefix sum");
        }
        assertEq(tree.total(), naivePrefix(weights.length), "total");
    }

    /// @dev Size, total and every member's weight at `blockNumber` match the model's weights then.
    function assertMatchesModelAt(uint256 blockNumber) internal view {
        uint256[] memory list = modelAt(blockNumber);
        assertEq(tree.sizeAt(blockNumber), list.length, "size at the block");
        assertEq(tree.totalAt(blockNumber), prefixOf(list, list.length), "total at the block");
        for (uint256 i; i < list.length; ++i) {
            assertEq(tree.weightAt(i + 1, blockNumber), list[i], "weight at the block");
        }
        assertEq(tree.weightAt(list.length + 1, blockNumber), 0, "a member not added yet weighs nothing");
    }

    /// @dev `drawAt(value, blockNumber)` returns the model's member for `value` at that block, where
    ///      its interval starts, and its width.
    function assertDrawMatchesModelAt(uint256 value, uint256 blockNumber) internal view {
        uint256[] memory list = modelAt(blockNumber);
        (address member, uint256 start, uint256 weight) = tree.drawAtBlock(value, blockNumber);
        uint256 expected = naiveDraw(list, value);
        assertEq(member, memberAt(expected), "member at the block");
        assertEq(start, prefixOf(list, expected - 1), "start: the prefix sum before the member");
        assertEq(weight, list[expected - 1], "weight: the member's weight at the block");
        assertGt(weight, 0, "a zero-weight member is never drawn");
        assertLe(start, value, "interval start");
        assertGt(start + weight, value, "interval end");
    }

    // ------------------------------------------------------------------ append / update / prefix sums (now)

    function test_append_returnsConsecutiveIndices() public {
        for (uint256 i = 1; i <= 9; ++i) {
            assertEq(appendMember(i * 10), i);
        }
        assertMatchesModel();
        assertEq(tree.total(), 450);
    }

    function test_memberAt_returnsTheAppendedMemberOrZero() public {
        appendMember(4);
        appendMember(0);
        assertEq(tree.memberAt(1), memberAt(1));
        assertEq(tree.memberAt(2), memberAt(2), "a zero-weight member is still a member");
        assertEq(tree.memberAt(0), address(0), "index 0 means no member");
        assertEq(tree.memberAt(3), address(0), "past the size");
    }

    function test_prefixSum_ofEmptyTreeIsZero() public view {
        assertEq(tree.total(), 0);
        assertEq(tree.size(), 0);
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
        vm.roll(block.number + 1); // the updates and appends land in a later block than the first appends
        for (uint256 i; i < n; ++i) {
            updateMember(i + 1, bound(uint256(keccak256(abi.encode(seed, i))), 0, MAX_WEIGHT));
        }
        for (uint256 i; i < n; ++i) {
            appendMember(bound(uint256(keccak256(abi.encode(seed, "append", i))), 0, MAX_WEIGHT));
        }
        assertMatchesModel();
        recordBlock();
        vm.roll(block.number + 1);
        assertMatchesModelAt(block.number - 1);
    }

    // ------------------------------------------------------------------ drawAt the current block

    function test_drawAt_returnsTheMemberOfEachInterval() public {
        appendMember(3); // [0, 3)
        appendMember(0); // never
        appendMember(2); // [3, 5)
        appendMember(5); // [5, 10)
        uint256[10] memory expected = [uint256(1), 1, 1, 3, 3, 4, 4, 4, 4, 4];
        uint256[5] memory starts = [uint256(0), 0, 3, 3, 5];
        for (uint256 v; v < 10; ++v) {
            (address member, uint256 start, uint256 weight) = drawNow(v);
            assertEq(member, memberAt(expected[v]), "member");
            assertEq(start, starts[expected[v]], "start");
            assertEq(weight, weights[expected[v] - 1], "weight");
        }
    }

    function test_drawAt_skipsLeadingAndTrailingZeroWeights() public {
        appendMember(0);
        appendMember(0);
        appendMember(7);
        appendMember(0);
        (address first, uint256 firstStart, uint256 firstWeight) = drawNow(0);
        (address last, uint256 lastStart, uint256 lastWeight) = drawNow(6);
        assertEq(first, memberAt(3));
        assertEq(last, memberAt(3));
        assertEq(firstStart, 0);
        assertEq(lastStart, 0);
        assertEq(firstWeight, 7);
        assertEq(lastWeight, 7);
    }

    function test_drawAt_revertsAtTotal() public {
        appendMember(4);
        appendMember(6);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 10, 10));
        drawNow(10);
    }

    function test_drawAt_revertsOnEmptyTree() public {
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 0, 0));
        drawNow(0);
    }

    function test_drawAt_revertsWhenEveryWeightIsZero() public {
        appendMember(0);
        appendMember(0);
        appendMember(0);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 0, 0));
        drawNow(0);
    }

    function testFuzz_drawAt_revertsAboveTotal(uint256 seed, uint256 ops, uint256 value) public {
        applyRandomOps(seed, bound(ops, 1, 40));
        uint256 total = tree.total();
        value = bound(value, total, type(uint256).max);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, value, total));
        drawNow(value);
    }

    function testFuzz_drawAt_matchesNaiveModel(uint256 seed, uint256 ops, uint256 value) public {
        applyRandomOps(seed, bound(ops, 1, 80));
        if (tree.total() == 0) appendMember(1); // every weight zero: nothing to draw from
        recordBlock();
        value = bound(value, 0, tree.total() - 1);
        assertDrawMatchesModelAt(value, block.number);
    }

    /// @dev Every interval boundary: the first and the last value of each member's interval.
    function testFuzz_drawAt_boundariesOfEveryInterval(uint256 seed, uint256 ops) public {
        applyRandomOps(seed, bound(ops, 1, 60));
        uint256 start;
        for (uint256 i; i < weights.length; ++i) {
            uint256 w = weights[i];
            if (w == 0) continue;
            (address atStart, uint256 startOfFirst, uint256 weightOfFirst) = drawNow(start);
            (address atEnd, uint256 startOfLast, uint256 weightOfLast) = drawNow(start + w - 1);
            assertEq(atStart, memberAt(i + 1), "first value of the interval");
            assertEq(atEnd, memberAt(i + 1), "last value of the interval");
            assertEq(startOfFirst, start, "start from the first value");
            assertEq(startOfLast, start, "start from the last value");
            assertEq(weightOfFirst, w, "weight from the first value");
            assertEq(weightOfLast, w, "weight from the last value");
            start += w;
        }
        assertEq(start, tree.total());
    }

    /// @dev Small weights, every value: the draw is the naive draw for all of [0, total).
    function testFuzz_drawAt_everyValueOfSmallTree(uint256 seed, uint256 members) public {
        members = bound(members, 1, 24);
        for (uint256 i; i < members; ++i) {
            appendMember(uint256(keccak256(abi.encode(seed, i))) % 6); // 0..5
        }
        uint256 total = tree.total();
        for (uint256 v; v < total; ++v) {
            (address member,,) = drawNow(v);
            assertEq(indexOf(member), naiveDraw(v));
        }
    }

    // ------------------------------------------------------------------ history: sizeAt, totalAt, weightAt

    /// @notice Each block's size and total are kept; blocks without a change read the last one
    ///         before them, and blocks before the first append read an empty tree.
    function test_sizeAtTotalAt_recordEachBlock() public {
        uint256 b = block.number;
        appendMember(3);
        vm.roll(b + 2);
        appendMember(4);
        appendMember(5);
        vm.roll(b + 5);
        updateMember(1, 10);
        vm.roll(b + 6);

        uint256[7] memory blocks = [b - 1, b, b + 1, b + 2, b + 4, b + 5, b + 100];
        uint256[7] memory sizes = [uint256(0), 1, 1, 3, 3, 3, 3];
        uint256[7] memory totals = [uint256(0), 3, 3, 12, 12, 19, 19];
        for (uint256 k; k < blocks.length; ++k) {
            assertEq(tree.sizeAt(blocks[k]), sizes[k], "size at the block");
            assertEq(tree.totalAt(blocks[k]), totals[k], "total at the block");
        }
        assertEq(tree.size(), 3);
        assertEq(tree.total(), 19);
    }

    function test_weightAt_readsEachMembersWeightByBlock() public {
        uint256 b = block.number;
        appendMember(3);
        appendMember(8);
        vm.roll(b + 1);
        updateMember(1, 0);
        appendMember(2);
        vm.roll(b + 2);
        updateMember(2, 1);
        vm.roll(b + 3);

        assertEq(tree.weightAt(1, b), 3);
        assertEq(tree.weightAt(2, b), 8);
        assertEq(tree.weightAt(3, b), 0, "not a member yet");
        assertEq(tree.weightAt(1, b + 1), 0);
        assertEq(tree.weightAt(2, b + 1), 8);
        assertEq(tree.weightAt(3, b + 1), 2);
        assertEq(tree.weightAt(2, b + 2), 1);
        assertEq(tree.weightAt(1, b - 1), 0, "before the tree existed");
        assertEq(tree.weightAt(0, b + 2), 0, "index 0 means no member");
        assertEq(tree.weightAt(4, b + 2), 0, "past the size");
    }

    /// @notice Several changes within one block: the block reads the last, the block before keeps
    ///         its own value, and the later block reads the last too.
    function test_update_severalInOneBlockKeepTheLast() public {
        uint256 b = block.number;
        appendMember(5);
        appendMember(5);
        vm.roll(b + 1);
        updateMember(1, 9);
        updateMember(1, 0);
        updateMember(2, 40);
        updateMember(1, 1);
        appendMember(7);
        updateMember(3, 2);
        vm.roll(b + 2);

        assertEq(tree.weightAt(1, b), 5, "the previous block is untouched");
        assertEq(tree.totalAt(b), 10);
        assertEq(tree.weightAt(1, b + 1), 1, "the block's last value");
        assertEq(tree.weightAt(2, b + 1), 40);
        assertEq(tree.weightAt(3, b + 1), 2);
        assertEq(tree.totalAt(b + 1), 43);
        assertEq(tree.sizeAt(b + 1), 3);
        (address member, uint256 start, uint256 weight) = tree.drawAtBlock(1, b + 1);
        assertEq(member, memberAt(2), "value 1 is past member 1's single unit");
        assertEq(start, 1);
        assertEq(weight, 40);
    }

    // ------------------------------------------------------------------ history: drawAt

    /// @notice Changes after a block leave the block's intervals as they were.
    function test_drawAt_readsTheTreeAsOfAPastBlock() public {
        uint256 b = block.number;
        appendMember(3); // [0, 3)
        appendMember(2); // [3, 5)
        appendMember(5); // [5, 10)
        vm.roll(b + 1);
        updateMember(1, 0);
        updateMember(3, 100);
        updateMember(2, 7);
        vm.roll(b + 2);

        uint256[10] memory expected = [uint256(1), 1, 1, 2, 2, 3, 3, 3, 3, 3];
        uint256[4] memory starts = [uint256(0), 0, 3, 5];
        uint256[4] memory widths = [uint256(0), 3, 2, 5];
        for (uint256 v; v < 10; ++v) {
            (address member, uint256 start, uint256 weight) = tree.drawAtBlock(v, b);
            assertEq(member, memberAt(expected[v]), "member at the block");
            assertEq(start, starts[expected[v]], "start at the block");
            assertEq(weight, widths[expected[v]], "weight at the block");
        }
        // The same values now: member 1 weighs nothing, member 2 covers [0, 7).
        (address now0,, uint256 nowWeight) = tree.drawAtBlock(0, b + 1);
        assertEq(now0, memberAt(2));
        assertEq(nowWeight, 7);
    }

    /// @notice A member appended after the block is not part of the block's draw: its node is never
    ///         read and a value past the block's total reverts, though the tree holds more now.
    function test_drawAt_ignoresMembersAddedAfterTheBlock() public {
        uint256 b = block.number;
        appendMember(3);
        appendMember(2);
        vm.roll(b + 1);
        appendMember(1_000); // index 3: its node covers member 3 only
        appendMember(1_000); // index 4: its node covers members 1 .. 4, the block's two included
        vm.roll(b + 2);

        assertEq(tree.sizeAt(b), 2);
        for (uint256 v; v < 5; ++v) {
            (address member,,) = tree.drawAtBlock(v, b);
            assertTrue(member == memberAt(1) || member == memberAt(2), "only the members of the block");
        }
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 5, 5));
        tree.drawAtBlock(5, b);
        (address later,,) = tree.drawAtBlock(5, b + 1);
        assertEq(later, memberAt(3), "the next block has them");
    }

    /// @notice A block before the first append reads an empty tree.
    function test_drawAt_revertsBeforeTheFirstMember() public {
        uint256 b = block.number;
        vm.roll(b + 3);
        appendMember(9);
        vm.roll(b + 4);
        assertEq(tree.sizeAt(b + 2), 0);
        assertEq(tree.totalAt(b + 2), 0);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 0, 0));
        tree.drawAtBlock(0, b + 2);
        (address member,,) = tree.drawAtBlock(0, b + 3);
        assertEq(member, memberAt(1));
    }

    /// @notice A value at the block's total reverts with that total, not the larger total now.
    function test_drawAt_revertsAtTheTotalOfThePastBlock() public {
        uint256 b = block.number;
        appendMember(4);
        appendMember(6);
        vm.roll(b + 1);
        updateMember(1, 50);
        vm.roll(b + 2);
        vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, 10, 10));
        tree.drawAtBlock(10, b);
        (address member,,) = tree.drawAtBlock(10, b + 1);
        assertEq(member, memberAt(1));
    }

    /// @notice The model over several blocks, some with gaps between them: at random past blocks
    ///         (recorded ones, gaps, before the first), sizes, totals and weights match the model's
    ///         array of that block, and a random value maps to the member whose interval contains it.
    function testFuzz_drawAt_matchesTheModelAtPastBlocks(uint256 seed, uint256 blockCount, uint256 queries) public {
        blockCount = bound(blockCount, 1, 10);
        queries = bound(queries, 1, 24);
        uint256 first = block.number;
        for (uint256 k; k < blockCount; ++k) {
            uint256 r = uint256(keccak256(abi.encode(seed, "block", k)));
            applyRandomOps(r, 1 + r % 12);
            recordBlock();
            vm.roll(block.number + 1 + (r >> 64) % 4); // 0 to 3 blocks without a change
        }
        uint256 last = block.number - 1;

        for (uint256 q; q < queries; ++q) {
            uint256 r = uint256(keccak256(abi.encode(seed, "query", q)));
            uint256 at = bound(r, first - 2, last);
            assertMatchesModelAt(at);
            uint256 total = prefixOf(modelAt(at), modelAt(at).length);
            if (total == 0) {
                vm.expectRevert(abi.encodeWithSelector(SortitionTree.SortitionTreeDrawOutOfRange.selector, r % 7, 0));
                tree.drawAtBlock(r % 7, at);
                continue;
            }
            assertDrawMatchesModelAt(uint256(keccak256(abi.encode(r))) % total, at);
        }
        // The latest state reads the same through the history as through the current reads.
        assertMatchesModel();
        assertMatchesModelAt(last);
    }

    /// @dev Every past block of a small tree, every value: the whole history draws like the model.
    function testFuzz_drawAt_everyValueOfEveryPastBlock(uint256 seed) public {
        uint256 first = block.number;
        for (uint256 k; k < 5; ++k) {
            uint256 r = uint256(keccak256(abi.encode(seed, k)));
            if (weights.length < 6) appendMember(r % 5);
            updateMember(1 + (r >> 8) % weights.length, (r >> 16) % 5);
            updateMember(1 + (r >> 24) % weights.length, (r >> 32) % 5);
            recordBlock();
            vm.roll(block.number + 1);
        }
        for (uint256 at = first; at < block.number; ++at) {
            uint256[] memory list = modelAt(at);
            uint256 total = prefixOf(list, list.length);
            assertEq(tree.totalAt(at), total);
            for (uint256 v; v < total; ++v) {
                assertDrawMatchesModelAt(v, at);
            }
        }
    }
}
