// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Params} from "../types/Params.sol";

/// @title ITRUSTAudit
/// @notice The core TRUST audit interface of the paper's Listing 1 (section 3.5), with these
///         deviations:
///         - `assignAuditors(sessionId, segmentId)` takes no auditor list: the committee is drawn on
///           chain from randomness fixed when the session was created, so no caller can choose it.
///         - Segments are registered with their tier, weight, flags and content digest, in
///           `createSessionWithSegments` or in `registerSegments` calls after `createSession`.
///         - `commitVote` takes `commitmentOf(...)`, a hash over the chain, this contract, the
///           session, segment, round, auditor, vote and salt; `keccak256(vote || salt)` alone would
///           let one auditor copy another's commitment.
///         - Batch variants (`assignAuditorsBatch`, `commitVotes`, `revealVotes`,
///           `finalizeSegments`) exist for keepers and for auditors holding many seats.
///         - `finalizeSegment` returns `passed == false` both for a failed segment and for one that
///           escalates to a new round; `SegmentFinalized` is emitted only for a final verdict, and
///           `SegmentEscalated` for an escalation.
///         - `slashAuditor` takes the slashed stake from the registry's unlocked and unbonding stake
///           and credits it to the insurance fund; it never touches stake locked by open seats.
///         - Rewards are paid by pull: `distributeRewards` fixes the per-seat reward (the auditors'
///           share divided by the aligned seats) and credits the treasury and insurance fund in O(1);
///           each auditor then claims its aligned seats with `claimRewards`, and the treasury and
///           insurance fund take their balances with `withdraw`.
interface ITRUSTAudit {
    // ------------------------------------------------------------------ types

    /// @notice A segment as the provider registers it.
    /// @param tier Auditor tier routed to (1 computational, 2 LLM, 3 human).
    /// @param weight w_t(s) of eq. 3.5 (positive).
    /// @param critical On the critical path: the trace is invalid unless it passes.
    /// @param contradiction Stands for a flagged `contradicts` edge: Pass means the contradiction does
    ///        not hold; a Fail (a confirmed contradiction) makes the trace invalid.
    /// @param contentDigest The digest of the segment's IPFS CID (its multihash digest).
    struct SegmentInput {
        uint8 tier;
        uint32 weight;
        bool critical;
        bool contradiction;
        bytes32 contentDigest;
    }

    enum SessionStatus {
        None,
        Registering, // created, not every segment registered yet
        Open, // every segment registered; committees are drawn and votes cast
        Finalized, // trace verdict recorded
        Distributed // fee split credited
    }

    enum SegmentStatus {
        None,
        AwaitingDraw, // registered (or escalated): waiting for its randomness block and a draw
        Voting, // committee seated: commit window, then reveal window
        Passed,
        Failed,
        Undetermined // no decision after the maximum number of rounds: counts as failed
    }

    enum Phase {
        None,
        AwaitingDraw,
        Commit,
        Reveal,
        Finalizable,
        Final
    }

    struct SessionView {
        address provider;
        SessionStatus status;
        bool valid;
        bytes32 traceRoot;
        uint256 feeWei;
        uint256 segmentCount;
        uint256 registeredCount;
        uint256 finalizedCount;
        uint256 randomnessBlock;
        uint256 totalWeight;
        uint256 passWeight;
        uint256 criticalFailed;
        uint256 contradictionsConfirmed;
        /// @dev Aligned units of decided segments' final rounds (a seat counts its draws).
        uint256 alignedSeats;
        /// @dev The per-segment verdicts, beside the weighted trace verdict (issue M5).
        uint256 segmentsPassed;
        uint256 segmentsFailed;
        uint256 segmentsUndetermined;
    }

    struct SegmentView {
        uint8 tier;
        uint32 weight;
        bool critical;
        bool contradiction;
        SegmentStatus status;
        uint8 round;
        uint8 committeeSize;
        uint8 revealedCount;
        uint48 commitDeadline;
        uint48 revealDeadline;
        uint64 randomnessBlock;
        bytes32 contentDigest;
        /// @dev The provider published this round's key envelopes by `deliveryDeadline` (M3).
        bool delivered;
        /// @dev The end of the first half of the round's commit window (zero before the draw):
        ///      with no envelopes by then, each uncommitted seat may `claimUndelivered`.
        uint48 deliveryDeadline;
        /// @dev The distinct members the round's `committeeSize` draws seated (issue L2): seats
        ///      0 .. seatCount - 1, each weighing the draws it won. Zero before the draw.
        uint8 seatCount;
    }

