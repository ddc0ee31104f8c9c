// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IRandomnessSource
/// @notice Randomness bound to a future block, behind an interface so that the audit contract reads
///         it the same way from the threshold BLS beacon (`ThresholdBeacon`, the default), an on-chain
///         VRF or, in unit tests only, the block hash (as Kleros' `IRNG`).
/// @dev The audit contract fixes a future block `b` once every input of the draw is fixed, calls
///      `request(b)`, and reads `randomnessAt(b)` only once `b` is in the past: nobody, the provider
///      included, knows the value when `b` is fixed. A value can be used for the 256 blocks after
///      `b` (the window of the BLOCKHASH opcode, kept by every source so that the audit contract's
///      draw window and the registry's stake history mean the same whatever the source); after that
///      it is Expired and the audit contract fixes a fresh block.
interface IRandomnessSource {
    enum Status {
        Pending, // the block has not been mined yet, or its randomness was not produced yet
        Ready, // the value can be read
        Expired // more than 256 blocks passed: the value can no longer be used; fix a new block
    }

    /// @notice Asks for the randomness of `blockNumber`: the caller has fixed that block and will
    ///         read `randomnessAt(blockNumber)` once it is mined.
    /// @dev A signal for off-chain producers (the beacon's signers); a source that needs none (the
    ///      block hash) ignores it. It never changes the value that `blockNumber` will get.
    /// @param blockNumber The block whose randomness is wanted (not yet mined).
    function request(uint256 blockNumber) external;

    /// @notice The randomness for `blockNumber`, and whether it can be used.
    /// @param blockNumber The block fixed by the caller.
    /// @return status Pending, Ready or Expired.
    /// @return value The random value when `status` is Ready, zero otherwise.
    function randomnessAt(uint256 blockNumber) external view returns (Status status, bytes32 value);
}
