// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IRandomnessSource} from "../interfaces/IRandomnessSource.sol";

/// @title BlockhashRandomness
/// @notice INSECURE: randomness from the hash of a block fixed in advance, for unit tests only.
/// @dev Whoever produces block `b` (a validator, an L2 sequencer) chooses its hash: it can try many
///      candidate blocks and publish the one whose hash seats the committee it wants, or withhold a
///      block to re-roll. A security review found 11 of 64 candidate hashes gave a 23%-stake
///      attacker the majority of a committee. Deployments use `ThresholdBeacon` (a t-of-n threshold
///      BLS beacon); this source stays because unit tests need randomness with no signer processes.
///      `request` does nothing: the block hash needs no producer.
contract BlockhashRandomness is IRandomnessSource {
    /// @dev The BLOCKHASH opcode answers only for the 256 most recent blocks.
    uint256 private constant _HASH_WINDOW = 256;

    /// @inheritdoc IRandomnessSource
    function request(uint256 blockNumber) external pure {
        // Nothing to produce: the value is the block hash, known to the chain once `blockNumber` is mined.
        blockNumber;
    }

    /// @inheritdoc IRandomnessSource
    function randomnessAt(uint256 blockNumber) external view returns (Status status, bytes32 value) {
        if (blockNumber >= block.number) return (Status.Pending, bytes32(0));
        if (block.number - blockNumber > _HASH_WINDOW) return (Status.Expired, bytes32(0));
        return (Status.Ready, blockhash(blockNumber));
    }
}
