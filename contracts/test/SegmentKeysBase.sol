// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {ERC1967Proxy} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol";

import {CommitteeUnitsBase} from "./CommitteeUnitsBase.sol";
import {SegmentKeys} from "../src/SegmentKeys.sol";
import {ISegmentKeys} from "../src/interfaces/ISegmentKeys.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";

/// @notice The whole protocol plus `SegmentKeys` behind its proxy, and a Merkle tree built in
///         Solidity (sorted pairs, as OpenZeppelin's `MerkleProof` verifies) for the proof tests,
///         with the fixtures for committees of several-unit seats (`CommitteeUnitsBase`).
abstract contract SegmentKeysBase is CommitteeUnitsBase {
    bytes32 internal constant PUBLISHED_TOPIC =
        keccak256("KeyEnvelopePublished(uint256,uint256,uint8,uint256,address,bytes)");

    SegmentKeys internal keys;

    address internal stranger = makeAddr("stranger");

    function setUp() public virtual override {
        super.setUp();
        keys = SegmentKeys(
            address(
                new ERC1967Proxy(
                    address(new SegmentKeys()),
                    abi.encodeCall(SegmentKeys.initialize, (address(this), ITRUSTAudit(address(audit))))
                )
            )
        );
        audit.setSegmentKeys(address(keys));
    }

    // ------------------------------------------------------------------ delivery helpers

    /// @notice The recorded logs that `keys` emitted (the audit contract's `EnvelopesDelivered`,
    ///         one per set, left out), clearing the record as `vm.getRecordedLogs` does.
    function keysLogs() internal returns (Vm.Log[] memory logs) {
        Vm.Log[] memory all = vm.getRecordedLogs();
        logs = new Vm.Log[](all.length);
        uint256 n = 0;
        for (uint256 i; i < all.length; ++i) {
            if (all[i].emitter == address(keys)) logs[n++] = all[i];
        }
        assembly ("memory-safe") {
            mstore(logs, n)
        }
    }

    /// @notice `count` distinct binary CIDv1s (raw codec, sha2-256): 36 bytes each, as the provider
    ///         publishes them.
    function envelopes(uint256 count, string memory tag) internal pure returns (bytes[] memory list) {
        list = new bytes[](count);
        for (uint256 i; i < count; ++i) {
            // keccak256, not sha256: a precompile call would be taken for the call under `expectRevert`.
            list[i] = abi.encodePacked(hex"01551220", keccak256(abi.encode(tag, i)));
        }
    }

    /// @notice `publishEnvelopes` as the session's provider.
    function publish(uint256 id, uint256 segmentId, uint8 round, bytes[] memory cids) internal {
        vm.prank(provider);
        keys.publishEnvelopes(id, segmentId, round, cids);
    }

    /// @notice Every `KeyEnvelopePublished` of the last call, checked against the committee and CIDs.
    function assertPublished(
        Vm.Log[] memory logs,
        uint256 id,
        uint256 segmentId,
        uint8 round,
        address[] memory members,
        bytes[] memory cids
    ) internal view {
        assertEq(logs.length, members.length, "one event per seat");
        assertPublishedAt(logs, 0, id, segmentId, round, members, cids);
    }

    /// @notice The `KeyEnvelopePublished` events of one set, from `logs[first]` on, checked against
    ///         the committee and CIDs.
    function assertPublishedAt(
        Vm.Log[] memory logs,
        uint256 first,
        uint256 id,
        uint256 segmentId,
        uint8 round,
        address[] memory members,
        bytes[] memory cids
    ) internal view {
        assertGe(logs.length, first + members.length, "one event per seat");
        for (uint256 i; i < members.length; ++i) {
            Vm.Log memory log = logs[first + i];
            assertEq(log.emitter, address(keys));
            assertEq(log.topics.length, 4);
            assertEq(log.topics[0], PUBLISHED_TOPIC);
            assertEq(uint256(log.topics[1]), id);
            assertEq(uint256(log.topics[2]), segmentId);
            assertEq(address(uint160(uint256(log.topics[3]))), members[i]);
            (uint8 r, uint256 seatIndex, bytes memory cid) = abi.decode(log.data, (uint8, uint256, bytes));
            assertEq(r, round);
            assertEq(seatIndex, i);
            assertEq(cid, cids[i]);
        }
    }

    function bytesOfLength(uint256 length) internal pure returns (bytes memory b) {
        b = new bytes(length);
        for (uint256 i; i < length; ++i) {
            b[i] = "a";
        }
    }

    // ------------------------------------------------------------------ Merkle helpers

    /// @notice The leaf hash, written out independently of the contract.
    function expectedLeafHash(ISegmentKeys.SegmentLeaf memory leaf) internal pure returns (bytes32) {
        return keccak256(
            bytes.concat(
                keccak256(
                    abi.encode(leaf.index, leaf.cid, leaf.ciphertextDigest, leaf.tier, leaf.weight, leaf.critical)
                )
            )
        );
    }

    function hashPair(bytes32 a, bytes32 b) internal pure returns (bytes32) {
        return a < b ? keccak256(abi.encode(a, b)) : keccak256(abi.encode(b, a));
    }

    /// @notice A pseudo-random segment leaf number `index` from `seed`.
    function leafAt(uint256 seed, uint256 index) internal pure returns (ISegmentKeys.SegmentLeaf memory) {
        bytes32 h = keccak256(abi.encode(seed, index));
        uint256 cidLength = 1 + uint256(h) % 96;
        bytes memory cid = new bytes(cidLength);
        for (uint256 i; i < cidLength; ++i) {
            cid[i] = bytes1(uint8(uint256(keccak256(abi.encode(h, i)))));
        }
        return ISegmentKeys.SegmentLeaf({
            index: index,
            cid: cid,
            ciphertextDigest: keccak256(abi.encode("ciphertext", h)),
            tier: uint8(1 + uint256(h >> 8) % 3),
            weight: uint32(1 + uint256(h >> 16) % 1_000),
            critical: uint256(h >> 48) % 4 == 0
        });
    }

    /// @notice The root of the tree over `hashes` and the proof of leaf `target`: each level pairs
    ///         neighbours with `hashPair` and carries an odd last node up unchanged.
    function rootAndProof(bytes32[] memory hashes, uint256 target)
        internal
        pure
        returns (bytes32 root, bytes32[] memory proof)
    {
        bytes32[] memory level = hashes;
        bytes32[] memory path = new bytes32[](64);
        uint256 depth;
        uint256 position = target;
        while (level.length > 1) {
            uint256 sibling = position ^ 1;
            if (sibling < level.length) path[depth++] = level[sibling];
            bytes32[] memory next = new bytes32[]((level.length + 1) / 2);
            for (uint256 i; i < next.length; ++i) {
                next[i] = 2 * i + 1 < level.length ? hashPair(level[2 * i], level[2 * i + 1]) : level[2 * i];
            }
            level = next;
            position /= 2;
        }
        root = level[0];
        proof = new bytes32[](depth);
        for (uint256 i; i < depth; ++i) {
            proof[i] = path[i];
        }
    }

    /// @notice `count` leaves from `seed` and their hashes.
    function leavesOf(uint256 seed, uint256 count)
        internal
        pure
        returns (ISegmentKeys.SegmentLeaf[] memory leaves, bytes32[] memory hashes)
    {
        leaves = new ISegmentKeys.SegmentLeaf[](count);
        hashes = new bytes32[](count);
        for (uint256 i; i < count; ++i) {
            leaves[i] = leafAt(seed, i);
            hashes[i] = expectedLeafHash(leaves[i]);
        }
    }

    /// @notice Opens a one-segment tier-1 session whose trace root is `root`.
    function openWithRoot(bytes32 root) internal returns (uint256 sessionId) {
        ITRUSTAudit.SegmentInput[] memory segments = uniformSegments(1, 1);
        uint256 fee = audit.minimumFee(segments);
        vm.prank(provider);
        sessionId = audit.createSessionWithSegments{value: fee}(root, segments);
    }
}
