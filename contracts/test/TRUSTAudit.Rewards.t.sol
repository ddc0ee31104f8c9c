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
///         per aligned seat; a seat that won several of the committee's draws is paid once per
///         draw, issue L2), governance actions (slashAuditor, setRandomnessSource, UUPS upgrades)
///         and the read-only views.
contract TRUSTAuditRewardsTest is TRUSTAuditBase {
    /// @notice P, the stake each unit of a seat locks and forfeits in this suite (100 times the
    ///         default), so that the stakes below back a known number of units.
    uint256 internal constant PENALTY = 800e18;
    /// @notice A stake that backs exactly one unit (P <= stake < 2P).
    uint256 internal constant ONE_UNIT = 1_000e18;

    address internal stranger = makeAddr("stranger");
    address internal a;
    address internal b;
    address internal c;

    /// @dev Committees are drawn with replacement (issue L2): a member sits once, with one unit per
    ///      draw it won and can back (each unit locks P), and leaves the draw when it cannot back
    ///      one more. Here a and b back one unit (1_000e18 of stake) and c two (2_000e18), and a
    ///      tier-1 committee is four draws: the units the tier can back are exactly the committee's,
    ///      so every tier-1 committee seats all three, c with two units. As c holds half of the
    ///      stake, it holds half of every committee's weight, and earns and forfeits twice what a
    ///      or b does. A tier-1 auditor sits in one open segment at a time, so the tests settle
    ///      one segment before drawing the next.
    function setUp() public override {
        super.setUp();
        applyParams(suiteParams());
        a = addAuditor("a", 1, ONE_UNIT);
        b = addAuditor("b", 1, ONE_UNIT);
        c = addAuditor("c", 1, 2_000e18);
    }

    /// @notice The paper's defaults with P = `PENALTY` (tier 1's minimum stake up to P, as a tier's
    ///         minimum must back a unit) and four draws per tier-1 committee (escalated: nine).
    function suiteParams() internal pure returns (Params memory p) {
        p = defaultParams();
        p.committeeSizeTier1 = 4;
        p.penaltyPerSeat = uint96(PENALTY);
        p.minStakeTier1 = uint96(PENALTY);
    }

    /// @notice Draws segment `segmentId`, every seat votes `vote`, and the segment is finalized.
    function decide(uint256 id, uint256 segmentId, bool vote) internal {
        drawSegment(id, segmentId);
        voteAll(id, segmentId, vote);
        audit.finalizeSegment(id, segmentId);
    }

    /// @notice The units of the seats `refs` of the session (in their segments' current rounds).
    function unitsOf(uint256 id, ITRUSTAudit.SeatRef[] memory refs) internal view returns (uint256 units) {
        for (uint256 i; i < refs.length; ++i) {
            uint8 round = audit.segment(id, refs[i].segmentId).round;
            units += audit.seat(id, refs[i].segmentId, round, refs[i].seatIndex).weight;
        }
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
        // 0.7 ether over 4 aligned units (c's seat holds two): 0.175 ether each.
        uint256 perSeat = 0.175 ether;
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsDistributed(id, 4 * perSeat, perSeat, 0.15 ether, 0.1 ether, 0.05 ether);
        audit.distributeRewards(id);
        vm.snapshotGasLastCall("TRUSTAudit", "distributeRewards_3seats");

        // Only the treasury and the insurance fund are credited; auditors claim their seats.
        assertEq(audit.claimable(treasury), 0.15 ether);
        assertEq(audit.claimable(insurance), 0.05 ether);
        assertEq(audit.claimable(a), 0);
        assertEq(audit.claimable(b), 0);
        assertEq(audit.claimable(c), 0);
        assertEq(audit.claimable(provider), 0);
        assertEq(address(registry).balance - registryBefore, 0.1 ether);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Distributed));
        // The contract holds the credited balances and every seat's reward until it is claimed.
        assertEq(address(audit).balance, 0.15 ether + 0.05 ether + 4 * perSeat);
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), perSeat);
        assertEq(claimAs(b, id, seatRef(0, seatIndexOf(id, 0, b))), perSeat);
        assertEq(claimAs(c, id, seatRef(0, seatIndexOf(id, 0, c))), 2 * perSeat, "two units");
        assertEq(address(audit).balance, 0.15 ether + 0.05 ether);
    }

    function test_distributeRewards_minimumFeePaysRPerSeat() public {
        uint256 fee = audit.minimumFee(uniformSegments(1, 1));
        uint256 id = finalizedSingle(fee, true, true, true);
        audit.distributeRewards(id);
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), 0.0006 ether); // R
        assertEq(claimAs(c, id, seatRef(0, seatIndexOf(id, 0, c))), 2 * 0.0006 ether, "R per unit");
    }

    function test_distributeRewards_paysPerAlignedSeat() public {
        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        decide(id, 0, true);
        drawSegment(id, 1);
        // c holds 2 of the 4 units: Pass 50%, Fail 50%, undecided.
        castVotes(id, 1, addrs(a, b, c), bools(true, true, false));
        audit.finalizeSegment(id, 1); // escalates: its seats are held for the verdict, not aligned
        assertEq(audit.session(id).alignedSeats, 4, "segment 0's four units");

        // Re-decide segment 1 with nine one-unit tier-2 auditors (2k + 1 = 9 draws) so the trace
        // can finalize.
        addAuditors("t2-", 2, 9, ONE_UNIT);
        decide(id, 1, true);
        audit.finalizeTrace(id);
        assertEq(audit.session(id).alignedSeats, 13);

        audit.distributeRewards(id);
        uint256 perSeat = uint256(0.7 ether) / 13; // floored: the dust goes to the treasury
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), perSeat);
        assertEq(claimAs(c, id, seatRef(0, seatIndexOf(id, 0, c))), 2 * perSeat);
        address[] memory round1 = audit.committee(id, 1);
        assertEq(round1.length, 9);
        for (uint256 i; i < round1.length; ++i) {
            assertEq(claimAs(round1[i], id, seatRef(1, i)), perSeat);
        }
        // The seats a, b and c held in segment 1's first round are not rewarded: only the final
        // round is, and none of its seats is theirs.
        for (uint256 i; i < round1.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 1, i, a));
            vm.prank(a);
            audit.claimRewards(id, seatRef(1, i));
        }
        assertEq(audit.claimable(treasury), 0.15 ether + (0.7 ether - 13 * perSeat));
        assertEq(address(audit).balance, audit.claimable(treasury) + 0.05 ether + perSeat, "b has not claimed yet");
    }

    function test_distributeRewards_auditorWithSeveralAlignedSeatsEarnsEach() public {
        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        decide(id, 0, true);
        decide(id, 1, false);
        audit.finalizeTrace(id);
        audit.distributeRewards(id);
        // Eight aligned units, four per segment: 0.7 ether / 8 each.
        uint256 perSeat = uint256(0.7 ether) / 8;
        assertEq(audit.claimable(treasury), 0.15 ether);
        ITRUSTAudit.SeatRef[] memory both = seatRefs(0, seatIndexOf(id, 0, a), 1, seatIndexOf(id, 1, a));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsClaimed(id, a, 2, 2 * perSeat);
        vm.prank(a);
        audit.claimRewards(id, both);
        assertEq(alignedSeatsOf(id, b).length, 2);
        assertEq(claimAs(b, id, alignedSeatsOf(id, b)), 2 * perSeat);
        // c's two seats hold two units each: the claim reports four units.
        ITRUSTAudit.SeatRef[] memory ofC = alignedSeatsOf(id, c);
        assertEq(ofC.length, 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsClaimed(id, c, 4, 4 * perSeat);
        assertEq(claimAs(c, id, ofC), 4 * perSeat);
        assertEq(address(audit).balance, audit.claimable(treasury) + audit.claimable(insurance));
    }

    function test_distributeRewards_misalignedAndSilentSeatsEarnNothing() public {
        uint256 id = openWithFee(uniformSegments(1, 1), 1 ether);
        drawAll(id);
        // a and c hold 3 of the 4 units and vote Pass; b stays silent.
        castVotes(id, 0, addrs(a, c), bools(true, true));
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        audit.finalizeTrace(id);
        audit.distributeRewards(id);
        uint256 silent = seatIndexOf(id, 0, b);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, silent, b));
        vm.prank(b);
        audit.claimRewards(id, seatRef(0, silent));
        // 0.7 ether over the 3 aligned units, floored.
        uint256 perSeat = uint256(0.7 ether) / 3;
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), perSeat);
        assertEq(claimAs(c, id, seatRef(0, seatIndexOf(id, 0, c))), 2 * perSeat);

        // Misaligned: a and c (3 of 4 units) outvote b. b forfeited its one unit's P when silent:
        // it stakes it back to sit again.
        refill(b, ONE_UNIT);
        uint256 id2 = finalizedSingle(1 ether, true, false, true);
        audit.distributeRewards(id2);
        uint256 misaligned = seatIndexOf(id2, 0, b);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id2, 0, misaligned, b));
        vm.prank(b);
        audit.claimRewards(id2, seatRef(0, misaligned));
        assertEq(claimAs(a, id2, seatRef(0, seatIndexOf(id2, 0, a))), perSeat);
    }

    /// @notice The per-seat reward is the auditors' share over the aligned units, not seats: a
    ///         4-unit seat outvotes a 2-unit one (4 of 6 draws, 66.7%), `alignedSeats` counts its
    ///         four units, and its one claim takes the whole share, reporting four units; the
    ///         misaligned 2-unit seat earns nothing.
    function test_distributeRewards_alignedUnitsDriveTheSplit() public {
        Params memory p = suiteParams();
        p.committeeSizeTier2 = 6;
        applyParams(p);
        // The only tier-2 auditors: the units they back (4 + 2) make the committee, so both sit
        // with all of them.
        address x = addAuditor("x", 2, 4 * PENALTY + 200e18);
        address y = addAuditor("y", 2, 2 * PENALTY + 200e18);
        uint256 id = openWithFee(uniformSegments(1, 2), 1 ether);
        drawSegment(id, 0);
        assertEq(audit.segment(id, 0).seatCount, 2);
        uint256 xi = seatIndexOf(id, 0, x);
        uint256 yi = seatIndexOf(id, 0, y);
        assertEq(audit.seat(id, 0, 0, xi).weight, 4);
        assertEq(audit.seat(id, 0, 0, yi).weight, 2);
        castVotes(id, 0, addrs(x, y), bools(true, false));
        assertTrue(audit.finalizeSegment(id, 0));
        audit.finalizeTrace(id);
        assertEq(audit.session(id).alignedSeats, 4, "aligned units");

        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsDistributed(id, 0.7 ether, 0.175 ether, 0.15 ether, 0.1 ether, 0.05 ether);
        audit.distributeRewards(id);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsClaimed(id, x, 4, 0.7 ether);
        assertEq(claimAs(x, id, seatRef(0, xi)), 0.7 ether);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, yi, y));
        vm.prank(y);
        audit.claimRewards(id, seatRef(0, yi));
        assertEq(address(audit).balance, 0.15 ether + 0.05 ether, "the whole auditors' share was claimed");
    }

    function test_distributeRewards_noAlignedSeatSendsTheAuditorsShareToTheTreasury() public {
        Params memory p = suiteParams();
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
        assertEq(audit.claimable(treasury), 0.15 ether, "credited once");
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
    ///         Each member backs two units, so the draws decide who sits and with how many units.
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
                uint256 units = unitsOf(id, refs);
                uint256 paid = claimAs(pool[i], id, refs);
                assertEq(paid, units * 0.0006 ether, "R per aligned unit at the minimum fee");
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
        uint256 perSeat = 0.175 ether; // 0.7 ether over 4 units
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
        assertEq(v.weight, 1, "one unit");
        assertTrue(v.claimed);
        assertTrue(v.committed);
        assertTrue(v.revealed);
        assertTrue(v.vote);
        assertFalse(audit.seat(id, 0, 0, seatIndexOf(id, 0, b)).claimed);

        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, a));
        vm.prank(a);
        audit.claimRewards(id, seatRef(0, index));
        assertEq(address(audit).balance, 0.15 ether + 0.05 ether + 3 * perSeat, "b's unit and c's two");
    }

    /// @notice A seat that won two of the committee's draws is paid the per-seat reward twice
    ///         (issue L2: R per unit), in one claim that reports its two units, and only once.
    function test_claimRewards_multiUnitSeatPaysEachUnit() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        uint256 perSeat = 0.175 ether; // 0.7 ether over the 4 aligned units
        uint256 index = seatIndexOf(id, 0, c);
        assertEq(audit.seat(id, 0, 0, index).weight, 2);
        uint256 before = c.balance;
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.RewardsClaimed(id, c, 2, 2 * perSeat);
        vm.prank(c);
        audit.claimRewards(id, seatRef(0, index));
        assertEq(c.balance - before, 2 * perSeat);
        assertTrue(audit.seat(id, 0, 0, index).claimed);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, c));
        vm.prank(c);
        audit.claimRewards(id, seatRef(0, index));
        assertEq(address(audit).balance, 0.15 ether + 0.05 ether + 2 * perSeat, "a's and b's units");
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
        assertEq(claimAs(a, id, seatRef(0, index)), 0.175 ether);
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
        assertEq(claimAs(a, id, seatRef(0, index)), 0.175 ether);
    }

    /// @notice A seat index past the committee never names a seat, not even one of another round or
    ///         segment that the index would reach in storage. Index 3 is within the committee's
    ///         four draws but past its three seats (c holds two units in one seat).
    function test_claimRewards_revertsForAnIndexPastTheCommittee() public {
        uint256 id = openWithFee(uniformSegments(2, 1), 1 ether);
        decide(id, 0, true);
        decide(id, 1, true);
        audit.finalizeTrace(id);
        audit.distributeRewards(id);
        assertEq(audit.segment(id, 0).committeeSize, 4);
        assertEq(audit.segment(id, 0).seatCount, 3);
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
        assertEq(claimAs(a, id, alignedSeatsOf(id, a)), 2 * (uint256(0.7 ether) / 8));
    }

    /// @notice Seats of a segment that reached no decision earn nothing, whatever they revealed.
    function test_claimRewards_revertsForSeatsOfAnUndeterminedSegment() public {
        Params memory p = suiteParams();
        p.maxRounds = 1;
        applyParams(p);
        // a and b (2 of the 4 units) Pass, c (the other 2) Fail: no side reaches tau, and no round
        // is left.
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
        assertEq(claimAs(a, id, seatRef(0, index)), 0.175 ether);
    }

    /// @notice Nothing to pay reverts: an empty list, or a session whose per-seat reward is zero.
    function test_claimRewards_revertsWhenThereIsNothingToPay() public {
        uint256 id = finalizedSingle(1 ether, true, true, true);
        audit.distributeRewards(id);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditNothingToWithdraw.selector, a));
        vm.prank(a);
        audit.claimRewards(id, new ITRUSTAudit.SeatRef[](0));

        // R = 0 allows a 2 wei fee: 1 wei for the auditors, less than a wei per aligned seat.
        Params memory p = suiteParams();
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
        assertEq(claimAs(b, id1, seatRef(0, index)), 0.175 ether);
        uint256 index2 = seatIndexOf(id2, 0, b);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditNotDistributed.selector, id2, ITRUSTAudit.SessionStatus.Finalized)
        );
        vm.prank(b);
        audit.claimRewards(id2, seatRef(0, index2));
        audit.distributeRewards(id2);
        assertEq(claimAs(b, id2, seatRef(0, seatIndexOf(id2, 0, b))), 0.35 ether);
    }

    /// @notice ETH conservation over several sessions with escalation, silent, misaligned and
    ///         undecided seats, partial claims and withdrawals: at every step the fees paid in equal
    ///         what was withdrawn, what was claimed, the stakers' share sent to the registry and what
    ///         the audit contract still holds; and it holds exactly the undistributed fees, the
    ///         credited balances and the unclaimed seat rewards (per aligned unit).
    function test_claimRewards_etherIsConservedEndToEnd() public {
        // One unit each: the escalated round's nine draws seat all nine.
        address[] memory llms = addAuditors("llm", 2, 9, ONE_UNIT);
        Ledger memory l;

        // Session 1: segment 0 passes unanimously, segment 2 fails unanimously, segment 1 splits
        // 50/50 (c holds 2 of the 4 units) and escalates to tier 2 (7 Pass, 1 Fail, 1 silent).
        uint256 id1 = openWithFee(uniformSegments(3, 1), 0.9 ether);
        // Session 2: one segment; a and c (3 of the 4 units) Pass, b stays silent.
        uint256 id2 = openWithFee(uniformSegments(1, 1), 0.4 ether);
        l.feesIn = 1.3 ether;
        l.sessions = ids(id1, id2);
        checkLedger(l);

        // The tier-1 seats are settled one segment after another; segment 1's first round holds
        // a, b and c until its escalated round decides.
        decide(id1, 0, true);
        decide(id1, 2, false);
        drawSegment(id1, 1);
        castVotes(id1, 1, addrs(a, b, c), bools(true, true, false));
        assertFalse(audit.finalizeSegment(id1, 1)); // 50/50: escalates
        checkLedger(l);

        drawSegment(id1, 1);
        address[] memory round1 = audit.committee(id1, 1);
        assertEq(round1.length, 9);
        for (uint256 i; i < 8; ++i) {
            commitAs(round1[i], id1, 1, i != 7);
        }
        toCommitEnd(id1, 1);
        for (uint256 i; i < 8; ++i) {
            revealAs(round1[i], id1, 1, i != 7);
        }
        toRevealEnd(id1, 1);
        assertTrue(audit.finalizeSegment(id1, 1));
        audit.finalizeTrace(id1);

        drawSegment(id2, 0);
        castVotes(id2, 0, addrs(a, c), bools(true, true));
        toRevealEnd(id2, 0);
        assertTrue(audit.finalizeSegment(id2, 0));
        audit.finalizeTrace(id2);
        checkLedger(l);
        assertEq(audit.session(id1).alignedSeats, 4 + 7 + 4);
        assertEq(audit.session(id2).alignedSeats, 3);

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
        // Per unit: 0.63 ether / 15 in session 1, 0.28 ether / 3 in session 2.
        assertEq(l.claimed, 15 * (uint256(0.63 ether) / 15) + 3 * (uint256(0.28 ether) / 3));
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
            owed += perSeat * unclaimedAlignedUnits(id);
        }
        assertEq(held, owed, "held = undistributed fees + credited balances + unclaimed seat rewards");
    }

    /// @dev The units of the aligned seats of decided segments' final rounds not claimed yet,
    ///      counted from the seat views (a seat is paid once per unit).
    function unclaimedAlignedUnits(uint256 id) internal view returns (uint256 n) {
        uint256 segmentCount = audit.session(id).segmentCount;
        for (uint256 s; s < segmentCount; ++s) {
            ITRUSTAudit.SegmentView memory g = audit.segment(id, s);
            bool passed = g.status == ITRUSTAudit.SegmentStatus.Passed;
            if (!passed && g.status != ITRUSTAudit.SegmentStatus.Failed) continue;
            for (uint256 i; i < g.committeeSize; ++i) {
                ITRUSTAudit.SeatView memory v = audit.seat(id, s, g.round, i);
                if (v.revealed && !v.claimed && v.vote == passed) n += v.weight;
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
        assertEq(owed, 0.15 ether);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.Withdrawn(treasury, owed);
        vm.prank(treasury);
        audit.withdraw();
        vm.snapshotGasLastCall("TRUSTAudit", "withdraw");
        assertEq(treasury.balance, 0.15 ether);
        assertEq(audit.claimable(treasury), 0);

        vm.prank(insurance);
        audit.withdraw();
        assertEq(insurance.balance, 0.05 ether);
        assertEq(address(audit).balance, 4 * 0.175 ether, "the seats' rewards (four units) wait for claims");
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
        // 0.15 ether, then 0.3 ether (no dust: 0.7 and 1.4 ether split evenly over 4 units).
        uint256 expected = 0.45 ether;
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
        emit IAuditorRegistry.StakeForfeited(a, 100e18, insurance, "plagiarised reasoning", 900e18, 0);
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
        // c (2_000e18): what stays bonded must keep the tier minimum (P in this suite).
        vm.prank(c);
        registry.requestUnstake(500e18);
        audit.slashAuditor(c, 1_800e18, "left in a hurry");
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(c);
        assertEq(info.stake, 0);
        assertEq(info.unbonding, 200e18);
        assertEq(registry.claimableTokens(insurance), 1_800e18);
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
        // Eight tier-1 auditors backing nine units for four draws: the seed decides who sits.
        addAuditors("t1-", 1, 5, ONE_UNIT);
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
        uint256 units;
        for (uint256 i; i < audit.segment(id, 0).seatCount; ++i) {
            units += audit.seat(id, 0, 0, i).weight;
        }
        assertEq(units, 4, "every draw seated");
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
        assertEq(claimAs(a, id, seatRef(0, seatIndexOf(id, 0, a))), 0.175 ether);
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
        decide(id, 0, true);
        s = audit.session(id);
        assertEq(s.finalizedCount, 1);
        assertEq(s.passWeight, 1);
        assertEq(s.alignedSeats, 4, "aligned units");
        decide(id, 1, false);
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
        assertEq(s.alignedSeats, 8);
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
        Params memory p = suiteParams();
        p.tauBps = 7_000;
        applyParams(p);
        assertEq(audit.sessionParams(id).tauBps, 6_600);
        assertEq(abi.encode(audit.sessionParams(id)), abi.encode(suiteParams()));
    }

    function test_minimumFee_followsTheCurrentParams() public {
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](2);
        segs[0] = segmentInput(2, 1, false, false, keccak256("x"));
        segs[1] = segmentInput(3, 1, false, false, keccak256("y"));
        assertEq(audit.minimumFee(segs), 8_571_428_571_428_572); // 10 seats * 0.0006 ether / 0.7, up
        assertEq(audit.minimumFee(new ITRUSTAudit.SegmentInput[](0)), 0);
        Params memory p = suiteParams();
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
    ///      the outcome of segment 0, checking that each pays `auditorsWei / aligned` per unit (a and
    ///      b hold one unit, c two); every other seat's claim must revert. `aligned` counts units.
    function claimTrio(uint256 id, uint8[3] memory choices, uint256 auditorsWei)
        internal
        returns (uint256 toAuditors, uint256 aligned)
    {
        ITRUSTAudit.SegmentStatus status = audit.segment(id, 0).status;
        bool[3] memory isAligned;
        uint256[3] memory units = [uint256(1), 1, 2];
        for (uint256 i; i < 3; ++i) {
            isAligned[i] = (status == ITRUSTAudit.SegmentStatus.Passed && choices[i] % 3 == 1)
                || (status == ITRUSTAudit.SegmentStatus.Failed && choices[i] % 3 == 2);
            if (isAligned[i]) aligned += units[i];
        }
        assertEq(audit.session(id).alignedSeats, aligned);
        uint256 perSeat = aligned == 0 ? 0 : auditorsWei / aligned;
        address[3] memory who = [a, b, c];
        for (uint256 i; i < 3; ++i) {
            uint256 index = seatIndexOf(id, 0, who[i]);
            assertEq(audit.seat(id, 0, 0, index).weight, units[i]);
            if (isAligned[i]) {
                uint256 share = perSeat * units[i];
                assertEq(claimAs(who[i], id, seatRef(0, index)), share, "an aligned seat gets its share per unit");
                toAuditors += share;
            } else {
                vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSeatNotRewarded.selector, id, 0, index, who[i]));
                vm.prank(who[i]);
                audit.claimRewards(id, seatRef(0, index));
            }
        }
    }

    /// @notice Whatever the split, the fee and the votes, the four shares claimed, credited or sent
    ///         add up to the fee exactly: each aligned seat claims the auditors' share divided by the
    ///         aligned units, once per unit of its own, the treasury gets the dust (or the whole
    ///         share when no seat aligned), and no other seat can claim anything.
    function testFuzz_distributeRewards_sharesAddUpToTheFee(
        uint256 fee,
        uint256 auditorBps,
        uint256 treasuryBps,
        uint256 stakerBps,
        uint8[3] memory choices
    ) public {
        Params memory p = suiteParams();
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
        assertLt(auditorsWei - toAuditors, aligned == 0 ? auditorsWei + 1 : aligned, "dust below a wei per unit");
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
