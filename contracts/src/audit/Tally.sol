// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {ITRUSTAudit} from "../interfaces/ITRUSTAudit.sol";
import {Params} from "../types/Params.sol";
import {SeatOutcome, SeatSettlement, SettlementTerms} from "../types/Settlement.sol";
import {
    AuditStorage,
    Session,
    Segment,
    Seat,
    BPS,
    FLAG_CRITICAL,
    FLAG_CONTRADICTION,
    FLAG_DELIVERED,
    FLAG_SETTLING,
    SEAT_EMPTY,
    SEAT_SEATED,
    SEAT_PASS,
    SEAT_FAIL,
    SEAT_UNDELIVERED,
    SEAT_ABSTAINED,
    seatKey,
    seatHeldBy,
    requireUncommitted,
    endWithoutVote
} from "../types/AuditStorage.sol";
import {ParamsLib} from "../libraries/ParamsLib.sol";

/// @title Tally
/// @notice Ends a segment's round: the stake-weighted tally (eq. 3.3), each seat's outcome and
///         slash roll, settlement in the registry, escalation (2k+1, next tier), and the trace
///         verdict (eq. 3.5-3.6 with the critical path and contradictions).
/// @dev An external library delegate-called by `TRUSTAudit`.
library Tally {
    using SafeCast for uint256;

    /// @notice Finalizes the current round of each of `segmentIds` once its voting is over.
    ///         `strict`: a segment that is not voting reverts; otherwise it is skipped, so one
    ///         finalization sent ahead of a batch (a front-run) does not revert the batch.
    function finalize(AuditStorage storage $, uint256 sessionId, uint256[] memory segmentIds, bool strict) external {
        Session storage s = $.sessions[sessionId];
        address beneficiary = $.params.insuranceFund();
        for (uint256 i; i < segmentIds.length; ++i) {
            uint256 segmentId = segmentIds[i];
            if (segmentId >= s.segmentCount) revert ITRUSTAudit.AuditUnknownSegment(sessionId, segmentId);
            Segment storage g = $.segments[sessionId][segmentId];
            if (g.status != ITRUSTAudit.SegmentStatus.Voting) {
                if (strict) revert ITRUSTAudit.AuditWrongSegmentStatus(sessionId, segmentId, g.status);
                continue;
            }
            _finalizeSegment($, sessionId, s, segmentId, g, beneficiary, type(uint256).max);
        }
    }

    /// @notice Settles at most `maxSeats` entries of the segment's settlement list from where the
    ///         last step stopped (see `ITRUSTAudit.settleSegment`, issue M4); the step that settles
    ///         the last entry finalizes the segment or escalates it. Reverts unless the segment's
    ///         round is voting and its voting is over.
    /// @return done Whether this step settled the last entry.
    function settleStep(AuditStorage storage $, uint256 sessionId, uint256 segmentId, uint256 maxSeats)
        external
        returns (bool done)
    {
        if (maxSeats == 0) revert ITRUSTAudit.AuditZeroMaxSeats(sessionId, segmentId);
        Session storage s = $.sessions[sessionId];
        if (segmentId >= s.segmentCount) revert ITRUSTAudit.AuditUnknownSegment(sessionId, segmentId);
        Segment storage g = $.segments[sessionId][segmentId];
        if (g.status != ITRUSTAudit.SegmentStatus.Voting) {
            revert ITRUSTAudit.AuditWrongSegmentStatus(sessionId, segmentId, g.status);
        }
        done = _finalizeSegment($, sessionId, s, segmentId, g, $.params.insuranceFund(), maxSeats);
    }

    /// @notice The segment's settlement list as it stands (see `ITRUSTAudit.settlementProgress`):
    ///         the entries settled by steps so far and the list's length; (0, 0) unless the
    ///         segment's round is voting.
    function settlementProgress(AuditStorage storage $, uint256 sessionId, uint256 segmentId)
        external
        view
        returns (uint256 settled, uint256 total)
    {
        Segment storage g = $.segments[sessionId][segmentId];
        if (g.status != ITRUSTAudit.SegmentStatus.Voting) return (0, 0);
        (SeatSettlement[] memory seats, ITRUSTAudit.SegmentStatus outcome) =
            _tally($, sessionId, segmentId, g, $.sessionParams[sessionId]);
        if (outcome != ITRUSTAudit.SegmentStatus.Voting && g.round != 0) {
            seats = _withEarlierRounds($, sessionId, segmentId, g, seats, outcome);
        }
        total = seats.length;
        settled = g.flags & FLAG_SETTLING != 0 ? g.settledCount : 0;
    }

    /// @notice Releases seat `seatIndex` of the segment's current round because no key envelope
    ///         was delivered for it in time (see `ITRUSTAudit.claimUndelivered`): unlocks its stake
    ///         and credits its auditor R per unit out of the session's fee.
    function releaseUndelivered(
        AuditStorage storage $,
        address caller,
        uint256 sessionId,
        uint256 segmentId,
        Segment storage g,
        uint256 seatIndex
    ) external {
        Params storage p = $.sessionParams[sessionId];
        uint256 deadline = deliveryDeadline(g, p);
        if (block.timestamp <= deadline) {
            revert ITRUSTAudit.AuditDeliveryPending(sessionId, segmentId, block.timestamp, deadline);
        }
        uint8 round = g.round;
        uint8 flags = g.flags;
        if (flags & FLAG_DELIVERED != 0) revert ITRUSTAudit.AuditEnvelopesDelivered(sessionId, segmentId, round);
        // Once a chunk is settled the settlement list must not change (issue M4): a seat released
        // now would leave the list and could flip the round's M3 decision.
        if (flags & FLAG_SETTLING != 0) revert ITRUSTAudit.AuditSettlementStarted(sessionId, segmentId);
        Seat storage st = seatHeldBy($, sessionId, segmentId, g, seatIndex, caller);
        requireUncommitted(st, sessionId, segmentId, seatIndex);
        st.state = SEAT_UNDELIVERED;
        endWithoutVote(g);
        uint8 units = uint8(st.weight); // at most the committee size
        uint256 compensation = _compensate($.sessions[sessionId], p.rewardPerSeatWei * units);
        $.claimableWei[caller] += compensation;
        emit ITRUSTAudit.SeatUndelivered(sessionId, segmentId, round, seatIndex, caller, compensation);
        SeatSettlement[] memory one = new SeatSettlement[](1);
        one[0] = SeatSettlement(caller, SeatOutcome.Released, 0, units);
        _settle($, sessionId, one, p, address(0));
    }

    /// @dev Takes `owedWei` out of the session's fee, or what is left of it.
    function _compensate(Session storage s, uint256 owedWei) private returns (uint256 compensation) {
        uint256 fee = s.feeWei;
        compensation = owedWei < fee ? owedWei : fee;
        s.feeWei = uint96(fee - compensation); // <= feeWei, a uint96
    }

    /// @notice The end of the first half of the current round's commit window: key envelopes
    ///         published later do not count as delivered. Zero before the draw. Computed from the
    ///         current commit deadline, so it moves earlier with it when the window closes early;
    ///         by then every seat has acted and none can claim any more.
    function deliveryDeadline(Segment storage g, Params storage p) internal view returns (uint256) {
        uint256 commitDeadline = g.commitDeadline;
        if (commitDeadline == 0) return 0;
        return commitDeadline - p.commitWindowSeconds / 2;
    }

    /// @notice Records the provider's key envelopes of the segment's current round; they count as
    ///         delivered when published by the delivery deadline (see `ITRUSTAudit.recordDelivery`).
    function recordDelivery(Segment storage g, Params storage p, uint256 sessionId, uint256 segmentId) internal {
        bool onTime = block.timestamp <= deliveryDeadline(g, p);
        if (onTime) g.flags |= FLAG_DELIVERED;
        emit ITRUSTAudit.EnvelopesDelivered(sessionId, segmentId, g.round, onTime);
    }

    /// @notice Records the trace verdict once every segment is final.
    function finalizeTrace(AuditStorage storage $, uint256 sessionId) external returns (bool valid) {
        Session storage s = $.sessions[sessionId];
        if (s.finalizedCount != s.segmentCount) {
            revert ITRUSTAudit.AuditSegmentsPending(sessionId, s.finalizedCount, s.segmentCount);
        }
        Params storage p = $.sessionParams[sessionId];
        // eq. 3.5-3.6: W >= beta * sum(w); plus the critical path and contradictions (sec. 3.2.3).
        valid = uint256(s.passWeight) * BPS >= uint256(p.betaBps) * s.totalWeight && s.criticalFailed == 0
            && s.contradictionsConfirmed == 0;
        s.valid = valid;
        s.status = ITRUSTAudit.SessionStatus.Finalized;
        emit ITRUSTAudit.TraceFinalized(sessionId, valid);
    }

    /// @notice Records a segment's final verdict in the session's tallies.
    function record(Session storage s, uint256 sessionId, uint256 segmentId, Segment storage g, ITRUSTAudit.SegmentStatus outcome)
        internal
    {
        bool passed = outcome == ITRUSTAudit.SegmentStatus.Passed;
        g.status = outcome;
        s.finalizedCount += 1; // at most segmentCount
        if (passed) {
            s.passWeight += g.weight;
            s.passedCount += 1; // each at most segmentCount
        } else {
            if (outcome == ITRUSTAudit.SegmentStatus.Failed) s.failedCount += 1;
            else s.undeterminedCount += 1;
            if (g.flags & FLAG_CRITICAL != 0) s.criticalFailed += 1;
            // An undetermined contradiction is an unresolved `contradicts` edge: it invalidates too.
            if (g.flags & FLAG_CONTRADICTION != 0) s.contradictionsConfirmed += 1;
        }
        emit ITRUSTAudit.SegmentFinalized(sessionId, segmentId, passed);
    }

    /// @dev Settles entries [from, from + maxSeats) of the round's settlement list, from the
    ///      cursor of an earlier step (`FLAG_SETTLING`, `settledCount`), and, when that reaches
    ///      the list's end, records the verdict or escalates. `maxSeats == type(uint256).max` is
    ///      `finalize`: whatever remains, in one go.
    ///      The list is recomputed from storage at each step; it is the same at every step because
    ///      nothing that builds it can change once the voting is over (checked here, or the step
    ///      reverts): the list reads the round's seat states and units, the earlier rounds' seats,
    ///      `entropy`, `round`, `committeeSize`, `seatCount` and the session's parameter snapshot.
    ///      A commit or an abstention needs the commit window, a reveal the reveal window, both
    ///      over (past the reveal deadline, or the reveal window closed early because every seat
    ///      is done, so no seat is still `SEAT_SEATED` and neither can apply); `claimUndelivered`,
    ///      the one call still open to a silent seat past the reveal deadline, reverts once
    ///      `FLAG_SETTLING` is set; earlier rounds' seats and the snapshot never change; `entropy`
    ///      changes only at a reveal or a draw, and `round`, `committeeSize`, `seatCount` only at
    ///      the draw or escalation, which need the segment to leave `Voting`, which only the last
    ///      step does. The registry's state is not an input of the list (only of how a
    ///      misaligned seat's roll is judged, as in one go).
    function _finalizeSegment(
        AuditStorage storage $,
        uint256 sessionId,
        Session storage s,
        uint256 segmentId,
        Segment storage g,
        address beneficiary,
        uint256 maxSeats
    ) private returns (bool done) {
        Params storage p = $.sessionParams[sessionId];
        uint256 revealDeadline = uint256(g.commitDeadline) + p.revealWindowSeconds;
        if (block.timestamp <= revealDeadline && g.revealedCount < g.seatCount) {
            revert ITRUSTAudit.AuditVotingNotOver(sessionId, segmentId, block.timestamp, revealDeadline);
        }
        (SeatSettlement[] memory seats, ITRUSTAudit.SegmentStatus outcome) = _tally($, sessionId, segmentId, g, p);
        uint256 aligned = 0;
        for (uint256 i; i < seats.length; ++i) {
            if (seats[i].outcome == SeatOutcome.Aligned) aligned += seats[i].units;
        }
        if (outcome != ITRUSTAudit.SegmentStatus.Voting && g.round != 0) {
            seats = _withEarlierRounds($, sessionId, segmentId, g, seats, outcome);
        }
        if (maxSeats == type(uint256).max && g.flags & FLAG_SETTLING == 0) {
            _settle($, sessionId, seats, p, beneficiary); // in one go, as before steps existed
        } else if (!_settleFromCursor($, sessionId, segmentId, g, seats, beneficiary, maxSeats)) {
            return false;
        }
        if (outcome == ITRUSTAudit.SegmentStatus.Voting) {
            _escalate($, sessionId, segmentId, g, p);
            return true;
        }
        s.alignedSeats += uint32(aligned); // <= committee size: aligned units
        record(s, sessionId, segmentId, g, outcome);
        return true;
    }

    /// @dev Settles the next at most `maxSeats` entries of the list `seats` from the segment's
    ///      cursor and moves the cursor; returns whether the list's end was reached (the cursor is
    ///      then cleared).
    function _settleFromCursor(
        AuditStorage storage $,
        uint256 sessionId,
        uint256 segmentId,
        Segment storage g,
        SeatSettlement[] memory seats,
        address beneficiary,
        uint256 maxSeats
    ) private returns (bool complete) {
        uint256 from = g.flags & FLAG_SETTLING != 0 ? g.settledCount : 0;
        (SeatSettlement[] memory part, uint256 to) = _slice(seats, from, maxSeats);
        _settle($, sessionId, part, $.sessionParams[sessionId], beneficiary);
        return _advance(sessionId, segmentId, g, from, to, seats.length, maxSeats);
    }

    /// @dev Moves the segment's cursor from `from` to `to` of the `total` entries: emits the
    ///      progress of a step (not of a settlement in one go), stores the cursor, or clears it
    ///      and returns true when the end is reached. A started settlement has `from > 0`: its
    ///      first step settled at least one entry.
    function _advance(
        uint256 sessionId,
        uint256 segmentId,
        Segment storage g,
        uint256 from,
        uint256 to,
        uint256 total,
        uint256 maxSeats
    ) private returns (bool complete) {
        if (from != 0 || maxSeats != type(uint256).max) {
            emit ITRUSTAudit.SegmentSettlementProgress(sessionId, segmentId, g.round, to, total);
        }
        if (to != total) {
            g.flags |= FLAG_SETTLING;
            g.settledCount = uint8(to); // < total <= 4 rounds' draws < 256
            return false;
        }
        if (from != 0) {
            g.flags &= ~FLAG_SETTLING;
            g.settledCount = 0;
        }
        return true;
    }

    /// @dev The next at most `maxSeats` entries of `seats` from `from` (the same structs, not
    ///      copies; `seats` itself when that is all of it, as in a settlement in one go), and the
    ///      index after them.
    function _slice(SeatSettlement[] memory seats, uint256 from, uint256 maxSeats)
        private
        pure
        returns (SeatSettlement[] memory part, uint256 to)
    {
        uint256 total = seats.length;
        to = total - from > maxSeats ? from + maxSeats : total;
        if (from == 0 && to == total) return (seats, to);
        part = new SeatSettlement[](to - from);
        for (uint256 i; i < part.length; ++i) {
            part[i] = seats[from + i];
        }
    }

    /// @dev Settlements of earlier rounds' seats being collected: the list, how many are filled,
    ///      the verdict they are judged against and the final round's entropy.
    struct Judging {
        SeatSettlement[] seats;
        uint256 n;
        ITRUSTAudit.SegmentStatus outcome;
        uint64 entropy;
    }

    /// @dev Appends the settlement of an earlier round's seat `st` against the verdict, unless it
    ///      is silent (settled when its round ended); returns false for a seat never drawn (past
    ///      the round's last member).
    function _judgeEarlier(Seat storage st, Judging memory j, uint256 round, uint256 index)
        private
        view
        returns (bool seated)
    {
        uint8 state = st.state;
        if (state != SEAT_PASS && state != SEAT_FAIL) return state != SEAT_EMPTY;
        SeatSettlement memory seat = j.seats[j.n++];
        seat.auditor = st.auditor;
        seat.units = uint8(st.weight); // at most the round's committee size
        if (j.outcome == ITRUSTAudit.SegmentStatus.Undetermined) {
            seat.outcome = SeatOutcome.Released;
        } else if (state == (j.outcome == ITRUSTAudit.SegmentStatus.Passed ? SEAT_PASS : SEAT_FAIL)) {
            seat.outcome = SeatOutcome.Aligned;
        } else {
            seat.outcome = SeatOutcome.Misaligned;
            seat.slashRollBps = uint16(uint256(keccak256(abi.encode(j.entropy, round, index))) % BPS);
        }
        return true;
    }

    /// @notice Ends a segment Undetermined because its current round could not be seated (the
    ///         third draw found too few members): the revealed seats of its earlier rounds, locked
    ///         since their rounds escalated, are released, and the verdict recorded.
    function abandon(AuditStorage storage $, Session storage s, uint256 sessionId, uint256 segmentId, Segment storage g)
        internal
    {
        if (g.round != 0) {
            SeatSettlement[] memory earlier = _withEarlierRounds(
                $, sessionId, segmentId, g, new SeatSettlement[](0), ITRUSTAudit.SegmentStatus.Undetermined
            );
            // Released seats forfeit nothing: the beneficiary is never paid here.
            _settle($, sessionId, earlier, $.sessionParams[sessionId], address(0));
        }
        record(s, sessionId, segmentId, g, ITRUSTAudit.SegmentStatus.Undetermined);
    }

    function _settle(
        AuditStorage storage $,
        uint256 sessionId,
        SeatSettlement[] memory seats,
        Params storage p,
        address beneficiary
    ) private {
        if (seats.length == 0) return;
        uint256 forfeited = $.registry.settleSeats(
            seats,
            SettlementTerms({
                lockPerSeat: p.penaltyPerSeat,
                gammaWad: p.gammaWad,
                pMinBps: p.pMinBps,
                pMaxBps: p.pMaxBps,
                beneficiary: beneficiary
            })
        );
        for (uint256 i; i < seats.length; ++i) {
            if (forfeited & (1 << i) != 0) {
                emit ITRUSTAudit.AuditorSlashed(sessionId, seats[i].auditor, uint256(p.penaltyPerSeat) * seats[i].units);
            }
        }
    }

    /// @dev The final round's settlements followed by the revealed seats of every earlier round,
    ///      judged against the segment's final verdict (issue M1, the free veto). A seat that voted
    ///      in a round that reached no decision is not released when the round escalates: it stays
    ///      locked until a later, larger committee of a higher tier decides, and is then aligned
    ///      (reputation up; the fee pays only the deciding round) or misaligned (reputation down,
    ///      slashed with p_slash(r), eq. 3.9), as Kleros settles the jurors of appealed rounds
    ///      against the final ruling. So a seat that blocks consensus against the evidence round
    ///      after round pays for it once the segment is decided. Silent seats were settled when
    ///      their round ended. When the segment ends Undetermined, every earlier seat is released.
    ///      Slash rolls come from the final round's entropy, which no earlier seat could know.
    function _withEarlierRounds(
        AuditStorage storage $,
        uint256 sessionId,
        uint256 segmentId,
        Segment storage g,
        SeatSettlement[] memory finalRound,
        ITRUSTAudit.SegmentStatus outcome
    ) private view returns (SeatSettlement[] memory) {
        (uint256[] memory sizes, uint256 earlier) = _earlierSizes(g);
        Judging memory j = Judging(new SeatSettlement[](finalRound.length + earlier), 0, outcome, g.entropy);
        for (; j.n < finalRound.length; ++j.n) {
            j.seats[j.n] = finalRound[j.n];
        }
        mapping(uint256 => Seat) storage sessionSeats = $.seats[sessionId];
        for (uint256 r; r < sizes.length; ++r) {
            // A round's seats are 0 .. its seat count - 1, at most its draws: stop at the first empty.
            for (uint256 i; i < sizes[r]; ++i) {
                if (!_judgeEarlier(sessionSeats[seatKey(segmentId, uint8(r), i)], j, r, i)) break;
            }
        }
        // Drop the unused tail (silent seats of earlier rounds).
        SeatSettlement[] memory seats = j.seats;
        uint256 n = j.n;
        assembly ("memory-safe") {
            mstore(seats, n)
        }
        return seats;
    }

    /// @dev The committee sizes (draws) of the rounds before the current one, and their sum: each
    ///      round seated at most that many members, and the seats past its last member are empty.
    function _earlierSizes(Segment storage g) private view returns (uint256[] memory sizes, uint256 total) {
        uint256 size = g.committeeSize;
        sizes = new uint256[](g.round);
        for (uint256 r = sizes.length; r > 0; --r) {
            size = (size - 1) / 2; // the inverse of ParamsLib.escalatedSize
            sizes[r - 1] = size;
            total += size;
        }
    }

    /// @dev Counts the round's stake-weighted votes (eq. 3.3) and decides every seat's outcome.
    ///      The denominator is the whole committee's weight: a silent seat counts against both
    ///      Pass and Fail. Returns `SegmentStatus.Voting` as the outcome for "escalate", with only
    ///      the silent seats to settle (the revealed ones stay locked until the verdict).
    function _tally(AuditStorage storage $, uint256 sessionId, uint256 segmentId, Segment storage g, Params storage p)
        private
        view
        returns (SeatSettlement[] memory seats, ITRUSTAudit.SegmentStatus outcome)
    {
        uint8[] memory states;
        (seats, states, outcome) = _count($, sessionId, segmentId, g, p);
        if (outcome == ITRUSTAudit.SegmentStatus.Voting) {
            // Only silent seats settle now; revealed ones wait for the verdict (`_withEarlierRounds`).
            uint256 kept = 0;
            for (uint256 i; i < states.length; ++i) {
                if (states[i] == SEAT_SEATED || states[i] == SEAT_ABSTAINED) {
                    seats[kept++] = SeatSettlement(seats[i].auditor, SeatOutcome.Silent, 0, seats[i].units);
                }
            }
            assembly ("memory-safe") {
                mstore(seats, kept)
            }
            return (seats, outcome);
        }
        bool decided = outcome != ITRUSTAudit.SegmentStatus.Undetermined;
        uint8 alignedState = outcome == ITRUSTAudit.SegmentStatus.Passed ? SEAT_PASS : SEAT_FAIL;
        uint64 entropy = g.entropy;
        uint256 n = 0; // seats to settle: all but those released by `releaseUndelivered`
        for (uint256 i; i < states.length; ++i) {
            uint8 state = states[i];
            if (state == SEAT_UNDELIVERED) continue;
            SeatSettlement memory seat = seats[n++];
            seat.auditor = seats[i].auditor;
            seat.units = seats[i].units;
            if (state == SEAT_SEATED || state == SEAT_ABSTAINED) {
                seat.outcome = SeatOutcome.Silent;
            } else if (!decided) {
                seat.outcome = SeatOutcome.Released;
            } else if (state == alignedState) {
                seat.outcome = SeatOutcome.Aligned;
            } else {
                seat.outcome = SeatOutcome.Misaligned;
                // Uniform in [0, 10_000): the slash roll of eq. 3.9, from the draw seed and every
                // revealed salt, which no auditor knew in full when it committed.
                seat.slashRollBps = uint16(uint256(keccak256(abi.encode(entropy, i))) % BPS);
            }
        }
        assembly ("memory-safe") {
            mstore(seats, n)
        }
    }

    /// @dev The round's seats (auditors and units only), their states, and the round's outcome.
    ///      A seat weighs its units (the draws it won), so the denominator is the committee size.
    function _count(AuditStorage storage $, uint256 sessionId, uint256 segmentId, Segment storage g, Params storage p)
        private
        view
        returns (SeatSettlement[] memory seats, uint8[] memory states, ITRUSTAudit.SegmentStatus outcome)
    {
        uint256 size = g.seatCount;
        seats = new SeatSettlement[](size);
        states = new uint8[](size);
        uint256 total = 0;
        uint256 passWeight = 0;
        uint256 failWeight = 0;
        uint256 undelivered = 0;
        mapping(uint256 => Seat) storage sessionSeats = $.seats[sessionId];
        uint256 firstKey = seatKey(segmentId, g.round, 0); // seat i's key is firstKey | i
        for (uint256 i; i < size; ++i) {
            Seat storage st = sessionSeats[firstKey | i];
            uint256 w = st.weight;
            uint8 state = st.state;
            seats[i].auditor = st.auditor;
            seats[i].units = uint8(w); // at most the committee size
            states[i] = state;
            total += w;
            if (state == SEAT_PASS) passWeight += w;
            else if (state == SEAT_FAIL) failWeight += w;
            else if (state == SEAT_UNDELIVERED) undelivered += w;
        }
        uint256 tau = p.tauBps;
        if (passWeight * BPS >= tau * total) outcome = ITRUSTAudit.SegmentStatus.Passed;
        else if (failWeight * BPS >= tau * total) outcome = ITRUSTAudit.SegmentStatus.Failed;
        // A round that most of its weight could not audit for want of key envelopes is not escalated
        // (issue M3): a larger committee would only be drawn into the same trap. The claims are
        // verifiable, so honest seats alone can stop the escalation, and only when the provider
        // delivered nothing in time.
        else if (g.round + 1 < p.maxRounds && undelivered * 2 <= total) outcome = ITRUSTAudit.SegmentStatus.Voting;
        else outcome = ITRUSTAudit.SegmentStatus.Undetermined;
    }

    function _escalate(AuditStorage storage $, uint256 sessionId, uint256 segmentId, Segment storage g, Params storage p)
        private
    {
        uint8 round = g.round + 1; // < maxRounds <= 4
        uint8 tier = g.tier < ParamsLib.TIER_HUMAN ? g.tier + 1 : ParamsLib.TIER_HUMAN;
        // ParamsLib.validate bounds every escalated size by MAX_COMMITTEE_SIZE (127).
        uint8 size = uint8(ParamsLib.escalatedSize(g.committeeSize));
        uint40 randomnessBlock = (block.number + p.randomnessDelayBlocks).toUint40();
        g.round = round;
        g.tier = tier;
        g.flags &= ~FLAG_DELIVERED; // the new round's seats need their own envelopes
        g.committeeSize = size;
        g.status = ITRUSTAudit.SegmentStatus.AwaitingDraw;
        g.revealedCount = 0;
        g.committedCount = 0;
        g.seatCount = 0;
        g.commitDeadline = 0;
        g.drawAttempts = 0;
        g.randomnessBlock = randomnessBlock;
        emit ITRUSTAudit.SegmentEscalated(sessionId, segmentId, round, tier, size, randomnessBlock);
        $.randomness.request(randomnessBlock);
    }
}
