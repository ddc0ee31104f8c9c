// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC1967Proxy} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol";
import {ERC1967Utils} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Utils.sol";
import {IERC1967} from "@openzeppelin/contracts/interfaces/IERC1967.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";
import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";

import {TRUSTAuditBase} from "./TRUSTBase.sol";
import {TRUSTAudit} from "../src/TRUSTAudit.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {IProtocolParams} from "../src/interfaces/IProtocolParams.sol";
import {IRandomnessSource} from "../src/interfaces/IRandomnessSource.sol";
import {BlockhashRandomness} from "../src/randomness/BlockhashRandomness.sol";
import {Params} from "../src/types/Params.sol";
import {ParamsLib} from "../src/libraries/ParamsLib.sol";

/// @notice A randomness source that answers with a fixed status and value, standing in for a VRF
///         (the interface exists so that one can replace `BlockhashRandomness`).
contract FixedRandomness is IRandomnessSource {
    Status internal _status;
    bytes32 internal _value;

    constructor(Status status_, bytes32 value_) {
        (_status, _value) = (status_, value_);
    }

    function request(uint256) external {}

    function randomnessAt(uint256) external view returns (Status, bytes32) {
        return (_status, _value);
    }
}

/// @notice The fee split, reward claims per aligned seat and withdrawals (paper section 3.3.2: R
///         per aligned seat), governance actions (slashAuditor, setRandomnessSource, UUPS upgrades) and the read-only views.
contract TRUSTAuditRewardsTest is TRUSTAuditBase {
    uint256 internal constant PENALTY = 8e18;

    address internal stranger = makeAddr("stranger");
    address internal a;
    address internal b;
    address internal c;

    function setUp() public override {
        super.setUp();
        // Exactly three tier-1 auditors: every tier-1 committee seats all of them.
        a = addAuditor("a", 1, 1_000e18);
        b = addAuditor("b", 1, 1_000e18);
        c = addAuditor("c", 1, 2_000e18);
    }

    function openWithFee(ITRUSTAudit.SegmentInput[] memory segs, uint256 fee) internal returns (uint256 id) {
        vm.prank(provider);
        id = audit.createSessionWithSegments{value: fee}(keccak256("trace"), segs);
    }

    /// @notice A finalized one-segment session where a, b and c voted `va`, `vb`, `vc` (all revealed).
    function finalizedSingle(uint256 fee, bool va, bool vb, bool vc) internal returns (uint256 id) {
        id = openWithFee(uniformSegments(1, 1), fee);
        drawAll(id);
        castVotes(id, 0, addrs(a, b, c), bools(va, vb, vc));
        audit.finalizeSegment(id, 0);
        audit.finalizeTrace(id);
    }

    // ------------------------------------------------------------------ distributeRewards

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_distributeRewards_splitsTheFee70_15_10_5() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        uint256 registryBefore = address(registry).balance;
        // 0.7 ether over 3 aligned seats: 233_333_333_333_333_333 each, 1 wei of dust to the treasury.
        uint256 perSeat = 233_333_333_333_333_333;
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsDistributed(id, 3 * perSeat, perSeat, 0.15 ether + 1, 0.1 ether, 0.05 ether);
        audit.distributeRewards(id);
        vm.snapshotGasLastCall("TRUSTAudit", "distributeRewards_3seats");

        // Only the treasury and the insurance fund are credited; auditors claim their seats.
        assertEq(audit.claimable(treasury), 0.15 ether + 1);
        assertEq(audit.claimable(insurance), 0.05 ether);
        assertEq(audit.claimable(a), 0);
        assertEq(audit.claimable(b), 0);
        assertEq(audit.claimable(c), 0);
        assertEq(audit.claimable(provider), 0);
        assertEq(address(registry).balance - registryBefore, 0.1 ether);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Distributed));
        // The contract holds the credited balances and every seat's reward until it is claimed.
        assertEq(address(audit).balance, 0.15 ether + 1 + 0.05 ether + 3 * perSeat);
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), perSeat);
        assertEq(claimAs(b, id, seatRef(0, seatIndexOf(id, 0, b))), perSeat);
        assertEq(claimAs(c, id, seatRef(0, seatIndexOf(id, 0, c))), perSeat);
        assertEq(address(audit).balance, 0.15 ether + 1 + 0.05 ether);
    }

    function test_distributeRewards_minimumFeePaysRPerSeat() public {
        uint256 fee = audit.minimumFee(uniformSegments(1, 1));
        uint256 id = finalizedSingle(fee, true, true, true);
        audit.distributeRewards(id);
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), 0.0006 ether); // R
        assertEq(claimAs(c, id, seatRef(0, seatIndexOf(id, 0, c))), 0.0006 ether);
    }

    function test_distributeRewards_paysPerAlignedSeat() public {
        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        drawAll(id);
        commitAll(id, 0, true);
        commitAs(a, id, 1, true);
        commitAs(b, id, 1, true);
        commitAs(c, id, 1, false); // c holds 1/2 of the stake: Pass 50%, Fail 50%, undecided
        toCommitEnd(id, 0);
        revealAll(id, 0, true);
        revealAs(a, id, 1, true);
        revealAs(b, id, 1, true);
        revealAs(c, id, 1, false);
        audit.finalizeSegment(id, 0);
        audit.finalizeSegment(id, 1); // escalates: its seats are released, not aligned
        assertEq(audit.session(id).alignedSeats, 3);

        // Re-decide segment 1 with tier-2 auditors so the trace can finalize.
        addAuditors("t2-", 2, 7, 2_000e18);
        drawSegment(id, 1);
        voteAll(id, 1, true);
        audit.finalizeSegment(id, 1);
        audit.finalizeTrace(id);
        assertEq(audit.session(id).alignedSeats, 10);

        audit.distributeRewards(id);
        uint256 perSeat = 0.07 ether; // 0.7 ether / 10 seats
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), perSeat);
        assertEq(claimAs(c, id, seatRef(0, seatIndexOf(id, 0, c))), perSeat);
        address[] memory round1 = audit.committee(id, 1);
        assertEq(round1.length, 7);
        for (uint256 i; i < round1.length; ++i) {
            assertEq(claimAs(round1[i], id, seatRef(1, i)), perSeat);
        }
        // The seats a, b and c held in segment 1's first round were released: only the final
        // round is rewarded, and none of its seats is theirs.
        for (uint256 i; i < round1.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 1, i, a));
            vm.prank(a);
            audit.claimRewards(id, seatRef(1, i));
        }
        assertEq(audit.claimable(treasury), 0.15 ether);
        assertEq(address(audit).balance, 0.15 ether + 0.05 ether + perSeat, "b has not claimed yet");
    }

    function test_distributeRewards_auditorWithSeveralAlignedSeatsEarnsEach() public {
        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        drawAll(id);
        commitAll(id, 0, true);
        commitAs(a, id, 1, false);
        commitAs(b, id, 1, false);
        commitAs(c, id, 1, false);
        toCommitEnd(id, 0);
        revealAll(id, 0, true);
        revealAs(a, id, 1, false);
        revealAs(b, id, 1, false);
        revealAs(c, id, 1, false);
        audit.finalizeSegments(id, ids(0, 1));
        audit.finalizeTrace(id);
        audit.distributeRewards(id);
        // Six aligned seats, two each: 0.7 ether / 6 per seat, floored; the dust goes to the treasury.
        uint256 perSeat = uint256(0.7 ether) / 6;
        assertEq(audit.claimable(treasury), 0.15 ether + (0.7 ether - 6 * perSeat));
        ITRUSTAudit.SeatRef[] memory both = seatRefs(0, seatIndexOf(id, 0, a), 1, seatIndexOf(id, 1, a));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsClaimed(id, a, 2, 2 * perSeat);
        vm.prank(a);
        audit.claimRewards(id, both);
        assertEq(alignedSeatsOf(id, b).length, 2);
        assertEq(claimAs(b, id, alignedSeatsOf(id, b)), 2 * perSeat);
        assertEq(claimAs(c, id, alignedSeatsOf(id, c)), 2 * perSeat);
        assertEq(address(audit).balance, audit.claimable(treasury) + audit.claimable(insurance));
    }

    function test_distributeRewards_misalignedAndSilentSeatsEarnNothing() public {
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        drawAll(id);
        // a and c hold 3/4 of the stake and vote Pass; b stays silent.
        castVotes(id, 0, addrs(a, c), bools(true, true));
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        audit.finalizeTrace(id);
        audit.distributeRewards(id);
        uint256 silent = seatIndexOf(id, 0, b);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, silent, b));
        vm.prank(b);
        audit.claimRewards(id, seatRef(0, silent));
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), 0.35 ether);
        assertEq(claimAs(c, id, seatRef(0, seatIndexOf(id, 0, c))), 0.35 ether);

        // Misaligned: a and c (3/4 of the stake) outvote b.
        uint256 id2 = finalizedSingle(1 ether, true, false, true);
        audit.distributeRewards(id2);
        uint256 misaligned = seatIndexOf(id2, 0, b);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id2, 0, misaligned, b));
        vm.prank(b);
        audit.claimRewards(id2, seatRef(0, misaligned));
        assertEq(claimAs(a, id2, seatRef(0, seatIndexOf(id2, 0, a))), 0.35 ether);
    }

    function test_distributeRewards_noAlignedSeatSendsTheAuditorsShareToTheTreasury() public {
        Params memory p = defaultParams();
        p.maxRounds = 1;
        applyParams(p);
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        drawAll(id);
        toRevealEnd(id, 0); // nobody votes: Undetermined
        audit.finalizeSegment(id, 0);
        audit.finalizeTrace(id);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsDistributed(id, 0, 0, 0.85 ether, 0.1 ether, 0.05 ether);
        audit.distributeRewards(id);
        assertEq(audit.claimable(treasury), 0.85 ether);
        assertEq(address(audit).balance, 0.85 ether + 0.05 ether, "nothing is held for seats");
    }

    function test_distributeRewards_revertsBeforeTheTraceIsFinal() public {
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotFinalized.selector, id, ITRUSTAudit.SessionStatus.Open)
        );
        audit.distributeRewards(id);

        vm.prank(provider);
        uint256 id2 = audit.createSession(keccak256("t"), 1);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotFinalized.selector, id2, ITRUSTAudit.SessionStatus.Registering)
        );
        audit.distributeRewards(id2);

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 9));
        audit.distributeRewards(9);
    }

    function test_distributeRewards_revertsWhenCalledTwice() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotFinalized.selector, id, ITRUSTAudit.SessionStatus.Distributed)
        );
        audit.distributeRewards(id);
        assertEq(audit.claimable(treasury), 0.15 ether + 1, "credited once");
        assertEq(audit.claimable(insurance), 0.05 ether, "credited once");
    }

    function test_distributeRewards_stakerShareIsProRataToStake() public {
        address big = addAuditor("big", 2, 6_000e18); // not seated: stakers' share is for all stakers
        uint256 totalStake = registry.totalStake();
        assertEq(totalStake, 10_000e18);
        uint256 id = finalizedSingle(1 ether, true, true, true);
        uint256 before = address(registry).balance;
        audit.distributeRewards(id);
        assertEq(address(registry).balance - before, 0.1 ether);
        assertEq(registry.pendingStakerReward(big), 0, "streamed: nothing until time passes");

        // 0.1 ether over 10_000 tokens of stake, once its stream (a week) has run.
        vm.warp(block.timestamp + ParamsLib.STAKER_REWARD_PERIOD_SECONDS);
        assertEq(registry.pendingStakerReward(a), 0.01 ether);
        assertEq(registry.pendingStakerReward(b), 0.01 ether);
        assertEq(registry.pendingStakerReward(c), 0.02 ether);
        assertEq(registry.pendingStakerReward(big), 0.06 ether);

        uint256 balance = big.balance;
        vm.prank(big);
        registry.claimStakerReward();
        assertEq(big.balance - balance, 0.06 ether);
    }

    /// @notice End to end over committees drawn from a larger pool: create, draw, vote, finalize
    ///         segments and trace, distribute, claim, withdraw; every wei of the fee lands somewhere.
    function test_distributeRewards_endToEndSession() public {
        address[] memory pool = addAuditors("llm", 2, 8, 2_000e18);
        uint256 fee = audit.minimumFee(uniformSegments(2, 2));
        uint256 id = openSession(uniformSegments(2, 2));
        drawAll(id);
        commitAll(id, 0, true);
        commitAll(id, 1, false);
        toCommitEnd(id, 0);
        revealAll(id, 0, true);
        revealAll(id, 1, false);
        assertTrue(audit.finalizeSegment(id, 0));
        assertFalse(audit.finalizeSegment(id, 1));
        assertFalse(audit.finalizeTrace(id)); // W = 1 of 2 < 65%
        uint256 registryBefore = address(registry).balance;
        audit.distributeRewards(id);

        uint256 claimed;
        for (uint256 i; i < pool.length; ++i) {
            uint256 seats = (contains(audit.committee(id, 0), pool[i]) ? 1 : 0)
                + (contains(audit.committee(id, 1), pool[i]) ? 1 : 0);
            ITRUSTAudit.SeatRef[] memory refs = alignedSeatsOf(id, pool[i]);
            assertEq(refs.length, seats, "every seat aligned");
            if (seats != 0) {
                uint256 paid = claimAs(pool[i], id, refs);
                assertEq(paid, seats * 0.0006 ether, "R per aligned seat at the minimum fee");
                claimed += paid;
            }
        }
        uint256 withdrawn = withdrawAs(treasury) + withdrawAs(insurance);
        assertEq(claimed, 10 * 0.0006 ether);
        assertEq(claimed + withdrawn + address(registry).balance - registryBefore, fee);
        assertEq(address(audit).balance, 0);
    }

    // ------------------------------------------------------------------ claimRewards

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_claimRewards_paysThePerSeatRewardOncePerSeat() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        uint256 perSeat = 233_333_333_333_333_333;
        uint256 index = seatIndexOf(id, 0, a);
        uint256 before = a.balance;
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsClaimed(id, a, 1, perSeat);
        vm.prank(a);
        audit.claimRewards(id, seatRef(0, index));
        vm.snapshotGasLastCall("TRUSTAudit", "claimRewards_1seat");
        assertEq(a.balance - before, perSeat);
        assertEq(audit.claimable(a), 0, "paid directly, not credited");

        // A claimed seat still reads as the vote it revealed.
        ITRUSTAudit.SeatView memory v = audit.seat(id, 0, 0, index);
        assertEq(v.auditor, a);
        assertEq(v.weight, 1_000e18);
        assertTrue(v.claimed);
        assertTrue(v.committed);
        assertTrue(v.revealed);
        assertTrue(v.vote);
        assertFalse(audit.seat(id, 0, 0, seatIndexOf(id, 0, b)).claimed);

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, a));
        vm.prank(a);
        audit.claimRewards(id, seatRef(0, index));
        assertEq(address(audit).balance, 0.15 ether + 1 + 0.05 ether + 2 * perSeat);
    }

    function test_claimRewards_claimedSeatOfAFailedSegmentReadsFail() public {
        uint256 id = finalizedSingle(1 ether, false, false, false);
        audit.distributeRewards(id);
        uint256 index = seatIndexOf(id, 0, c);
        claimAs(c, id, seatRef(0, index));
        ITRUSTAudit.SeatView memory v = audit.seat(id, 0, 0, index);
        assertTrue(v.claimed);
        assertTrue(v.revealed);
        assertFalse(v.vote);
    }

    function test_claimRewards_revertsOnASeatNamedTwiceInOneCall() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        uint256 index = seatIndexOf(id, 0, a);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, a));
        vm.prank(a);
        audit.claimRewards(id, seatRefs(0, index, 0, index));
        // Nothing was paid or marked: the seat is still claimable, once.
        assertFalse(audit.seat(id, 0, 0, index).claimed);
        assertEq(claimAs(a, id, seatRef(0, index)), 233_333_333_333_333_333);
    }

    function test_claimRewards_revertsForAnotherAuditorsSeat() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        uint256 index = seatIndexOf(id, 0, a);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, b));
        vm.prank(b);
        audit.claimRewards(id, seatRef(0, index));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, stranger));
        vm.prank(stranger);
        audit.claimRewards(id, seatRef(0, index));
        assertEq(claimAs(a, id, seatRef(0, index)), 233_333_333_333_333_333);
    }

    /// @notice A seat index past the committee never names a seat, not even one of another round or
    ///         segment that the index would reach in storage.
    function test_claimRewards_revertsForAnIndexPastTheCommittee() public {
        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        drawAll(id);
        commitAll(id, 0, true);
        commitAll(id, 1, true);
        toCommitEnd(id, 0);
        revealAll(id, 0, true);
        revealAll(id, 1, true);
        audit.finalizeSegments(id, ids(0, 1));
        audit.finalizeTrace(id);
        audit.distributeRewards(id);
        uint256 inSegment1 = seatIndexOf(id, 1, a);
        uint256[3] memory bad = [uint256(3), 255, (1 << 16) | inSegment1];
        for (uint256 i; i < bad.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, bad[i], a));
            vm.prank(a);
            audit.claimRewards(id, seatRef(0, bad[i]));
        }
        // A segment the session does not have.
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 2, 0, a));
        vm.prank(a);
        audit.claimRewards(id, seatRef(2, 0));
        assertEq(claimAs(a, id, alignedSeatsOf(id, a)), 2 * (uint256(0.7 ether) / 6));
    }

    /// @notice Seats of a segment that reached no decision earn nothing, whatever they revealed.
    function test_claimRewards_revertsForSeatsOfAnUndeterminedSegment() public {
        Params memory p = defaultParams();
        p.maxRounds = 1;
        applyParams(p);
        // a and b (1/2 of the stake) Pass, c (1/2) Fail: no side reaches tau, and no round is left.
        uint256 id = finalizedSingle(1 ether, true, true, false);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        audit.distributeRewards(id);
        address[3] memory who = [a, b, c];
        for (uint256 i; i < 3; ++i) {
            uint256 index = seatIndexOf(id, 0, who[i]);
            assertTrue(audit.seat(id, 0, 0, index).revealed);
            vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, who[i]));
            vm.prank(who[i]);
            audit.claimRewards(id, seatRef(0, index));
        }
        assertEq(address(audit).balance, audit.claimable(treasury) + audit.claimable(insurance));
    }

    function test_claimRewards_revertsBeforeDistribution() public {
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotDistributed.selector, id, ITRUSTAudit.SessionStatus.Open)
        );
        vm.prank(a);
        audit.claimRewards(id, seatRef(0, 0));

        drawAll(id);
        voteAll(id, 0, true);
        audit.finalizeSegment(id, 0);
        audit.finalizeTrace(id);
        uint256 index = seatIndexOf(id, 0, a);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotDistributed.selector, id, ITRUSTAudit.SessionStatus.Finalized)
        );
        vm.prank(a);
        audit.claimRewards(id, seatRef(0, index));

        vm.prank(provider);
        uint256 id2 = audit.createSession(keccak256("t"), 1);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotDistributed.selector, id2, ITRUSTAudit.SessionStatus.Registering)
        );
        vm.prank(a);
        audit.claimRewards(id2, seatRef(0, 0));

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 9));
        vm.prank(a);
        audit.claimRewards(9, seatRef(0, 0));

        audit.distributeRewards(id);
        assertEq(claimAs(a, id, seatRef(0, index)), 233_333_333_333_333_333);
    }

    /// @notice Nothing to pay reverts: an empty list, or a session whose per-seat reward is zero.
    function test_claimRewards_revertsWhenThereIsNothingToPay() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNothingToWithdraw.selector, a));
        vm.prank(a);
        audit.claimRewards(id, new ITRUSTAudit.SeatRef[](0));

        // R = 0 allows a 2 wei fee: 1 wei for the auditors, less than a wei per aligned seat.
        Params memory p = defaultParams();
        p.rewardPerSeatWei = 0;
        applyParams(p);
        uint256 id2 = finalizedSingle(2, true, true, true);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsDistributed(id2, 0, 0, 1, 0, 1);
        audit.distributeRewards(id2);
        uint256 index = seatIndexOf(id2, 0, a);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNothingToWithdraw.selector, a));
        vm.prank(a);
        audit.claimRewards(id2, seatRef(0, index));
        assertFalse(audit.seat(id2, 0, 0, index).claimed);
    }

    /// @notice A cancelled session counts as distributed, and has no seat to pay.
    function test_claimRewards_cancelledSessionHasNoSeats() public {
        vm.startPrank(provider);
        uint256 id = audit.createSession{value: 1 ether}(keccak256("t"), 2);
        audit.registerSegments(id, uniformSegments(1, 1));
        audit.cancelSession(id);
        vm.stopPrank();
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Distributed));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, 0, a));
        vm.prank(a);
        audit.claimRewards(id, seatRef(0, 0));
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNothingToWithdraw.selector, a));
        vm.prank(a);
        audit.claimRewards(id, new ITRUSTAudit.SeatRef[](0));
    }

    /// @notice Claims are per session: a seat of one session is not a seat of another.
    function test_claimRewards_seatsBelongToTheirSession() public {
        uint256 id1 = finalizedSingle(1 ether, true, true, true);
        uint256 id2 = finalizedSingle(2 ether, false, false, false);
        audit.distributeRewards(id1);
        uint256 index = seatIndexOf(id1, 0, b);
        assertEq(claimAs(b, id1, seatRef(0, index)), 233_333_333_333_333_333);
        uint256 index2 = seatIndexOf(id2, 0, b);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotDistributed.selector, id2, ITRUSTAudit.SessionStatus.Finalized)
        );
        vm.prank(b);
        audit.claimRewards(id2, seatRef(0, index2));
        audit.distributeRewards(id2);
        assertEq(claimAs(b, id2, seatRef(0, seatIndexOf(id2, 0, b))), 466_666_666_666_666_666);
    }

    /// @notice ETH conservation over several sessions with escalation, silent, misaligned and
    ///         undecided seats, partial claims and withdrawals: at every step the fees paid in equal
    ///         what was withdrawn, what was claimed, the stakers' share sent to the registry and what
    ///         the audit contract still holds; and it holds exactly the undistributed fees, the
    ///         credited balances and the unclaimed seat rewards.
    function test_claimRewards_etherIsConservedEndToEnd() public {
        address[] memory llms = addAuditors("llm", 2, 7, 2_000e18);
        Ledger memory l;

        // Session 1: segment 0 passes unanimously, segment 1 splits 50/50 and escalates to tier 2
        // (5 Pass, 1 Fail, 1 silent), segment 2 fails unanimously.
        uint256 id1 = openWithFee(uniformSegments(3, 1), 0.9 ether);
        // Session 2: one segment; a and c (3/4 of the stake) Pass, b stays silent.
        uint256 id2 = openWithFee(uniformSegments(1, 1), 0.4 ether);
        l.feesIn = 1.3 ether;
        l.sessions = ids(id1, id2);
        checkLedger(l);

        drawAll(id1);
        drawAll(id2);
        commitAll(id1, 0, true);
        commitAs(a, id1, 1, true);
        commitAs(b, id1, 1, true);
        commitAs(c, id1, 1, false);
        commitAll(id1, 2, false);
        commitAs(a, id2, 0, true);
        commitAs(c, id2, 0, true);
        // Every seat of session 1 committed, so its windows closed at once; b's silence keeps
        // session 2's open until its deadline.
        revealAll(id1, 0, true);
        revealAs(a, id1, 1, true);
        revealAs(b, id1, 1, true);
        revealAs(c, id1, 1, false);
        revealAll(id1, 2, false);
        audit.finalizeSegments(id1, ids(0, 2));
        assertFalse(audit.finalizeSegment(id1, 1)); // 50/50: escalates
        toCommitEnd(id2, 0);
        revealAs(a, id2, 0, true);
        revealAs(c, id2, 0, true);
        toRevealEnd(id2, 0);
        assertTrue(audit.finalizeSegment(id2, 0));
        audit.finalizeTrace(id2);
        checkLedger(l);

        drawSegment(id1, 1);
        address[] memory round1 = audit.committee(id1, 1);
        for (uint256 i; i < 6; ++i) {
            commitAs(round1[i], id1, 1, i != 5);
        }
        toCommitEnd(id1, 1);
        for (uint256 i; i < 6; ++i) {
            revealAs(round1[i], id1, 1, i != 5);
        }
        toRevealEnd(id1, 1);
        assertTrue(audit.finalizeSegment(id1, 1));
        audit.finalizeTrace(id1);
        assertEq(audit.session(id1).alignedSeats, 3 + 5 + 3);
        assertEq(audit.session(id2).alignedSeats, 2);

        uint256 before = address(registry).balance;
        audit.distributeRewards(id2);
        l.toRegistry += address(registry).balance - before;
        checkLedger(l);
        l.claimed += claimAs(c, id2, alignedSeatsOf(id2, c));
        l.withdrawn += withdrawAs(treasury);
        checkLedger(l);

        before = address(registry).balance;
        audit.distributeRewards(id1);
        l.toRegistry += address(registry).balance - before;
        checkLedger(l);
        // Every tier-1 auditor holds one seat in segments 0 and 2; the escalated round of
        // segment 1 is not theirs to claim.
        assertEq(alignedSeatsOf(id1, a).length, 2);
        l.claimed += claimAs(a, id1, alignedSeatsOf(id1, a));
        l.claimed += claimAs(b, id1, alignedSeatsOf(id1, b));
        checkLedger(l);
        for (uint256 i; i < llms.length; ++i) {
            ITRUSTAudit.SeatRef[] memory refs = alignedSeatsOf(id1, llms[i]);
            if (refs.length != 0) l.claimed += claimAs(llms[i], id1, refs);
        }
        l.withdrawn += withdrawAs(insurance);
        checkLedger(l);
        l.claimed += claimAs(c, id1, alignedSeatsOf(id1, c));
        l.claimed += claimAs(a, id2, alignedSeatsOf(id2, a));
        l.withdrawn += withdrawAs(treasury);
        checkLedger(l);
        assertEq(address(audit).balance, 0, "everything claimed and withdrawn");
        // Per seat: 0.63 ether / 11 in session 1, 0.28 ether / 2 in session 2.
        assertEq(l.claimed, 11 * (uint256(0.63 ether) / 11) + 2 * 0.14 ether);
    }

    /// @dev The ETH ledger of `test_claimRewards_etherIsConservedEndToEnd`.
    struct Ledger {
        uint256 feesIn;
        uint256 withdrawn;
        uint256 claimed;
        uint256 toRegistry;
        uint256[] sessions;
    }

    function checkLedger(Ledger memory l) internal view {
        uint256 held = address(audit).balance;
        assertEq(l.feesIn, l.withdrawn + l.claimed + l.toRegistry + held, "fees in = withdrawn + claimed + stakers + held");
        uint256 owed = audit.claimable(treasury) + audit.claimable(insurance);
        for (uint256 k; k < l.sessions.length; ++k) {
            uint256 id = l.sessions[k];
            ITRUSTAudit.SessionView memory s = audit.session(id);
            if (s.status != ITRUSTAudit.SessionStatus.Distributed) {
                owed += s.feeWei;
                continue;
            }
            uint256 perSeat = s.alignedSeats == 0 ? 0 : s.feeWei * 7_000 / BPS / s.alignedSeats;
            owed += perSeat * unclaimedAlignedSeats(id);
        }
        assertEq(held, owed, "held = undistributed fees + credited balances + unclaimed seat rewards");
    }

    /// @dev Aligned seats of decided segments' final rounds not claimed yet, counted from the seat views.
    function unclaimedAlignedSeats(uint256 id) internal view returns (uint256 n) {
        uint256 segmentCount = audit.session(id).segmentCount;
        for (uint256 s; s < segmentCount; ++s) {
            ITRUSTAudit.SegmentView memory g = audit.segment(id, s);
            bool passed = g.status == ITRUSTAudit.SegmentStatus.Passed;
            if (!passed && g.status != ITRUSTAudit.SegmentStatus.Failed) continue;
            for (uint256 i; i < g.committeeSize; ++i) {
                ITRUSTAudit.SeatView memory v = audit.seat(id, s, g.round, i);
                if (v.revealed && !v.claimed && v.vote == passed) ++n;
            }
        }
    }

    // ------------------------------------------------------------------ withdraw

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_withdraw_paysCreditedEth() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        uint256 owed = audit.claimable(treasury);
        assertEq(owed, 0.15 ether + 1);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.Withdrawn(treasury, owed);
        vm.prank(treasury);
        audit.withdraw();
        vm.snapshotGasLastCall("TRUSTAudit", "withdraw");
        assertEq(treasury.balance, 0.15 ether + 1);
        assertEq(audit.claimable(treasury), 0);

        vm.prank(insurance);
        audit.withdraw();
        assertEq(insurance.balance, 0.05 ether);
        assertEq(address(audit).balance, 3 * 233_333_333_333_333_333, "the seats' rewards wait for claims");
    }

    function test_withdraw_revertsWhenNothingIsOwed() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNothingToWithdraw.selector, stranger));
        vm.prank(stranger);
        audit.withdraw();

        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        // Auditors are paid by claimRewards, never credited for withdraw.
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNothingToWithdraw.selector, a));
        vm.prank(a);
        audit.withdraw();
        vm.prank(treasury);
        audit.withdraw();
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNothingToWithdraw.selector, treasury));
        vm.prank(treasury);
        audit.withdraw();
    }

    function test_withdraw_accumulatesAcrossSessions() public {
        uint256 id1 = finalizedSingle(1 ether, true, true, true);
        uint256 id2 = finalizedSingle(2 ether, false, false, false);
        audit.distributeRewards(id1);
        audit.distributeRewards(id2);
        // 0.15 ether + 1 wei of dust, then 0.3 ether + 2 wei (1.4 ether over 3 seats).
        uint256 expected = 0.45 ether + 3;
        assertEq(audit.claimable(treasury), expected);
        assertEq(withdrawAs(treasury), expected);
        assertEq(withdrawAs(insurance), 0.15 ether);
    }

    // ------------------------------------------------------------------ slashAuditor

    function test_slashAuditor_revertsForNonOwner() public {
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, stranger));
        vm.prank(stranger);
        audit.slashAuditor(a, 1e18, "no");
    }

    function test_slashAuditor_takesStakeForTheInsuranceFund() public {
        uint256 totalBefore = registry.totalStake();
        vm.expectEmit(address(registry));
        emit IAuditorRegistry.StakeForfeited(a, 100e18, insurance, "plagiarised reasoning");
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, a, 100e18);
        audit.slashAuditor(a, 100e18, "plagiarised reasoning");
        assertEq(registry.auditor(a).stake, 900e18);
        assertEq(registry.totalStake(), totalBefore - 100e18);
        assertEq(registry.claimableTokens(insurance), 100e18);
    }

    function test_slashAuditor_neverTouchesLockedStake() public {
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        drawAll(id);
        assertEq(registry.auditor(a).locked, PENALTY);
        // Asked for everything, the slash takes all it may (issue L3) and says how much.
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, a, 1_000e18 - PENALTY);
        audit.slashAuditor(a, 1_000e18, "everything");
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(a);
        assertEq(info.stake, PENALTY);
        assertEq(info.locked, PENALTY, "the open seat stays backed");

        // The seat still settles: a stays silent and forfeits the lock.
        castVotes(id, 0, addrs(b, c), bools(true, true));
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        assertEq(registry.auditor(a).stake, 0);
        assertEq(registry.claimableTokens(insurance), 1_000e18);
    }

    function test_slashAuditor_reachesUnbondingStake() public {
        vm.prank(a);
        registry.requestUnstake(500e18);
        audit.slashAuditor(a, 800e18, "left in a hurry");
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(a);
        assertEq(info.stake, 0);
        assertEq(info.unbonding, 200e18);
        assertEq(registry.claimableTokens(insurance), 800e18);
    }

    function test_slashAuditor_revertsOnZeroAmountOrUnknownAuditor() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryZeroAmount.selector));
        audit.slashAuditor(a, 0, "nothing");
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotRegistered.selector, stranger));
        audit.slashAuditor(stranger, 1, "who");
    }

    function test_slashAuditor_throughTheTimelock() public {
        handToTimelock();
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, address(this)));
        audit.slashAuditor(a, 10e18, "direct");

        governed(address(audit), abi.encodeCall(ITRUSTAudit.slashAuditor, (a, 10e18, "governed")));
        assertEq(registry.auditor(a).stake, 990e18);
        assertEq(registry.claimableTokens(insurance), 10e18);
    }

    // ------------------------------------------------------------------ setRandomnessSource

    function test_setRandomnessSource_replacesTheSource() public {
        BlockhashRandomness next = new BlockhashRandomness();
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessSourceChanged(address(randomness), address(next));
        audit.setRandomnessSource(next);
        (address reg, address par, address rnd) = audit.dependencies();
        assertEq(reg, address(registry));
        assertEq(par, address(params));
        assertEq(rnd, address(next));
    }

    function test_setRandomnessSource_revertsForNonOwnerOrZero() public {
        BlockhashRandomness next = new BlockhashRandomness();
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, stranger));
        vm.prank(stranger);
        audit.setRandomnessSource(next);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditZeroAddress.selector));
        audit.setRandomnessSource(IRandomnessSource(address(0)));
        (,, address current) = audit.dependencies();
        assertEq(current, address(randomness));
    }

    function test_setRandomnessSource_drawsReadTheNewSource() public {
        addAuditors("t1-", 1, 5, 1_000e18); // eight tier-1 auditors: the seed decides who sits
        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;
        // A source that answers before the randomness block is mined still cannot draw: weights are
        // read as of that block, so the audit contract waits until it is mined, whatever the source.
        audit.setRandomnessSource(new FixedRandomness(IRandomnessSource.Status.Ready, keccak256("vrf")));
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, randomnessBlock)
        );
        audit.assignAuditors(id, 0);

        // Once it is mined, the committee follows the source's value.
        vm.roll(randomnessBlock + 1);
        uint256 snapshot = vm.snapshotState();
        audit.assignAuditors(id, 0);
        address[] memory withVrf = audit.committee(id, 0);
        vm.revertToState(snapshot);
        audit.setRandomnessSource(new FixedRandomness(IRandomnessSource.Status.Ready, keccak256("another value")));
        audit.assignAuditors(id, 0);
        assertEq(audit.committee(id, 0).length, 3);
        assertTrue(keccak256(abi.encode(withVrf)) != keccak256(abi.encode(audit.committee(id, 0))), "seed ignored");

        audit.setRandomnessSource(new FixedRandomness(IRandomnessSource.Status.Expired, 0));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 1, uint64(block.number + 2));
        audit.assignAuditors(id, 1);

        audit.setRandomnessSource(new FixedRandomness(IRandomnessSource.Status.Pending, 0));
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 1, block.number + 2)
        );
        audit.assignAuditors(id, 1);
    }

    /// @notice Draw weights are kept for 256 blocks: a draw more than 256 blocks after its
    ///         randomness block fixes a new one even when the source still answers.
    function test_assignAuditors_refusesRandomnessOlderThanTheWindowWhateverTheSource() public {
        // A source that answers long after its block (a VRF's callback): up to the window's last
        // block it draws from the registry as it stood at the randomness block.
        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        uint256 randomnessBlock = audit.segment(id, 0).randomnessBlock;
        audit.setRandomnessSource(new FixedRandomness(IRandomnessSource.Status.Ready, keccak256("vrf")));
        vm.roll(randomnessBlock + 1);
        address late = addAuditor("late-whale", 1, 1_000_000e18); // after the block: weighs nothing in this draw
        vm.roll(randomnessBlock + ParamsLib.RANDOMNESS_WINDOW_BLOCKS);
        audit.assignAuditors(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting));
        assertFalse(contains(audit.committee(id, 0), late), "registered after the randomness block");

        // One block later the value is refused: a fresh block is fixed, whose draw counts the
        // whale (it holds 99.9% of the weight by then).
        vm.roll(randomnessBlock + ParamsLib.RANDOMNESS_WINDOW_BLOCKS + 1);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RandomnessRefreshed(id, 1, uint64(block.number + 2));
        audit.assignAuditors(id, 1);
        assertEq(uint8(audit.segment(id, 1).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        vm.roll(block.number + 3);
        audit.assignAuditors(id, 1);
        assertTrue(contains(audit.committee(id, 1), late), "the fresh block counts the whale");
    }

    // ------------------------------------------------------------------ upgrades and initialization

    function implementationOf(address proxy) internal view returns (address) {
        return address(uint160(uint256(vm.load(proxy, ERC1967Utils.IMPLEMENTATION_SLOT))));
    }

    function test_upgradeToAndCall_byTheOwnerKeepsState() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        TRUSTAudit next = new TRUSTAudit();
        vm.expectEmit(address(audit));
        emit IERC1967.Upgraded(address(next));
        audit.upgradeToAndCall(address(next), "");
        assertEq(implementationOf(address(audit)), address(next));
        assertEq(audit.owner(), address(this));
        assertEq(audit.sessionCount(), 1);
        assertTrue(audit.session(id).valid);
        // And it keeps working.
        audit.distributeRewards(id);
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), 233_333_333_333_333_333);
    }

    function test_upgradeToAndCall_revertsForNonOwner() public {
        address before = implementationOf(address(audit));
        TRUSTAudit next = new TRUSTAudit();
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, stranger));
        vm.prank(stranger);
        audit.upgradeToAndCall(address(next), "");
        assertEq(implementationOf(address(audit)), before);
    }

    function test_upgradeToAndCall_throughTheTimelock() public {
        handToTimelock();
        TRUSTAudit next = new TRUSTAudit();
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, address(this)));
        audit.upgradeToAndCall(address(next), "");
        governed(address(audit), abi.encodeCall(UUPSUpgradeable.upgradeToAndCall, (address(next), "")));
        assertEq(implementationOf(address(audit)), address(next));
    }

    function test_initialize_runsOnce() public {
        vm.expectRevert(abi.encodeWithSelector(Initializable.InvalidInitialization.selector));
        audit.initialize(
            stranger,
            IAuditorRegistry(address(registry)),
            IProtocolParams(address(params)),
            IRandomnessSource(address(randomness))
        );
        // The implementation behind the proxy cannot be initialized either.
        TRUSTAudit impl = TRUSTAudit(implementationOf(address(audit)));
        vm.expectRevert(abi.encodeWithSelector(Initializable.InvalidInitialization.selector));
        impl.initialize(
            stranger,
            IAuditorRegistry(address(registry)),
            IProtocolParams(address(params)),
            IRandomnessSource(address(randomness))
        );
    }

    function test_initialize_revertsOnZeroDependency() public {
        address impl = address(new TRUSTAudit());
        IAuditorRegistry reg = IAuditorRegistry(address(registry));
        IProtocolParams par = IProtocolParams(address(params));
        IRandomnessSource rnd = IRandomnessSource(address(randomness));
        bytes[3] memory calls = [
            abi.encodeCall(TRUSTAudit.initialize, (address(this), IAuditorRegistry(address(0)), par, rnd)),
            abi.encodeCall(TRUSTAudit.initialize, (address(this), reg, IProtocolParams(address(0)), rnd)),
            abi.encodeCall(TRUSTAudit.initialize, (address(this), reg, par, IRandomnessSource(address(0))))
        ];
        for (uint256 i; i < 3; ++i) {
            vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditZeroAddress.selector));
            new ERC1967Proxy(impl, calls[i]);
        }
    }

    // ------------------------------------------------------------------ views

    function test_phase_followsTheSegmentLifecycle() public {
        assertEq(uint8(audit.phase(1, 0)), uint8(ITRUSTAudit.Phase.None), "unknown session");
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        assertEq(uint8(audit.phase(id, 1)), uint8(ITRUSTAudit.Phase.None), "unknown segment");
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.AwaitingDraw));
        drawSegment(id, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
        commitAll(id, 0, true);
        vm.warp(audit.segment(id, 0).commitDeadline);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
        toCommitEnd(id, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        revealAs(a, id, 0, true);
        vm.warp(audit.segment(id, 0).revealDeadline);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        toRevealEnd(id, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        audit.finalizeSegment(id, 0); // a alone: undecided, escalates
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.AwaitingDraw));
        addAuditors("t2-", 2, 7, 2_000e18);
        drawSegment(id, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
        voteAll(id, 0, false);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Finalizable));
        audit.finalizeSegment(id, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Final));
    }

    function test_session_viewTracksTheLifecycle() public {
        ITRUSTAudit.SessionView memory s = audit.session(1);
        assertEq(s.provider, address(0));
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.None));

        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        drawAll(id);
        commitAll(id, 0, true);
        commitAll(id, 1, false);
        toCommitEnd(id, 0);
        revealAll(id, 0, true);
        revealAll(id, 1, false);
        audit.finalizeSegment(id, 0);
        s = audit.session(id);
        assertEq(s.finalizedCount, 1);
        assertEq(s.passWeight, 1);
        assertEq(s.alignedSeats, 3);
        audit.finalizeSegment(id, 1);
        audit.finalizeTrace(id);
        s = audit.session(id);
        assertEq(s.provider, provider);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Finalized));
        assertFalse(s.valid); // W = 1 of 2 < 65%
        assertEq(s.feeWei, 1 ether);
        assertEq(s.segmentCount, 2);
        assertEq(s.registeredCount, 2);
        assertEq(s.finalizedCount, 2);
        assertEq(s.totalWeight, 2);
        assertEq(s.passWeight, 1);
        assertEq(s.criticalFailed, 0);
        assertEq(s.contradictionsConfirmed, 0);
        assertEq(s.alignedSeats, 6);
    }

    function test_seatAndCommittee_areEmptyBeforeTheDraw() public {
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        assertEq(audit.committee(id, 0).length, 0);
        ITRUSTAudit.SeatView memory st = audit.seat(id, 0, 0, 0);
        assertEq(st.auditor, address(0));
        assertEq(st.weight, 0);
        assertFalse(st.committed || st.revealed || st.vote);
        assertEq(audit.committee(99, 0).length, 0);
    }

    function test_sessionParams_isTheSnapshot() public {
        Params memory empty;
        assertEq(abi.encode(audit.sessionParams(1)), abi.encode(empty));
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        Params memory p = defaultParams();
        p.tauBps = 7_000;
        applyParams(p);
        assertEq(audit.sessionParams(id).tauBps, 6_600);
        assertEq(abi.encode(audit.sessionParams(id)), abi.encode(defaultParams()));
    }

    function test_minimumFee_followsTheCurrentParams() public {
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](2);
        segs[0] = segmentInput(2, 1, false, false, keccak256("x"));
        segs[1] = segmentInput(3, 1, false, false, keccak256("y"));
        assertEq(audit.minimumFee(segs), 8_571_428_571_428_572); // 10 seats * 0.0006 ether / 0.7, up
        assertEq(audit.minimumFee(new ITRUSTAudit.SegmentInput[](0)), 0);
        Params memory p = defaultParams();
        p.committeeSizeTier3 = 8;
        p.auditorShareBps = 8_000;
        p.treasuryShareBps = 500;
        applyParams(p);
        assertEq(audit.minimumFee(segs), 9_750_000_000_000_000); // 13 seats * 0.0006 ether / 0.8
    }

    function test_sessionCount_countsCancelledSessionsToo() public {
        assertEq(audit.sessionCount(), 0);
        vm.startPrank(provider);
        uint256 id = audit.createSession(keccak256("t"), 1);
        audit.cancelSession(id);
        audit.createSession(keccak256("t"), 1);
        vm.stopPrank();
        assertEq(audit.sessionCount(), 2);
    }

    function test_commitmentOf_bindsEveryField() public {
        bytes32 base = audit.commitmentOf(1, 2, 0, a, true, "salt");
        assertEq(
            base,
            keccak256(abi.encode(block.chainid, address(audit), uint256(1), uint256(2), uint8(0), a, true, bytes32("salt")))
        );
        assertTrue(audit.commitmentOf(2, 2, 0, a, true, "salt") != base, "session");
        assertTrue(audit.commitmentOf(1, 3, 0, a, true, "salt") != base, "segment");
        assertTrue(audit.commitmentOf(1, 2, 1, a, true, "salt") != base, "round");
        assertTrue(audit.commitmentOf(1, 2, 0, b, true, "salt") != base, "auditor");
        assertTrue(audit.commitmentOf(1, 2, 0, a, false, "salt") != base, "vote");
        assertTrue(audit.commitmentOf(1, 2, 0, a, true, "pepper") != base, "salt");

        // Another deployment (same code, other address) and another chain give other commitments.
        TRUSTAudit other = TRUSTAudit(
            address(
                new ERC1967Proxy(
                    address(new TRUSTAudit()),
                    abi.encodeCall(
                        TRUSTAudit.initialize,
                        (
                            address(this),
                            IAuditorRegistry(address(registry)),
                            IProtocolParams(address(params)),
                            IRandomnessSource(address(randomness))
                        )
                    )
                )
            )
        );
        assertTrue(other.commitmentOf(1, 2, 0, a, true, "salt") != base, "contract");
        vm.chainId(10);
        assertTrue(audit.commitmentOf(1, 2, 0, a, true, "salt") != base, "chain");
    }

    // ------------------------------------------------------------------ fuzz

    /// @dev Claims the seat of each of a, b and c (choice % 3: 0 silent, 1 Pass, 2 Fail) that voted
    ///      the outcome of segment 0, checking that each pays `auditorsWei / aligned`; every other
    ///      seat's claim must revert.
    function claimTrio(uint256 id, uint8[3] memory choices, uint256 auditorsWei)
        internal
        returns (uint256 toAuditors, uint256 aligned)
    {
        ITRUSTAudit.SegmentStatus status = audit.segment(id, 0).status;
        bool[3] memory isAligned;
        for (uint256 i; i < 3; ++i) {
            isAligned[i] = (status == ITRUSTAudit.SegmentStatus.Passed && choices[i] % 3 == 1)
                || (status == ITRUSTAudit.SegmentStatus.Failed && choices[i] % 3 == 2);
            if (isAligned[i]) ++aligned;
        }
        assertEq(audit.session(id).alignedSeats, aligned);
        uint256 perSeat = aligned == 0 ? 0 : auditorsWei / aligned;
        address[3] memory who = [a, b, c];
        for (uint256 i; i < 3; ++i) {
            uint256 index = seatIndexOf(id, 0, who[i]);
            if (isAligned[i]) {
                assertEq(claimAs(who[i], id, seatRef(0, index)), perSeat, "an aligned seat gets its share");
                toAuditors += perSeat;
            } else {
                vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, who[i]));
                vm.prank(who[i]);
                audit.claimRewards(id, seatRef(0, index));
            }
        }
    }

    /// @notice Whatever the split, the fee and the votes, the four shares claimed, credited or sent
    ///         add up to the fee exactly: each aligned seat claims the auditors' share divided by the
    ///         aligned seats, the treasury gets the dust (or the whole share when no seat aligned),
    ///         and no other seat can claim anything.
    function testFuzz_distributeRewards_sharesAddUpToTheFee(
        uint256 fee,
        uint256 auditorBps,
        uint256 treasuryBps,
        uint256 stakerBps,
        uint8[3] memory choices
    ) public {
        Params memory p = defaultParams();
        p.maxRounds = 1; // every round is final: Pass, Fail or Undetermined
        p.auditorShareBps = uint16(bound(auditorBps, 1, BPS));
        p.treasuryShareBps = uint16(bound(treasuryBps, 0, BPS - p.auditorShareBps));
        p.stakerShareBps = uint16(bound(stakerBps, 0, BPS - p.auditorShareBps - p.treasuryShareBps));
        p.insuranceShareBps = uint16(BPS - p.auditorShareBps - p.treasuryShareBps - p.stakerShareBps);
        applyParams(p);
        ITRUSTAudit.SegmentInput[] memory segs = uniformSegments(1, 1);
        fee = bound(fee, audit.minimumFee(segs), 500 ether);
        uint256 id = openWithFee(segs, fee);
        drawAll(id);

        voteTrio(id, choices);
        checkSplit(id, fee, p, choices);
    }

    /// @dev a, b and c vote on segment 0 (choice % 3: 0 silent, 1 Pass, 2 Fail); the segment and
    ///      the trace are finalized.
    function voteTrio(uint256 id, uint8[3] memory choices) internal {
        address[3] memory who = [a, b, c];
        for (uint256 i; i < 3; ++i) {
            if (choices[i] % 3 != 0) commitAs(who[i], id, 0, choices[i] % 3 == 1);
        }
        toCommitEnd(id, 0);
        for (uint256 i; i < 3; ++i) {
            if (choices[i] % 3 != 0) revealAs(who[i], id, 0, choices[i] % 3 == 1);
        }
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        audit.finalizeTrace(id);
    }

    /// @dev Distributes, claims every seat, and checks where each wei of `fee` went.
    function checkSplit(uint256 id, uint256 fee, Params memory p, uint8[3] memory choices) internal {
        uint256 registryBefore = address(registry).balance;
        audit.distributeRewards(id);
        uint256 stakers = address(registry).balance - registryBefore;
        assertEq(stakers, fee * p.stakerShareBps / BPS);
        assertEq(address(audit).balance, fee - stakers, "the contract holds the rest of the fee");

        uint256 auditorsWei = fee * p.auditorShareBps / BPS;
        (uint256 toAuditors, uint256 aligned) = claimTrio(id, choices, auditorsWei);
        assertEq(toAuditors + audit.claimable(treasury) + audit.claimable(insurance) + stakers, fee);
        assertEq(
            audit.claimable(treasury), fee * p.treasuryShareBps / BPS + auditorsWei - toAuditors, "the treasury gets the dust"
        );
        assertLt(auditorsWei - toAuditors, aligned == 0 ? auditorsWei + 1 : aligned, "dust below a wei per seat");
        assertEq(address(audit).balance, audit.claimable(treasury) + audit.claimable(insurance), "every seat claimed");
        if (aligned == 0) assertEq(toAuditors, 0);
    }

    /// @notice commitmentOf is the documented encoding for any inputs.
    function testFuzz_commitmentOf_isTheDocumentedHash(
        uint256 sessionId,
        uint256 segmentId,
        uint8 round,
        address auditor,
        bool vote,
        bytes32 salt
    ) public view {
        assertEq(
            audit.commitmentOf(sessionId, segmentId, round, auditor, vote, salt),
            keccak256(abi.encode(block.chainid, address(audit), sessionId, segmentId, round, auditor, vote, salt))
        );
    }
}
