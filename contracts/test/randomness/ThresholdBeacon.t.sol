// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {IRandomnessSource} from "../../src/interfaces/IRandomnessSource.sol";
import {IThresholdBeacon} from "../../src/interfaces/IThresholdBeacon.sol";
import {BN254} from "../../src/libraries/BN254.sol";
import {ThresholdBeacon} from "../../src/randomness/ThresholdBeacon.sol";
import {BeaconVectors as V} from "./BeaconVectors.sol";

/// @notice Exposes the library's internal functions to the fuzzer.
contract BN254Harness {
    function hashToG1(bytes memory dst, bytes memory message) external view returns (BN254.G1Point memory) {
        return BN254.hashToG1(dst, message);
    }

    function isOnCurve(BN254.G1Point memory point) external pure returns (bool) {
        return BN254.isOnCurve(point);
    }
}

/// @notice The beacon against vectors signed by `trust.core.beacon.bls` (py_ecc): a 2-of-3 group, the
///         partial signatures of its signers and the group signature of block `V.BLOCK`. The
///         vectors are generated, not written by hand: see the header of `BeaconVectors.sol`.
contract ThresholdBeaconTest is Test {
    ThresholdBeacon internal beacon;
    address internal operator1 = makeAddr("operator1");
    address internal operator2 = makeAddr("operator2");
    address internal operator3 = makeAddr("operator3");

    function setUp() public {
        vm.chainId(V.CHAIN_ID);
        BN254.G2Point[] memory shares = new BN254.G2Point[](3);
        shares[0] = BN254.G2Point([V.SHARE_KEY_1_X_IM, V.SHARE_KEY_1_X_RE], [V.SHARE_KEY_1_Y_IM, V.SHARE_KEY_1_Y_RE]);
        shares[1] = BN254.G2Point([V.SHARE_KEY_2_X_IM, V.SHARE_KEY_2_X_RE], [V.SHARE_KEY_2_Y_IM, V.SHARE_KEY_2_Y_RE]);
        shares[2] = BN254.G2Point([V.SHARE_KEY_3_X_IM, V.SHARE_KEY_3_X_RE], [V.SHARE_KEY_3_Y_IM, V.SHARE_KEY_3_Y_RE]);
        address[] memory operators = new address[](3);
        (operators[0], operators[1], operators[2]) = (operator1, operator2, operator3);
        beacon = new ThresholdBeacon(_groupKey(), shares, operators, V.THRESHOLD);
        // The vectors sign for this address: the test contract's first CREATE.
        assertEq(address(beacon), V.BEACON, "the vectors were made for another beacon address");
        vm.roll(V.BLOCK + 1);
    }

    function _groupKey() internal pure returns (BN254.G2Point memory) {
        return BN254.G2Point([V.GROUP_KEY_X_IM, V.GROUP_KEY_X_RE], [V.GROUP_KEY_Y_IM, V.GROUP_KEY_Y_RE]);
    }

    function _signature() internal pure returns (BN254.G1Point memory) {
        return BN254.G1Point(V.SIGNATURE_X, V.SIGNATURE_Y);
    }

    // ------------------------------------------------------------------ hash to G1

    function test_messagePoint_matchesPython() public view {
        BN254.G1Point memory point = beacon.messagePoint(V.BLOCK);
        assertEq(point.x, V.MESSAGE_POINT_X);
        assertEq(point.y, V.MESSAGE_POINT_Y);
        assertEq(beacon.message(V.BLOCK), abi.encode(V.CHAIN_ID, V.BEACON, V.BLOCK));
    }

    function testFuzz_hashToG1_isOnCurve(bytes memory message) public {
        BN254Harness harness = new BN254Harness();
        BN254.G1Point memory point = harness.hashToG1("fuzz", message);
        assertTrue(harness.isOnCurve(point));
    }

    function testFuzz_hashToG1_dependsOnDomain(bytes memory message) public {
        BN254Harness harness = new BN254Harness();
        assertNotEq(harness.hashToG1("a", message).x, harness.hashToG1("b", message).x);
    }

    // ------------------------------------------------------------------ publish

    function test_randomnessAt_pendingBeforePublication() public view {
        (IRandomnessSource.Status status, bytes32 value) = beacon.randomnessAt(V.BLOCK);
        assertEq(uint8(status), uint8(IRandomnessSource.Status.Pending));
        assertEq(value, bytes32(0));
        (status,) = beacon.randomnessAt(block.number);
        assertEq(uint8(status), uint8(IRandomnessSource.Status.Pending));
    }

    function test_publish_validAggregateBecomesReady() public {
        vm.expectEmit(address(beacon));
        emit IThresholdBeacon.RandomnessPublished(V.BLOCK, V.VALUE, V.SIGNATURE_X, V.SIGNATURE_Y, address(this));
        beacon.publish(V.BLOCK, _signature());
        (IRandomnessSource.Status status, bytes32 value) = beacon.randomnessAt(V.BLOCK);
        assertEq(uint8(status), uint8(IRandomnessSource.Status.Ready));
        assertEq(value, keccak256(abi.encode(V.SIGNATURE_X, V.SIGNATURE_Y)));
        assertEq(value, V.VALUE);
    }

    function test_publish_gas() public {
        beacon.publish(V.BLOCK, _signature());
        // The figure quoted in IThresholdBeacon.publish and docs/protocol.md.
        vm.snapshotGasLastCall("ThresholdBeacon", "publish");
    }

    function test_publish_revertsForAPartialSignature() public {
        vm.expectRevert(
            abi.encodeWithSelector(
                IThresholdBeacon.BeaconInvalidSignature.selector, V.BLOCK, V.PARTIAL_1_X, V.PARTIAL_1_Y
            )
        );
        beacon.publish(V.BLOCK, BN254.G1Point(V.PARTIAL_1_X, V.PARTIAL_1_Y));
    }

    function test_publish_revertsForTheSignatureOfAnotherBlock() public {
        vm.expectRevert(
            abi.encodeWithSelector(
                IThresholdBeacon.BeaconInvalidSignature.selector,
                V.BLOCK,
                V.SIGNATURE_NEXT_BLOCK_X,
                V.SIGNATURE_NEXT_BLOCK_Y
            )
        );
        beacon.publish(V.BLOCK, BN254.G1Point(V.SIGNATURE_NEXT_BLOCK_X, V.SIGNATURE_NEXT_BLOCK_Y));
    }

    function test_publish_revertsForTheSignatureOfAnotherChain() public {
        vm.expectRevert(
            abi.encodeWithSelector(
                IThresholdBeacon.BeaconInvalidSignature.selector,
                V.BLOCK,
                V.SIGNATURE_OTHER_CHAIN_X,
                V.SIGNATURE_OTHER_CHAIN_Y
            )
        );
        beacon.publish(V.BLOCK, BN254.G1Point(V.SIGNATURE_OTHER_CHAIN_X, V.SIGNATURE_OTHER_CHAIN_Y));
    }

    function test_publish_revertsForTheSignatureOfAnotherBeacon() public {
        vm.expectRevert(
            abi.encodeWithSelector(
                IThresholdBeacon.BeaconInvalidSignature.selector,
                V.BLOCK,
                V.SIGNATURE_OTHER_BEACON_X,
                V.SIGNATURE_OTHER_BEACON_Y
            )
        );
        beacon.publish(V.BLOCK, BN254.G1Point(V.SIGNATURE_OTHER_BEACON_X, V.SIGNATURE_OTHER_BEACON_Y));
    }

    function test_publish_revertsForAPointNotOnTheCurve() public {
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconPointNotOnCurve.selector, 1, 3));
        beacon.publish(V.BLOCK, BN254.G1Point(1, 3));
        // Coordinates at or above p are refused too (x + p names the same residue).
        vm.expectRevert(
            abi.encodeWithSelector(
                IThresholdBeacon.BeaconPointNotOnCurve.selector, V.SIGNATURE_X + BN254.P, V.SIGNATURE_Y
            )
        );
        beacon.publish(V.BLOCK, BN254.G1Point(V.SIGNATURE_X + BN254.P, V.SIGNATURE_Y));
        // The point at infinity.
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconPointNotOnCurve.selector, 0, 0));
        beacon.publish(V.BLOCK, BN254.G1Point(0, 0));
    }

    function test_publish_revertsForABlockNotYetMined() public {
        vm.roll(V.BLOCK);
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconBlockNotMined.selector, V.BLOCK, V.BLOCK));
        beacon.publish(V.BLOCK, _signature());
    }

    function test_publish_revertsForAnExpiredBlock() public {
        vm.roll(V.BLOCK + 257);
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconBlockExpired.selector, V.BLOCK, V.BLOCK + 257));
        beacon.publish(V.BLOCK, _signature());
        // One block earlier it is the last block of the window.
        vm.roll(V.BLOCK + 256);
        beacon.publish(V.BLOCK, _signature());
    }

    function test_publish_republicationIsRefused() public {
        beacon.publish(V.BLOCK, _signature());
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconAlreadyPublished.selector, V.BLOCK, V.VALUE));
        beacon.publish(V.BLOCK, _signature());
    }

    function test_randomnessAt_expiredAfter256Blocks() public {
        beacon.publish(V.BLOCK, _signature());
        vm.roll(V.BLOCK + 256);
        (IRandomnessSource.Status status,) = beacon.randomnessAt(V.BLOCK);
        assertEq(uint8(status), uint8(IRandomnessSource.Status.Ready));
        vm.roll(V.BLOCK + 257);
        bytes32 value;
        (status, value) = beacon.randomnessAt(V.BLOCK);
        assertEq(uint8(status), uint8(IRandomnessSource.Status.Expired));
        assertEq(value, bytes32(0));
        // Unpublished blocks expire the same way: the consumer then fixes a fresh block.
        (status,) = beacon.randomnessAt(V.BLOCK - 1);
        assertEq(uint8(status), uint8(IRandomnessSource.Status.Expired));
    }

    // ------------------------------------------------------------------ shares

    function test_verifyShare_acceptsEachSignersPartialOnly() public view {
        assertTrue(beacon.verifyShare(V.BLOCK, 1, BN254.G1Point(V.PARTIAL_1_X, V.PARTIAL_1_Y)));
        assertTrue(beacon.verifyShare(V.BLOCK, 2, BN254.G1Point(V.PARTIAL_2_X, V.PARTIAL_2_Y)));
        assertTrue(beacon.verifyShare(V.BLOCK, 3, BN254.G1Point(V.PARTIAL_3_X, V.PARTIAL_3_Y)));
        assertFalse(beacon.verifyShare(V.BLOCK, 2, BN254.G1Point(V.PARTIAL_1_X, V.PARTIAL_1_Y)));
        assertFalse(beacon.verifyShare(V.BLOCK + 1, 1, BN254.G1Point(V.PARTIAL_1_X, V.PARTIAL_1_Y)));
        assertFalse(beacon.verifyShare(V.BLOCK, 1, BN254.G1Point(1, 3)));
    }

    function test_submitShare_emitsForTheOperator() public {
        vm.expectEmit(address(beacon));
        emit IThresholdBeacon.ShareSubmitted(V.BLOCK, 2, V.PARTIAL_2_X, V.PARTIAL_2_Y);
        vm.prank(operator2);
        beacon.submitShare(V.BLOCK, 2, BN254.G1Point(V.PARTIAL_2_X, V.PARTIAL_2_Y));
        vm.snapshotGasLastCall("ThresholdBeacon", "submitShare");
    }

    function test_submitShare_revertsForAnotherAccount() public {
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconNotOperator.selector, 2, operator1, operator2));
        vm.prank(operator1);
        beacon.submitShare(V.BLOCK, 2, BN254.G1Point(V.PARTIAL_2_X, V.PARTIAL_2_Y));
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconUnknownSigner.selector, 4, 3));
        beacon.submitShare(V.BLOCK, 4, BN254.G1Point(V.PARTIAL_2_X, V.PARTIAL_2_Y));
    }

    function test_submitShare_revertsBeforeTheBlockIsMinedAndAfterPublication() public {
        vm.prank(operator1);
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconBlockNotMined.selector, V.BLOCK + 1, V.BLOCK + 1));
        beacon.submitShare(V.BLOCK + 1, 1, BN254.G1Point(V.PARTIAL_1_X, V.PARTIAL_1_Y));
        beacon.publish(V.BLOCK, _signature());
        vm.prank(operator1);
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconAlreadyPublished.selector, V.BLOCK, V.VALUE));
        beacon.submitShare(V.BLOCK, 1, BN254.G1Point(V.PARTIAL_1_X, V.PARTIAL_1_Y));
    }

    // ------------------------------------------------------------------ requests

    function test_request_emitsForAFutureBlock() public {
        vm.expectEmit(address(beacon));
        emit IThresholdBeacon.RandomnessRequested(block.number + 2, address(this));
        beacon.request(block.number + 2);
        // The current block is not mined yet: it can still be requested.
        beacon.request(block.number);
    }

    function test_request_revertsForAMinedBlock() public {
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconBlockAlreadyMined.selector, V.BLOCK, V.BLOCK + 1));
        beacon.request(V.BLOCK);
    }

    // ------------------------------------------------------------------ construction

    function test_constructor_rejectsBadThresholdsAndKeys() public {
        BN254.G2Point[] memory shares = new BN254.G2Point[](1);
        shares[0] = _groupKey();
        address[] memory operators = new address[](1);
        operators[0] = operator1;
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconInvalidThreshold.selector, 2, 1));
        new ThresholdBeacon(_groupKey(), shares, operators, 2);
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconInvalidThreshold.selector, 0, 1));
        new ThresholdBeacon(_groupKey(), shares, operators, 0);
        BN254.G2Point memory offTwist = _groupKey();
        offTwist.y[1] += 1;
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconInvalidPublicKey.selector, 0));
        new ThresholdBeacon(offTwist, shares, operators, 1);
        shares[0] = offTwist;
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconInvalidPublicKey.selector, 1));
        new ThresholdBeacon(_groupKey(), shares, operators, 1);
        shares[0] = _groupKey();
        operators[0] = address(0);
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconZeroOperator.selector, 1));
        new ThresholdBeacon(_groupKey(), shares, operators, 1);
        vm.expectRevert(abi.encodeWithSelector(IThresholdBeacon.BeaconSignerCountMismatch.selector, 1, 0));
        new ThresholdBeacon(_groupKey(), shares, new address[](0), 1);
    }

    function test_views_reportTheConstruction() public view {
        assertEq(beacon.threshold(), 2);
        assertEq(beacon.signerCount(), 3);
        BN254.G2Point memory key = beacon.groupKey();
        assertEq(key.x[0], V.GROUP_KEY_X_IM);
        assertEq(key.y[1], V.GROUP_KEY_Y_RE);
        (BN254.G2Point memory share, address operator) = beacon.signer(3);
        assertEq(share.x[1], V.SHARE_KEY_3_X_RE);
        assertEq(operator, operator3);
    }
}

