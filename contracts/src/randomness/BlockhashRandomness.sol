// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IRandomnessSource} from "../interfaces/IRandomnessSource.sol";

/// @title BlockhashRandomness
/// @notice Randomness from the hash of a block fixed in advance.
/// @dev Unknown to everyone when the block is fixed, readable for the 256 blocks after it. A block
///      producer can withhold a block to re-roll its hash once, at the cost of that block's reward;
///      that bias is acceptable for a development network and a low-value deployment, and is why
///      this sits behind `IRandomnessSource`: a VRF (Chainlink, drand) replaces it without changes
///      to the audit contract.
contract BlockhashRandomness is IRandomnessSource {
    /// @dev The BLOCKHASH opcode answers only for the 256 most recent blocks.
    uint256 private constant _HASH_WINDOW = 256;

    /// @inheritdoc IRandomnessSource
    function randomnessAt(uint256 blockNumber) external view returns (Status status, bytes32 value) {
        if (blockNumber >= block.number) return (Status.Pending, bytes32(0));
        if (block.number - blockNumber > _HASH_WINDOW) return (Status.Expired, bytes32(0));
        return (Status.Ready, blockhash(blockNumber));
    }
}
