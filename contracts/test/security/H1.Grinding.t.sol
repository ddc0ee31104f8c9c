// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IRandomnessSource} from "../../src/interfaces/IRandomnessSource.sol";

/// @notice A randomness source whose value for a block exists only once its producer publishes it,
///         after the block was requested: a beacon's signers sign a requested block once it is
///         mined, so nobody (the provider included) can read a value before the request.
contract PublishedBeacon is IRandomnessSource {
    mapping(uint256 blockNumber => bool) public requested;
    mapping(uint256 blockNumber => bytes32) internal _values;
    uint256 public requests;

    function request(uint256 blockNumber) external {
        if (!requested[blockNumber]) ++requests;
        requested[blockNumber] = true;
    }

    /// @dev The producer publishes a requested, mined block's value.
    function publish(uint256 blockNumber, bytes32 value) external {
        require(requested[blockNumber] && blockNumber < block.number, "not requested or not mined");
        _values[blockNumber] = value;
    }

    function randomnessAt(uint256 blockNumber) external view returns (Status, bytes32) {
        bytes32 value = _values[blockNumber];
        return value == bytes32(0) ? (Status.Pending, bytes32(0)) : (Status.Ready, value);
    }
}

/// @notice Issue H1, committee grinding by the provider. The attack: a provider holding 23% of the
///         tier-1 stake in three accounts creates a session, waits until its randomness block is
///         public, computes the committee that registering the segments would draw, and cancels for
///         a full refund until its own accounts hold 2 of 3 seats.
///         On 96c3011 (the block fixed at `createSession`, segments registered afterwards, a full
///         refund on cancel) the same attack with these numbers (10 honest members and 3 of the
///         provider's, 1,000 tokens each: 23.1% of the weight) re-rolled 21 sessions for free
///         (each cancelled with a full refund) and seated its accounts as 2 of 3 on the 22nd,
///         paying one fee in all.
///         The defence asserted here: the randomness block is fixed, and requested from the source,
///         only when the last segment is registered; before that there is no seed to read, so a
///         cancel re-rolls nothing, and after it the session can be neither cancelled nor extended:
///         every re-roll is a new session with a fee that is never refunded.
contract H1GrindingTest is TRUSTAuditBase {
    uint256 internal constant ATTEMPTS = 46;

    PublishedBeacon internal beacon;
    address[] internal honest;
    address[] internal sybils;

    function setUp() public override {
        super.setUp();
        honest = addAuditors("honest-", 1, 10, 1_000e18);
        sybils = addAuditors("provider-account-", 1, 3, 1_000e18); // 3,000 of 13,000: 23.1%
        beacon = new PublishedBeacon();
        audit.setRandomnessSource(beacon);
    }

    function providerSeats(uint256 id) internal view returns (uint256 n) {
        address[] memory members = audit.committee(id, 0);
        for (uint256 i; i < members.length; ++i) {
            if (contains(sybils, members[i])) ++n;
        }
    }

    /// @notice The old loop, step by step: create, try to learn the committee, cancel. The only
    ///         way to learn it is to register the segments (which opens the session); even then the
    ///         value does not exist until the beacon produces it for the block just fixed. Cancelling
    ///         before opening refunds the fee and leaves no randomness requested at all.
    function test_H1_cancellingBeforeOpeningRerollsNothing() public {
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(1, 1);
        uint256 fee = audit.minimumFee(segs);
        uint256 balance = provider.balance;
        for (uint256 i; i < ATTEMPTS; ++i) {
            vm.prank(provider);
            uint256 id = audit.createSession{value: fee}(keccak256(abi.encode("trace", i)), 1);
            assertEq(audit.session(id).randomnessBlock, 0, "no randomness block while registering");
            vm.roll(block.number + 5);
            vm.expectRevert(
                abi.encodeWithSelector(
                    ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Registering
                )
            );
            audit.assignAuditors(id, 0);

            // The provider's simulation of registering: the block is fixed only now, and even
            // once it is mined nothing can be drawn before the beacon produces its value.
            uint256 snapshot = vm.snapshotState();
            vm.prank(provider);
            audit.registerSegments(id, segs);
            uint256 b = audit.session(id).randomnessBlock;
            assertEq(b, block.number + 2, "fixed when the last segment is registered");
            vm.roll(b + 1);
            vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, b));
            audit.assignAuditors(id, 0);
            vm.revertToStateAndDelete(snapshot);

            vm.prank(provider);
            audit.cancelSession(id);
        }
        assertEq(beacon.requests(), 0, "a cancelled session never asked for randomness");
        assertEq(provider.balance, balance, "cancelling is free, and it bought nothing");
    }

    /// @notice Once open (the randomness block fixed and requested), the session is final: the
    ///         provider sees the committee after the beacon publishes, and can neither cancel nor
    ///         add segments. Re-rolling means opening another session, for another fee.
    function test_H1_anOpenedSessionCanNeitherBeCancelledNorExtended() public {
        vm.prank(provider);
        uint256 id = audit.createSession(keccak256("trace"), 2);
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(1, 1));
        vm.prank(provider);
        audit.registerSegments{value: 1 ether}(id, uniformSegments(1, 1)); // opens
        uint256 b = audit.session(id).randomnessBlock;
        assertTrue(beacon.requested(b), "requested when it opened");
        vm.roll(b + 1);
        beacon.publish(b, keccak256("the beacon's value"));
        audit.assignAuditorsBatch(id, ids(0, 1));

        bytes memory notOpen =
            abi.encodeWithSelector(ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Open);
        vm.expectRevert(notOpen);
        vm.prank(provider);
        audit.cancelSession(id);
        vm.expectRevert(notOpen);
        vm.prank(provider);
        audit.registerSegments(id, uniformSegments(1, 1));
        assertEq(address(audit).balance, 1 ether, "the fee stays with the session");
    }

    /// @notice What grinding costs now: the provider opens sessions (each with a fresh block the
    ///         beacon answers after it is fixed) hoping its accounts hold 2 of 3 seats. Every attempt
    ///         is a session it paid for and cannot cancel: the fee of each is spent, whether it won
    ///         the seats or not, and it wins about as often as its stake share makes it (about one
    ///         session in seven at 23%).
    function test_H1_grindingCostsAFeePerAttempt() public {
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(1, 1);
        uint256 fee = audit.minimumFee(segs);
        uint256 balance = provider.balance;
        uint256 attempts = 20;
        uint256 won;
        for (uint256 i; i < attempts; ++i) {
            vm.prank(provider);
            uint256 id = audit.createSessionWithSegments{value: fee}(keccak256(abi.encode("trace", i)), segs);
            uint256 b = audit.session(id).randomnessBlock;
            vm.roll(b + 1);
            beacon.publish(b, keccak256(abi.encode("beacon", b, i)));
            audit.assignAuditors(id, 0);
            if (providerSeats(id) >= 2) ++won;
            vm.expectRevert(
                abi.encodeWithSelector(ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Open)
            );
            vm.prank(provider);
            audit.cancelSession(id);
        }
        assertLt(won, attempts / 2, "no better than its stake share");
        assertEq(provider.balance, balance - attempts * fee, "every attempt paid its fee");
        assertEq(address(audit).balance, attempts * fee, "no fee refunded");
        emit log_named_uint("sessions of 20 in which the provider held 2 of 3 seats", won);
    }
}