    struct SeatView {
        address auditor;
        /// @dev The committee draws the member won (issue L2): its votes, and the multiple of P
        ///      it locked, of R it earns when aligned, and of P it forfeits.
        uint96 weight;
        bool committed;
        bool revealed;
        bool vote;
        bool claimed;
        /// @dev Released by `claimUndelivered`: no key envelope reached the seat in time.
        bool undelivered;
        /// @dev Said in the commit window that it will not vote (`abstain`): settled as silent.
        bool abstained;
    }

    /// @notice A seat of a session, named by segment and index in the segment's final committee.
    struct SeatRef {
        uint256 segmentId;
        uint256 seatIndex;
    }

    /// @notice One commitment of a batch: the seat is named by its index in the committee.
    struct SeatCommit {
        uint256 sessionId;
        uint256 segmentId;
        uint256 seatIndex;
        bytes32 commitment;
    }

    /// @notice One reveal of a batch.
    struct SeatReveal {
        uint256 sessionId;
        uint256 segmentId;
        uint256 seatIndex;
        bool vote;
        bytes32 salt;
    }

    // ------------------------------------------------------------------ events (Listing 1 first)

    event SessionCreated(uint256 indexed sessionId, bytes32 traceRoot);
    /// @dev Listing 1's events, with the round and the auditor indexed, so that a reader can
    ///      rebuild every seat's history from events alone (and a worker filter its own votes).
    event VoteCommitted(uint256 indexed sessionId, uint256 segmentId, uint8 round, address indexed auditor);
    event VoteRevealed(uint256 indexed sessionId, uint256 segmentId, uint8 round, address indexed auditor, bool vote);
    event SegmentFinalized(uint256 indexed sessionId, uint256 segmentId, bool passed);
    /// @notice A step of a settlement in chunks (`settleSegment`, issue M4), or the step of
    ///         `finalizeSegment(s)` that completed one: `settled` of the `total` entries of the
    ///         round's settlement list are now settled. When `settled == total` the same
    ///         transaction emits `SegmentFinalized` or `SegmentEscalated`. Not emitted by a
    ///         finalization that settles the whole list in one go.
    event SegmentSettlementProgress(
        uint256 indexed sessionId, uint256 indexed segmentId, uint8 round, uint256 settled, uint256 total
    );
    event TraceFinalized(uint256 indexed sessionId, bool valid);
    /// @dev `sessionId` is the session whose settlement forfeited the stake, zero for a governance
    ///      slash (`slashAuditor`); `amount` is what was taken.
    event AuditorSlashed(uint256 indexed sessionId, address indexed auditor, uint256 amount);

    /// @notice Details of a new session that Listing 1's `SessionCreated` does not carry.
    event SessionOpened(
        uint256 indexed sessionId,
        address indexed provider,
        uint256 segmentCount,
        uint256 feeWei,
        uint256 randomnessBlock,
        uint256 paramsVersion
    );
    event SegmentRegistered(
        uint256 indexed sessionId,
        uint256 indexed segmentId,
        uint8 tier,
        uint32 weight,
        bool critical,
        bool contradiction,
        bytes32 contentDigest
    );
    /// @notice A committee was seated: workers watch this for their seats. The deadlines are those
    ///         fixed at the draw; the commit window closes earlier once every seat has committed
    ///         (see `commitVote`), so read the current ones from `segment`.
    event CommitteeDrawn(
        uint256 indexed sessionId,
        uint256 indexed segmentId,
        uint8 round,
        uint8 tier,
        address[] members,
        uint48 commitDeadline,
        uint48 revealDeadline
    );
    /// @notice The round reached no decision: a larger committee of the next tier will be drawn
    ///         from the randomness of `randomnessBlock`.
    event SegmentEscalated(
        uint256 indexed sessionId, uint256 indexed segmentId, uint8 round, uint8 tier, uint8 committeeSize, uint64 randomnessBlock
    );
    /// @notice The round's tier could not seat its committee at the randomness block (`attempt` of
    ///         three); the draw is retried with fresh randomness, or the segment ends Undetermined.
    event CommitteeUnavailable(uint256 indexed sessionId, uint256 indexed segmentId, uint8 round, uint8 attempt);
    /// @notice A new randomness block was fixed for a draw: the old one passed out of reach, or the
    ///         committee could not be seated from it.
    event RandomnessRefreshed(uint256 indexed sessionId, uint256 indexed segmentId, uint64 randomnessBlock);
    event RewardsDistributed(
        uint256 indexed sessionId, uint256 auditorsWei, uint256 perSeatWei, uint256 treasuryWei, uint256 stakersWei, uint256 insuranceWei
    );
    event Withdrawn(address indexed account, uint256 amountWei);
    /// @notice A provider cancelled a session before registering all its segments; fee refunded.
    event SessionCancelled(uint256 indexed sessionId, uint256 refundWei);
    /// @notice The randomness source changed.
    event RandomnessSourceChanged(address previous, address current);
    /// @dev `units`: the claimed seats' draws (a seat earns the per-seat reward once per unit).
    event RewardsClaimed(uint256 indexed sessionId, address indexed auditor, uint256 units, uint256 amountWei);
    /// @notice The provider's key envelopes of a round were recorded; `onTime` when by the round's
    ///         delivery deadline (only then do they count as delivered, see `claimUndelivered`).
    event EnvelopesDelivered(uint256 indexed sessionId, uint256 indexed segmentId, uint8 round, bool onTime);
    /// @notice A seat was released because no key envelope was delivered for its round in time;
    ///         `compensationWei` was credited to the auditor out of the provider's fee.
    event SeatUndelivered(
        uint256 indexed sessionId,
        uint256 indexed segmentId,
        uint8 round,
        uint256 seatIndex,
        address indexed auditor,
        uint256 compensationWei
    );
    /// @notice A seat said it will not vote in this round (`abstain`).
    event VoteAbstained(uint256 indexed sessionId, uint256 segmentId, uint8 round, address indexed auditor);
    /// @notice The contract allowed to record envelope deliveries changed.
    event SegmentKeysChanged(address previous, address current);

