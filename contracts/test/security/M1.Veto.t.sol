// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";

/// @notice Issue M1, the free veto. The attack: a tier-1 member holding 60% of its committee's
///         weight (more than 1 - tau = 34%) votes against the two honest seats every round, so no
///         outcome reaches tau and the round escalates.
///         On 96c3011 an undecided round settled every revealed seat as Released (lock back,
///         reputation unchanged, no slash roll): the veto cost nothing, and the vetoer was free to
///         do it again in every committee it was drawn into.
///         The defence asserted here: the vetoer's revealed seat stays locked through the
///         escalation; when the next tier's committee of seven decides, the seat is judged against
///         that verdict: reputation down (eq. 3.8) and P forfeited when its roll falls under
///         p_slash(r) (eq. 3.9), while the honest seats of the blocked round gain reputation.
contract M1VetoTest is TRUSTAuditBase {
    uint256 internal constant PENALTY = 8e18;

    address internal vetoer;
    address internal honestA;
    address internal honestB;
    address[] internal tier2;

    function setUp() public override {
        super.setUp();
        vetoer = addAuditor("vetoer", 1, 300e18); // 300 of 500: 60% of every tier-1 committee
        honestA = addAuditor("honest-a", 1, 100e18);
        honestB = addAuditor("honest-b", 1, 100e18);
        tier2 = addAuditors("t2-", 2, 7, 1_000e18);
    }

    function test_M1_aVetoThatBlocksARoundIsJudgedByTheVerdictOfTheNext() public {
        uint256 id = openSingle(1);
        drawSegment(id, 0);
        castVotes(id, 0, addrs(vetoer, honestA, honestB), bools(false, true, true));
        toRevealEnd(id, 0);
        assertFalse(audit.finalizeSegment(id, 0), "blocked: 40% Pass, 60% Fail, neither reaches tau");
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(g.round, 1);
        assertEq(g.tier, 2);
        assertEq(g.committeeSize, 7);

        // Nothing was released for free: every revealed seat of the blocked round stays locked.
        assertEq(registry.auditor(vetoer).locked, PENALTY, "the veto's stake stays at risk");
        assertEq(registry.auditor(honestA).locked, PENALTY);
        assertEq(registry.auditor(vetoer).reputationWad, 0.5e18, "judged only at the verdict");

        // The next tier decides Pass.
        address[] memory seven = drawSegment(id, 0);
        bool[] memory pass = new bool[](7);
        for (uint256 i; i < 7; ++i) {
            pass[i] = true;
        }
        castVotes(id, 0, seven, pass);
        vm.recordLogs();
        assertTrue(audit.finalizeSegment(id, 0));

        IAuditorRegistry.AuditorInfo memory v = registry.auditor(vetoer);
        assertEq(v.locked, 0, "settled");
        assertEq(v.reputationWad, 0.45e18, "misaligned with the verdict: r <- 0.9 r");
        assertTrue(v.stake == 300e18 || v.stake == 300e18 - PENALTY, "P forfeited with probability p_slash");
        assertEq(registry.auditor(honestA).reputationWad, 0.55e18, "aligned with the verdict: r <- 0.9 r + 0.1");
        assertEq(registry.auditor(honestB).reputationWad, 0.55e18);
        assertEq(registry.auditor(honestA).locked, 0);
        // Rewards stay with the deciding round: the fee priced its seats' work.
        assertEq(audit.session(id).alignedSeats, 7);
    }

    /// @notice Over many segments the veto loses money: p_slash(r) rises as the vetoer's reputation
    ///         falls, so the vetoer forfeits P on about a third to a half of the seats it blocks.
    function test_M1_aPersistentVetoLosesStake() public {
        uint256 before = registry.auditor(vetoer).stake;
        uint256 rounds = 12;
        for (uint256 s; s < rounds; ++s) {
            uint256 id = openSingle(1);
            drawSegment(id, 0);
            castVotes(id, 0, addrs(vetoer, honestA, honestB), bools(false, true, true));
            toRevealEnd(id, 0);
            audit.finalizeSegment(id, 0);
            address[] memory seven = drawSegment(id, 0);
            bool[] memory pass = new bool[](7);
            for (uint256 i; i < 7; ++i) {
                pass[i] = true;
            }
            castVotes(id, 0, seven, pass);
            audit.finalizeSegment(id, 0);
        }
        uint256 lost = before - registry.auditor(vetoer).stake;
        assertGt(lost, 0, "a persistent veto is slashed");
        assertLe(lost, rounds * PENALTY);
        emit log_named_uint("forfeits over 12 vetoed segments (P units)", lost / PENALTY);
    }
}
