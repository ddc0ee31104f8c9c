// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IRandomnessSource} from "../interfaces/IRandomnessSource.sol";
import {IThresholdBeacon} from "../interfaces/IThresholdBeacon.sol";
import {BN254} from "../libraries/BN254.sol";

/// @title ThresholdBeacon
/// @notice A t-of-n threshold BLS randomness beacon on BN254: the randomness of block `b` is
///         keccak256 of the group's unique BLS signature on (chain id, this contract, b), verified
///         on chain with the pairing precompile. See `IThresholdBeacon` for the flow and the threat
///         model, and `docs/protocol.md` ("Randomness").
/// @dev The group key, the share keys and the operators are fixed at construction (immutable or
///      written once): rotating them means deploying a new beacon and pointing the audit contract at
///      it with `setRandomnessSource`, through governance. Nothing here is owned or upgradeable, so
///      no one can swap the key under a pending request.
///      Storage: one slot per published block (`_values`), plus the share keys and operators
///      written by the constructor.
contract ThresholdBeacon is IThresholdBeacon {
    using BN254 for BN254.G1Point;

    /// @dev The same window as BLOCKHASH, so that the audit contract's draw window (and the
    ///      registry's stake history it reads) means the same whatever the source.
    uint256 private constant _WINDOW = 256;
    /// @dev Signer indices are Shamir x-coordinates 1..n; 255 keeps off-chain interpolation small.
    uint256 private constant _MAX_SIGNERS = 255;
    /// @dev The domain separation tag of hash-to-G1 (`trust.core.beacon.bls.DST`).
    bytes private constant _DST = "TRUST-BEACON-V1:BN254G1:keccak256:try-and-increment";

    /// @inheritdoc IThresholdBeacon
    uint256 public immutable threshold;
    /// @inheritdoc IThresholdBeacon
    uint256 public immutable signerCount;

    uint256 private immutable _groupXIm;
    uint256 private immutable _groupXRe;
    uint256 private immutable _groupYIm;
    uint256 private immutable _groupYRe;

    /// @dev Index i - 1 holds signer i's public key share and operator.
    BN254.G2Point[] private _shareKeys;
    address[] private _operators;

    /// @dev keccak256 of the verified group signature; zero while unpublished.
    mapping(uint256 blockNumber => bytes32 value) private _values;

    /// @param groupKey_ The group public key (G2): the secret at x = 0 of the signers' polynomial.
    /// @param shareKeys Signer i's public key share at index i - 1 (for `verifyShare`).
    /// @param operators Signer i's account at index i - 1 (the only one that may post its shares).
    /// @param threshold_ t, 1..n.
    /// @dev Checks every key with the pairing precompile (about 113,000 gas each): a key off the
    ///      twist or outside the subgroup would make every later check fail.
    constructor(
        BN254.G2Point memory groupKey_,
        BN254.G2Point[] memory shareKeys,
        address[] memory operators,
        uint256 threshold_
    ) {
        uint256 n = shareKeys.length;
        if (n != operators.length || n == 0 || n > _MAX_SIGNERS) {
            revert BeaconSignerCountMismatch(n, operators.length);
        }
        if (threshold_ == 0 || threshold_ > n) revert BeaconInvalidThreshold(threshold_, n);
        if (!BN254.isValidG2(groupKey_)) revert BeaconInvalidPublicKey(0);
        for (uint256 i = 0; i < n; ++i) {
            if (!BN254.isValidG2(shareKeys[i])) revert BeaconInvalidPublicKey(i + 1);
            if (operators[i] == address(0)) revert BeaconZeroOperator(i + 1);
            _shareKeys.push(shareKeys[i]);
            _operators.push(operators[i]);
        }
        threshold = threshold_;
        signerCount = n;
        _groupXIm = groupKey_.x[0];
        _groupXRe = groupKey_.x[1];
        _groupYIm = groupKey_.y[0];
        _groupYRe = groupKey_.y[1];
    }

    // ------------------------------------------------------------------ requests

    /// @inheritdoc IRandomnessSource
    /// @dev Anyone may call it: it is a signal and changes nothing the value depends on. A block
    ///      already mined is refused, since a signer could have signed it before anyone asked.
    ///      Signers answer only the requesters they serve (the audit contract), so a stranger's
    ///      requests cost them nothing. Emits `RandomnessRequested`.
    function request(uint256 blockNumber) external {
        if (blockNumber < block.number) revert BeaconBlockAlreadyMined(blockNumber, block.number);
        emit RandomnessRequested(blockNumber, msg.sender);
    }

    /// @inheritdoc IThresholdBeacon
    function submitShare(uint256 blockNumber, uint256 index, BN254.G1Point calldata share) external {
        address operator = _operator(index);
        if (msg.sender != operator) revert BeaconNotOperator(index, msg.sender, operator);
        _requireOpen(blockNumber);
        emit ShareSubmitted(blockNumber, index, share.x, share.y);
    }

    /// @inheritdoc IThresholdBeacon
    function publish(uint256 blockNumber, BN254.G1Point calldata signature) external {
        _requireOpen(blockNumber);
        BN254.G1Point memory sigma = signature;
        if (!sigma.isOnCurve()) revert BeaconPointNotOnCurve(sigma.x, sigma.y);
        if (!BN254.verify(groupKey(), _messagePoint(blockNumber), sigma)) {
            revert BeaconInvalidSignature(blockNumber, sigma.x, sigma.y);
        }
        bytes32 value = keccak256(abi.encode(sigma.x, sigma.y));
        _values[blockNumber] = value;
        emit RandomnessPublished(blockNumber, value, sigma.x, sigma.y, msg.sender);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IRandomnessSource
    function randomnessAt(uint256 blockNumber) external view returns (Status status, bytes32 value) {
        if (blockNumber >= block.number) return (Status.Pending, bytes32(0));
        if (block.number - blockNumber > _WINDOW) return (Status.Expired, bytes32(0));
        value = _values[blockNumber];
        if (value == bytes32(0)) return (Status.Pending, bytes32(0));
        return (Status.Ready, value);
    }

    /// @inheritdoc IThresholdBeacon
    function verifyShare(uint256 blockNumber, uint256 index, BN254.G1Point calldata share)
        external
        view
        returns (bool)
    {
        BN254.G2Point memory key = _shareKeys[_index(index)];
        BN254.G1Point memory point = share;
        return point.isOnCurve() && BN254.verify(key, _messagePoint(blockNumber), point);
    }

    /// @inheritdoc IThresholdBeacon
    function message(uint256 blockNumber) public view returns (bytes memory) {
        return abi.encode(block.chainid, address(this), blockNumber);
    }

    /// @inheritdoc IThresholdBeacon
    function messagePoint(uint256 blockNumber) external view returns (BN254.G1Point memory) {
        return _messagePoint(blockNumber);
    }

    /// @inheritdoc IThresholdBeacon
    function groupKey() public view returns (BN254.G2Point memory) {
        return BN254.G2Point([_groupXIm, _groupXRe], [_groupYIm, _groupYRe]);
    }

    /// @inheritdoc IThresholdBeacon
    function signer(uint256 index) external view returns (BN254.G2Point memory shareKey, address operator) {
        uint256 i = _index(index);
        return (_shareKeys[i], _operators[i]);
    }

    // ------------------------------------------------------------------ internals

    function _messagePoint(uint256 blockNumber) private view returns (BN254.G1Point memory) {
        return BN254.hashToG1(_DST, message(blockNumber));
    }

    /// @dev Shares and signatures are taken only for a mined block (never signed earlier), within
    ///      the window, and only until one signature is published.
    function _requireOpen(uint256 blockNumber) private view {
        if (blockNumber >= block.number) revert BeaconBlockNotMined(blockNumber, block.number);
        if (block.number - blockNumber > _WINDOW) revert BeaconBlockExpired(blockNumber, block.number);
        bytes32 value = _values[blockNumber];
        if (value != bytes32(0)) revert BeaconAlreadyPublished(blockNumber, value);
    }

    function _index(uint256 index) private view returns (uint256) {
        if (index == 0 || index > signerCount) revert BeaconUnknownSigner(index, signerCount);
        return index - 1;
    }

    function _operator(uint256 index) private view returns (address) {
        return _operators[_index(index)];
    }
}
