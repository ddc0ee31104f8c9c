// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

import {TRUSTBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";
import {TRUSTAudit} from "../../src/TRUSTAudit.sol";
import {AuditorRegistry} from "../../src/AuditorRegistry.sol";
import {ProtocolParams} from "../../src/ProtocolParams.sol";
import {ParamsLib} from "../../src/libraries/ParamsLib.sol";
import {Params} from "../../src/types/Params.sol";
import {ProtocolHandler} from "./handlers/ProtocolHandler.sol";

/// @notice Invariants of the whole protocol (TRUSTAudit + AuditorRegistry) under random sequences
///         of the handler's actions: token and ETH conservation, one vote per seat and only from
///         seats, final verdicts that never change and follow eq. 3.3 over the seats' units,
///         payouts bounded by what came in, seat rewards paid once per aligned seat and unit,
///         well-formed committees drawn with replacement exactly as a reference draw gives them,
///         draws that seat a committee exactly when the tier's stake could back it, and otherwise
///         retry and end the segment, draw weights (now and by block) that follow the eligibility
///         rules, commit windows that close once every seat committed, seat weights (units of P)
///         that are exactly the stake locked for them, no gain from splitting stake over accounts
///         (issue L2), state that survives upgrades, and liveness: every session can be ended by
///         public calls, each under the EIP-7825 gas cap. Governance acts through a timelock, as on
///         a deployment, and upgrades the three proxies mid-run.
/// @dev Committees are small (2 / 3 / 3 draws, escalating once to 5 / 7 / 7) so that a run's depth
///      covers whole sessions; `LargeCommitteeInvariantTest` runs the same invariants at the largest
///      committees `ParamsLib.validate` allows. Deliberate bugs that these invariants catch are in
///      ./bugs (`bugs/check.sh` checks them).
///      CI runs 100 runs of 96 calls per invariant (128 before the upgrade, liveness and stake-backing
///      invariants and the large-committee suite were added: the same CI time buys those).
/// forge-config: ci.invariant.runs = 100
contract ProtocolInvariantTest is TRUSTBase {
    /// @notice The most gas one transaction may use (EIP-7825).
    uint256 internal constant TX_GAS_CAP = 16_777_216;
    /// @notice Governance's delay in these runs: short, so that a governance action moves the
    ///         clock by less than a commit window (a deployment's is longer; the path is the same).
    uint256 internal constant GOVERNANCE_DELAY = 10 minutes;

    ProtocolHandler internal handler;
    address internal stranger = makeAddr("stranger");

    /// @notice How many auditor actors each tier has (the last of each starts unregistered).
    function tierSizes() internal pure virtual returns (uint256, uint256, uint256) {
        return (5, 8, 10);
    }

    function setUp() public virtual override {
        super.setUp();
        params.setParams(invariantParams());
        (uint256 tier1Auditors, uint256 tier2Auditors, uint256 tier3Auditors) = tierSizes();

        uint256 n = tier1Auditors + tier2Auditors + tier3Auditors;
        address[] memory auditors = new address[](n);
        uint8[] memory tiers = new uint8[](n);
        for (uint256 i; i < n; ++i) {
            uint8 tier = i < tier1Auditors ? 1 : i < tier1Auditors + tier2Auditors ? 2 : 3;
            address a = makeAddr(string.concat("tier", vm.toString(tier), "-", vm.toString(i)));
            auditors[i] = a;
            tiers[i] = tier;
            token.transfer(a, 100_000e18);
            vm.prank(a);
            token.approve(address(registry), type(uint256).max);
            if (tier == 3) registry.grantCredential(a);
            // The last auditor of each tier starts unregistered: the `register` action adds it.
            bool latecomer = i == tier1Auditors - 1 || i == tier1Auditors + tier2Auditors - 1 || i == n - 1;
            if (!latecomer) {
                uint256 amount = uint256(tier) * 100e18 * (1 + i % 3) + i * 7e18;
                vm.prank(a);
                registry.register(tier, keccak256(abi.encode("key", a)), "ipfs://auditor", amount);
            }
        }
        // The provider is an auditor too: the draw must never seat it on its own sessions.
        token.transfer(provider, 1_000e18);
        vm.startPrank(provider);
        token.approve(address(registry), type(uint256).max);
        registry.register(1, keccak256("provider key"), "ipfs://provider", 200e18);
        vm.stopPrank();

        // Governance as a deployment has it: a timelock owns every protocol contract, and the
        // handler proposes and executes through it.
        timelock = new TimelockController(GOVERNANCE_DELAY, new address[](0), new address[](0), address(this));
        handToTimelock();
        handler = new ProtocolHandler(audit, registry, params, timelock, provider, stranger, auditors, tiers);
        timelock.grantRole(timelock.PROPOSER_ROLE(), address(handler));
        timelock.grantRole(timelock.CANCELLER_ROLE(), address(handler));
        timelock.grantRole(timelock.EXECUTOR_ROLE(), address(handler));
        timelock.renounceRole(timelock.DEFAULT_ADMIN_ROLE(), address(this));
        handler.setImplementations(
            [
                [handler.implementationOf(address(audit)), address(new TRUSTAudit())],
                [handler.implementationOf(address(registry)), address(new AuditorRegistry())],
                [handler.implementationOf(address(params)), address(new ProtocolParams())]
            ]
        );

        bytes4[] memory selectors = new bytes4[](34);
        selectors[0] = ProtocolHandler.register.selector;
        selectors[1] = ProtocolHandler.stake.selector;
        selectors[2] = ProtocolHandler.requestUnstake.selector;
        selectors[3] = ProtocolHandler.executeUnstake.selector;
        selectors[4] = ProtocolHandler.setAvailable.selector;
        selectors[5] = ProtocolHandler.claimStakerReward.selector;
        selectors[6] = ProtocolHandler.claimTokens.selector;
        selectors[7] = ProtocolHandler.governanceSlash.selector;
        selectors[8] = ProtocolHandler.setPenalty.selector;
        selectors[9] = ProtocolHandler.warp.selector;
        selectors[10] = ProtocolHandler.roll.selector;
        selectors[11] = ProtocolHandler.createSession.selector;
        selectors[12] = ProtocolHandler.draw.selector;
        selectors[13] = ProtocolHandler.commit.selector;
        selectors[14] = ProtocolHandler.reveal.selector;
        selectors[15] = ProtocolHandler.outsiderVote.selector;
        selectors[16] = ProtocolHandler.finalizeSegment.selector;
        selectors[17] = ProtocolHandler.finalizeTrace.selector;
        selectors[18] = ProtocolHandler.distributeRewards.selector;
        selectors[19] = ProtocolHandler.withdraw.selector;
        selectors[20] = ProtocolHandler.refinalize.selector;
        selectors[21] = ProtocolHandler.claimRewards.selector;
        selectors[22] = ProtocolHandler.setMinStakes.selector;
        selectors[23] = ProtocolHandler.syncDrawWeights.selector;
        selectors[24] = ProtocolHandler.drawAfterChange.selector;
        // `advance` five times over: forge picks selectors uniformly, and this one carries
        // sessions to their end (trace verdict, fee split, claims) within a run's depth; rounds
        // of two or three draws escalate often, so a session takes a dozen steps or more.
        selectors[25] = ProtocolHandler.advance.selector;
        selectors[26] = ProtocolHandler.advance.selector;
        selectors[27] = ProtocolHandler.advance.selector;
        selectors[28] = ProtocolHandler.createRegisterCancel.selector;
        selectors[29] = ProtocolHandler.desertThenDraw.selector;
        selectors[30] = ProtocolHandler.upgrade.selector;
        selectors[31] = ProtocolHandler.claimUndelivered.selector;
        selectors[32] = ProtocolHandler.advance.selector;
        selectors[33] = ProtocolHandler.advance.selector;
        targetSelector(FuzzSelector({addr: address(handler), selectors: selectors}));
        targetContract(address(handler));
    }

    function invariantParams() internal pure virtual returns (Params memory p) {
        p = defaultParams();
        p.committeeSizeTier1 = 2;
        p.committeeSizeTier2 = 3;
        p.committeeSizeTier3 = 3;
        p.maxRounds = 2;
        p.maxSegmentsPerSession = 8;
        p.unbondingDelaySeconds = 6 hours;
        p.minStakeTier2 = 200e18;
        p.minStakeTier3 = 300e18;
        p.rewardPerSeatWei = 0.001 ether;
        // Near the tier-1 minimum: a tier-1 member's unlocked stake backs one unit to a few, so
        // draws pass members over for want of backing (issue L2); `setPenalty` moves it.
        p.penaltyPerSeat = 40e18;
    }

    // =================================================================== (1) conservation

    /// @notice The registry holds exactly the stakes, the unbonding amounts and the claimable
    ///         forfeits; and every token that came in is either held or was paid out.
    function invariant_stakingTokenIsConserved() public view {
        address[] memory all = handler.everyone();
        uint256 stakes;
        uint256 unbonding;
        uint256 claimable;
        for (uint256 i; i < all.length; ++i) {
            IAuditorRegistry.AuditorInfo memory a = registry.auditor(all[i]);
            stakes += a.stake;
            unbonding += a.unbonding;
            claimable += registry.claimableTokens(all[i]);
        }
        uint256 held = token.balanceOf(address(registry));
        assertEq(registry.totalStake(), stakes, "totalStake = sum of stakes");
        assertEq(held, stakes + unbonding + claimable, "registry balance = stakes + unbonding + claimable");
        assertEq(handler.ghost_tokensIn(), held + handler.ghost_tokensOut(), "tokens in = held + paid out");
    }

    /// @notice Fees in = held by the audit contract + withdrawn + claimed by seats + sent to the
    ///         registry; the audit contract holds exactly the fees not yet split, the credited
    ///         balances (treasury, insurance fund) and the rewards of aligned seats not yet claimed
    ///         (per-seat reward x unclaimed seats); the registry holds at least every pending staker
    ///         reward plus what is still streaming or carried to the next notification.
    function invariant_etherIsConserved() public view {
        uint256 auditBalance = address(audit).balance;
        assertEq(
            handler.ghost_feesIn(),
            auditBalance + handler.ghost_ethWithdrawn() + handler.ghost_ethClaimed() + handler.ghost_ethToRegistry(),
            "fees in = audit balance + withdrawn + claimed + sent to the registry"
        );

        address[] memory all = handler.everyone();
        uint256 owed;
        uint256 pending;
        for (uint256 i; i < all.length; ++i) {
            owed += audit.claimable(all[i]);
            pending += registry.pendingStakerReward(all[i]);
        }
        uint256[] memory ids = handler.sessionIds();
        for (uint256 i; i < ids.length; ++i) {
            ITRUSTAudit.SessionView memory s = audit.session(ids[i]);
            if (s.status != ITRUSTAudit.SessionStatus.Distributed) owed += s.feeWei;
        }
        owed += handler.unclaimedSeatRewardsWei();
        assertEq(auditBalance, owed, "audit balance = undistributed fees + credited balances + unclaimed seat rewards");

        uint256 registryBalance = address(registry).balance;
        assertEq(
            registryBalance,
            handler.ghost_ethToRegistry() - handler.ghost_stakerRewardsClaimed(),
            "registry ETH = stakers' shares - claims"
        );
        // The stakers' share streams (issue L1): what is still streaming or carried is owed too.
        IAuditorRegistry.StakerRewardStream memory stream = registry.stakerRewardStream();
        assertGe(
            registryBalance,
            pending + stream.streamingWei + stream.carriedWei,
            "registry ETH covers every pending staker reward and what is still streaming or carried"
        );
    }

    /// @notice Every aligned seat (a revealed vote that agrees with a decided segment's outcome, in
    ///         its final round) is counted with its units, is paid the per-seat reward times its
    ///         units when claimed, and only once; no other seat, and no other caller, is ever paid.
    ///         A seat released for want of a key envelope is credited R times its units (or what
    ///         is left of the fee).
    function invariant_seatRewardsArePaidOncePerAlignedSeat() public view {
        assertEq(handler.ghost_badClaimsAccepted(), 0, "a claim that must fail was paid");
        assertEq(handler.ghost_claimMismatches(), 0, "a claim paid other than per-seat reward x units");
        uint256[] memory ids = handler.sessionIds();
        for (uint256 i; i < ids.length; ++i) {
            (uint256 aligned, uint256 claimed) = handler.alignedSeats(ids[i]);
            assertEq(audit.session(ids[i]).alignedSeats, aligned, "aligned units");
            assertLe(claimed, aligned, "more units claimed than aligned");
        }
    }

    // =================================================================== (2) votes

    /// @notice No seat's vote is revealed twice, and the audit contract's count of reveals is the
    ///         number of distinct seats whose reveal succeeded.
    function _count(bool flag) private pure returns (uint256) {
        return flag ? 1 : 0;
    }

    function invariant_oneVotePerSeat() public view {
        assertLe(handler.ghost_maxRevealsPerSeat(), 1, "a seat revealed twice");
        assertEq(handler.ghost_wrongRevealsAccepted(), 0, "a reveal that does not open its commitment");
        ProtocolHandler.SegmentRef[] memory voting = handler.votingSegments();
        for (uint256 k; k < voting.length; ++k) {
            ITRUSTAudit.SegmentView memory g = audit.segment(voting[k].sessionId, voting[k].segmentId);
            uint256 done;
            for (uint256 i; i < g.seatCount; ++i) {
                uint256 reveals = handler.revealsOf(voting[k].sessionId, voting[k].segmentId, g.round, i);
                ITRUSTAudit.SeatView memory v = audit.seat(voting[k].sessionId, voting[k].segmentId, g.round, i);
                assertEq(v.revealed, reveals != 0, "seat revealed flag");
                assertLe(_count(v.revealed) + _count(v.abstained) + _count(v.undelivered), 1, "one end per seat");
                done += reveals + _count(v.abstained) + _count(v.undelivered);
            }
            assertEq(g.revealedCount, done, "revealedCount = seats revealed, abstained or released");
        }
    }

    /// @notice A round's commit window closes the moment its last seat (one per distinct member)
    ///         commits for the first time,
    ///         and not before: once every seat committed, the commit deadline is that block's time
    ///         minus one and the reveal window runs in full from there; until then it is the
    ///         deadline fixed at the draw. No commit is accepted once the window closed.
    function invariant_commitWindowClosesOnceEverySeatCommitted() public view {
        assertEq(handler.ghost_commitsAfterClose(), 0, "a commit accepted after every seat committed");
        ProtocolHandler.SegmentRef[] memory voting = handler.votingSegments();
        for (uint256 k; k < voting.length; ++k) {
            uint256 id = voting[k].sessionId;
            ITRUSTAudit.SegmentView memory g = audit.segment(id, voting[k].segmentId);
            ProtocolHandler.RoundGhost memory round = handler.roundOf(id, voting[k].segmentId, g.round);
            assertEq(round.committeeSize, g.committeeSize, "committee size");
            assertEq(round.seatCount, g.seatCount, "seat count");
            if (round.committedSeats == g.seatCount) {
                assertEq(g.commitDeadline, round.closedAt - 1, "closed at the last first commit");
                assertEq(
                    g.revealDeadline,
                    round.closedAt - 1 + audit.sessionParams(id).revealWindowSeconds,
                    "a full reveal window from the close"
                );
            } else {
                assertEq(g.commitDeadline, round.drawnCommitDeadline, "closed before every seat committed");
            }
        }
    }

    /// @notice Someone without a seat in the round never commits or reveals in it.
    function invariant_onlySeatedAuditorsVote() public view {
        assertEq(handler.ghost_unseatedSuccesses(), 0, "an unseated actor voted");
    }

    // =================================================================== (3) finality

    /// @notice A final segment verdict and a trace verdict never change once recorded, and nothing
    ///         final can be finalized (or its fee split) again. Every round ends as eq. 3.3 says,
    ///         each seat weighing its units (decided at tau of the committee's units, else
    ///         escalated, else Undetermined).
    function invariant_finalVerdictsNeverChange() public view {
        ProtocolHandler.FinalSegment[] memory finals = handler.finalSegments();
        for (uint256 i; i < finals.length; ++i) {
            ITRUSTAudit.SegmentView memory g = audit.segment(finals[i].sessionId, finals[i].segmentId);
            assertEq(uint8(g.status), uint8(finals[i].status), "segment verdict changed");
        }
        uint256[] memory traces = handler.traces();
        for (uint256 i; i < traces.length; ++i) {
            ITRUSTAudit.SessionView memory s = audit.session(traces[i]);
            assertEq(s.valid, handler.traceValid(traces[i]), "trace verdict changed");
            assertEq(s.finalizedCount, s.segmentCount, "finalized count");
            if (handler.traceDistributed(traces[i])) {
                assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Distributed), "distributed session reopened");
            } else {
                assertEq(uint8(s.status), uint8(ITRUSTAudit.SessionStatus.Finalized), "finalized session reopened");
            }
        }
        assertEq(handler.ghost_refinalizations(), 0, "something final was finalized again");
        assertEq(handler.ghost_tallyMismatches(), 0, "a segment's verdict is not eq. 3.3 over its seats' units");
        assertEq(handler.ghost_traceVerdictMismatches(), 0, "trace verdict differs from eq. 3.5-3.6 and the flags");
    }

    // =================================================================== (4) payouts

    /// @notice ETH paid out never exceeds the fees paid in; tokens paid to the insurance fund never
    ///         exceed what was forfeited, charged and slashed; a slash takes exactly what it is asked
    ///         or, asked for more, all that may be taken (issue L3), never locked stake; a draw
    ///         charges only members that unstaked after its snapshot and could not sit (issue M2).
    function invariant_payoutsNeverExceedFeesAndSlashes() public view {
        assertLe(
            handler.ghost_ethWithdrawn() + handler.ghost_ethClaimed() + handler.ghost_stakerRewardsClaimed(),
            handler.ghost_feesIn(),
            "ETH paid > fees"
        );
        assertLe(
            handler.ghost_insuranceTokensClaimed() + registry.claimableTokens(insurance),
            handler.ghost_forfeited() + handler.ghost_slashed(),
            "tokens to the insurance fund > forfeited + slashed"
        );
        assertEq(handler.ghost_overSlashesAccepted(), 0, "a slash took locked or missing stake");
        assertEq(handler.ghost_chargeViolations(), 0, "a draw charged someone it may not, or another amount");
    }

    /// @notice Issue H1: a session has no randomness block while it registers, a cancel refunds
    ///         its whole fee, and the last registration fixes the block at that moment plus the
    ///         delay.
    function invariant_sessionsFixTheirRandomnessOnlyWhenTheyOpen() public view {
        assertEq(handler.ghost_openingViolations(), 0, "randomness fixed early, a partial refund, or a late block");
    }

    // =================================================================== (5) committees and locks

    /// @notice Every open committee has one seat per distinct member (`seatCount` of them), each
    ///         of the segment's tier, never the provider, weighing more than zero at the randomness
    ///         block in the registry's history and in the model, and holding the units (at least
    ///         one) the reference draw gives it; the units add up to the committee size, and a seat
    ///         not released holds at least its units x P locked (issue L2).
    function invariant_committeesAreWellFormed() public view {
        assertEq(handler.ghost_committeeViolations(), 0, "a committee was malformed when drawn");
        assertEq(handler.ghost_referenceDrawMismatches(), 0, "a committee other than the reference draw's when drawn");
        ProtocolHandler.SegmentRef[] memory voting = handler.votingSegments();
        for (uint256 k; k < voting.length; ++k) {
            ITRUSTAudit.SegmentView memory g = audit.segment(voting[k].sessionId, voting[k].segmentId);
            address[] memory members = audit.committee(voting[k].sessionId, voting[k].segmentId);
            uint256 lock = audit.sessionParams(voting[k].sessionId).penaltyPerSeat;
            assertEq(members.length, g.seatCount, "committee size != seat count");
            uint256 units;
            for (uint256 i; i < members.length; ++i) {
                for (uint256 j; j < i; ++j) {
                    assertTrue(members[i] != members[j], "a member seated twice");
                }
                IAuditorRegistry.AuditorInfo memory a = registry.auditor(members[i]);
                assertEq(a.tier, g.tier, "member of another tier");
                assertTrue(members[i] != provider, "the provider audits its own trace");
                ITRUSTAudit.SeatView memory st = audit.seat(voting[k].sessionId, voting[k].segmentId, g.round, i);
                assertGt(st.weight, 0, "a seat without units");
                units += st.weight;
                if (!st.undelivered) {
                    // A seat released for want of a key envelope gave its lock back at the claim.
                    assertGe(a.locked, st.weight * lock, "member without its seat's lock");
                    assertGe(handler.ghost_openSeats(members[i]), 1, "member without an open seat");
                }
                uint256 atBlock = registry.drawWeightAt(members[i], g.randomnessBlock);
                assertGt(atBlock, 0, "a member without weight at the randomness block");
                assertEq(
                    st.weight,
                    handler.expectedSeatWeight(voting[k].sessionId, voting[k].segmentId, g.round, i),
                    "seat units != the reference draw's"
                );
                assertEq(
                    atBlock, handler.weightAt(members[i], g.randomnessBlock), "registry history != modelled history"
                );
            }
            assertEq(units, g.committeeSize, "units != committee size");
        }
    }

    /// @notice Once its randomness is known, a draw never reverts: it seats the committee when the
    ///         tier had enough members to seat at the randomness block (weighing more than zero
    ///         then, not the provider, with the lock unlocked now), and otherwise locks nothing,
    ///         fixes fresh randomness, and at the third attempt of the round ends the segment
    ///         Undetermined. No segment waits for a draw forever.
    function invariant_drawsSeatRetryOrEnd() public view {
        assertEq(handler.ghost_drawReverts(), 0, "a draw reverted");
        assertEq(handler.ghost_falseUnavailable(), 0, "a committee reported unavailable that the tier could seat");
        assertEq(handler.ghost_retryViolations(), 0, "an unavailable draw neither retried nor ended the segment");
    }

    /// @notice Each auditor's locked stake is exactly the sum of the locks of its open seats, and
    ///         never more than its stake.
    function invariant_lockedStakeBacksOpenSeats() public view {
        address[] memory all = handler.everyone();
        uint256[] memory ghostLocked = handler.lockLedger();
        for (uint256 i; i < all.length; ++i) {
            IAuditorRegistry.AuditorInfo memory a = registry.auditor(all[i]);
            assertEq(a.locked, ghostLocked[i], "locked = sum of the open seats' locks");
            assertLe(a.locked, a.stake, "locked stake exceeds stake");
        }
    }

    /// @notice Issue H2 with seats of several units (issue L2): a seat's weight is its units, and
    ///         each unit is P of stake locked for the seat until it settles. For every open seat
    ///         (the current round's seats of voting segments, less those released for want of a
    ///         key envelope, and the revealed seats of earlier rounds, locked until their
    ///         segment's verdict), units x P <= its member's locked stake, and the sum over a
    ///         member's open seats of units x P is exactly its locked stake: no weight without its
    ///         stake locked, no lock without a seat. Read from the protocol's own views (seat
    ///         weights, session penalties, registry locks); the handler only names the deferred
    ///         seats. Locked stake cannot leave: no unstake is accepted from an auditor holding an
    ///         open seat, and the stake behind a seat at its draw has not left since except as a
    ///         penalty (bonded stake now plus what it forfeited or was slashed since). With
    ///         locked <= stake (`invariant_lockedStakeBacksOpenSeats`: a governance slash takes
    ///         only unlocked stake), every seat's weight is stake its member holds now.
    function invariant_seatWeightIsBackedByStake() public view {
        assertEq(handler.ghost_unstakesWhileSeated(), 0, "an auditor holding an open seat unstaked");
        address[] memory all = handler.everyone();
        uint256[] memory backed = new uint256[](all.length);
        ProtocolHandler.SegmentRef[] memory voting = handler.votingSegments();
        for (uint256 k; k < voting.length; ++k) {
            (uint256 id, uint256 segmentId) = (voting[k].sessionId, voting[k].segmentId);
            uint8 round = audit.segment(id, segmentId).round;
            address[] memory members = audit.committee(id, segmentId);
            for (uint256 i; i < members.length; ++i) {
                if (audit.seat(id, segmentId, round, i).undelivered) continue; // released at its claim
                _backSeat(all, backed, ProtocolHandler.SeatRef(id, segmentId, round, i));
                ProtocolHandler.SeatBacking memory b = handler.seatBacking(id, segmentId, round, i);
                uint256 penaltiesSince = handler.ghost_stakeLost(members[i]) - b.lostAtDraw;
                uint256 stakeNow = registry.auditor(members[i]).stake;
                assertGe(stakeNow + penaltiesSince, b.stakeAtDraw, "stake behind a seat left other than as a penalty");
            }
        }
        ProtocolHandler.SeatRef[] memory deferred = handler.deferredSeats();
        for (uint256 k; k < deferred.length; ++k) {
            assertTrue(audit.seat(deferred[k].sessionId, deferred[k].segmentId, deferred[k].round, deferred[k].index).revealed, "a deferred seat not revealed");
            _backSeat(all, backed, deferred[k]);
        }
        for (uint256 i; i < all.length; ++i) {
            assertEq(registry.auditor(all[i]).locked, backed[i], "locked stake != sum of units x P over open seats");
        }
    }

    /// @dev Adds the seat's units x P to its member's entry of `backed`, after checking that the
    ///      seat has units and that its member's locked stake covers them.
    function _backSeat(address[] memory all, uint256[] memory backed, ProtocolHandler.SeatRef memory ref) private view {
        ITRUSTAudit.SeatView memory st = audit.seat(ref.sessionId, ref.segmentId, ref.round, ref.index);
        uint256 lock = uint256(st.weight) * audit.sessionParams(ref.sessionId).penaltyPerSeat;
        assertGt(st.weight, 0, "an open seat without units");
        assertLe(lock, registry.auditor(st.auditor).locked, "seat units x P > member's locked stake");
        uint256 i;
        while (all[i] != st.auditor) ++i;
        backed[i] += lock;
    }

    /// @notice Issue L2: no account gains by splitting its stake over several accounts. Exact
    ///         properties, checked at every draw and settlement, that imply it (a statistical test
    ///         of the odds would be no invariant):
    ///         1. Every committee is exactly the one the reference draw gives
    ///            (`ProtocolHandler._referenceDraw`): `committeeSize` draws with replacement, each
    ///            landing on a member with probability its stake at the randomness block over the
    ///            stake still in range, a member staying in range after it wins. A member leaves the
    ///            range only for what it did itself (it is the provider, unstaked after the
    ///            snapshot, or cannot back one more unit). So each draw lands on an owner's accounts
    ///            together with the odds of their stake together, however it is split, and the owner's
    ///            expected units are committeeSize x stake / total either way. Splitting can only
    ///            lose units: each account's unlocked stake backs floor(unlocked / P) units, and
    ///            the floors of the parts add up to at most the floor of the whole.
    ///         2. The units of every committee add up to its size, and each is backed by P of its
    ///            member's unlocked stake and locks exactly that (units x P).
    ///         3. Everything a seat gets or loses is its units times a per-unit amount, so the
    ///            same units held by one account or by many sum to the same: its votes (the tally
    ///            weighs units, eq. 3.3), its lock and forfeit (units x P, all or nothing per seat,
    ///            so a misaligned seat loses units x P with the same probability p_slash), its
    ///            reward (the per-seat reward x units) and its compensation when released for want
    ///            of a key envelope (R x units).
    ///         Not linear: reputation moves once per seat whatever its units (it moves neither the
    ///         odds of a draw nor any payment, only p_slash of later rounds; splitting gives each
    ///         account its own, no better than the whole's).
    function invariant_noAccountGainsBySplitting() public view {
        assertEq(handler.ghost_referenceDrawMismatches(), 0, "a committee other than k draws with replacement by stake");
        assertEq(handler.ghost_falseUnavailable(), 0, "a committee reported unavailable that the stake could back");
        assertEq(handler.ghost_unbackedUnits(), 0, "a unit not backed and locked by P, or units != committee size");
        assertEq(handler.ghost_tallyMismatches(), 0, "a vote not weighed by its seat's units");
        assertEq(handler.ghost_claimMismatches(), 0, "a reward or compensation other than per-unit amount x units");
        assertEq(handler.ghost_settlementViolations(), 0, "a forfeit other than units x P per seat, or a bad settlement");
        ProtocolHandler.SegmentRef[] memory voting = handler.votingSegments();
        for (uint256 k; k < voting.length; ++k) {
            (uint256 id, uint256 segmentId) = (voting[k].sessionId, voting[k].segmentId);
            ITRUSTAudit.SegmentView memory g = audit.segment(id, segmentId);
            uint256 units;
            for (uint256 i; i < g.seatCount; ++i) {
                units += audit.seat(id, segmentId, g.round, i).weight;
            }
            assertEq(units, g.committeeSize, "a committee's units != its draws");
        }
    }

    // =================================================================== (6) upgrades and liveness

    /// @notice Governance upgrades (through the timelock, to another implementation of the same
    ///         code) leave every proxy showing the same state and pointing where governance chose;
    ///         nobody else can upgrade. Every other invariant is checked across those upgrades.
    function invariant_upgradesKeepState() public view {
        assertEq(handler.ghost_upgradeViolations(), 0, "an upgrade changed state, missed, or was not governance's");
    }

    /// @notice Every session ends (no stuck fee, no stuck stake). From the state the run reached,
    ///         public calls alone bring every session to its end (Distributed; a cancelled one is
    ///         Distributed with its fee refunded): mine past a randomness block and draw, wait out
    ///         the windows with every seat silent (the costliest settlement: every seat forfeits),
    ///         finalize each round, the trace, and split the fee; a provider cancels a session it
    ///         is still registering. It takes at most, per segment and round, `MAX_DRAW_ATTEMPTS`
    ///         draws, one refresh of expired randomness and one finalization, plus the trace and
    ///         the split; every call fits the EIP-7825 cap of 16,777,216 gas; and afterwards no
    ///         stake is locked. The drive runs on a snapshot and is rolled back.
    /// forge-config: default.invariant.check-interval = 16
    /// forge-config: ci.invariant.check-interval = 48
    function invariant_everySessionEnds() public {
        uint256 snapshot = vm.snapshotState();
        uint256 count = audit.sessionCount();
        uint256 maxGas;
        for (uint256 id = 1; id <= count; ++id) {
            uint256 used = _driveToEnd(id);
            if (used > maxGas) maxGas = used;
        }
        address[] memory all = handler.everyone();
        for (uint256 i; i < all.length; ++i) {
            assertEq(registry.auditor(all[i]).locked, 0, "stake still locked once every session ended");
        }
        console.log("liveness: sessions", count, "most gas in one call", maxGas);
        vm.revertToState(snapshot);
    }

    /// @dev Drives session `id` to its end by public calls; returns the most gas one call used.
    function _driveToEnd(uint256 id) internal returns (uint256 maxGas) {
        ITRUSTAudit.SessionView memory s = audit.session(id);
        if (s.status == ITRUSTAudit.SessionStatus.Registering) {
            maxGas = _metered(s.provider, abi.encodeCall(audit.cancelSession, (id)));
        }
        // Per round: its draws, then its settlement in steps of SETTLEMENT_CHUNK_SEATS (issue M4),
        // at most 256 / SETTLEMENT_CHUNK_SEATS of them (a list holds under 256 seats).
        uint256 bound = s.segmentCount * audit.sessionParams(id).maxRounds
            * (ParamsLib.MAX_DRAW_ATTEMPTS + 1 + 256 / ParamsLib.SETTLEMENT_CHUNK_SEATS) + 2;
        uint256 steps;
        while (audit.session(id).status == ITRUSTAudit.SessionStatus.Open) {
            bool allFinal = true;
            for (uint256 j; j < s.segmentCount; ++j) {
                ITRUSTAudit.SegmentView memory g = audit.segment(id, j);
                bytes memory call;
                if (g.status == ITRUSTAudit.SegmentStatus.AwaitingDraw) {
                    if (block.number <= g.randomnessBlock) vm.roll(uint256(g.randomnessBlock) + 1);
                    call = abi.encodeCall(audit.assignAuditors, (id, j));
                } else if (g.status == ITRUSTAudit.SegmentStatus.Voting) {
                    if (block.timestamp <= g.revealDeadline && g.revealedCount < g.seatCount) {
                        vm.warp(uint256(g.revealDeadline) + 1);
                    }
                    // One step of a bounded settlement (M4); a small round ends in this one.
                    call = abi.encodeCall(audit.settleSegment, (id, j, ParamsLib.SETTLEMENT_CHUNK_SEATS));
                } else {
                    continue;
                }
                allFinal = false;
                uint256 used = _metered(stranger, call);
                if (used > maxGas) maxGas = used;
                ++steps;
            }
            if (allFinal) {
                uint256 used = _metered(stranger, abi.encodeCall(audit.finalizeTrace, (id)));
                if (used > maxGas) maxGas = used;
                ++steps;
            }
            assertLe(steps, bound, "a session did not end within its bound of calls");
        }
        if (audit.session(id).status == ITRUSTAudit.SessionStatus.Finalized) {
            uint256 used = _metered(stranger, abi.encodeCall(audit.distributeRewards, (id)));
            if (used > maxGas) maxGas = used;
        }
        assertEq(uint8(audit.session(id).status), uint8(ITRUSTAudit.SessionStatus.Distributed), "a session did not end");
    }

    /// @dev Calls the audit contract as `caller`; fails on a revert (with its reason) or when the
    ///      call, with a transaction's intrinsic cost and calldata, would not fit the EIP-7825 cap.
    function _metered(address caller, bytes memory data) internal returns (uint256 used) {
        vm.prank(caller);
        uint256 before = gasleft();
        (bool ok, bytes memory result) = address(audit).call(data);
        used = before - gasleft() + 21_000 + 16 * data.length;
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(result, 32), mload(result))
            }
        }
        assertLe(used, TX_GAS_CAP, "a call that ends a session exceeds the EIP-7825 gas cap");
    }

    // =================================================================== registry bookkeeping

    /// @notice Draw weight per tier is the stake of the auditors who may be drawn (eq. 3.2):
    ///         registered, available, at the tier minimum in force when the registry last
    ///         re-evaluated them, credentialed for tier 3 (locks do not enter); the sortition tree's
    ///         total is that sum, now and at every past block a draw reads (the last block, and the
    ///         randomness block of every segment waiting for a draw), and so is each auditor's
    ///         weight in the registry's history. Reputation stays within [0, 1] and settlements
    ///         follow section 3.3.
    function invariant_drawWeightsFollowEligibility() public view {
        address[] memory all = handler.everyone();
        (uint256[] memory minStakes, uint256[] memory drawWeights) = handler.weightLedger();
        uint256[4] memory count;
        uint256[4] memory weight;
        uint256[4] memory modelled;
        uint256 last = block.number - 1;
        for (uint256 i; i < all.length; ++i) {
            IAuditorRegistry.AuditorInfo memory a = registry.auditor(all[i]);
            assertLe(a.reputationWad, 1e18, "reputation above 1");
            assertEq(
                registry.drawWeightAt(all[i], last), handler.weightAt(all[i], last), "draw weight at the last block"
            );
            if (!a.registered) continue;
            bool eligible = a.available && a.stake >= minStakes[i] && (a.tier != 3 || a.credentialed);
            assertEq(drawWeights[i], eligible ? a.stake : 0, "modelled draw weight");
            if (eligible) {
                count[a.tier] += 1;
                weight[a.tier] += a.stake;
            }
            modelled[a.tier] += drawWeights[i];
        }
        for (uint8 tier = 1; tier <= 3; ++tier) {
            assertEq(registry.eligibleCount(tier), count[tier], "eligible count");
            assertEq(registry.eligibleStake(tier), weight[tier], "eligible stake");
            assertEq(registry.eligibleStake(tier), modelled[tier], "eligible stake = modelled draw weights");
            assertEq(
                registry.eligibleStakeAt(tier, last),
                handler.eligibleStakeAt(tier, last),
                "eligible stake at the last block"
            );
        }
        ProtocolHandler.SegmentRef[] memory awaiting = handler.awaitingSegments();
        for (uint256 k; k < awaiting.length; ++k) {
            ITRUSTAudit.SegmentView memory g = audit.segment(awaiting[k].sessionId, awaiting[k].segmentId);
            if (g.randomnessBlock >= block.number) continue;
            assertEq(
                registry.eligibleStakeAt(g.tier, g.randomnessBlock),
                handler.eligibleStakeAt(g.tier, g.randomnessBlock),
                "eligible stake at a randomness block"
            );
            for (uint256 i; i < all.length; ++i) {
                assertEq(
                    registry.drawWeightAt(all[i], g.randomnessBlock),
                    handler.weightAt(all[i], g.randomnessBlock),
                    "draw weight at a randomness block"
                );
            }
        }
        assertEq(handler.ghost_settlementViolations(), 0, "a seat settled against section 3.3");
    }

    // =================================================================== summary

    /// @dev Checked once at the end of each run (logging after every call would dominate the run time),
    ///      and over a few runs only: it asserts nothing, and each invariant costs a campaign of its own.
    /// forge-config: default.invariant.check-interval = 0
    /// forge-config: ci.invariant.check-interval = 0
    /// forge-config: default.invariant.runs = 4
    /// forge-config: ci.invariant.runs = 4
    function invariant_callSummary() public view {
        console.log("-- call summary --");
        bytes32[] memory names = handler.actionNames();
        for (uint256 i; i < names.length; ++i) {
            console.log(_text(names[i]), handler.calls(names[i]));
        }
        console.log("sessions", handler.sessionIds().length, "traces", handler.traces().length);
        console.log("final segments", handler.finalSegments().length, "open rounds", handler.votingSegments().length);
        console.log("awaiting a draw", handler.awaitingSegments().length);
        console.log("fees in (wei)", handler.ghost_feesIn(), "withdrawn (wei)", handler.ghost_ethWithdrawn());
        console.log("claimed by seats (wei)", handler.ghost_ethClaimed(), "unclaimed (wei)", handler.unclaimedSeatRewardsWei());
        console.log("forfeited", handler.ghost_forfeited(), "slashed", handler.ghost_slashed());
        console.log("block", block.number, "time", block.timestamp);
    }

    function _text(bytes32 name) internal pure returns (string memory) {
        uint256 n;
        while (n < 32 && name[n] != 0) ++n;
        bytes memory out = new bytes(n);
        for (uint256 i; i < n; ++i) {
            out[i] = name[i];
        }
        return string(out);
    }
}
