// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

/// @title SortitionTree
/// @notice A stake-weighted draw over a growing set of members, as a Fenwick (binary indexed) tree
///         whose every node is recorded by block: a draw reads the tree as it stood at the end of a
///         past block, so nothing done after that block changes which member a number maps to.
/// @dev Kleros draws jurors from a K-ary sum tree and queues stake changes during its drawing
///      phase; keeping the history instead lets sessions with different randomness blocks overlap
///      freely. A Fenwick tree gives O(log n) update and draw with one node per member and no
///      rebalancing when the set grows. Members are never removed: a member who may not be drawn
///      has weight zero, and can come back with the same index. Indices are 1-based; index 0 means
///      "not a member".
///
///      `nodes[i]` records, by block, the sum of the weights of members `i - lowbit(i) + 1 .. i`;
///      `sizes` and `totals` record the member count and total weight the same way. A change
///      records one value per touched node (overwritten within the same block), so an update
///      costs O(log n) storage writes; reading at block b costs one read per node when the node
///      has not changed since b (the common case), and a binary search of its history otherwise.
library SortitionTree {
    /// @dev One value recorded by block. `latest` packs the block of the last change (high 48 bits)
    ///      with the value (low 208 bits), so the common read, "the value at a block no older than
    ///      the last change", is a single storage read; `older` keeps the earlier (block, value)
    ///      pairs, ascending, for reads of a block before the last change. Zero means never set.
    ///      (OpenZeppelin's Checkpoints keeps the latest value at the end of its array: two reads.)
    struct History {
        uint256 latest;
        uint256[] older;
    }

    struct Tree {
        History sizes;
        History totals;
        mapping(uint256 index => History) nodes;
        mapping(uint256 index => address) members;
    }

    uint256 private constant _VALUE_BITS = 208;

    /// @notice The member was not found in the tree.
    error SortitionTreeUnknownIndex(uint256 index, uint256 size);
    /// @notice A draw was asked of a tree whose total weight is not above the drawn number.
    error SortitionTreeDrawOutOfRange(uint256 value, uint256 total);

    // ------------------------------------------------------------------ writes (at this block)

    /// @notice Adds `member` with `weight` and returns its index. O(log n).
    function append(Tree storage tree, address member, uint256 weight) internal returns (uint256 index) {
        index = _latest(tree.sizes) + 1;
        tree.members[index] = member;
        // Node `index` covers members index - lowbit + 1 .. index: the new one plus those before it.
        uint256 lowbit = index & (~index + 1);
        _set(tree.nodes[index], weight + prefixSum(tree, index - 1) - prefixSum(tree, index - lowbit));
        _set(tree.sizes, index);
        _set(tree.totals, _latest(tree.totals) + weight);
    }

    /// @notice Changes a member's weight from `oldWeight` to `newWeight`. O(log n).
    /// @dev The caller keeps each member's current weight; passing a wrong `oldWeight` corrupts
    ///      the tree, so only the registry, which stores it beside the member, calls this.
    function update(Tree storage tree, uint256 index, uint256 oldWeight, uint256 newWeight) internal {
        uint256 count = _latest(tree.sizes);
        if (index == 0 || index > count) revert SortitionTreeUnknownIndex(index, count);
        if (newWeight == oldWeight) return;
        bool up = newWeight > oldWeight;
        uint256 delta = up ? newWeight - oldWeight : oldWeight - newWeight;
        _set(tree.totals, up ? _latest(tree.totals) + delta : _latest(tree.totals) - delta);
        for (uint256 i = index; i <= count; i = _next(i)) {
            History storage node = tree.nodes[i];
            _set(node, up ? _latest(node) + delta : _latest(node) - delta);
        }
    }

    // ------------------------------------------------------------------ reads (now)

    /// @notice The number of members now.
    function size(Tree storage tree) internal view returns (uint256) {
        return _latest(tree.sizes);
    }

    /// @notice The total weight of the tree now.
    function total(Tree storage tree) internal view returns (uint256) {
        return _latest(tree.totals);
    }

    /// @notice The total weight of members 1 .. `index` now. O(log n).
    function prefixSum(Tree storage tree, uint256 index) internal view returns (uint256 sum) {
        for (uint256 i = index; i > 0;) {
            sum += _latest(tree.nodes[i]);
            // unchecked: i & -i is the lowest set bit of i > 0, so it is at most i.
            unchecked {
                i -= i & (~i + 1);
            }
        }
    }

    /// @notice The member at `index` (1-based), or the zero address.
    function memberAt(Tree storage tree, uint256 index) internal view returns (address) {
        return tree.members[index];
    }

    // ------------------------------------------------------------------ reads (as of a block)

    /// @notice The number of members at the end of block `blockNumber`.
    function sizeAt(Tree storage tree, uint256 blockNumber) internal view returns (uint256) {
        return _at(tree.sizes, blockNumber);
    }

    /// @notice The total weight at the end of block `blockNumber`.
    function totalAt(Tree storage tree, uint256 blockNumber) internal view returns (uint256) {
        return _at(tree.totals, blockNumber);
    }

    /// @notice The weight of the member at `index` at the end of block `blockNumber`: zero for a
    ///         member added later. O(log n).
    function weightAt(Tree storage tree, uint256 index, uint256 blockNumber) internal view returns (uint256) {
        if (index == 0 || index > _at(tree.sizes, blockNumber)) return 0;
        return _prefixSumAt(tree, index, blockNumber) - _prefixSumAt(tree, index - 1, blockNumber);
    }

    /// @notice The member whose weight interval contained `value` at the end of block
    ///         `blockNumber`, for `value` below that block's total weight.
    /// @dev With `value` uniform in [0, totalAt), a member is returned with probability its weight at
    ///      that block over the total (eq. 3.2). Binary lifting over the members that existed then
    ///      (`count`, which the caller reads once with `sizeAt`): nodes of later members are not
    ///      read, since they did not exist at that block. O(log n) reads.
    ///
    ///      The member's weight comes free from the walk: the step onto the member's own node
    ///      (index i, covering i - lowbit(i) + 1 .. i) is the last one not taken, and every later
    ///      step is taken, covering exactly the members i - lowbit(i) + 1 .. i - 1; so the weight is
    ///      that node less what those later steps took.
    /// @return member The member drawn.
    /// @return start Where its interval begins: the total weight of the members before it.
    /// @return weight Its weight at that block (the width of its interval, above zero).
    function drawAt(Tree storage tree, uint256 value, uint256 blockNumber, uint256 count)
        internal
        view
        returns (address member, uint256 start, uint256 weight)
    {
        uint256 step = count == 0 ? 0 : 1 << Math.log2(count);
        uint256 remaining = value;
        uint256 position = 0;
        uint256 ownNode = 0;
        uint256 remainingAtOwnNode = 0;
        // unchecked: position + step <= 2 * count (each step is a distinct power of two below
        // 2 * count), and `remaining` is reduced only by a node that is not above it.
        unchecked {
            while (step > 0) {
                uint256 next = position + step;
                if (next <= count) {
                    uint256 node = _at(tree.nodes[next], blockNumber);
                    if (node <= remaining) {
                        position = next;
                        remaining -= node;
                    } else {
                        ownNode = node;
                        remainingAtOwnNode = remaining;
                    }
                }
                step >>= 1;
            }
        }
        if (position >= count) revert SortitionTreeDrawOutOfRange(value, value - remaining);
        member = tree.members[position + 1];
        start = value - remaining;
        weight = ownNode - (remainingAtOwnNode - remaining);
    }

    // ------------------------------------------------------------------ internals

    /// @dev The total weight of members 1 .. `index` at the end of block `blockNumber`, for an index
    ///      that existed then.
    function _prefixSumAt(Tree storage tree, uint256 index, uint256 blockNumber) private view returns (uint256 sum) {
        for (uint256 i = index; i > 0;) {
            sum += _at(tree.nodes[i], blockNumber);
            // unchecked: as in `prefixSum`.
            unchecked {
                i -= i & (~i + 1);
            }
        }
    }

    /// @dev Records `value` at this block: overwrites a change made earlier in the same block,
    ///      otherwise moves the previous value into the history first.
    function _set(History storage history, uint256 value) private {
        uint256 head = history.latest;
        if (head != 0 && head >> _VALUE_BITS != block.number) history.older.push(head);
        history.latest = (uint256(SafeCast.toUint48(block.number)) << _VALUE_BITS) | SafeCast.toUint208(value);
    }

    /// @dev The value now.
    function _latest(History storage history) private view returns (uint256) {
        return uint208(history.latest);
    }

    /// @dev The value at the end of block `blockNumber`: one read when nothing changed after that
    ///      block, a binary search of the history otherwise. Zero before the first change.
    function _at(History storage history, uint256 blockNumber) private view returns (uint256) {
        uint256 head = history.latest;
        if (head >> _VALUE_BITS <= blockNumber) return uint208(head);
        uint256[] storage older = history.older;
        uint256 low = 0;
        uint256 high = older.length;
        // The first entry recorded after `blockNumber`; the one before it held at that block.
        while (low < high) {
            uint256 mid = Math.average(low, high);
            if (older[mid] >> _VALUE_BITS > blockNumber) high = mid;
            else low = mid + 1;
        }
        return high == 0 ? 0 : uint208(older[high - 1]);
    }

    /// @dev The next node whose range covers index `i`: i + lowbit(i).
    function _next(uint256 i) private pure returns (uint256) {
        // unchecked: i <= size < 2^32 (the registry stores indices as uint32), so no overflow.
        unchecked {
            return i + (i & (~i + 1));
        }
    }
}