    // ------------------------------------------------------------------ errors

    error AuditZeroSegments();
    error AuditTooManySegments(uint256 segmentCount, uint256 maximum);
    error AuditFeeTooLow(uint256 feeWei, uint256 neededWei);
    error AuditUnknownSession(uint256 sessionId);
    error AuditUnknownSegment(uint256 sessionId, uint256 segmentId);
    error AuditNotProvider(uint256 sessionId, address caller);
    error AuditSegmentsOverflow(uint256 sessionId, uint256 registered, uint256 adding, uint256 segmentCount);
    error AuditInvalidSegment(uint256 index, string field);
    /// @notice Segment `index` makes the session's weights spread wider than `maxWeightRatio`.
    error AuditWeightsTooUneven(uint256 index, uint256 lightest, uint256 heaviest, uint256 maxWeightRatio);
    error AuditSessionNotOpen(uint256 sessionId, SessionStatus status);
    error AuditWrongSegmentStatus(uint256 sessionId, uint256 segmentId, SegmentStatus status);
    error AuditRandomnessPending(uint256 sessionId, uint256 segmentId, uint256 randomnessBlock);
    error AuditOutsideCommitWindow(uint256 sessionId, uint256 segmentId, uint256 nowSeconds, uint256 commitDeadline);
    error AuditOutsideRevealWindow(
        uint256 sessionId, uint256 segmentId, uint256 nowSeconds, uint256 commitDeadline, uint256 revealDeadline
    );
    error AuditNotSeated(uint256 sessionId, uint256 segmentId, address caller);
    error AuditZeroCommitment();
    error AuditNoCommitment(uint256 sessionId, uint256 segmentId, address auditor);
    error AuditAlreadyRevealed(uint256 sessionId, uint256 segmentId, address auditor);
    error AuditCommitmentMismatch(uint256 sessionId, uint256 segmentId, address auditor);
    error AuditVotingNotOver(uint256 sessionId, uint256 segmentId, uint256 nowSeconds, uint256 revealDeadline);
    error AuditSegmentsPending(uint256 sessionId, uint256 finalized, uint256 segmentCount);
    error AuditNotFinalized(uint256 sessionId, SessionStatus status);
    error AuditNothingToWithdraw(address account);
    error AuditNotDistributed(uint256 sessionId, SessionStatus status);
    error AuditSeatNotRewarded(uint256 sessionId, uint256 segmentId, uint256 seatIndex, address caller);
    error AuditZeroAddress();
    error AuditNotSegmentKeys(address caller);
    error AuditDeliveryPending(uint256 sessionId, uint256 segmentId, uint256 nowSeconds, uint256 deliveryDeadline);
    error AuditEnvelopesDelivered(uint256 sessionId, uint256 segmentId, uint8 round);
    error AuditSeatCommitted(uint256 sessionId, uint256 segmentId, uint256 seatIndex);
    /// @notice `settleSegment` was asked to settle no entry: pass at least 1.
    error AuditZeroMaxSeats(uint256 sessionId, uint256 segmentId);
    /// @notice The segment's settlement in chunks has begun, so its seats can no longer change
    ///         (`claimUndelivered` comes too late): the round is settled as it stood.
    error AuditSettlementStarted(uint256 sessionId, uint256 segmentId);

