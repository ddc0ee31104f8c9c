// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";

import {SegmentKeysBase} from "./SegmentKeysBase.sol";
import {ISegmentKeys} from "../src/interfaces/ISegmentKeys.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {Params} from "../src/types/Params.sol";

/// @notice `publishEnvelopesBatch`: the envelopes of many rounds of a session in one call, each set
///         checked and announced exactly as one `publishEnvelopes` call would, all or nothing.
contract SegmentKeysDeliveryBatchTest is SegmentKeysBase {
    /// @notice EIP-7825 (Osaka): the most gas one transaction may use.
    uint256 internal constant TRANSACTION_GAS_CAP = 2 ** 24;
    /// @notice The largest transaction go-ethereum's pool accepts (`txMaxSize`, 128 KiB), and a
    ///         generous allowance for everything in a signed transaction besides the calldata.
    uint256 internal constant TXPOOL_MAX_BYTES = 128 * 1024;
    uint256 internal constant TRANSACTION_FIELDS_BYTES = 1024;

    /// @notice A session in every state a set can meet, built once in `setUp`:
    ///         segment 0: tier 1, escalated, round 1 seated (7 tier-2 draws), Voting;
    ///         segments 1 and 4: tier 2, round 0 (5 seats), Voting (finalizable);
    ///         segment 2: tier 1, round 0 (3 seats), Voting (finalizable);
    ///         segment 3: tier 1, Passed;
    ///         segment 5: tier 1, registered, not drawn (AwaitingDraw);
    ///         segment 6: none.
    uint256 internal id;

    /// @notice The segments that take envelopes, and their current rounds.
    uint256[4] internal votingSegments = [uint256(0), 1, 2, 4];

    address[] internal tier1;

    function setUp() public override {
        super.setUp();
        tier1 = addAuditors("t1-", 1, 4, 1_000e18);
        addAuditors("t2-", 2, 8, 2_000e18);

        ITRUSTAudit.SegmentInput[] memory segments = uniformSegments(6, 1);
        segments[1].tier = 2;
        segments[4].tier = 2;
        id = openSession(segments);
        rollPastRandomness(id, 0);
        audit.assignAuditorsBatch(id, ids5(0, 1, 2, 3, 4));

        // Segment 0 undecided (one pass, one fail, one silent seat), segment 3 unanimous; both
        // finalize, and segment 0 escalates and draws round 1.
        address[] memory round0 = audit.committee(id, 0);
        commitAs(round0[0], id, 0, true);
        commitAs(round0[1], id, 0, false);
        commitAll(id, 3, true); // every seat committed: segment 3's reveal window opens now
        revealAll(id, 3, true);
        toCommitEnd(id, 0);
        revealAs(round0[0], id, 0, true);
        revealAs(round0[1], id, 0, false);
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        audit.finalizeSegment(id, 3);
        drawSegment(id, 0);

        assertEq(audit.segment(id, 0).round, 1);
        // Seven draws of tier 2 (with replacement: a member drawn twice holds one seat of two units).
        assertEq(audit.segment(id, 0).committeeSize, 7);
        assertEq(audit.committee(id, 0).length, audit.segment(id, 0).seatCount);
        assertEq(uint8(audit.segment(id, 3).status), uint8(ITRUSTAudit.SegmentStatus.Passed));
        assertEq(uint8(audit.segment(id, 5).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
    }

    // ------------------------------------------------------------------ helpers

    /// @notice The seats (distinct members) of a segment's current round of the fixture session.
    function seats(uint256 segmentId) internal view returns (uint256) {
        return audit.segment(id, segmentId).seatCount;
    }

    function ids5(uint256 a, uint256 b, uint256 c, uint256 d, uint256 e) internal pure returns (uint256[] memory l) {
        l = new uint256[](5);
        (l[0], l[1], l[2], l[3], l[4]) = (a, b, c, d, e);
    }

    /// @notice The set a correct provider publishes for `segmentId`'s current round.
    function setFor(uint256 sessionId, uint256 segmentId, string memory tag)
        internal
        view
        returns (ISegmentKeys.EnvelopeSet memory)
    {
        ITRUSTAudit.SegmentView memory g = audit.segment(sessionId, segmentId);
        return
            ISegmentKeys.EnvelopeSet({segmentId: segmentId, round: g.round, envelopeCids: envelopes(g.seatCount, tag)});
    }

    function sets2(ISegmentKeys.EnvelopeSet memory a, ISegmentKeys.EnvelopeSet memory b)
        internal
        pure
        returns (ISegmentKeys.EnvelopeSet[] memory list)
    {
        list = new ISegmentKeys.EnvelopeSet[](2);
        (list[0], list[1]) = (a, b);
    }

    function batch(uint256 sessionId, ISegmentKeys.EnvelopeSet[] memory sets) internal {
        vm.prank(provider);
        keys.publishEnvelopesBatch(sessionId, sets);
    }

    /// @notice A session of `count` drawn tier-1 segments of three seats each: committees are drawn
    ///         with replacement, so the tier holds three auditors that back one unit each (the
    ///         setUp's step aside) and every committee seats all three (`drawRestoringOneUnit`).
    function drawnTier1Session(uint256 count) internal returns (uint256 sessionId) {
        applyParams(oneUnitParams());
        for (uint256 i; i < tier1.length; ++i) {
            vm.prank(tier1[i]);
            registry.setAvailable(false);
        }
        addAuditors("one-unit-", 1, 3, ONE_UNIT_STAKE);
        sessionId = openSession(uniformSegments(count, 1));
        uint256[] memory ids = new uint256[](count);
        for (uint256 i; i < count; ++i) {
            ids[i] = i;
        }
        drawRestoringOneUnit(sessionId, ids);
        for (uint256 i; i < count; ++i) {
            assertEq(audit.segment(sessionId, i).seatCount, 3, "three seats");
        }
    }

    /// @notice `count` sets, one per segment 0..count-1 of `sessionId`, each for its current round.
    function setsOf(uint256 sessionId, uint256 count, string memory tag)
        internal
        view
        returns (ISegmentKeys.EnvelopeSet[] memory sets)
    {
        sets = new ISegmentKeys.EnvelopeSet[](count);
        for (uint256 i; i < count; ++i) {
            sets[i] = setFor(sessionId, i, string.concat(tag, vm.toString(i), "-"));
        }
    }

    /// @notice `count` copies of a set for segment 0 of `sessionId` in round 0 with `seats` CIDs.
    function repeatedSets(uint256 count, uint256 seats) internal pure returns (ISegmentKeys.EnvelopeSet[] memory sets) {
        sets = new ISegmentKeys.EnvelopeSet[](count);
        bytes[] memory cids = envelopes(seats, "rep-");
        for (uint256 i; i < count; ++i) {
            sets[i] = ISegmentKeys.EnvelopeSet({segmentId: 0, round: 0, envelopeCids: cids});
        }
    }

    // ------------------------------------------------------------------ events

    function test_publishEnvelopesBatch_emitsEverySetsEventsInOrder() public {
        ISegmentKeys.EnvelopeSet[] memory sets = new ISegmentKeys.EnvelopeSet[](4);
        sets[0] = setFor(id, 2, "a-");
        sets[1] = setFor(id, 0, "b-");
        sets[2] = setFor(id, 4, "c-");
        sets[3] = setFor(id, 1, "d-");
        for (uint256 s; s < sets.length; ++s) {
            address[] memory members = audit.committee(id, sets[s].segmentId);
            for (uint256 i; i < members.length; ++i) {
                vm.expectEmit(address(keys));
                emit ISegmentKeys.KeyEnvelopePublished(
                    id, sets[s].segmentId, sets[s].round, i, members[i], sets[s].envelopeCids[i]
                );
            }
        }
        vm.recordLogs();
        batch(id, sets);
        assertEq(
            keysLogs().length,
            seats(2) + seats(0) + seats(4) + seats(1),
            "one event per seat of every set, nothing else"
        );
    }

    function test_publishEnvelopesBatch_namesTheRoundOfEachSet() public {
        ISegmentKeys.EnvelopeSet[] memory sets = sets2(setFor(id, 0, "r1-"), setFor(id, 2, "r0-"));
        vm.recordLogs();
        batch(id, sets);
        Vm.Log[] memory logs = keysLogs();
        assertEq(logs.length, seats(0) + seats(2));
        assertPublishedAt(logs, 0, id, 0, 1, audit.committee(id, 0), sets[0].envelopeCids);
        assertPublishedAt(logs, seats(0), id, 2, 0, audit.committee(id, 2), sets[1].envelopeCids);
    }

    function test_publishEnvelopesBatch_aSegmentTwiceEmitsBothSetsInOrder() public {
        // Per seat the later event wins, as with two `publishEnvelopes` calls.
        ISegmentKeys.EnvelopeSet[] memory sets = sets2(setFor(id, 2, "first-"), setFor(id, 2, "second-"));
        address[] memory members = audit.committee(id, 2);
        vm.recordLogs();
        batch(id, sets);
        Vm.Log[] memory logs = keysLogs();
        assertEq(logs.length, 2 * members.length);
        assertPublishedAt(logs, 0, id, 2, 0, members, sets[0].envelopeCids);
        assertPublishedAt(logs, members.length, id, 2, 0, members, sets[1].envelopeCids);
    }

    function test_publishEnvelopesBatch_oneSetEmitsWhatPublishEnvelopesEmits() public {
        ISegmentKeys.EnvelopeSet memory set = setFor(id, 4, "one-");
        vm.recordLogs();
        publish(id, set.segmentId, set.round, set.envelopeCids);
        Vm.Log[] memory single = keysLogs();
        batch(id, sets2(set, set));
        Vm.Log[] memory batched = keysLogs();
        assertEq(batched.length, 2 * single.length);
        for (uint256 i; i < batched.length; ++i) {
            assertLogEq(batched[i], single[i % single.length]);
        }
    }

    function test_publishEnvelopesBatch_acceptsCidsOfOneTo128Bytes() public {
        ISegmentKeys.EnvelopeSet memory set = setFor(id, 2, "");
        assertGe(set.envelopeCids.length, 2, "the fixture seats two members on segment 2");
        set.envelopeCids[0] = bytesOfLength(1);
        set.envelopeCids[set.envelopeCids.length - 1] = bytesOfLength(128);
        vm.recordLogs();
        batch(id, sets2(set, setFor(id, 4, "")));
        assertEq(keysLogs().length, seats(2) + seats(4));
    }

    // ------------------------------------------------------------------ gas

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_publishEnvelopesBatch_gasForOneSetOfThree() public {
        uint256 sessionId = drawnTier1Session(1);
        batch(sessionId, setsOf(sessionId, 1, "g1-"));
        vm.snapshotGasLastCall("SegmentKeys", "publishEnvelopesBatch_1x3");
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_publishEnvelopesBatch_gasForTenSetsOfThree() public {
        uint256 sessionId = drawnTier1Session(10);
        batch(sessionId, setsOf(sessionId, 10, "g10-"));
        vm.snapshotGasLastCall("SegmentKeys", "publishEnvelopesBatch_10x3");
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_publishEnvelopesBatch_gasForFiftySetsOfThree() public {
        uint256 sessionId = drawnTier1Session(50);
        ISegmentKeys.EnvelopeSet[] memory sets = setsOf(sessionId, 50, "g50-");
        vm.recordLogs();
        batch(sessionId, sets);
        vm.snapshotGasLastCall("SegmentKeys", "publishEnvelopesBatch_50x3");
        assertEq(keysLogs().length, 150);
    }

    /// @notice The dearest batch `MAX_BATCH_ENVELOPES` allows: one-seat committees of distinct
    ///         segments (the most sets, each reading its segment and committee cold) with CIDs of
    ///         `MAX_ENVELOPE_CID_BYTES` bytes. The isolated call's gas includes the transaction's
    ///         base cost and calldata.
    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_publishEnvelopesBatch_worstCaseFitsTheTransactionGasCap() public {
        uint256 maxSets = keys.MAX_BATCH_ENVELOPES();
        Params memory p = defaultParams();
        p.committeeSizeTier1 = 1;
        p.maxSegmentsPerSession = uint16(maxSets); // 512 fits 16 bits
        applyParams(p);
        addAuditors("wc-", 1, 8, 1_000e18);
        uint256 sessionId = openSession(uniformSegments(maxSets, 1));
        rollPastRandomness(sessionId, 0);
        for (uint256 first; first < maxSets; first += 64) {
            uint256[] memory chunk = new uint256[](64);
            for (uint256 i; i < 64; ++i) {
                chunk[i] = first + i;
            }
            audit.assignAuditorsBatch(sessionId, chunk);
        }

        ISegmentKeys.EnvelopeSet[] memory sets = new ISegmentKeys.EnvelopeSet[](maxSets);
        for (uint256 i; i < maxSets; ++i) {
            bytes[] memory cids = new bytes[](1);
            cids[0] = abi.encodePacked(keccak256(abi.encode(i, 0)), keccak256(abi.encode(i, 1)));
            cids[0] = bytes.concat(cids[0], cids[0]); // 128 bytes of hash output: nearly all non-zero, dear calldata
            sets[i] = ISegmentKeys.EnvelopeSet({segmentId: i, round: 0, envelopeCids: cids});
        }
        uint256 calldataBytes = abi.encodeCall(ISegmentKeys.publishEnvelopesBatch, (sessionId, sets)).length;
        assertLe(calldataBytes + TRANSACTION_FIELDS_BYTES, TXPOOL_MAX_BYTES, "a node's pool must take it");
        batch(sessionId, sets);
        uint256 gasUsed = vm.snapshotGasLastCall("SegmentKeys", "publishEnvelopesBatch_worstCase");
        assertLt(gasUsed, TRANSACTION_GAS_CAP, "the largest batch must fit one transaction");
    }

    // ------------------------------------------------------------------ batch-wide reverts

    function test_publishEnvelopesBatch_revertsWhenEmpty() public {
        ISegmentKeys.EnvelopeSet[] memory none = new ISegmentKeys.EnvelopeSet[](0);
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysNoEnvelopeSets.selector, id));
        batch(id, none);
        // Checked first: also for a session that does not exist, whoever calls.
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysNoEnvelopeSets.selector, 99));
        vm.prank(stranger);
        keys.publishEnvelopesBatch(99, none);
    }

    function test_publishEnvelopesBatch_takesAtMostMaxBatchEnvelopes() public {
        uint256 maximum = keys.MAX_BATCH_ENVELOPES();
        assertEq(maximum, 256);
        uint256 sessionId = drawnTier1Session(1);
        // 85 sets of 3 and one of 1: 256 envelopes pass the size check and reach the per-set checks.
        ISegmentKeys.EnvelopeSet[] memory sets = repeatedSets(maximum / 3 + 1, 3);
        sets[maximum / 3].envelopeCids = envelopes(maximum % 3, "short-");
        vm.expectRevert(
            abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongEnvelopeCount.selector, sessionId, 0, maximum % 3, 3)
        );
        batch(sessionId, sets);
        // 86 sets of 3: 258.
        sets = repeatedSets(maximum / 3 + 1, 3);
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysBatchTooLarge.selector, sessionId, 258, maximum));
        batch(sessionId, sets);
        // The whole count, however it is split, before anything else is read.
        sets = repeatedSets(2, 150);
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysBatchTooLarge.selector, 99, 300, maximum));
        vm.prank(stranger);
        keys.publishEnvelopesBatch(99, sets);
        // Just under the bound, a correct batch goes through.
        vm.recordLogs();
        batch(sessionId, repeatedSets(maximum / 3, 3));
        assertEq(keysLogs().length, 255);
    }

    function test_publishEnvelopesBatch_revertsForUnknownSession() public {
        ISegmentKeys.EnvelopeSet[] memory sets = sets2(setFor(id, 2, ""), setFor(id, 4, ""));
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysUnknownSession.selector, 7));
        batch(7, sets);
    }

    function test_publishEnvelopesBatch_revertsForAnyoneButTheProvider() public {
        ISegmentKeys.EnvelopeSet[] memory sets = sets2(setFor(id, 2, ""), setFor(id, 0, ""));
        address seated = audit.committee(id, 2)[0];
        address[3] memory callers = [stranger, seated, address(this)];
        for (uint256 i; i < callers.length; ++i) {
            vm.expectRevert(
                abi.encodeWithSelector(ISegmentKeys.SegmentKeysNotProvider.selector, id, callers[i], provider)
            );
            vm.prank(callers[i]);
            keys.publishEnvelopesBatch(id, sets);
        }
    }

    // ------------------------------------------------------------------ per-set reverts

    /// @notice A bad second set reverts the whole batch, the good first set with it, with the error
    ///         `publishEnvelopes` gives for the bad set alone.
    function assertSecondSetRevertsAs(ISegmentKeys.EnvelopeSet memory bad, bytes memory expected) internal {
        vm.expectRevert(expected);
        publish(id, bad.segmentId, bad.round, bad.envelopeCids);
        ISegmentKeys.EnvelopeSet[] memory sets = sets2(setFor(id, 2, "good-"), bad);
        vm.expectRevert(expected);
        batch(id, sets);
    }

    function test_publishEnvelopesBatch_revertsForUnknownSegment() public {
        ISegmentKeys.EnvelopeSet memory bad = setFor(id, 2, "");
        bad.segmentId = 6;
        assertSecondSetRevertsAs(bad, abi.encodeWithSelector(ISegmentKeys.SegmentKeysUnknownSegment.selector, id, 6));
    }

    function test_publishEnvelopesBatch_revertsForASegmentAwaitingItsDraw() public {
        assertSecondSetRevertsAs(
            setFor(id, 5, ""),
            abi.encodeWithSelector(
                ISegmentKeys.SegmentKeysNotVoting.selector, id, 5, ITRUSTAudit.SegmentStatus.AwaitingDraw
            )
        );
    }

    function test_publishEnvelopesBatch_revertsForAFinalSegment() public {
        ISegmentKeys.EnvelopeSet memory bad = setFor(id, 2, "");
        bad.segmentId = 3;
        assertSecondSetRevertsAs(
            bad,
            abi.encodeWithSelector(ISegmentKeys.SegmentKeysNotVoting.selector, id, 3, ITRUSTAudit.SegmentStatus.Passed)
        );
    }

    function test_publishEnvelopesBatch_revertsForAnEndedOrFutureRound() public {
        // Segment 0 escalated: round 0 is over.
        ISegmentKeys.EnvelopeSet memory ended = setFor(id, 2, "");
        ended.segmentId = 0;
        assertSecondSetRevertsAs(
            ended, abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongRound.selector, id, 0, 0, 1)
        );
        ISegmentKeys.EnvelopeSet memory future = setFor(id, 4, "");
        future.round = 1;
        assertSecondSetRevertsAs(
            future, abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongRound.selector, id, 4, 1, 0)
        );
    }

    function test_publishEnvelopesBatch_revertsOnWrongCount() public {
        ISegmentKeys.EnvelopeSet memory bad = setFor(id, 0, "");
        // One envelope per seat (a member drawn twice holds one seat), not per draw.
        uint256 n = seats(0);
        bad.envelopeCids = envelopes(7, "");
        assertTrue(n != 7, "the fixture's round 1 seats fewer members than its seven draws");
        assertSecondSetRevertsAs(
            bad, abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongEnvelopeCount.selector, id, 0, 7, n)
        );
        bad.envelopeCids = new bytes[](0);
        assertSecondSetRevertsAs(
            bad, abi.encodeWithSelector(ISegmentKeys.SegmentKeysWrongEnvelopeCount.selector, id, 0, 0, n)
        );
    }

    function test_publishEnvelopesBatch_revertsOnEmptyCid() public {
        ISegmentKeys.EnvelopeSet memory bad = setFor(id, 4, "");
        uint256 last = bad.envelopeCids.length - 1;
        bad.envelopeCids[last] = "";
        assertSecondSetRevertsAs(
            bad, abi.encodeWithSelector(ISegmentKeys.SegmentKeysEmptyEnvelope.selector, id, 4, last)
        );
    }

    function test_publishEnvelopesBatch_revertsOnOverlongCid() public {
        ISegmentKeys.EnvelopeSet memory bad = setFor(id, 1, "");
        uint256 last = bad.envelopeCids.length - 1;
        bad.envelopeCids[last] = bytesOfLength(129);
        assertSecondSetRevertsAs(
            bad, abi.encodeWithSelector(ISegmentKeys.SegmentKeysEnvelopeTooLong.selector, id, 1, last, 129, 128)
        );
    }

    // ------------------------------------------------------------------ fuzz

    /// @notice A batch is the sequence of its `publishEnvelopes` calls made at once: when every
    ///         call succeeds, the batch emits exactly their events in order (emitter, topics,
    ///         data); when one fails, the batch reverts with the first failing call's error.
    ///         `fault` picks an error to plant in set `faultAt` (or none).
    function testFuzz_publishEnvelopesBatch_isTheSequenceOfSingleCalls(
        uint256 seed,
        uint256 setCount,
        uint256 fault,
        uint256 faultAt
    ) public {
        setCount = bound(setCount, 1, 8);
        faultAt = bound(faultAt, 0, setCount - 1);
        fault = bound(fault, 0, 11); // 0..3: none
        (uint256 sessionId, address caller, ISegmentKeys.EnvelopeSet[] memory sets) =
            fuzzedSets(seed, setCount, fault, faultAt);

        uint256 before = vm.snapshotState();
        vm.recordLogs();
        bytes memory firstError;
        bool failed;
        for (uint256 i; i < setCount && !failed; ++i) {
            vm.prank(caller);
            (bool ok, bytes memory returned) = address(keys)
                .call(
                    abi.encodeCall(
                        ISegmentKeys.publishEnvelopes,
                        (sessionId, sets[i].segmentId, sets[i].round, sets[i].envelopeCids)
                    )
                );
            if (!ok) (failed, firstError) = (true, returned);
        }
        Vm.Log[] memory single = keysLogs();
        vm.revertToStateAndDelete(before);
        vm.recordLogs();

        vm.prank(caller);
        (bool batchOk, bytes memory batchReturned) =
            address(keys).call(abi.encodeCall(ISegmentKeys.publishEnvelopesBatch, (sessionId, sets)));
        Vm.Log[] memory batched = keysLogs();
        assertEq(failed, fault >= 4, "a planted fault fails, and only then");
        if (failed) {
            assertFalse(batchOk, "the batch fails where a single call fails");
            assertEq(batchReturned, firstError, "with the first failing call's error");
        } else {
            assertTrue(batchOk, "the batch succeeds where every single call does");
            assertEq(batched.length, single.length);
            for (uint256 i; i < single.length; ++i) {
                assertLogEq(batched[i], single[i]);
            }
        }
    }

    /// @notice `setCount` valid sets of random voting segments (repeats allowed) and random CIDs of
    ///         1 to 128 bytes, with `fault` planted in set `faultAt`; returns the session and the
    ///         caller to use.
    function fuzzedSets(uint256 seed, uint256 setCount, uint256 fault, uint256 faultAt)
        internal
        view
        returns (uint256 sessionId, address caller, ISegmentKeys.EnvelopeSet[] memory sets)
    {
        (sessionId, caller) = (id, provider);
        sets = new ISegmentKeys.EnvelopeSet[](setCount);
        for (uint256 s; s < setCount; ++s) {
            uint256 segmentId = votingSegments[uint256(keccak256(abi.encode(seed, s))) % votingSegments.length];
            ITRUSTAudit.SegmentView memory g = audit.segment(id, segmentId);
            bytes[] memory cids = new bytes[](g.seatCount);
            for (uint256 i; i < cids.length; ++i) {
                cids[i] = randomBytes(keccak256(abi.encode(seed, s, i)), 1, MAX_CID);
            }
            sets[s] = ISegmentKeys.EnvelopeSet({segmentId: segmentId, round: g.round, envelopeCids: cids});
        }
        ISegmentKeys.EnvelopeSet memory bad = sets[faultAt];
        uint256 seat = uint256(keccak256(abi.encode(seed, "seat"))) % bad.envelopeCids.length;
        if (fault == 4) bad.round += 1;
        if (fault == 5) bad.envelopeCids = envelopes(bad.envelopeCids.length + 1, "more-");
        if (fault == 6) bad.envelopeCids = envelopes(bad.envelopeCids.length - 1, "fewer-");
        if (fault == 7) bad.envelopeCids[seat] = "";
        if (fault == 8) bad.envelopeCids[seat] = randomBytes(keccak256(abi.encode(seed)), MAX_CID + 1, 400);
        if (fault == 9) bad.segmentId = [uint256(3), 5, 6, type(uint256).max][seed % 4]; // final, undrawn, none
        if (fault == 10) caller = [stranger, audit.committee(id, 2)[0], address(this)][seed % 3];
        if (fault == 11) sessionId = bound(seed, id + 1, type(uint256).max);
    }

    uint256 internal constant MAX_CID = 128;

    /// @notice `min` to `max` pseudo-random bytes from `h`.
    function randomBytes(bytes32 h, uint256 min, uint256 max) internal pure returns (bytes memory b) {
        b = new bytes(min + uint256(h) % (max - min + 1));
        for (uint256 i; i < b.length; ++i) {
            b[i] = bytes1(uint8(uint256(keccak256(abi.encode(h, i)))));
        }
    }

    function assertLogEq(Vm.Log memory a, Vm.Log memory b) internal pure {
        assertEq(a.emitter, b.emitter, "emitter");
        assertEq(a.topics.length, b.topics.length, "topic count");
        for (uint256 t; t < a.topics.length; ++t) {
            assertEq(a.topics[t], b.topics[t], "topic");
        }
        assertEq(a.data, b.data, "data");
    }
}
