// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IRandomnessSource
/// @notice Randomness bound to a future block, behind an interface so that an on-chain VRF can
///         replace the block-hash source without touching the audit contract (as Kleros' `IRNG`).
/// @dev The audit contract fixes a block when a session is created, and reads the value only once
///      that block is in the past: nobody, the provider included, knows it at creation time.
interface IRandomnessSource {
    enum Status {
        Pending, // the block has not been mined yet (or the VRF has not answered)
        Ready, // the value can be read
        Expired // the value can no longer be read; fix a new block
    }

    /// @notice The randomness for `blockNumber`, and whether it can be used.
    /// @return status Pending, Ready or Expired.
    /// @return value The random value when `status` is Ready, zero otherwise.
    function randomnessAt(uint256 blockNumber) external view returns (Status status, bytes32 value);
}
