// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IRandomnessSource} from "./IRandomnessSource.sol";
import {BN254} from "../libraries/BN254.sol";

/// @title IThresholdBeacon
/// @notice A t-of-n threshold BLS randomness beacon on BN254 (drand-style) behind `IRandomnessSource`.
/// @dev The value of block `b` is keccak256 of the group's BLS signature on
///      `abi.encode(block.chainid, address(beacon), b)`. A threshold BLS signature is unique for a
///      message and a group key, so whoever publishes it cannot bias it, and it can be computed only
///      from t signers' partial signatures: fewer than t signers (or the provider, or the block
///      producer, who are not signers) can neither predict nor choose it. Signers sign `b` only
///      once it is mined, and the audit contract fixes `b` only once the draw's inputs are fixed.
///
///      Flow: the consumer calls `request(b)` (event `RandomnessRequested`); once `b` is mined each
///      signer computes its partial signature and posts it with `submitShare` (an event only, the
///      chain is the signers' channel: no trusted aggregator); any party that sees t partials that
///      pass `verifyShare` interpolates the group signature and calls `publish`, which verifies it
///      against the group key with the pairing precompile and stores keccak256 of it.
///      Liveness: if fewer than t signers answer within 256 blocks of `b`, `b` becomes Expired and
///      the consumer fixes a fresh block.
interface IThresholdBeacon is IRandomnessSource {
    // ------------------------------------------------------------------ errors

    /// @notice Construction: `threshold` is 0 or above the number of signers.
    error BeaconInvalidThreshold(uint256 threshold, uint256 signerCount);
    /// @notice Construction: the share keys and operators are not one per signer (or too many).
    error BeaconSignerCountMismatch(uint256 shareKeys, uint256 operators);
    /// @notice Construction: a public key is not a point of G2 (index 0 is the group key).
    error BeaconInvalidPublicKey(uint256 index);
    /// @notice Construction: an operator is the zero address.
    error BeaconZeroOperator(uint256 index);
    /// @notice `request` for a block that is already mined: its randomness could be known already.
    error BeaconBlockAlreadyMined(uint256 blockNumber, uint256 currentBlock);
    /// @notice A share or a signature for a block that is not mined yet.
    error BeaconBlockNotMined(uint256 blockNumber, uint256 currentBlock);
    /// @notice A share or a signature for a block more than 256 blocks old.
    error BeaconBlockExpired(uint256 blockNumber, uint256 currentBlock);
    /// @notice The block's randomness is already published (a valid signature is unique).
    error BeaconAlreadyPublished(uint256 blockNumber, bytes32 value);
    /// @notice A signer index outside 1..n.
    error BeaconUnknownSigner(uint256 index, uint256 signerCount);
    /// @notice `submitShare` for signer `index` from an account that is not its operator.
    error BeaconNotOperator(uint256 index, address caller, address operator);
    /// @notice A point that is not on G1 (coordinates at or above p, or not on y^2 = x^3 + 3).
    error BeaconPointNotOnCurve(uint256 x, uint256 y);
    /// @notice The signature does not verify under the group key for this block's message.
    error BeaconInvalidSignature(uint256 blockNumber, uint256 x, uint256 y);

    // ------------------------------------------------------------------ events

    /// @notice `requester` fixed `blockNumber` and wants its randomness.
    event RandomnessRequested(uint256 indexed blockNumber, address indexed requester);
    /// @notice Signer `index` posted its partial signature (x, y) for `blockNumber` (not verified on
    ///         chain: aggregators check it with `verifyShare`).
    event ShareSubmitted(uint256 indexed blockNumber, uint256 indexed index, uint256 x, uint256 y);
    /// @notice The group signature (x, y) for `blockNumber` was verified; `value` = keccak256(x, y).
    event RandomnessPublished(
        uint256 indexed blockNumber, bytes32 value, uint256 x, uint256 y, address indexed publisher
    );

    // ------------------------------------------------------------------ signers

    /// @notice Posts signer `index`'s partial signature of `blockNumber`'s message.
    /// @dev Only the operator of signer `index`; only for a mined block, not expired, not published.
    ///      Emits `ShareSubmitted`; stores nothing (9,400 gas of execution, 31,700 as a transaction).
    /// @param blockNumber The requested block.
    /// @param index The signer's index, 1..n (its Shamir x-coordinate).
    /// @param share The partial signature share_i * H(message), a point of G1.
    function submitShare(uint256 blockNumber, uint256 index, BN254.G1Point calldata share) external;

    /// @notice Publishes the group signature of `blockNumber`'s message; its keccak256 becomes the
    ///         block's randomness.
    /// @dev Anyone may call it. Only for a mined block, not expired, not published. Reverts
    ///      `BeaconPointNotOnCurve` or `BeaconInvalidSignature` for a bad signature. Emits
    ///      `RandomnessPublished`. Gas: 146,000 of execution (`ThresholdBeacon.t.sol`,
    ///      `test_publish_gas`), 171,000 to 182,000 as a transaction (the hash to G1 takes one to
    ///      a few tries, by block): 113,000 for the pairing, the rest hashing to G1, calldata and
    ///      the stored value.
    /// @param blockNumber The requested block.
    /// @param signature sigma = sk * H(message), a point of G1.
    function publish(uint256 blockNumber, BN254.G1Point calldata signature) external;

    // ------------------------------------------------------------------ views

    /// @notice Whether `share` is signer `index`'s valid partial signature of `blockNumber`'s
    ///         message (a pairing check under its share key; for aggregators, by `eth_call`).
    function verifyShare(uint256 blockNumber, uint256 index, BN254.G1Point calldata share) external view returns (bool);

    /// @notice The bytes signed for `blockNumber`: abi.encode(block.chainid, address(this), blockNumber).
    function message(uint256 blockNumber) external view returns (bytes memory);

    /// @notice The message of `blockNumber` hashed to G1 (what signers multiply by their share).
    function messagePoint(uint256 blockNumber) external view returns (BN254.G1Point memory);

    /// @notice The group public key (G2, EIP-197 encoding), fixed at construction.
    function groupKey() external view returns (BN254.G2Point memory);

    /// @notice Signer `index`'s public key share (G2) and operator account.
    function signer(uint256 index) external view returns (BN254.G2Point memory shareKey, address operator);

    /// @notice t: the number of partial signatures that make a group signature.
    function threshold() external view returns (uint256);

    /// @notice n: the number of signers.
    function signerCount() external view returns (uint256);
}
