// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

/// @title SortitionTree
/// @notice A stake-weighted draw over a growing set of members, as a Fenwick (binary indexed) tree.
/// @dev Kleros draws jurors from a K-ary sum tree; a Fenwick tree gives the same O(log n) update and
///      draw with one storage slot per member and no rebalancing when the set grows. Members are
///      never removed: a member who may not be drawn has weight zero, and can come back with the
///      same index. Indices are 1-based; index 0 means "not a member".
///
///      `nodes[i]` holds the sum of the weights of members `i - lowbit(i) + 1 .. i`.
library SortitionTree {
    struct Tree {
        uint256 size;
        uint256 totalWeight;
        mapping(uint256 index => uint256) nodes;
        mapping(uint256 index => address) members;
    }

    /// @notice The member was not found in the tree.
    error SortitionTreeUnknownIndex(uint256 index, uint256 size);
    /// @notice A draw was asked of a tree whose total weight is not above the drawn number.
    error SortitionTreeDrawOutOfRange(uint256 value, uint256 total);

    /// @notice Adds `member` with `weight` and returns its index. O(log n).
    function append(Tree storage tree, address member, uint256 weight) internal returns (uint256 index) {
        index = tree.size + 1;
        tree.size = index;
        tree.members[index] = member;
        // Node `index` covers members index - lowbit + 1 .. index: the new one plus those before it.
        uint256 lowbit = index & (~index + 1);
        tree.nodes[index] = weight + prefixSum(tree, index - 1) - prefixSum(tree, index - lowbit);
        tree.totalWeight += weight;
    }

    /// @notice Changes a member's weight from `oldWeight` to `newWeight`. O(log n).
    /// @dev The caller keeps each member's current weight; passing a wrong `oldWeight` corrupts
    ///      the tree, so only the registry, which stores it beside the member, calls this.
    function update(Tree storage tree, uint256 index, uint256 oldWeight, uint256 newWeight) internal {
        uint256 size = tree.size;
        if (index == 0 || index > size) revert SortitionTreeUnknownIndex(index, size);
        if (newWeight == oldWeight) return;
        if (newWeight > oldWeight) {
            uint256 delta = newWeight - oldWeight;
            tree.totalWeight += delta;
            for (uint256 i = index; i <= size; i = _next(i)) {
                tree.nodes[i] += delta;
            }
        } else {
            uint256 delta = oldWeight - newWeight;
            tree.totalWeight -= delta;
            for (uint256 i = index; i <= size; i = _next(i)) {
                tree.nodes[i] -= delta;
            }
        }
    }

    /// @notice The total weight of members 1 .. `index`. O(log n).
    function prefixSum(Tree storage tree, uint256 index) internal view returns (uint256 sum) {
        for (uint256 i = index; i > 0;) {
            sum += tree.nodes[i];
            // unchecked: i & -i is the lowest set bit of i > 0, so it is at most i.
            unchecked {
                i -= i & (~i + 1);
            }
        }
    }

    /// @notice The total weight of the tree. O(1): kept beside the nodes.
    function total(Tree storage tree) internal view returns (uint256) {
        return tree.totalWeight;
    }

    /// @notice The member whose weight interval contains `value`, for `value` < total weight.
    /// @dev With `value` uniform in [0, total), a member is returned with probability
    ///      weight / total (eq. 3.2). Binary lifting: O(log n) reads.
    function draw(Tree storage tree, uint256 value) internal view returns (address member, uint256 index) {
        uint256 size = tree.size;
        uint256 step = size == 0 ? 0 : 1 << Math.log2(size);
        uint256 remaining = value;
        uint256 position;
        // unchecked: position + step <= 2 * size (each step is a distinct power of two below
        // 2 * size), and `remaining` is reduced only by a node that is not above it.
        unchecked {
            while (step > 0) {
                uint256 next = position + step;
                if (next <= size) {
                    uint256 node = tree.nodes[next];
                    if (node <= remaining) {
                        position = next;
                        remaining -= node;
                    }
                }
                step >>= 1;
            }
        }
        index = position + 1;
        if (index > size) revert SortitionTreeDrawOutOfRange(value, prefixSum(tree, size));
        member = tree.members[index];
    }

    /// @dev The next node whose range covers index `i`: i + lowbit(i).
    function _next(uint256 i) private pure returns (uint256) {
        // unchecked: i <= size < 2^32 (the registry stores indices as uint32), so no overflow.
        unchecked {
            return i + (i & (~i + 1));
        }
    }
}
