// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {SegmentKeysBase} from "./SegmentKeysBase.sol";
import {ISegmentKeys} from "../src/interfaces/ISegmentKeys.sol";

/// @notice Segment inclusion proofs against a session's trace root (paper section 3.4.3), on trees
///         built here in Solidity with sorted-pair hashing.
contract SegmentKeysProofsTest is SegmentKeysBase {
    uint256 internal constant SEED = 0x5e9;

    // ------------------------------------------------------------------ leafHash

    function test_leafHash_isTheDoubleHashOfTheFieldsEncodedOneByOne() public view {
        ISegmentKeys.SegmentLeaf memory leaf = ISegmentKeys.SegmentLeaf({
            index: 3,
            cid: bytes("bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"),
            ciphertextDigest: sha256("ciphertext"),
            tier: 2,
            weight: 7,
            critical: true
        });
        bytes32 inner = keccak256(abi.encode(uint256(3), leaf.cid, leaf.ciphertextDigest, uint8(2), uint32(7), true));
        assertEq(keys.leafHash(leaf), keccak256(abi.encodePacked(inner)));
        // Not the hash of the struct as one tuple (which would carry a leading offset word).
        assertTrue(keys.leafHash(leaf) != keccak256(bytes.concat(keccak256(abi.encode(leaf)))));
    }

    function testFuzz_leafHash_matchesAnIndependentEncoding(
        uint256 index,
        bytes calldata cid,
        bytes32 digest,
        uint8 tier,
        uint32 weight,
        bool critical
    ) public view {
        ISegmentKeys.SegmentLeaf memory leaf = ISegmentKeys.SegmentLeaf(index, cid, digest, tier, weight, critical);
        assertEq(keys.leafHash(leaf), expectedLeafHash(leaf));
    }

    // ------------------------------------------------------------------ verifySegment

    function test_verifySegment_acceptsEveryLeafOfATree() public {
        (ISegmentKeys.SegmentLeaf[] memory leaves, bytes32[] memory hashes) = leavesOf(SEED, 11);
        (bytes32 root,) = rootAndProof(hashes, 0);
        uint256 id = openWithRoot(root);
        for (uint256 i; i < leaves.length; ++i) {
            (, bytes32[] memory proof) = rootAndProof(hashes, i);
            assertTrue(keys.verifySegment(id, leaves[i], proof), vm.toString(i));
        }
    }

    function test_verifySegment_singleLeafTreeHasAnEmptyProof() public {
        (ISegmentKeys.SegmentLeaf[] memory leaves, bytes32[] memory hashes) = leavesOf(SEED, 1);
        uint256 id = openWithRoot(hashes[0]);
        assertTrue(keys.verifySegment(id, leaves[0], new bytes32[](0)));
        leaves[0].weight += 1;
        assertFalse(keys.verifySegment(id, leaves[0], new bytes32[](0)));
    }

    function test_verifySegment_rejectsEveryAlteredField() public {
        (ISegmentKeys.SegmentLeaf[] memory leaves, bytes32[] memory hashes) = leavesOf(SEED, 6);
        (bytes32 root, bytes32[] memory proof) = rootAndProof(hashes, 4);
        uint256 id = openWithRoot(root);
        ISegmentKeys.SegmentLeaf memory leaf = leafAt(SEED, 4); // a copy: `leaves[4]` stays intact
        assertTrue(keys.verifySegment(id, leaf, proof));

        leaf.index = 5;
        assertFalse(keys.verifySegment(id, leaf, proof), "index");
        leaf.index = 4;
        leaf.cid = bytes.concat(leaf.cid, "x");
        assertFalse(keys.verifySegment(id, leaf, proof), "cid");
        leaf.cid = leaves[4].cid;
        leaf.ciphertextDigest = bytes32(uint256(leaf.ciphertextDigest) ^ 1);
        assertFalse(keys.verifySegment(id, leaf, proof), "ciphertextDigest");
        leaf.ciphertextDigest = leaves[4].ciphertextDigest;
        leaf.tier = leaf.tier % 3 + 1;
        assertFalse(keys.verifySegment(id, leaf, proof), "tier");
        leaf.tier = leaves[4].tier;
        leaf.weight += 1;
        assertFalse(keys.verifySegment(id, leaf, proof), "weight");
        leaf.weight = leaves[4].weight;
        leaf.critical = !leaf.critical;
        assertFalse(keys.verifySegment(id, leaf, proof), "critical");
        leaf.critical = leaves[4].critical;
        assertTrue(keys.verifySegment(id, leaf, proof), "restored");
    }

    function test_verifySegment_rejectsAnotherLeafsProofAndAnotherSessionsRoot() public {
        (ISegmentKeys.SegmentLeaf[] memory leaves, bytes32[] memory hashes) = leavesOf(SEED, 8);
        (bytes32 root, bytes32[] memory proof2) = rootAndProof(hashes, 2);
        uint256 id = openWithRoot(root);
        (, bytes32[] memory proof5) = rootAndProof(hashes, 5);
        assertFalse(keys.verifySegment(id, leaves[2], proof5));
        assertFalse(keys.verifySegment(id, leaves[2], new bytes32[](0)));
        uint256 other = openWithRoot(keccak256("another trace"));
        assertFalse(keys.verifySegment(other, leaves[2], proof2));
        assertTrue(keys.verifySegment(id, leaves[2], proof2));
    }

    function test_verifySegment_rejectsAnInnerNodeDressedAsALeaf() public {
        (, bytes32[] memory hashes) = leavesOf(SEED, 4);
        (bytes32 root,) = rootAndProof(hashes, 0);
        uint256 id = openWithRoot(root);
        // The pair (h0, h1) hashes to an inner node; no leaf can hash to it, whatever its fields.
        ISegmentKeys.SegmentLeaf memory forged = leafAt(SEED, 0);
        forged.cid = abi.encode(hashes[0], hashes[1]);
        (, bytes32[] memory proof) = rootAndProof(hashes, 2);
        assertFalse(keys.verifySegment(id, forged, proof));
    }

    function test_verifySegment_revertsForUnknownSession() public {
        (ISegmentKeys.SegmentLeaf[] memory leaves,) = leavesOf(SEED, 1);
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysUnknownSession.selector, 9));
        keys.verifySegment(9, leaves[0], new bytes32[](0));
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_verifySegment_gasFor1024Leaves() public {
        (ISegmentKeys.SegmentLeaf[] memory leaves, bytes32[] memory hashes) = leavesOf(SEED, 1024);
        (bytes32 root, bytes32[] memory proof) = rootAndProof(hashes, 777);
        uint256 id = openWithRoot(root);
        assertEq(proof.length, 10);
        assertTrue(keys.verifySegment(id, leaves[777], proof));
        vm.snapshotGasLastCall("SegmentKeys", "verifySegment_1024_leaves");
    }

    /// @notice For any tree size and leaf: the proof built here verifies, and flipping any bit of
    ///         any proof element, or of the leaf's digest, makes it fail.
    function testFuzz_verifySegment_againstASolidityTree(uint256 seed, uint256 count, uint256 target, uint256 flip)
        public
    {
        count = bound(count, 1, 64);
        target = bound(target, 0, count - 1);
        (ISegmentKeys.SegmentLeaf[] memory leaves, bytes32[] memory hashes) = leavesOf(seed, count);
        (bytes32 root, bytes32[] memory proof) = rootAndProof(hashes, target);
        uint256 id = openWithRoot(root);
        assertTrue(keys.verifySegment(id, leaves[target], proof));

        if (proof.length != 0) {
            uint256 element = flip % proof.length;
            proof[element] ^= bytes32(uint256(1) << (flip >> 8) % 256);
            assertFalse(keys.verifySegment(id, leaves[target], proof));
            (, proof) = rootAndProof(hashes, target);
        }
        leaves[target].ciphertextDigest ^= bytes32(uint256(1) << (flip >> 16) % 256);
        assertFalse(keys.verifySegment(id, leaves[target], proof));
    }
}