    // ------------------------------------------------------------------ Listing 1

    /// @notice Opens an audit session for a trace whose Merkle root is `traceRoot`.
    /// @param traceRoot The Merkle root over the trace's segment leaves.
    /// @param segmentCount The number of segments, registered next with `registerSegments`.
    /// @return sessionId The new session's id (ids start at 1).
    /// @dev Payable: `msg.value` is the fee, checked against R once every segment is known. Copies
    ///      the current parameters into the session and fixes its randomness block
    ///      (`block.number + randomnessDelayBlocks`). Emits `SessionCreated` and `SessionOpened`.
    function createSession(bytes32 traceRoot, uint256 segmentCount) external payable returns (uint256 sessionId);

    /// @notice Draws the committee of a segment from the session's randomness.
    /// @dev Callable by anyone once the randomness block is mined; never takes caller-chosen
    ///      auditors. k_t distinct auditors of the segment's tier, drawn with probability
    ///      proportional to stake, available, never the provider; each locks P of stake. Opens the
    ///      commit window. If the randomness is no longer readable a new block is fixed instead
    ///      (`RandomnessRefreshed`). Emits `CommitteeDrawn`. When the tier cannot seat the
    ///      committee as it stood at the randomness block, emits `CommitteeUnavailable` and fixes a
    ///      new block; the third such draw of a round ends the segment Undetermined (failed, as
    ///      after the last escalation), so a session never waits forever for auditors.
    function assignAuditors(uint256 sessionId, uint256 segmentId) external;

    /// @notice Commits the caller's vote on a segment: `commitment = commitmentOf(...)`.
    /// @dev Only seated auditors, only in the commit window; a second commit in the window replaces
    ///      the first. When this is the first commit of the round's last seat without one (every
    ///      seat now holds a commitment), the commit window closes at once: `commitDeadline`
    ///      becomes `block.timestamp - 1`, so reveals are accepted from this block on, no commit
    ///      is accepted any more, and the reveal deadline (`commitDeadline + revealWindowSeconds`)
    ///      gives the full reveal window from here. Safe because no commitment can change once
    ///      all are in, so nothing a reveal shows can be copied. Emits `VoteCommitted` (nothing
    ///      else on the close: `segment` and `phase` show it).
    ///      Gas: about 3.4k more for a seat's first commit (the count of committed seats).
    function commitVote(uint256 sessionId, uint256 segmentId, bytes32 commitment) external;

    /// @notice Reveals the caller's committed vote. Only in the reveal window (after the commit
    ///         deadline, which moves to the current block once every seat has committed), once per
    ///         seat.
    /// @dev Reverts with `AuditCommitmentMismatch` when (vote, salt) do not open the commitment.
    ///      Emits `VoteRevealed`.
    function revealVote(uint256 sessionId, uint256 segmentId, bool vote, bytes32 salt) external;

    /// @notice Finalizes the current round of a segment once its reveal window closed (or every
    ///         seat revealed).
    /// @return passed True when the segment passed.
    /// @dev Stake-weighted threshold (eq. 3.3) over the committee's stake at the draw: Pass when
    ///      pass weight >= tau, Fail when fail weight >= tau, else escalate to a committee of 2k+1
    ///      of the next tier, up to `maxRounds`, after which the segment is Undetermined (failed).
    ///      Settles every seat (reward eligibility, reputation eq. 3.8, slashing eq. 3.9, forfeits of
    ///      silent seats). O(committee size). Emits `SegmentFinalized` or `SegmentEscalated`, and
    ///      `AuditorSlashed` per forfeited seat.
    function finalizeSegment(uint256 sessionId, uint256 segmentId) external returns (bool passed);

    /// @notice Records the trace verdict once every segment is final.
    /// @return valid W >= beta * sum(w) (eq. 3.5-3.6), every critical segment passed and no
    ///         contradiction was confirmed. O(1). Emits `TraceFinalized`.
    function finalizeTrace(uint256 sessionId) external returns (bool valid);

