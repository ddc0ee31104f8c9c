// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";
import {Params} from "../../src/types/Params.sol";

/// @notice Issue M1, the free veto. The attack: a tier-1 member holding more of its committee's
///         weight than 1 - tau = 34% votes against the honest seats every round, so no outcome
///         reaches tau and the round escalates.
///         On 96c3011 (a seat weighed its stake; the vetoer held 60% of a three-seat committee) an
///         undecided round settled every revealed seat as Released (lock back, reputation
///         unchanged, no slash roll): the veto cost nothing, and the vetoer was free to do it
///         again in every committee it was drawn into.
///         Since 7430925 a seat weighs the draws it won, so a committee of three cannot be vetoed
///         at tau = 0.66 (one draw of three leaves the other two 66.7% >= tau; two decide). The
///         attack is played on committees of five: the vetoer's two draws (40%) block the three
///         honest ones (60% < tau). Each member's stake backs exactly the draws it gets (P = 8:
///         16 tokens back two, 8 back one, and the tier backs five in all), so every seed seats
///         the same committee.
///         The defence asserted here: the vetoer's revealed seat stays locked (2P) through the
///         escalation; when the next tier's committee of eleven decides, the seat is judged against
///         that verdict: reputation down (eq. 3.8) and its 2P forfeited when its roll falls under
///         p_slash(r) (eq. 3.9), while the honest seats of the blocked round gain reputation.
contract M1VetoTest is TRUSTAuditBase {
    uint256 internal constant PENALTY = 8e18;
    uint256 internal constant VETO_STAKE = 16e18; // backs two draws
    uint256 internal constant FIRST_ROUND = 5;
    uint256 internal constant SECOND_ROUND = 11; // 2k + 1

    address internal vetoer;
    address internal honestA;
    address internal honestB;
    address[] internal tier2;

    function setUp() public override {
        super.setUp();
        Params memory p = defaultParams();
        p.committeeSizeTier1 = uint8(FIRST_ROUND);
        p.minStakeTier1 = uint96(PENALTY); // so that a member may back a single draw
        applyParams(p);
        vetoer = addAuditor("vetoer", 1, VETO_STAKE); // 2 draws of 5: 40% of the committee
        honestA = addAuditor("honest-a", 1, 2 * PENALTY); // 2 draws
        honestB = addAuditor("honest-b", 1, PENALTY); // 1 draw
        tier2 = addAuditors("t2-", 2, 7, 1_000e18);
    }

    /// @dev The tier-1 committee: the vetoer's two draws against the honest three.
    function drawTier1(uint256 id) internal {
        drawSegment(id, 0);
        assertEq(audit.seat(id, 0, 0, seatIndexOf(id, 0, vetoer)).weight, 2);
        assertEq(audit.seat(id, 0, 0, seatIndexOf(id, 0, honestA)).weight, 2);
        assertEq(audit.seat(id, 0, 0, seatIndexOf(id, 0, honestB)).weight, 1);
    }

    /// @dev Draws the escalated tier-2 round and has every seat vote Pass.
    function tier2Passes(uint256 id) internal {
        address[] memory members = drawSegment(id, 0);
        bool[] memory pass = new bool[](members.length);
        for (uint256 i; i < members.length; ++i) {
            pass[i] = true;
        }
        castVotes(id, 0, members, pass);
    }

    function test_M1_aVetoThatBlocksARoundIsJudgedByTheVerdictOfTheNext() public {
        uint256 id = openSingle(1);
        drawTier1(id);
        castVotes(id, 0, addrs(vetoer, honestA, honestB), bools(false, true, true));
        toRevealEnd(id, 0);
        assertFalse(audit.finalizeSegment(id, 0), "blocked: 60% Pass, 40% Fail, neither reaches tau");
        ITRUSTAudit.SegmentView memory g = audit.segment(id, 0);
        assertEq(uint8(g.status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        assertEq(g.round, 1);
        assertEq(g.tier, 2);
        assertEq(g.committeeSize, SECOND_ROUND);

        // Nothing was released for free: every revealed seat of the blocked round stays locked.
        assertEq(registry.auditor(vetoer).locked, 2 * PENALTY, "the veto's stake stays at risk, P per draw");
        assertEq(registry.auditor(honestA).locked, 2 * PENALTY);
        assertEq(registry.auditor(honestB).locked, PENALTY);
        assertEq(registry.auditor(vetoer).reputationWad, 0.5e18, "judged only at the verdict");

        // The next tier decides Pass.
        tier2Passes(id);
        assertTrue(audit.finalizeSegment(id, 0));

        IAuditorRegistry.AuditorInfo memory v = registry.auditor(vetoer);
        assertEq(v.locked, 0, "settled");
        assertEq(v.reputationWad, 0.45e18, "misaligned with the verdict: r <- 0.9 r");
        assertTrue(v.stake == VETO_STAKE || v.stake == 0, "2P (both draws) forfeited with probability p_slash");
        assertEq(registry.auditor(honestA).reputationWad, 0.55e18, "aligned with the verdict: r <- 0.9 r + 0.1");
        assertEq(registry.auditor(honestB).reputationWad, 0.55e18);
        assertEq(registry.auditor(honestA).locked, 0);
        assertEq(registry.auditor(honestB).locked, 0);
        // Rewards stay with the deciding round: the fee priced its seats' work (its eleven draws).
        assertEq(audit.session(id).alignedSeats, SECOND_ROUND);
    }

    /// @notice Over many segments the veto loses money: p_slash(r) rises as the vetoer's reputation
    ///         falls, so the vetoer forfeits its 2P on about a third to a half of the segments it
    ///         blocks. After each forfeit it stakes 16 tokens again to keep its two draws.
    function test_M1_aPersistentVetoLosesStake() public {
        uint256 segments = 12;
        uint256 lost;
        for (uint256 s; s < segments; ++s) {
            uint256 have = registry.auditor(vetoer).stake;
            if (have < VETO_STAKE) {
                token.transfer(vetoer, VETO_STAKE - have);
                vm.startPrank(vetoer);
                token.approve(address(registry), VETO_STAKE - have);
                registry.stake(VETO_STAKE - have);
                vm.stopPrank();
            }
            uint256 id = openSingle(1);
            drawTier1(id);
            castVotes(id, 0, addrs(vetoer, honestA, honestB), bools(false, true, true));
            toRevealEnd(id, 0);
            assertFalse(audit.finalizeSegment(id, 0), "blocked");
            tier2Passes(id);
            assertTrue(audit.finalizeSegment(id, 0));
            lost += VETO_STAKE - registry.auditor(vetoer).stake;
        }
        assertGt(lost, 0, "a persistent veto is slashed");
        assertLe(lost, segments * 2 * PENALTY);
        assertEq(lost % (2 * PENALTY), 0, "both draws' P at a time");
        emit log_named_uint("forfeits over 12 vetoed segments (P units)", lost / PENALTY);
    }
}
