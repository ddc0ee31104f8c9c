// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";

import {SegmentKeysBase} from "./SegmentKeysBase.sol";
import {ISegmentKeys} from "../src/interfaces/ISegmentKeys.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";

/// @notice Audit report announcements: only the seat's own auditor, only once its vote is revealed
///         (never while the commit window is open), one event per report.
contract SegmentKeysReportsTest is SegmentKeysBase {
    bytes32 internal constant REPORT_TOPIC = keccak256("ReportPublished(uint256,uint256,uint8,uint8,address,bytes)");

    address internal a;
    address internal b;
    address internal c;
    uint256 internal id;

    function setUp() public override {
        super.setUp();
        // Exactly three tier-1 auditors whose stake backs one unit of P and not two (stake < 2P):
        // committees are drawn with replacement (issue L2), and a member drawn twice cannot back
        // the second unit, so every tier-1 committee (k = 3 draws) seats all three, one unit each,
        // as these tests of who may report assume. The segments are drawn one at a time, each
        // member restaking what its seat locked in between, so all three sit on every segment.
        applyParams(oneUnitParams());
        address[] memory pool = addAuditors("t1-", 1, 3, ONE_UNIT_STAKE);
        (a, b, c) = (pool[0], pool[1], pool[2]);
        addAuditors("t2-", 2, 7, 2_000e18);
        id = openSession(uniformSegments(3, 1));
        uint256[] memory segmentIds = new uint256[](3);
        (segmentIds[0], segmentIds[1], segmentIds[2]) = (0, 1, 2);
        drawRestoringOneUnit(id, segmentIds);
    }

    function ref(uint256 segmentId, uint8 round, address auditor, bytes memory cid)
        internal
        view
        returns (ISegmentKeys.ReportRef memory)
    {
        uint8 seatIndex = uint8(seatOfInRound(segmentId, round, auditor));
        return ISegmentKeys.ReportRef({segmentId: segmentId, round: round, seatIndex: seatIndex, reportCid: cid});
    }

    /// @notice The index of `auditor`'s seat in a round of a segment (any round, current or past).
    function seatOfInRound(uint256 segmentId, uint8 round, address auditor) internal view returns (uint256) {
        for (uint256 i; i < 127; ++i) {
            if (audit.seat(id, segmentId, round, i).auditor == auditor) return i;
        }
        revert("not seated in that round");
    }

    function one(ISegmentKeys.ReportRef memory r) internal pure returns (ISegmentKeys.ReportRef[] memory refs) {
        refs = new ISegmentKeys.ReportRef[](1);
        refs[0] = r;
    }

    function report(address auditor, ISegmentKeys.ReportRef[] memory refs) internal {
        vm.prank(auditor);
        keys.publishReports(id, refs);
    }

    function notHolder(ISegmentKeys.ReportRef memory r, address caller, address holder)
        internal
        view
        returns (bytes memory)
    {
        return abi.encodeWithSelector(
            ISegmentKeys.SegmentKeysNotSeatHolder.selector, id, r.segmentId, r.round, r.seatIndex, caller, holder
        );
    }

    function notRevealed(ISegmentKeys.ReportRef memory r) internal view returns (bytes memory) {
        return abi.encodeWithSelector(
            ISegmentKeys.SegmentKeysSeatNotRevealed.selector, id, r.segmentId, r.round, r.seatIndex
        );
    }

    /// @notice Every seat of the three segments commits and reveals `true` (the windows close
    ///         early: every seat commits).
    function revealEverything() internal {
        for (uint256 s; s < 3; ++s) {
            commitAll(id, s, true);
            revealAll(id, s, true);
        }
    }

    // ------------------------------------------------------------------ publishReports

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_publishReports_emitsOneEventPerRevealedSeat() public {
        revealEverything();
        bytes[] memory cids = envelopes(3, "report-");
        ISegmentKeys.ReportRef[] memory refs = new ISegmentKeys.ReportRef[](3);
        for (uint256 s; s < 3; ++s) {
            refs[s] = ref(s, 0, b, cids[s]);
        }
        for (uint256 s; s < 3; ++s) {
            vm.expectEmit(address(keys));
            emit ISegmentKeys.ReportPublished(id, s, 0, refs[s].seatIndex, b, cids[s]);
        }
        report(b, refs);
        vm.snapshotGasLastCall("SegmentKeys", "publishReports_3");
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_publishReports_oneReport() public {
        revealEverything();
        ISegmentKeys.ReportRef[] memory refs = one(ref(1, 0, c, envelopes(1, "r")[0]));
        vm.recordLogs();
        report(c, refs);
        vm.snapshotGasLastCall("SegmentKeys", "publishReports_1");
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(logs.length, 1);
        assertEq(logs[0].emitter, address(keys));
        assertEq(logs[0].topics[0], REPORT_TOPIC);
        assertEq(uint256(logs[0].topics[1]), id);
        assertEq(uint256(logs[0].topics[2]), 1);
        assertEq(address(uint160(uint256(logs[0].topics[3]))), c);
        (uint8 round, uint8 seatIndex, bytes memory cid) = abi.decode(logs[0].data, (uint8, uint8, bytes));
        assertEq(round, 0);
        assertEq(seatIndex, refs[0].seatIndex);
        assertEq(cid, refs[0].reportCid);
    }

    function test_publishReports_revertsBeforeTheReveal() public {
        bytes memory cid = envelopes(1, "r")[0];
        // Drawn, not committed.
        ISegmentKeys.ReportRef memory r = ref(0, 0, a, cid);
        vm.expectRevert(notRevealed(r));
        report(a, one(r));
        // Committed, in the commit window: a report would tell the vote before the others committed.
        commitAs(a, id, 0, true);
        vm.expectRevert(notRevealed(r));
        report(a, one(r));
        // The window closed (every seat committed), the vote is not revealed yet.
        commitAs(b, id, 0, true);
        commitAs(c, id, 0, true);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Reveal));
        vm.expectRevert(notRevealed(r));
        report(a, one(r));
        // Revealed: accepted.
        revealAs(a, id, 0, true);
        report(a, one(r));
    }

    function test_publishReports_revertsForASeatThatIsNotTheCallers() public {
        revealEverything();
        bytes memory cid = envelopes(1, "r")[0];
        ISegmentKeys.ReportRef memory bs = ref(0, 0, b, cid);
        vm.expectRevert(notHolder(bs, a, b));
        report(a, one(bs));
        vm.expectRevert(notHolder(bs, stranger, b));
        report(stranger, one(bs));
        // Not even governance or the provider.
        vm.expectRevert(notHolder(bs, address(this), b));
        keys.publishReports(id, one(bs));
        vm.expectRevert(notHolder(bs, provider, b));
        report(provider, one(bs));
    }

    function test_publishReports_revertsForWhatIsNoSeat() public {
        revealEverything();
        bytes memory cid = envelopes(1, "r")[0];
        // An index past the committee, a round not drawn, a segment or a session that does not exist.
        ISegmentKeys.ReportRef memory past = ISegmentKeys.ReportRef(0, 0, 3, cid);
        ISegmentKeys.ReportRef memory future = ISegmentKeys.ReportRef(0, 1, 0, cid);
        ISegmentKeys.ReportRef memory noSegment = ISegmentKeys.ReportRef(9, 0, 0, cid);
        ISegmentKeys.ReportRef[3] memory cases = [past, future, noSegment];
        for (uint256 i; i < cases.length; ++i) {
            vm.expectRevert(notHolder(cases[i], a, address(0)));
            report(a, one(cases[i]));
        }
        ISegmentKeys.ReportRef[] memory refs = one(ref(0, 0, a, cid));
        vm.expectRevert(
            abi.encodeWithSelector(ISegmentKeys.SegmentKeysNotSeatHolder.selector, 42, 0, 0, refs[0].seatIndex, a, 0)
        );
        vm.prank(a);
        keys.publishReports(42, refs);
    }

    function test_publishReports_revertsWithoutReports() public {
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysNoReports.selector, id));
        report(a, new ISegmentKeys.ReportRef[](0));
    }

    function test_publishReports_checksTheCidLength() public {
        revealEverything();
        ISegmentKeys.ReportRef memory r = ref(2, 0, a, "");
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysEmptyReport.selector, id, 2, 0, r.seatIndex));
        report(a, one(r));
        r.reportCid = bytesOfLength(129);
        vm.expectRevert(
            abi.encodeWithSelector(ISegmentKeys.SegmentKeysReportTooLong.selector, id, 2, 0, r.seatIndex, 129, 128)
        );
        report(a, one(r));
        r.reportCid = bytesOfLength(128);
        report(a, one(r));
        r.reportCid = bytesOfLength(1);
        report(a, one(r));
    }

    function test_publishReports_isAllOrNothing() public {
        revealEverything();
        ISegmentKeys.ReportRef[] memory refs = new ISegmentKeys.ReportRef[](2);
        refs[0] = ref(0, 0, a, envelopes(1, "r")[0]);
        refs[1] = ref(1, 0, b, envelopes(1, "s")[0]); // b's seat in a's call
        vm.expectRevert(notHolder(refs[1], a, b));
        report(a, refs);
        // The valid first ref alone goes through.
        vm.expectEmit(address(keys));
        emit ISegmentKeys.ReportPublished(id, 0, 0, refs[0].seatIndex, a, refs[0].reportCid);
        report(a, one(refs[0]));
    }

    function test_publishReports_laterAndAgainAfterTheRoundEnded() public {
        revealEverything();
        bytes[] memory cids = envelopes(2, "again-");
        ISegmentKeys.ReportRef memory r = ref(0, 0, a, cids[0]);
        report(a, one(r));
        audit.finalizeSegments(id, ids(0, 1));
        audit.finalizeSegment(id, 2);
        audit.finalizeTrace(id);
        audit.distributeRewards(id);
        vm.prank(a);
        audit.claimRewards(id, seatRef(0, r.seatIndex));
        // A corrected report for the same seat, once the session is paid out: the latest wins.
        r.reportCid = cids[1];
        vm.expectEmit(address(keys));
        emit ISegmentKeys.ReportPublished(id, 0, 0, r.seatIndex, a, cids[1]);
        report(a, one(r));
    }

    function test_publishReports_namesTheRoundOfAnEscalatedSegment() public {
        // Segment 0, round 0: a Pass, b Fail, c silent: undecided, escalates to seven tier-2 draws.
        castVotes(id, 0, addrs(a, b), bools(true, false));
        toRevealEnd(id, 0);
        assertFalse(audit.finalizeSegment(id, 0));
        address[] memory round1 = drawSegment(id, 0);
        bytes memory cid = envelopes(1, "r")[0];

        // Round 0's revealed seat still reports; its silent seat cannot.
        report(a, one(ref(0, 0, a, cid)));
        ISegmentKeys.ReportRef memory silent = ISegmentKeys.ReportRef(0, 0, uint8(seatOfInRound(0, 0, c)), cid);
        vm.expectRevert(notRevealed(silent));
        report(c, one(silent));

        // Round 1: seat 0 reports once revealed, naming round 1.
        commitAll(id, 0, true);
        revealAll(id, 0, true);
        ISegmentKeys.ReportRef memory r1 = ISegmentKeys.ReportRef(0, 1, 0, cid);
        vm.expectEmit(address(keys));
        emit ISegmentKeys.ReportPublished(id, 0, 1, 0, round1[0], cid);
        report(round1[0], one(r1));
        // The same index in round 0 is another auditor's seat.
        ISegmentKeys.ReportRef memory r0 = ISegmentKeys.ReportRef(0, 0, 0, cid);
        address holder0 = audit.seat(id, 0, 0, 0).auditor; // a tier-1 auditor, not in round 1
        vm.expectRevert(notHolder(r0, round1[0], holder0));
        report(round1[0], one(r0));
    }

    // ------------------------------------------------------------------ fuzz

    /// @notice A report is accepted exactly for a real seat of the caller that revealed, with a CID
    ///         of 1 to 128 bytes.
    function testFuzz_publishReports_onlyTheRevealedHolder(
        uint8 seatIndex,
        uint8 round,
        uint256 callerSeed,
        uint256 revealMask,
        uint256 cidLength
    ) public {
        seatIndex = uint8(bound(seatIndex, 0, 4)); // 3 seats, and two indexes past the committee
        round = uint8(bound(round, 0, 1));
        cidLength = bound(cidLength, 0, 130);
        address[4] memory callers = [a, b, c, stranger];
        address caller = callers[callerSeed % 4];
        address[] memory members = audit.committee(id, 0);
        for (uint256 i; i < 3; ++i) {
            commitAs(members[i], id, 0, true);
        }
        for (uint256 i; i < 3; ++i) {
            if ((revealMask >> i) & 1 == 1) revealAs(members[i], id, 0, true);
        }
        ISegmentKeys.ReportRef memory r = ISegmentKeys.ReportRef(0, round, seatIndex, bytesOfLength(cidLength));
        bool seat = round == 0 && seatIndex < 3;
        bool accepted = seat && members[seatIndex] == caller && (revealMask >> seatIndex) & 1 == 1 && cidLength >= 1
            && cidLength <= 128;
        vm.prank(caller);
        (bool ok,) = address(keys).call(abi.encodeCall(ISegmentKeys.publishReports, (id, one(r))));
        assertEq(ok, accepted);
    }
}