    /// @notice Splits a finalized session's fee: 70% to the auditors, equally per aligned seat (a
    ///         seat that revealed the outcome of a decided segment), 15% treasury, 10% stakers (pro
    ///         rata to stake, through the registry), 5% insurance (default split).
    /// @dev O(1): fixes the per-seat reward for `claimRewards` and credits the treasury and the
    ///      insurance fund for `withdraw`. With no aligned seat the auditors' share, and always the
    ///      rounding dust, goes to the treasury. Emits `RewardsDistributed`.
    function distributeRewards(uint256 sessionId) external;

    /// @notice Governance slash of `amount` staking tokens from an auditor (owner only).
    /// @dev Emits `AuditorSlashed`.
    function slashAuditor(address auditor, uint256 amount, string calldata reason) external;

    // ------------------------------------------------------------------ additions

    /// @notice `createSession` and `registerSegments` in one call.
    function createSessionWithSegments(bytes32 traceRoot, SegmentInput[] calldata segments)
        external
        payable
        returns (uint256 sessionId);

    /// @notice Registers the next segments of a session, in order (provider only). Payable: any
    ///         value adds to the fee. Emits `SegmentRegistered` per segment.
    function registerSegments(uint256 sessionId, SegmentInput[] calldata segments) external payable;

    /// @notice Cancels a session whose segments are not all registered yet, refunding the fee
    ///         (provider only). No randomness has been requested for it yet, so nobody, the
    ///         provider included, can have seen its committees: cancelling re-rolls nothing.
    function cancelSession(uint256 sessionId) external;

    /// @notice `assignAuditors` for many segments of a session; segments no longer awaiting their
    ///         draw (drawn by someone else first) are skipped.
    function assignAuditorsBatch(uint256 sessionId, uint256[] calldata segmentIds) external;

    /// @notice Commits several seats' votes in one transaction (seats named by index); each closes
    ///         its segment's window as `commitVote` does.
    function commitVotes(SeatCommit[] calldata commits) external;

    /// @notice Reveals several seats' votes in one transaction.
    function revealVotes(SeatReveal[] calldata reveals) external;

    /// @notice `finalizeSegment` for many segments of a session; segments whose round is no longer
    ///         voting (finalized by someone else first) are skipped.
    function finalizeSegments(uint256 sessionId, uint256[] calldata segmentIds) external;

    /// @notice Settles a segment's round in bounded steps (issue M4): at most `maxSeats` entries
    ///         of its settlement list, from where the previous step stopped. Anyone may call it
    ///         once the round's voting is over (as `finalizeSegment`).
    /// @dev The settlement list is the round's seats (all but those released by
    ///      `claimUndelivered`) followed, once the segment is decided or ends Undetermined, by the
    ///      revealed seats of every earlier round judged against the verdict; when the round
    ///      escalates, only its silent seats. The list is recomputed from storage at each step
    ///      (nothing that builds it can change once the voting is over) and settled in order; the
    ///      segment stores only the count settled so far. The step that settles the last entry does
    ///      what `finalizeSegment` does: emits `SegmentFinalized` and records the verdict, or
    ///      emits `SegmentEscalated` and requests the next round's randomness. `finalizeSegment` and
    ///      `finalizeSegments` settle whatever remains in one go, so a round whose whole list fits
    ///      one transaction needs no step. Gas: each step reads every seat of every round
    ///      (`ParamsLib.RECOMPUTE_GAS_PER_SEAT` each) and settles at most `maxSeats`
    ///      (`ParamsLib.SETTLEMENT_GAS_PER_SEAT` each); `ParamsLib.validate` admits only
    ///      committees whose step of `ParamsLib.SETTLEMENT_CHUNK_SEATS` seats fits
    ///      `ParamsLib.SETTLEMENT_GAS_BUDGET`. Emits `SegmentSettlementProgress` at each step and
    ///      `AuditorSlashed` per forfeited seat. Reverts with `AuditZeroMaxSeats` for
    ///      `maxSeats == 0`, `AuditWrongSegmentStatus` unless the round is voting (a segment
    ///      already final or escalated), `AuditVotingNotOver` before the voting ends.
    /// @param maxSeats The most entries this step settles (at least 1). `type(uint256).max` with no
    ///        step before is `finalizeSegment` (no progress event).
    /// @return done Whether this step settled the last entry (the segment is final or escalated).
    function settleSegment(uint256 sessionId, uint256 segmentId, uint256 maxSeats) external returns (bool done);

