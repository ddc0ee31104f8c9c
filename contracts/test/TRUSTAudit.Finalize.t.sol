// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "./TRUSTBase.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {Params} from "../src/types/Params.sol";

/// @notice Segment and trace finalization: the weighted threshold (eq. 3.3, a seat weighing the
///         committee draws it won), seat settlement (reputation eq. 3.8, slashing eq. 3.9, forfeits
///         of silent seats, P per unit), escalation, and the trace verdict (eq. 3.5-3.6, critical
///         path, contradictions).
contract TRUSTAuditFinalizeTest is TRUSTAuditBase {
    /// @notice P, the stake each unit of a seat locks and forfeits in this suite (100 times the
    ///         default), so that the stakes below back a known number of units.
    uint256 internal constant PENALTY = 800e18;
    /// @notice A stake that backs exactly one unit (P <= stake < 2P), of any tier here.
    uint256 internal constant ONE_UNIT = 1_000e18;

    address internal stranger = makeAddr("stranger");

    function setUp() public override {
        super.setUp();
        applyParams(suiteParams());
    }

    // ------------------------------------------------------------------ fixtures

    /// @notice The paper's defaults with P = `PENALTY`, tier 1's minimum stake up to P (a tier's
    ///         minimum must back a unit) and tier 3's down to tier 2's, so that an auditor of any
    ///         tier can back a single unit.
    /// @dev Committees are drawn with replacement (issue L2): a member drawn again takes one more
    ///      unit when its unlocked stake backs it and leaves the draw otherwise. With every stake in
    ///      [P, 2P) each member backs one unit, so the draw is the old one without replacement: a
    ///      tier of exactly k auditors seats all k, one unit each, and the tests whose subject is the
    ///      tally and the settlement, not the draw, address seats by auditor. Where the subject is
    ///      units, members back a chosen number of them (`stakeFor`); when the units a tier can back
    ///      add up to the committee size, every member sits with all of its units.
    function suiteParams() internal pure returns (Params memory p) {
        p = defaultParams();
        p.penaltyPerSeat = uint96(PENALTY);
        p.minStakeTier1 = uint96(PENALTY);
        p.minStakeTier3 = p.minStakeTier2;
    }

    /// @notice A stake that backs exactly `units` units: units * P <= stake < (units + 1) * P.
    function stakeFor(uint256 units) internal pure returns (uint256) {
        return units * PENALTY + 200e18;
    }

    /// @notice Exactly three tier-1 auditors backing one unit each, so that every tier-1 committee
    ///         of three seats all of them.
    function trio() internal returns (address a, address b, address c) {
        a = addAuditor("a", 1, ONE_UNIT);
        b = addAuditor("b", 1, ONE_UNIT);
        c = addAuditor("c", 1, ONE_UNIT);
    }

    /// @notice Six one-unit tier-1 auditors: two segments drawn at once seat three distinct
    ///         members each (a member's one unit is locked by the first segment that draws it).
    function sextet() internal {
        addAuditors("t1-", 1, 6, ONE_UNIT);
    }

    /// @notice The units (seat weight) `auditor` holds in the segment's current round.
    function unitsOf(uint256 id, uint256 segmentId, address auditor) internal view returns (uint256) {
        uint8 round = audit.segment(id, segmentId).round;
        return audit.seat(id, segmentId, round, seatIndexOf(id, segmentId, auditor)).weight;
    }

    /// @notice A drawn single tier-1 segment.
    function drawnSingle() internal returns (uint256 id) {
        id = openSingle(1);
        drawSegment(id, 0);
    }

    /// @notice Every listed segment's committee votes unanimously `outcomes[i]`; all are finalized.
    function decideAll(uint256 id, bool[] memory outcomes) internal {
        drawAll(id);
        for (uint256 s; s < outcomes.length; ++s) {
            commitAll(id, s, outcomes[s]);
        }
        toCommitEnd(id, 0);
        for (uint256 s; s < outcomes.length; ++s) {
            revealAll(id, s, outcomes[s]);
            audit.finalizeSegment(id, s);
        }
    }

    /// @notice p_slash(r) = p_min + (p_max - p_min)(1 - r) in basis points, rounded up (eq. 3.9).
    function pSlashBps(uint256 reputationWad, uint256 pMinBps, uint256 pMaxBps) internal pure returns (uint256) {
        uint256 num = (pMaxBps - pMinBps) * (WAD - reputationWad);
        return pMinBps + num / WAD + (num % WAD == 0 ? 0 : 1);
    }

    /// @notice The entropy of a segment's current round: the low 64 bits of the draw seed XOR the
    ///         low 64 bits of every revealed salt (TRUSTAudit's `Segment.entropy`). `revealers` must
    ///         list every seat of the round that revealed.
    function entropyOf(uint256 id, uint256 segmentId, address[] memory revealers) internal view returns (uint64 entropy) {
        ITRUSTAudit.SegmentView memory g = audit.segment(id, segmentId);
        bytes32 seed = keccak256(abi.encode(blockhash(g.randomnessBlock), address(audit), id, segmentId, g.round));
        entropy = uint64(uint256(seed));
        for (uint256 i; i < revealers.length; ++i) {
            entropy ^= uint64(uint256(saltFor(revealers[i], id, segmentId, g.round)));
        }
    }

    /// @notice The slash roll of a seat of the current round: uniform in [0, 10_000), hashed as
    ///         `abi.encode(uint64 entropy, uint256 seatIndex)`.
    function slashRoll(uint256 id, uint256 segmentId, address[] memory revealers, uint256 seatIndex)
        internal
        view
        returns (uint256)
    {
        return uint256(keccak256(abi.encode(entropyOf(id, segmentId, revealers), seatIndex))) % BPS;
    }

    function status(uint256 id, uint256 segmentId) internal view returns (uint8) {
        return uint8(audit.segment(id, segmentId).status);
    }

    // ------------------------------------------------------------------ timing

    function test_finalizeSegment_revertsBeforeVotingIsOver() public {
        (address a, address b,) = trio();
        uint256 id = drawnSingle();
        uint256 revealDeadline = audit.segment(id, 0).revealDeadline;
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditVotingNotOver.selector, id, 0, block.timestamp, revealDeadline)
        );
        audit.finalizeSegment(id, 0);

        castVotes(id, 0, addrs(a, b), bools(true, true)); // c stays silent
        // The reveal deadline itself still belongs to the reveal window.
        vm.warp(revealDeadline);
        vm.expectRevert(
            abi.encodeWithSelector(ITRUSTAudit.AuditVotingNotOver.selector, id, 0, revealDeadline, revealDeadline)
        );
        audit.finalizeSegment(id, 0);

        vm.warp(revealDeadline + 1);
        audit.finalizeSegment(id, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Final));
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_finalizeSegment_earlyOnceEverySeatRevealed() public {
        trio();
        uint256 id = drawnSingle();
        voteAll(id, 0, true);
        assertLt(block.timestamp, audit.segment(id, 0).revealDeadline);
        assertTrue(audit.finalizeSegment(id, 0));
        vm.snapshotGasLastCall("TRUSTAudit", "finalizeSegment_k3_pass");
    }

    function test_finalizeSegment_revertsBeforeTheDraw() public {
        uint256 id = openSingle(1);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditWrongSegmentStatus.selector, id, 0, ITRUSTAudit.SegmentStatus.AwaitingDraw
            )
        );
        audit.finalizeSegment(id, 0);
    }

    function test_finalizeSegment_revertsOnUnknownSegmentOrSession() public {
        uint256 id = openSingle(1);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSegment.selector, id, 1));
        audit.finalizeSegment(id, 1);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 8));
        audit.finalizeSegment(8, 0);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 8));
        audit.finalizeSegments(8, ids(0));
    }

    // ------------------------------------------------------------------ verdicts (eq. 3.3)

    function test_finalizeSegment_passesUnanimously() public {
        (address a, address b, address c) = trio();
        uint256 id = drawnSingle();
        voteAll(id, 0, true);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, true);
        assertTrue(audit.finalizeSegment(id, 0));

        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Passed));
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(s.finalizedCount, 1);
        assertEq(s.passWeight, 1);
        assertEq(s.alignedSeats, 3);
        address[3] memory all = [a, b, c];
        for (uint256 i; i < 3; ++i) {
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(all[i]);
            assertEq(info.locked, 0, "lock released");
            assertEq(info.stake, ONE_UNIT, "aligned seats keep their stake");
            assertEq(info.reputationWad, 0.55e18);
        }
    }

    function test_finalizeSegment_failsUnanimously() public {
        trio();
        uint256 id = drawnSingle();
        voteAll(id, 0, false);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, false);
        assertFalse(audit.finalizeSegment(id, 0));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Failed));
        assertEq(audit.session(id).passWeight, 0);
        assertEq(audit.session(id).alignedSeats, 3); // agreeing on Fail is aligned too
    }

    /// @notice A committee of six draws: `a` backs four units, `b` and `c` one each. The units they
    ///         can back add up to the committee size, so all three sit with all of their units.
    function fourOneOne() internal returns (address a, address b, address c) {
        Params memory p = suiteParams();
        p.committeeSizeTier1 = 6;
        applyParams(p);
        a = addAuditor("a", 1, stakeFor(4));
        b = addAuditor("b", 1, ONE_UNIT);
        c = addAuditor("c", 1, ONE_UNIT);
    }

    /// @notice Two of three seats (a head-count supermajority) vote Pass, but hold 2 of the 6 units:
    ///         a seat weighs the draws it won (issue L2), so the 4-unit seat decides alone.
    function test_finalizeSegment_unitsNotHeadcountDecideFail() public {
        (address a, address b, address c) = fourOneOne();
        uint256 id = drawnSingle();
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(g.committeeSize, 6);
        assertEq(g.seatCount, 3);
        assertEq(unitsOf(id, 0, a), 4);
        assertEq(unitsOf(id, 0, b), 1);
        assertEq(unitsOf(id, 0, c), 1);
        assertEq(registry.auditor(a).locked, 4 * PENALTY, "each unit locks P");
        castVotes(id, 0, addrs(a, b, c), bools(false, true, true));
        assertFalse(audit.finalizeSegment(id, 0));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Failed));
        assertEq(registry.auditor(a).reputationWad, 0.55e18, "reputation moves once per seat");
        assertEq(registry.auditor(b).reputationWad, 0.45e18);
        assertEq(registry.auditor(c).reputationWad, 0.45e18);
        assertEq(audit.session(id).alignedSeats, 4, "aligned units");
        assertEq(registry.auditor(a).locked, 0);
    }

    function test_finalizeSegment_unitsNotHeadcountDecidePass() public {
        (address a, address b, address c) = fourOneOne();
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b, c), bools(true, false, false));
        assertTrue(audit.finalizeSegment(id, 0));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Passed));
        assertEq(audit.session(id).alignedSeats, 4);
    }

    /// @notice A committee of five draws under `tauBps`: `a` backs three units, `b` two; both sit
    ///         with all of them (their units make the committee).
    function threeTwo(uint16 tauBps) internal returns (address a, address b) {
        Params memory p = suiteParams();
        p.committeeSizeTier1 = 5;
        p.tauBps = tauBps;
        applyParams(p);
        a = addAuditor("a", 1, stakeFor(3));
        b = addAuditor("b", 1, stakeFor(2));
    }

    function test_finalizeSegment_passesAtExactlyTau() public {
        // 3 units of 5: exactly tau = 60%.
        (address a, address b) = threeTwo(6_000);
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b), bools(true, false));
        assertTrue(audit.finalizeSegment(id, 0));
    }

    function test_finalizeSegment_failsAtExactlyTau() public {
        (address a, address b) = threeTwo(6_000);
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b), bools(false, true));
        assertFalse(audit.finalizeSegment(id, 0));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Failed));
    }

    function test_finalizeSegment_escalatesJustBelowTau() public {
        // One basis point more: 3 units of 5 (60%) is under tau = 60.01%.
        (address a, address b) = threeTwo(6_001);
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b), bools(true, false));
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentEscalated(id, 0, 1, 2, 11, uint64(block.number + 2));
        assertFalse(audit.finalizeSegment(id, 0));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
    }

    // ------------------------------------------------------------------ seat settlement

    function test_finalizeSegment_silentSeatForfeitsItsLockToInsurance() public {
        (address a, address b, address c) = trio();
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b), bools(true, true)); // c never reveals (nor commits)
        vm.warp(uint256(audit.segment(id, 0).revealDeadline) + 1);
        uint256 totalStakeBefore = registry.totalStake();

        vm.expectEmit(address(registry));
        emit IAuditorRegistry.StakeForfeited(c, PENALTY, insurance, "no reveal", ONE_UNIT - PENALTY, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(id, c, PENALTY);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, true); // 2 of 3 units: 66.7% >= 66%
        audit.finalizeSegment(id, 0);

        IAuditorRegistry.AuditorInfo memory silent = registry.auditor(c);
        assertEq(silent.stake, ONE_UNIT - PENALTY);
        assertEq(silent.locked, 0);
        assertEq(silent.reputationWad, 0.45e18);
        assertEq(registry.claimableTokens(insurance), PENALTY);
        assertEq(registry.totalStake(), totalStakeBefore - PENALTY);
        assertEq(registry.auditor(a).stake, ONE_UNIT);
        assertEq(registry.auditor(b).stake, ONE_UNIT);
        assertEq(audit.session(id).alignedSeats, 2);

        // The insurance fund claims the tokens from the registry.
        vm.prank(insurance);
        registry.claimTokens();
        assertEq(token.balanceOf(insurance), PENALTY);
    }

    function test_finalizeSegment_committedButUnrevealedSeatForfeits() public {
        (address a, address b, address c) = trio();
        uint256 id = drawnSingle();
        commitAs(c, id, 0, true);
        castVotes(id, 0, addrs(a, b), bools(true, true));
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        assertEq(registry.auditor(c).stake, ONE_UNIT - PENALTY);
        assertEq(registry.claimableTokens(insurance), PENALTY);
    }

    function test_finalizeSegment_silentSeatsCountAgainstBothOutcomes() public {
        // Pass 1/3, Fail 1/3, silent 1/3: neither reaches tau, so the round escalates; the revealed
        // seats stay locked and untouched until a later round decides (M1), and the silent one
        // forfeits at once.
        (address a, address b, address c) = trio();
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b), bools(true, false));
        toRevealEnd(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(id, c, PENALTY);
        assertFalse(audit.finalizeSegment(id, 0));

        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        for (uint256 i; i < 2; ++i) {
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(i == 0 ? a : b);
            assertEq(info.locked, PENALTY, "the revealed seats stay locked until the verdict");
            assertEq(info.stake, ONE_UNIT);
            assertEq(info.reputationWad, 0.5e18, "nothing is judged before the verdict");
        }
        assertEq(registry.auditor(c).stake, ONE_UNIT - PENALTY);
        assertEq(registry.auditor(c).reputationWad, 0.45e18);
        assertEq(audit.session(id).alignedSeats, 0);
        assertEq(audit.session(id).finalizedCount, 0);
    }

    /// @notice r' = floor(r (1 - gamma)) + gamma for an aligned seat, floor(r (1 - gamma)) otherwise.
    function test_finalizeSegment_updatesReputationByTheEma() public {
        Params memory p = suiteParams();
        p.initialReputationWad = 333_333_333_333_333_333;
        applyParams(p);
        (address a, address b, address c) = trio();
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b, c), bools(true, true, false));
        vm.expectEmit(address(registry));
        emit IAuditorRegistry.ReputationUpdated(a, 399_999_999_999_999_999);
        audit.finalizeSegment(id, 0);
        // 333_333_333_333_333_333 * 0.9 = 299_999_999_999_999_999.7, floored.
        assertEq(registry.auditor(a).reputationWad, 399_999_999_999_999_999);
        assertEq(registry.auditor(b).reputationWad, 399_999_999_999_999_999);
        assertEq(registry.auditor(c).reputationWad, 299_999_999_999_999_999);
    }

    function test_finalizeSegment_reputationReachesOneAndStays() public {
        Params memory p = suiteParams();
        p.initialReputationWad = 1e18;
        p.gammaWad = 1e18; // gamma = 1: reputation is the last outcome
        applyParams(p);
        (address a, address b, address c) = trio();
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b, c), bools(true, true, false));
        audit.finalizeSegment(id, 0);
        assertEq(registry.auditor(a).reputationWad, 1e18);
        assertEq(registry.auditor(c).reputationWad, 0);
    }

    /// @notice A misaligned seat loses its lock exactly when its roll falls under p_slash(r) at its
    ///         reputation before the update; over 24 segments both outcomes occur. Each segment is
    ///         drawn once the one before is settled (a one-unit member sits in one open segment at a
    ///         time), and `c` stakes back what it forfeits so that it keeps backing its unit.
    function test_finalizeSegment_slashesMisalignedSeatExactlyBelowPSlash() public {
        (address a, address b, address c) = trio();
        uint256 n = 24;
        uint256 id = openSession(uniformSegments(n, 1));
        uint256 slashed;
        for (uint256 s; s < n; ++s) {
            drawSegment(id, s);
            // Every seat commits, so the window closes at once and the reveals follow.
            commitAs(a, id, s, true);
            commitAs(b, id, s, true);
            commitAs(c, id, s, false);
            revealAs(a, id, s, true);
            revealAs(b, id, s, true);
            revealAs(c, id, s, false);
            uint256 r = registry.auditor(c).reputationWad;
            uint256 pBps = pSlashBps(r, 3_500, 5_000);
            uint256 roll = slashRoll(id, s, addrs(a, b, c), seatIndexOf(id, s, c));
            uint256 stakeBefore = registry.auditor(c).stake;

            audit.finalizeSegment(id, s);

            IAuditorRegistry.AuditorInfo memory info = registry.auditor(c);
            assertEq(info.reputationWad, r * 9 / 10, "misaligned: r (1 - gamma)");
            if (roll < pBps) {
                assertEq(info.stake, stakeBefore - PENALTY, "roll under p_slash: slashed");
                ++slashed;
                refill(c, ONE_UNIT);
            } else {
                assertEq(info.stake, stakeBefore, "roll at or over p_slash: kept");
            }
        }
        assertEq(registry.claimableTokens(insurance), slashed * PENALTY);
        assertGt(slashed, 0);
        assertLt(slashed, n);
    }

    /// @notice Eq. 3.9 statistically: three misaligned auditors with reputations 1, 0.5 and 0 (and
    ///         a gamma of 1 wei, so reputations do not move) under p_min 10%, p_max 90% are slashed at
    ///         10%, 50% and 90% of 250 seats. Each count must lie within 5 standard deviations of
    ///         the sum of its per-seat probabilities; a reversed or constant p_slash misses by far.
    ///         Three honest auditors back two units each and the misaligned ones one each: the nine
    ///         draws seat all six, and the honest six units of nine (66.7%) decide every segment.
    ///         Segments are drawn one after another, and the misaligned stake back what they forfeit.
    function test_finalizeSegment_slashFrequencyFollowsReputation() public {
        Params memory p = suiteParams();
        p.committeeSizeTier1 = 9;
        p.maxRounds = 2; // nine seats over three rounds would exceed the settlement gas budget
        p.pMinBps = 1_000;
        p.pMaxBps = 9_000;
        p.gammaWad = 1;
        address[3] memory misaligned;
        uint64[3] memory initial = [uint64(1e18), 0.5e18, 0];
        for (uint256 j; j < 3; ++j) {
            p.initialReputationWad = initial[j];
            applyParams(p);
            misaligned[j] = addAuditor(string.concat("m", vm.toString(j)), 1, ONE_UNIT);
        }
        address[] memory honest = addAuditors("h", 1, 3, stakeFor(2));

        uint256 n = 250;
        uint256 id = openSession(uniformSegments(n, 1));
        uint256[3] memory count;
        uint256[3] memory sumPBps;
        uint256[3] memory sumVarBps2;
        for (uint256 s; s < n; ++s) {
            drawSegment(id, s);
            for (uint256 j; j < 3; ++j) {
                commitAs(honest[j], id, s, true);
                commitAs(misaligned[j], id, s, false);
            }
            for (uint256 j; j < 3; ++j) {
                revealAs(honest[j], id, s, true);
                revealAs(misaligned[j], id, s, false);
            }
            uint256[3] memory before;
            for (uint256 j; j < 3; ++j) {
                IAuditorRegistry.AuditorInfo memory info = registry.auditor(misaligned[j]);
                before[j] = info.stake;
                uint256 pj = pSlashBps(info.reputationWad, 1_000, 9_000);
                sumPBps[j] += pj;
                sumVarBps2[j] += pj * (BPS - pj);
            }
            assertTrue(audit.finalizeSegment(id, s));
            for (uint256 j; j < 3; ++j) {
                if (registry.auditor(misaligned[j]).stake < before[j]) {
                    ++count[j];
                    refill(misaligned[j], ONE_UNIT);
                }
            }
        }
        for (uint256 j; j < 3; ++j) {
            uint256 observed = count[j] * BPS;
            uint256 diff = observed > sumPBps[j] ? observed - sumPBps[j] : sumPBps[j] - observed;
            assertLe(diff * diff, 25 * sumVarBps2[j], "slash count beyond 5 sigma of p_slash(r)");
        }
        assertLt(count[0], count[1]);
        assertLt(count[1], count[2]);
    }

    /// @notice A committee of six draws: `a` backs two units and `b` four, so both sit with all of
    ///         them (issue L2: each unit locks P).
    function twoFour() internal returns (address a, address b) {
        Params memory p = suiteParams();
        p.committeeSizeTier1 = 6;
        applyParams(p);
        a = addAuditor("a", 1, stakeFor(2));
        b = addAuditor("b", 1, stakeFor(4));
    }

    /// @notice A silent seat forfeits every unit it locked: the 2-unit seat loses 2P, and the
    ///         registry and the audit contract both say 2P. Its reputation moves once.
    function test_finalizeSegment_silentMultiUnitSeatForfeitsEachUnit() public {
        (address a, address b) = twoFour();
        uint256 id = drawnSingle();
        assertEq(unitsOf(id, 0, a), 2);
        assertEq(registry.auditor(a).locked, 2 * PENALTY);
        assertEq(registry.auditor(b).locked, 4 * PENALTY);
        castVotes(id, 0, addrs(b), bools(true)); // a never commits
        toRevealEnd(id, 0);
        uint256 totalStakeBefore = registry.totalStake();

        vm.expectEmit(address(registry));
        emit IAuditorRegistry.StakeForfeited(a, 2 * PENALTY, insurance, "no reveal", stakeFor(2) - 2 * PENALTY, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(id, a, 2 * PENALTY);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, true); // 4 units of 6: 66.7% >= 66%
        assertTrue(audit.finalizeSegment(id, 0));

        IAuditorRegistry.AuditorInfo memory silent = registry.auditor(a);
        assertEq(silent.stake, stakeFor(2) - 2 * PENALTY);
        assertEq(silent.locked, 0);
        assertEq(silent.reputationWad, 0.45e18, "one seat, one reputation step");
        assertEq(registry.claimableTokens(insurance), 2 * PENALTY);
        assertEq(registry.totalStake(), totalStakeBefore - 2 * PENALTY);
        IAuditorRegistry.AuditorInfo memory aligned = registry.auditor(b);
        assertEq(aligned.stake, stakeFor(4));
        assertEq(aligned.locked, 0, "all four units released");
        assertEq(aligned.reputationWad, 0.55e18);
        assertEq(audit.session(id).alignedSeats, 4, "aligned units");
    }

    /// @notice A misaligned seat whose roll falls under p_slash(r) forfeits every unit it locked:
    ///         the 2-unit seat loses 2P. With p_min at 99% nearly every roll does; each roll is
    ///         computed and the stake checked exactly either way, over four segments drawn one
    ///         after another (the seat stakes back what it loses).
    function test_finalizeSegment_misalignedMultiUnitSeatSlashedLosesEachUnit() public {
        Params memory p = suiteParams();
        p.committeeSizeTier1 = 6;
        p.pMinBps = 9_900;
        p.pMaxBps = 10_000;
        applyParams(p);
        address m = addAuditor("m", 1, stakeFor(2));
        address honest = addAuditor("honest", 1, stakeFor(4));
        uint256 n = 4;
        uint256 id = openSession(uniformSegments(n, 1));
        uint256 slashed;
        for (uint256 s; s < n; ++s) {
            drawSegment(id, s);
            assertEq(unitsOf(id, s, m), 2);
            commitAs(honest, id, s, true);
            commitAs(m, id, s, false);
            revealAs(honest, id, s, true);
            revealAs(m, id, s, false);
            uint256 r = registry.auditor(m).reputationWad;
            uint256 roll = slashRoll(id, s, addrs(honest, m), seatIndexOf(id, s, m));
            uint256 stakeBefore = registry.auditor(m).stake;
            bool slash = roll < pSlashBps(r, 9_900, 10_000);
            if (slash) {
                vm.expectEmit(address(registry));
                emit IAuditorRegistry.StakeForfeited(
                    m, 2 * PENALTY, insurance, "vote against consensus", stakeBefore - 2 * PENALTY, 0
                );
                vm.expectEmit(address(audit));
                emit ITRUSTAudit.AuditorSlashed(id, m, 2 * PENALTY);
            }
            assertTrue(audit.finalizeSegment(id, s));

            IAuditorRegistry.AuditorInfo memory info = registry.auditor(m);
            assertEq(info.locked, 0);
            assertEq(info.reputationWad, r * 9 / 10, "misaligned: r (1 - gamma), once per seat");
            if (slash) {
                assertEq(info.stake, stakeBefore - 2 * PENALTY, "roll under p_slash: both units forfeited");
                ++slashed;
                refill(m, stakeFor(2));
            } else {
                assertEq(info.stake, stakeBefore, "roll at or over p_slash: kept");
            }
        }
        assertGt(slashed, 0);
        assertEq(registry.claimableTokens(insurance), slashed * 2 * PENALTY);
        assertEq(audit.session(id).alignedSeats, 4 * n, "the honest seat's four units, each segment");
    }

    // ------------------------------------------------------------------ escalation

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_finalizeSegment_escalatesToALargerCommitteeOfTheNextTier() public {
        (address a, address b,) = trio();
        // One unit each: the seven draws of round 1 seat seven distinct members of the eight.
        addAuditors("t2-", 2, 8, ONE_UNIT);
        uint256 id = drawnSingle();
        address[] memory round0 = audit.committee(id, 0);
        castVotes(id, 0, addrs(a, b), bools(true, false));
        toRevealEnd(id, 0);

        uint64 nextBlock = uint64(block.number + 2);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentEscalated(id, 0, 1, 2, 7, nextBlock);
        audit.finalizeSegment(id, 0);
        vm.snapshotGasLastCall("TRUSTAudit", "finalizeSegment_k3_escalate");

        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(g.round, 1);
        assertEq(g.tier, 2);
        assertEq(g.committeeSize, 7); // 2k + 1
        assertEq(g.revealedCount, 0);
        assertEq(g.commitDeadline, 0);
        assertEq(g.revealDeadline, 0);
        assertEq(g.randomnessBlock, nextBlock);
        assertEq(audit.committee(id, 0).length, 0);
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.AwaitingDraw));
        assertEq(audit.session(id).finalizedCount, 0);
        // Round 0's seats stay on record.
        assertEq(audit.seat(id, 0, 0, 0).auditor, round0[0]);

        // Round 1 is drawn from a new block, among tier-2 auditors.
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditRandomnessPending.selector, id, 0, nextBlock));
        audit.assignAuditors(id, 0);
        address[] memory round1 = drawSegment(id, 0);
        assertEq(round1.length, 7);
        for (uint256 i; i < 7; ++i) {
            assertEq(registry.auditor(round1[i]).tier, 2);
            assertEq(audit.seat(id, 0, 1, i).auditor, round1[i]);
        }

        voteAll(id, 0, true);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, true);
        assertTrue(audit.finalizeSegment(id, 0));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Passed));
        assertEq(audit.session(id).alignedSeats, 7, "only the deciding round's seats are aligned");
    }

    /// @notice Issue M1 with units: the revealed seats of an escalated round stay locked with all of
    ///         their units, and the final verdict judges each with them. Round 0 splits 2 units
    ///         against 2; round 1 (nine draws) seats one tier-2 member with nine units, which
    ///         decides Pass: the aligned 2-unit seat gets its 2P back, the misaligned one loses 2P
    ///         (its roll, from the final round's entropy, falls under p_slash(r) >= 99%, checked),
    ///         and only the deciding round's units count as aligned.
    function test_finalizeSegment_earlierRoundMultiUnitSeatsAreJudgedWithTheirUnits() public {
        Params memory p = suiteParams();
        p.committeeSizeTier1 = 4;
        p.pMinBps = 9_900;
        p.pMaxBps = 10_000;
        applyParams(p);
        address yes = addAuditor("yes", 1, stakeFor(2));
        address no = addAuditor("no", 1, stakeFor(2));
        address judge = addAuditor("judge", 2, stakeFor(9));
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(yes, no), bools(true, false));
        assertFalse(audit.finalizeSegment(id, 0)); // 50% against 50%: escalate
        assertEq(audit.segment(id, 0).committeeSize, 9);
        assertEq(registry.auditor(yes).locked, 2 * PENALTY, "held with both units until the verdict");
        assertEq(registry.auditor(no).locked, 2 * PENALTY, "held with both units until the verdict");
        uint256 noIndex = audit.seat(id, 0, 0, 0).auditor == no ? 0 : 1;
        assertEq(audit.seat(id, 0, 0, noIndex).auditor, no);
        assertEq(audit.seat(id, 0, 0, noIndex).weight, 2);

        drawSegment(id, 0);
        assertEq(audit.segment(id, 0).seatCount, 1);
        assertEq(unitsOf(id, 0, judge), 9);
        commitAs(judge, id, 0, true);
        revealAs(judge, id, 0, true);
        // Round 0's seats roll with the final round's entropy, keyed by (round, seat index).
        uint256 roll = uint256(keccak256(abi.encode(entropyOf(id, 0, addrs(judge)), uint256(0), noIndex))) % BPS;
        assertLt(roll, pSlashBps(0.5e18, 9_900, 10_000), "this seed slashes the misaligned seat");
        vm.expectEmit(address(registry));
        emit IAuditorRegistry.StakeForfeited(
            no, 2 * PENALTY, insurance, "vote against consensus", stakeFor(2) - 2 * PENALTY, 0
        );
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(id, no, 2 * PENALTY);
        assertTrue(audit.finalizeSegment(id, 0));

        IAuditorRegistry.AuditorInfo memory info = registry.auditor(yes);
        assertEq(info.locked, 0);
        assertEq(info.stake, stakeFor(2));
        assertEq(info.reputationWad, 0.55e18);
        info = registry.auditor(no);
        assertEq(info.locked, 0);
        assertEq(info.stake, stakeFor(2) - 2 * PENALTY);
        assertEq(info.reputationWad, 0.45e18);
        assertEq(registry.auditor(judge).locked, 0);
        assertEq(registry.claimableTokens(insurance), 2 * PENALTY);
        assertEq(audit.session(id).alignedSeats, 9, "only the deciding round's units are aligned");
    }

    /// @notice The escalated round counts its own first commits from zero: round 0's three
    ///         commitments (one of them never revealed) do not close round 1's window early.
    function test_finalizeSegment_escalatedRoundCountsCommitsFromZero() public {
        (address a, address b, address c) = trio();
        addAuditors("t2-", 2, 7, ONE_UNIT); // one unit each: round 1 seats all seven
        uint256 id = drawnSingle();
        commitAs(a, id, 0, true);
        commitAs(b, id, 0, false);
        commitAs(c, id, 0, true); // closes round 0's window; c will not reveal
        revealAs(a, id, 0, true);
        revealAs(b, id, 0, false);
        toRevealEnd(id, 0);
        assertFalse(audit.finalizeSegment(id, 0)); // Pass 1/3, Fail 1/3: escalate

        address[] memory round1 = drawSegment(id, 0);
        uint48 drawnDeadline = audit.segment(id, 0).commitDeadline;
        assertEq(drawnDeadline, block.timestamp + 1 hours);
        for (uint256 i; i < 6; ++i) {
            commitAs(round1[i], id, 0, true);
        }
        assertEq(audit.segment(id, 0).commitDeadline, drawnDeadline, "six seats of seven: still open");
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Commit));
        commitAs(round1[6], id, 0, true);
        assertEq(audit.segment(id, 0).commitDeadline, block.timestamp - 1, "the seventh closes it");
        revealAll(id, 0, true);
        assertTrue(audit.finalizeSegment(id, 0));
    }

    /// @notice With every seat committing and revealing at once, a segment is decided in the block
    ///         of its draw: nobody waits out a window.
    function test_finalizeSegment_decidedInTheBlockOfTheDraw() public {
        trio();
        uint256 id = drawnSingle();
        uint256 drawnAt = block.timestamp;
        commitAll(id, 0, false);
        revealAll(id, 0, false);
        assertFalse(audit.finalizeSegment(id, 0));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Failed));
        assertEq(block.timestamp, drawnAt);
    }

    function test_finalizeSegment_roundCommitmentDoesNotOpenInTheNextRound() public {
        address[] memory t2 = addAuditors("t2-", 2, 7, ONE_UNIT);
        (address a, address b,) = trio();
        t2; // the escalated committee: all seven, one unit each
        uint256 id = drawnSingle();
        castVotes(id, 0, addrs(a, b), bools(true, false));
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0);
        address[] memory round1 = drawSegment(id, 0);
        // A round-0 commitment of a round-1 member does not open in round 1.
        bytes32 stale = audit.commitmentOf(id, 0, 0, round1[0], true, "salt");
        vm.prank(round1[0]);
        audit.commitVote(id, 0, stale);
        toCommitEnd(id, 0);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditCommitmentMismatch.selector, id, 0, round1[0]));
        vm.prank(round1[0]);
        audit.revealVote(id, 0, true, "salt");
    }

    function test_finalizeSegment_tier3EscalatesWithinTier3() public {
        Params memory p = suiteParams();
        p.maxRounds = 2;
        applyParams(p);
        // Sixteen one-unit auditors: the five silent round-0 seats forfeit P and can no longer
        // back a unit, and the eleven others fill round 1.
        addAuditors("t3-", 3, 16, ONE_UNIT);
        uint256 id = openSingle(3);
        address[] memory round0 = drawSegment(id, 0); // nobody votes: undecided
        assertEq(round0.length, 5);
        toRevealEnd(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentEscalated(id, 0, 1, 3, 11, uint64(block.number + 2));
        audit.finalizeSegment(id, 0);
        assertEq(audit.segment(id, 0).tier, 3);
        address[] memory round1 = drawSegment(id, 0);
        assertEq(round1.length, 11);
        for (uint256 i; i < round1.length; ++i) {
            assertEq(registry.auditor(round1[i]).tier, 3);
            assertFalse(contains(round0, round1[i]), "a member that forfeited its unit backs none");
        }
    }

    function test_finalizeSegment_undeterminedAfterMaxRounds() public {
        Params memory p = suiteParams();
        p.maxRounds = 2;
        applyParams(p);
        (address a, address b,) = trio();
        address[] memory t2 = addAuditors("t2-", 2, 7, ONE_UNIT); // round 1 seats all seven
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](1);
        segs[0] = segmentInput(1, 5, true, false, keccak256("critical"));
        uint256 id = openSession(segs);
        drawSegment(id, 0);
        castVotes(id, 0, addrs(a, b), bools(true, false));
        toRevealEnd(id, 0);
        audit.finalizeSegment(id, 0); // round 0 undecided: escalate

        // Round 1: 3 Pass, 3 Fail, 1 silent out of 7 units: undecided again, and the last round.
        drawSegment(id, 0);
        address[] memory voters = new address[](6);
        bool[] memory choices = new bool[](6);
        for (uint256 i; i < 6; ++i) {
            (voters[i], choices[i]) = (t2[i], i < 3);
        }
        castVotes(id, 0, voters, choices);
        toRevealEnd(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(id, t2[6], PENALTY);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, false);
        assertFalse(audit.finalizeSegment(id, 0));

        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertEq(uint8(audit.phase(id, 0)), uint8(ITRUSTAudit.Phase.Final));
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(s.finalizedCount, 1);
        assertEq(s.passWeight, 0);
        assertEq(s.criticalFailed, 1, "undetermined counts as failed");
        assertEq(s.alignedSeats, 0);
        for (uint256 i; i < 6; ++i) {
            assertEq(registry.auditor(t2[i]).reputationWad, 0.5e18);
            assertEq(registry.auditor(t2[i]).locked, 0);
        }
        assertFalse(audit.finalizeTrace(id));
    }

    function test_finalizeSegment_undeterminedAtOnceWithOneRound() public {
        Params memory p = suiteParams();
        p.maxRounds = 1;
        applyParams(p);
        trio();
        uint256 id = drawnSingle();
        toRevealEnd(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, false);
        audit.finalizeSegment(id, 0);
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertEq(registry.claimableTokens(insurance), 3 * PENALTY);
    }

    /// @notice Under the default three rounds: tier 1 (k = 3), tier 2 (7), tier 3 (15), then
    ///         Undetermined. One unit per auditor: every round seats as many members as draws.
    function test_finalizeSegment_defaultRoundsClimbEveryTier() public {
        trio();
        addAuditors("t2-", 2, 7, ONE_UNIT);
        addAuditors("t3-", 3, 15, ONE_UNIT);
        uint256 id = drawnSingle();
        uint8[3] memory sizes = [3, 7, 15];
        for (uint256 r; r < 3; ++r) {
            ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
            assertEq(g.round, r);
            assertEq(g.tier, r + 1);
            assertEq(g.committeeSize, sizes[r]);
            if (r > 0) drawSegment(id, 0);
            assertEq(audit.committee(id, 0).length, sizes[r]);
            toRevealEnd(id, 0); // nobody votes
            audit.finalizeSegment(id, 0);
        }
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertEq(registry.claimableTokens(insurance), (3 + 7 + 15) * PENALTY);
    }

    function test_finalizeSegment_verdictIsFinal() public {
        sextet();
        uint256 id = openSession(uniformSegments(2, 1));
        drawAll(id);
        voteAll(id, 0, true);
        audit.finalizeSegment(id, 0);
        bytes memory passed = abi.encodeWithSelector(
            ITRUSTAudit.AuditWrongSegmentStatus.selector, id, 0, ITRUSTAudit.SegmentStatus.Passed
        );
        vm.expectRevert(passed);
        audit.finalizeSegment(id, 0);
        vm.expectRevert(passed);
        audit.assignAuditors(id, 0);
        vm.expectRevert(passed);
        vm.prank(stranger);
        audit.commitVote(id, 0, keccak256("x"));
        // The batch skips what is final (issue L4), and settles nothing again.
        uint256 insuranceBefore = registry.claimableTokens(insurance);
        audit.finalizeSegments(id, ids(0, 0));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Passed));
        assertEq(audit.session(id).finalizedCount, 1, "counted once");
        assertEq(registry.claimableTokens(insurance), insuranceBefore);
    }

    // ------------------------------------------------------------------ finalizeSegments

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_finalizeSegments_finalizesEach() public {
        sextet();
        uint256 id = openSession(uniformSegments(2, 1));
        drawAll(id);
        commitAll(id, 0, true);
        commitAll(id, 1, false);
        toCommitEnd(id, 0);
        revealAll(id, 0, true);
        revealAll(id, 1, false);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 1, false);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.SegmentFinalized(id, 0, true);
        audit.finalizeSegments(id, ids(1, 0));
        vm.snapshotGasLastCall("TRUSTAudit", "finalizeSegments_2x_k3");
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Passed));
        assertEq(status(id, 1), uint8(ITRUSTAudit.SegmentStatus.Failed));
        assertEq(audit.session(id).finalizedCount, 2);
    }

    function test_finalizeSegments_revertsAsAWhole() public {
        sextet();
        uint256 id = openSession(uniformSegments(2, 1));
        drawAll(id);
        commitAll(id, 0, true);
        commitAll(id, 1, true);
        toCommitEnd(id, 0);
        revealAll(id, 0, true); // segment 1 is still in its reveal window
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditVotingNotOver.selector, id, 1, block.timestamp, audit.segment(id, 1).revealDeadline
            )
        );
        audit.finalizeSegments(id, ids(0, 1));
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Voting));
    }

    // ------------------------------------------------------------------ finalizeTrace

    function twoSegments(uint32 w0, bool critical1, bool contradiction1, uint32 w1) internal returns (uint256 id) {
        // These cases weigh one segment up to 99 times the other, to show that the critical path
        // and contradictions decide whatever the weights say: allow that spread (M5 bounds it at 10
        // by default).
        uint32 spread = w0 > w1 ? (w0 + w1 - 1) / w1 : (w1 + w0 - 1) / w0;
        if (spread > params.params().maxWeightRatio) {
            Params memory p = params.params();
            p.maxWeightRatio = uint16(spread);
            params.setParams(p);
        }
        ITRUSTAudit.SegmentInput[] memory segs = new ITRUSTAudit.SegmentInput[](2);
        segs[0] = segmentInput(1, w0, false, false, keccak256("s0"));
        segs[1] = segmentInput(1, w1, critical1, contradiction1, keccak256("s1"));
        id = openSession(segs);
    }

    /// forge-config: default.isolate = true
    /// forge-config: ci.isolate = true
    function test_finalizeTrace_validAtExactlyBeta() public {
        sextet();
        uint256 id = twoSegments(65, false, false, 35);
        decideAll(id, bools(true, false)); // W = 65 of 100 = beta
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.TraceFinalized(id, true);
        assertTrue(audit.finalizeTrace(id));
        vm.snapshotGasLastCall("TRUSTAudit", "finalizeTrace");
        ITRUSTAudit.SessionView memory s = audit.session(id);
        assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Finalized));
        assertTrue(s.valid);
        assertEq(s.passWeight, 65);
        assertEq(s.totalWeight, 100);
    }

    function test_finalizeTrace_invalidBelowBeta() public {
        sextet();
        uint256 id = twoSegments(64, false, false, 36);
        decideAll(id, bools(true, false)); // W = 64 of 100 < 65
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.TraceFinalized(id, false);
        assertFalse(audit.finalizeTrace(id));
        assertFalse(audit.session(id).valid);
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Finalized));
    }

    function test_finalizeTrace_failedCriticalSegmentInvalidates() public {
        sextet();
        uint256 id = twoSegments(99, true, false, 1);
        decideAll(id, bools(true, false)); // W = 99%, but the critical segment failed
        assertEq(audit.session(id).criticalFailed, 1);
        assertFalse(audit.finalizeTrace(id));
    }

    function test_finalizeTrace_passedCriticalSegmentKeepsTraceValid() public {
        sextet();
        uint256 id = twoSegments(30, true, false, 70);
        decideAll(id, bools(false, true)); // W = 70%, critical segment passed
        assertEq(audit.session(id).criticalFailed, 0);
        assertTrue(audit.finalizeTrace(id));
    }

    function test_finalizeTrace_confirmedContradictionInvalidates() public {
        sextet();
        uint256 id = twoSegments(99, false, true, 1);
        decideAll(id, bools(true, false)); // the contradiction holds (Fail)
        assertEq(audit.session(id).contradictionsConfirmed, 1);
        assertFalse(audit.finalizeTrace(id));
    }

    function test_finalizeTrace_refutedContradictionKeepsTraceValid() public {
        sextet();
        uint256 id = twoSegments(99, false, true, 1);
        decideAll(id, bools(true, true)); // the contradiction does not hold (Pass)
        assertEq(audit.session(id).contradictionsConfirmed, 0);
        assertTrue(audit.finalizeTrace(id));
    }

    function test_finalizeTrace_undeterminedContradictionInvalidates() public {
        Params memory p = suiteParams();
        p.maxRounds = 1;
        applyParams(p);
        sextet();
        uint256 id = twoSegments(99, false, true, 1);
        drawAll(id);
        voteAll(id, 0, true);
        audit.finalizeSegment(id, 0);
        toRevealEnd(id, 1); // nobody votes on the contradiction: Undetermined
        audit.finalizeSegment(id, 1);
        assertEq(status(id, 1), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertEq(audit.session(id).contradictionsConfirmed, 1);
        assertFalse(audit.finalizeTrace(id));
    }

    function test_finalizeTrace_revertsWhileSegmentsPending() public {
        sextet();
        uint256 id = openSession(uniformSegments(2, 1));
        drawAll(id);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSegmentsPending.selector, id, 0, 2));
        audit.finalizeTrace(id);
        voteAll(id, 0, true);
        audit.finalizeSegment(id, 0);
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditSegmentsPending.selector, id, 1, 2));
        audit.finalizeTrace(id);
    }

    function test_finalizeTrace_revertsOnUnknownOrRegisteringSession() public {
        vm.expectRevert(abi.encodeWithSelector(ITRUSTAudit.AuditUnknownSession.selector, 3));
        audit.finalizeTrace(3);
        vm.prank(provider);
        uint256 id = audit.createSession(keccak256("root"), 1);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Registering
            )
        );
        audit.finalizeTrace(id);
    }

    function test_finalizeTrace_verdictIsFinal() public {
        trio();
        uint256 id = openSession(uniformSegments(1, 1));
        decideAll(id, bools(true));
        assertTrue(audit.finalizeTrace(id));
        bytes memory closed = abi.encodeWithSelector(
            ITRUSTAudit.AuditSessionNotOpen.selector, id, ITRUSTAudit.SessionStatus.Finalized
        );
        vm.expectRevert(closed);
        audit.finalizeTrace(id);
        vm.expectRevert(closed);
        audit.finalizeSegment(id, 0);
        assertTrue(audit.session(id).valid);
        assertEq(status(id, 0), uint8(ITRUSTAudit.SegmentStatus.Passed));
    }

    // ------------------------------------------------------------------ fuzz

    /// @notice The tally never reports Pass and Fail at once (tau > 1/2), and its outcome is eq. 3.3
    ///         over the seats' units (the draws each member won, issue L2), silent seats counting in
    ///         the denominator. Three members back 1 to 7 units each and the committee is their sum,
    ///         so each sits with all of its units and the weights are known.
    function testFuzz_finalizeSegment_tallyFollowsEq33(
        uint256[3] memory units,
        uint8[3] memory choices,
        uint256 tauBps
    ) public {
        Params memory p = suiteParams();
        p.tauBps = uint16(bound(tauBps, BPS / 2 + 1, BPS));
        p.maxRounds = 2; // committees of up to 21 fit the settlement gas budget over two rounds
        address[3] memory who;
        uint256 total;
        for (uint256 i; i < 3; ++i) {
            units[i] = bound(units[i], 1, 7);
            total += units[i];
        }
        p.committeeSizeTier1 = uint8(total);
        applyParams(p);
        for (uint256 i; i < 3; ++i) {
            who[i] = addAuditor(string.concat("f", vm.toString(i)), 1, stakeFor(units[i]));
        }
        uint256 id = drawnSingle();
        assertEq(audit.segment(id, 0).seatCount, 3);
        uint256 passWeight;
        uint256 failWeight;
        for (uint256 i; i < 3; ++i) {
            assertEq(unitsOf(id, 0, who[i]), units[i]);
            assertEq(registry.auditor(who[i]).locked, units[i] * PENALTY);
            uint8 choice = choices[i] % 3; // 0 silent, 1 Pass, 2 Fail
            if (choice == 0) continue;
            commitAs(who[i], id, 0, choice == 1);
            if (choice == 1) passWeight += units[i];
            else failWeight += units[i];
        }
        toCommitEnd(id, 0);
        for (uint256 i; i < 3; ++i) {
            uint8 choice = choices[i] % 3;
            if (choice != 0) revealAs(who[i], id, 0, choice == 1);
        }
        toRevealEnd(id, 0);
        bool passes = passWeight * BPS >= p.tauBps * total;
        bool fails = failWeight * BPS >= p.tauBps * total;
        assertFalse(passes && fails, "Pass and Fail at once");

        bool passed = audit.finalizeSegment(id, 0);
        assertEq(passed, passes);
        uint8 expected = passes
            ? uint8(ITRUSTAudit.SegmentStatus.Passed)
            : fails ? uint8(ITRUSTAudit.SegmentStatus.Failed) : uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw);
        assertEq(status(id, 0), expected);
        assertEq(audit.segment(id, 0).round, passes || fails ? 0 : 1);
        assertEq(audit.session(id).alignedSeats, passes ? passWeight : fails ? failWeight : 0, "aligned units");
    }

    /// @notice Over any sequence of aligned, misaligned and silent seats, reputation follows eq. 3.8
    ///         exactly (floored) and stays within [0, 1e18]. Segments are drawn one after another (a
    ///         one-unit member sits in one open segment at a time), and `c` stakes back what it
    ///         forfeits.
    function testFuzz_finalizeSegment_reputationStaysInUnitInterval(
        uint256 gammaWad,
        uint256 initialWad,
        uint256 outcomes,
        uint256 rounds
    ) public {
        Params memory p = suiteParams();
        p.gammaWad = uint64(bound(gammaWad, 1, WAD));
        p.initialReputationWad = uint64(bound(initialWad, 0, WAD));
        applyParams(p);
        // Two honest seats of three (66.7% >= tau) decide every segment; the third seat's outcome varies.
        (address a, address b, address c) = trio();
        rounds = bound(rounds, 1, 6);
        uint256 id = openSession(uniformSegments(rounds, 1));
        uint256 rA = p.initialReputationWad;
        uint256 rC = p.initialReputationWad;
        for (uint256 s; s < rounds; ++s) {
            uint256 outcome = (outcomes >> (2 * s)) % 3; // 0 aligned, 1 misaligned, 2 silent
            drawSegment(id, s);
            commitAs(a, id, s, true);
            commitAs(b, id, s, true);
            if (outcome != 2) commitAs(c, id, s, outcome == 0);
            toCommitEnd(id, s);
            revealAs(a, id, s, true);
            revealAs(b, id, s, true);
            if (outcome != 2) revealAs(c, id, s, outcome == 0);
            toRevealEnd(id, s);

            assertTrue(audit.finalizeSegment(id, s));
            rA = rA * (WAD - p.gammaWad) / WAD + p.gammaWad;
            rC = rC * (WAD - p.gammaWad) / WAD + (outcome == 0 ? p.gammaWad : 0);
            assertEq(registry.auditor(a).reputationWad, rA);
            assertEq(registry.auditor(c).reputationWad, rC);
            assertLe(rA, WAD);
            assertLe(rC, WAD);
            refill(c, ONE_UNIT);
        }
    }
}