    /// @notice Where the settlement of a segment's current round stands: `settled` of the `total`
    ///         entries of its settlement list (see `settleSegment`) are settled. (0, 0) unless the
    ///         round is voting. `total` is final once the voting is over (before, votes still
    ///         change it): a keeper settles `total - settled` entries more, in steps that fit a
    ///         transaction.
    /// @dev O(seats of every round): rebuilds the list as a step does.
    function settlementProgress(uint256 sessionId, uint256 segmentId)
        external
        view
        returns (uint256 settled, uint256 total);

    /// @notice Pays the caller's credited ETH (the treasury and insurance shares).
    function withdraw() external;

    /// @notice The seat's auditor says, within the commit window and before committing, that it
    ///         will not vote this round (an auditor that cannot decide: tier 1 never guesses).
    /// @dev Settled exactly as a silent seat (it forfeits P, reputation down): abstaining buys
    ///      nothing but time for everyone else. The seat counts as committed, so the commit window
    ///      closes once every seat has committed or abstained, and as done for the reveals, so the
    ///      round can be finalized once every other seat revealed. Emits `VoteAbstained`.
    function abstain(uint256 sessionId, uint256 segmentId, uint256 seatIndex) external;

    /// @notice Records that the provider published the key envelopes of a segment's current round
    ///         (the `SegmentKeys` contract only, from `publishEnvelopes`). Before the round's
    ///         delivery deadline the round counts as delivered; after it, the envelopes are still
    ///         published for whoever can use them, but seats may still claim `claimUndelivered`.
    /// @dev Emits `EnvelopesDelivered`, which says whether the delivery counted (`onTime`).
    function recordDelivery(uint256 sessionId, uint256 segmentId, uint8 round) external;

    /// @notice A seat's claim that the provider delivered no key envelope for its round (issue M3):
    ///         verifiable on chain, since deliveries are recorded (`recordDelivery`). Allowed to the
    ///         seat's auditor after the round's delivery deadline (half the commit window after the
    ///         draw) while the round is still voting, when the seat has not committed and the round
    ///         was not delivered in time. Releases the seat's locked stake at once (no forfeit, no
    ///         reputation change) and credits the auditor R (`rewardPerSeatWei`) per unit of the
    ///         seat out of the session's fee, which the provider escrowed when it opened the session: the fee is
    ///         the provider's bond. The seat still counts in its round's tally against both
    ///         outcomes, so withholding envelopes from some seats cannot hand the decision to the
    ///         others; a round in which seats holding more than half of its weight claimed never escalates: it
    ///         ends Undetermined, so a provider cannot drag larger committees into the trap.
    /// @dev Emits `SeatUndelivered`. Reverts with `AuditSettlementStarted` once a step of the
    ///      round's settlement went through (`settleSegment`): the settlement list is frozen then.
    function claimUndelivered(uint256 sessionId, uint256 segmentId, uint256 seatIndex) external;

    /// @notice Pays the caller the reward of its aligned seats in a distributed session.
    /// @dev Each seat is claimed once. Reverts with `AuditSeatNotRewarded` for a seat that is not
    ///      the caller's, not in a decided segment's final round, or not aligned with its outcome.
    ///      O(seats). Emits `RewardsClaimed`.
    function claimRewards(uint256 sessionId, SeatRef[] calldata seats) external;

    /// @notice The commitment a seat must submit: binds chain id, this contract, session, segment,
    ///         round, auditor, vote and salt.
    function commitmentOf(uint256 sessionId, uint256 segmentId, uint8 round, address auditor, bool vote, bytes32 salt)
        external
        view
        returns (bytes32);

    function session(uint256 sessionId) external view returns (SessionView memory);
    function segment(uint256 sessionId, uint256 segmentId) external view returns (SegmentView memory);
    function seat(uint256 sessionId, uint256 segmentId, uint8 round, uint256 seatIndex) external view returns (SeatView memory);
    function committee(uint256 sessionId, uint256 segmentId) external view returns (address[] memory);
    function phase(uint256 sessionId, uint256 segmentId) external view returns (Phase);
    function sessionParams(uint256 sessionId) external view returns (Params memory);
    /// @notice The fee a new session with `segments` must pay under the current parameters (a
    ///         session already created is checked against its own snapshot).
    function minimumFee(SegmentInput[] calldata segments) external view returns (uint256);
    function claimable(address account) external view returns (uint256);
    function sessionCount() external view returns (uint256);
}
