// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {ITRUSTAudit} from "./interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "./interfaces/IAuditorRegistry.sol";
import {IProtocolParams} from "./interfaces/IProtocolParams.sol";
import {IRandomnessSource} from "./interfaces/IRandomnessSource.sol";
import {Params} from "./types/Params.sol";
import {
    AuditStorage,
    Session,
    Segment,
    Seat,
    FLAG_CRITICAL,
    FLAG_CONTRADICTION,
    FLAG_DELIVERED,
    SEAT_SEATED,
    SEAT_PASS,
    SEAT_FAIL,
    SEAT_CLAIMED,
    SEAT_UNDELIVERED,
    SEAT_ABSTAINED,
    seatKey,
    countCommitted,
    requireUncommitted,
    endWithoutVote
} from "./types/AuditStorage.sol";
import {ParamsLib} from "./libraries/ParamsLib.sol";
import {SessionLifecycle} from "./audit/SessionLifecycle.sol";
import {CommitteeSelection} from "./audit/CommitteeSelection.sol";
import {Tally} from "./audit/Tally.sol";
import {FeeSplit} from "./audit/FeeSplit.sol";

/// @title TRUSTAudit
/// @notice Audit sessions of the TRUST network: segments, committees, commit-reveal votes,
///         segment and trace finalization, and the fee split (paper sections 3.2, 3.3, 3.5, 6.1).
/// @dev Deployed behind an ERC-1967 proxy (UUPS); governance (a TimelockController) owns it.
///      Phases are derived from timestamps stored per segment; nothing needs a keeper to advance.
///      Each concern lives in its own external library, delegate-called with this contract's
///      storage (`AuditStorage`): the session lifecycle (`SessionLifecycle`), the committee draw
///      (`CommitteeSelection`), the tally, settlement and escalation (`Tally`) and the fee split
///      and claims (`FeeSplit`). The votes, the hot path of every seat, stay here.
contract TRUSTAudit is ITRUSTAudit, Initializable, UUPSUpgradeable, OwnableUpgradeable, ReentrancyGuardTransient {
    using ParamsLib for Params;

    /// @dev The first state variable: its members occupy the slots of the variables this contract
    ///      declared before its concerns moved to libraries.
    AuditStorage private _store;

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    /// @notice Sets the owner (governance) and the contracts this one works with.
    function initialize(address owner_, IAuditorRegistry registry_, IProtocolParams params_, IRandomnessSource randomness_)
        external
        initializer
    {
        if (address(registry_) == address(0) || address(params_) == address(0) || address(randomness_) == address(0)) {
            revert AuditZeroAddress();
        }
        __Ownable_init(owner_);
        _store.registry = registry_;
        _store.params = params_;
        _store.randomness = randomness_;
    }

    // ------------------------------------------------------------------ sessions

    /// @inheritdoc ITRUSTAudit
    function createSession(bytes32 traceRoot, uint256 segmentCount) external payable returns (uint256 sessionId) {
        sessionId = SessionLifecycle.create(_store, msg.sender, traceRoot, segmentCount, msg.value);
    }

    /// @inheritdoc ITRUSTAudit
    function createSessionWithSegments(bytes32 traceRoot, SegmentInput[] calldata segments)
        external
        payable
        returns (uint256 sessionId)
    {
        sessionId = SessionLifecycle.createWithSegments(_store, msg.sender, traceRoot, segments, msg.value);
    }

    /// @inheritdoc ITRUSTAudit
    function registerSegments(uint256 sessionId, SegmentInput[] calldata segments) external payable {
        SessionLifecycle.register(_store, msg.sender, sessionId, segments, msg.value);
    }

    /// @inheritdoc ITRUSTAudit
    function cancelSession(uint256 sessionId) external nonReentrant {
        SessionLifecycle.cancel(_store, msg.sender, sessionId);
    }

    // ------------------------------------------------------------------ committees

    /// @inheritdoc ITRUSTAudit
    function assignAuditors(uint256 sessionId, uint256 segmentId) external {
        _openSession(sessionId);
        uint256[] memory one = new uint256[](1);
        one[0] = segmentId;
        CommitteeSelection.assign(_store, sessionId, one, true);
    }

    /// @inheritdoc ITRUSTAudit
    function assignAuditorsBatch(uint256 sessionId, uint256[] calldata segmentIds) external {
        _openSession(sessionId);
        CommitteeSelection.assign(_store, sessionId, segmentIds, false);
    }

    // ------------------------------------------------------------------ votes

    /// @inheritdoc ITRUSTAudit
    function commitVote(uint256 sessionId, uint256 segmentId, bytes32 commitment) external {
        Segment storage g = _votingSegment(sessionId, segmentId);
        _commit(sessionId, segmentId, g, _seatIndexOf(sessionId, segmentId, g, msg.sender), commitment);
    }

    /// @inheritdoc ITRUSTAudit
    function commitVotes(SeatCommit[] calldata commits) external {
        for (uint256 i; i < commits.length; ++i) {
            SeatCommit calldata c = commits[i];
            _commit(c.sessionId, c.segmentId, _votingSegment(c.sessionId, c.segmentId), c.seatIndex, c.commitment);
        }
    }

    /// @inheritdoc ITRUSTAudit
    function revealVote(uint256 sessionId, uint256 segmentId, bool vote, bytes32 salt) external {
        Segment storage g = _votingSegment(sessionId, segmentId);
        _reveal(sessionId, segmentId, g, _seatIndexOf(sessionId, segmentId, g, msg.sender), vote, salt);
    }

    /// @inheritdoc ITRUSTAudit
    function revealVotes(SeatReveal[] calldata reveals) external {
        for (uint256 i; i < reveals.length; ++i) {
            SeatReveal calldata r = reveals[i];
            _reveal(r.sessionId, r.segmentId, _votingSegment(r.sessionId, r.segmentId), r.seatIndex, r.vote, r.salt);
        }
    }

    /// @inheritdoc ITRUSTAudit
    function abstain(uint256 sessionId, uint256 segmentId, uint256 seatIndex) external {
        Segment storage g = _votingSegment(sessionId, segmentId);
        if (block.timestamp > g.commitDeadline) {
            revert AuditOutsideCommitWindow(sessionId, segmentId, block.timestamp, g.commitDeadline);
        }
        Seat storage st = _seatOf(sessionId, segmentId, g, seatIndex);
        requireUncommitted(st, sessionId, segmentId, seatIndex);
        st.state = SEAT_ABSTAINED;
        endWithoutVote(g); // within the window, checked above
        emit VoteAbstained(sessionId, segmentId, g.round, msg.sender);
    }

    // ------------------------------------------------------------------ key delivery (M3)

    /// @inheritdoc ITRUSTAudit
    function recordDelivery(uint256 sessionId, uint256 segmentId, uint8 round) external {
        if (msg.sender != _store.segmentKeys) revert AuditNotSegmentKeys(msg.sender);
        Segment storage g = _votingSegment(sessionId, segmentId);
        // SegmentKeys checked the round against `segment`; a mismatch here is a bug there.
        if (round != g.round) revert AuditWrongSegmentStatus(sessionId, segmentId, g.status);
        Tally.recordDelivery(g, _store.sessionParams[sessionId], sessionId, segmentId);
    }

    /// @inheritdoc ITRUSTAudit
    function claimUndelivered(uint256 sessionId, uint256 segmentId, uint256 seatIndex) external nonReentrant {
        Tally.releaseUndelivered(_store, msg.sender, sessionId, segmentId, _votingSegment(sessionId, segmentId), seatIndex);
    }

    /// @notice Names the contract that publishes key envelopes and records their delivery here
    ///         (owner only; the deployment sets it to the `SegmentKeys` proxy).
    function setSegmentKeys(address segmentKeys_) external onlyOwner {
        if (segmentKeys_ == address(0)) revert AuditZeroAddress();
        emit SegmentKeysChanged(_store.segmentKeys, segmentKeys_);
        _store.segmentKeys = segmentKeys_;
    }

    // ------------------------------------------------------------------ finalization

    /// @inheritdoc ITRUSTAudit
    function finalizeSegment(uint256 sessionId, uint256 segmentId) external nonReentrant returns (bool passed) {
        _openSession(sessionId);
        uint256[] memory one = new uint256[](1);
        one[0] = segmentId;
        Tally.finalize(_store, sessionId, one, true);
        passed = _store.segments[sessionId][segmentId].status == SegmentStatus.Passed;
    }

    /// @inheritdoc ITRUSTAudit
    function finalizeSegments(uint256 sessionId, uint256[] calldata segmentIds) external nonReentrant {
        _openSession(sessionId);
        Tally.finalize(_store, sessionId, segmentIds, false);
    }

    /// @inheritdoc ITRUSTAudit
    function settleSegment(uint256 sessionId, uint256 segmentId, uint256 maxSeats)
        external
        nonReentrant
        returns (bool done)
    {
        _openSession(sessionId);
        done = Tally.settleStep(_store, sessionId, segmentId, maxSeats);
    }

    /// @inheritdoc ITRUSTAudit
    function settlementProgress(uint256 sessionId, uint256 segmentId)
        external
        view
        returns (uint256 settled, uint256 total)
    {
        return Tally.settlementProgress(_store, sessionId, segmentId);
    }

    /// @inheritdoc ITRUSTAudit
    function finalizeTrace(uint256 sessionId) external returns (bool valid) {
        _openSession(sessionId);
        valid = Tally.finalizeTrace(_store, sessionId);
    }

    // ------------------------------------------------------------------ money

    /// @inheritdoc ITRUSTAudit
    function distributeRewards(uint256 sessionId) external nonReentrant {
        _session(sessionId);
        FeeSplit.distribute(_store, sessionId);
    }

    /// @inheritdoc ITRUSTAudit
    function claimRewards(uint256 sessionId, SeatRef[] calldata seats) external nonReentrant {
        _session(sessionId);
        FeeSplit.claim(_store, msg.sender, sessionId, seats);
    }

    /// @inheritdoc ITRUSTAudit
    function withdraw() external nonReentrant {
        uint256 owed = _store.claimableWei[msg.sender];
        if (owed == 0) revert AuditNothingToWithdraw(msg.sender);
        _store.claimableWei[msg.sender] = 0;
        emit Withdrawn(msg.sender, owed);
        Address.sendValue(payable(msg.sender), owed);
    }

    /// @inheritdoc ITRUSTAudit
    function slashAuditor(address auditor, uint256 amount, string calldata reason) external onlyOwner {
        uint256 taken = _store.registry.slash(auditor, amount, _store.params.insuranceFund(), reason);
        emit AuditorSlashed(0, auditor, taken);
    }

    /// @notice Replaces the randomness source (owner only), for example with an on-chain VRF.
    function setRandomnessSource(IRandomnessSource randomness_) external onlyOwner {
        if (address(randomness_) == address(0)) revert AuditZeroAddress();
        emit RandomnessSourceChanged(address(_store.randomness), address(randomness_));
        _store.randomness = randomness_;
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc ITRUSTAudit
    function commitmentOf(uint256 sessionId, uint256 segmentId, uint8 round, address auditor, bool vote, bytes32 salt)
        public
        view
        returns (bytes32)
    {
        return keccak256(abi.encode(block.chainid, address(this), sessionId, segmentId, round, auditor, vote, salt));
    }

    /// @inheritdoc ITRUSTAudit
    function session(uint256 sessionId) external view returns (SessionView memory v) {
        Session storage s = _store.sessions[sessionId];
        v = SessionView({
            provider: s.provider,
            status: s.status,
            valid: s.valid,
            traceRoot: s.traceRoot,
            feeWei: s.feeWei,
            segmentCount: s.segmentCount,
            registeredCount: s.registeredCount,
            finalizedCount: s.finalizedCount,
            randomnessBlock: s.randomnessBlock,
            totalWeight: s.totalWeight,
            passWeight: s.passWeight,
            criticalFailed: s.criticalFailed,
            contradictionsConfirmed: s.contradictionsConfirmed,
            alignedSeats: s.alignedSeats,
            segmentsPassed: s.passedCount,
            segmentsFailed: s.failedCount,
            segmentsUndetermined: s.undeterminedCount
        });
    }

    /// @inheritdoc ITRUSTAudit
    function segment(uint256 sessionId, uint256 segmentId) external view returns (SegmentView memory v) {
        Segment storage g = _store.segments[sessionId][segmentId];
        v = SegmentView({
            tier: g.tier,
            weight: g.weight,
            critical: g.flags & FLAG_CRITICAL != 0,
            contradiction: g.flags & FLAG_CONTRADICTION != 0,
            status: g.status,
            round: g.round,
            committeeSize: g.committeeSize,
            revealedCount: g.revealedCount,
            commitDeadline: g.commitDeadline,
            revealDeadline: g.commitDeadline == 0 ? 0 : uint48(_revealDeadline(sessionId, g)),
            randomnessBlock: uint64(CommitteeSelection.randomnessBlockOf(_store.sessions[sessionId], g)),
            contentDigest: g.contentDigest,
            delivered: g.flags & FLAG_DELIVERED != 0,
            deliveryDeadline: uint48(Tally.deliveryDeadline(g, _store.sessionParams[sessionId])),
            seatCount: g.seatCount
        });
    }

    /// @inheritdoc ITRUSTAudit
    function seat(uint256 sessionId, uint256 segmentId, uint8 round, uint256 seatIndex)
        external
        view
        returns (SeatView memory v)
    {
        Seat storage st = _store.seats[sessionId][seatKey(segmentId, round, seatIndex)];
        uint8 state = st.state;
        // A claimed seat voted with the outcome of its (final) round.
        bool vote = state == SEAT_PASS
            || (state == SEAT_CLAIMED && _store.segments[sessionId][segmentId].status == SegmentStatus.Passed);
        bool revealed = state == SEAT_PASS || state == SEAT_FAIL || state == SEAT_CLAIMED;
        v = SeatView({
            auditor: st.auditor,
            weight: st.weight,
            committed: st.commitment != bytes32(0) || revealed,
            revealed: revealed,
            vote: vote,
            claimed: state == SEAT_CLAIMED,
            undelivered: state == SEAT_UNDELIVERED,
            abstained: state == SEAT_ABSTAINED
        });
    }

    /// @inheritdoc ITRUSTAudit
    function committee(uint256 sessionId, uint256 segmentId) external view returns (address[] memory members) {
        Segment storage g = _store.segments[sessionId][segmentId];
        if (g.commitDeadline == 0) return members; // not drawn in this round yet
        members = new address[](g.seatCount);
        for (uint256 i; i < members.length; ++i) {
            members[i] = _store.seats[sessionId][seatKey(segmentId, g.round, i)].auditor;
        }
    }

    /// @inheritdoc ITRUSTAudit
    function phase(uint256 sessionId, uint256 segmentId) external view returns (Phase) {
        Segment storage g = _store.segments[sessionId][segmentId];
        SegmentStatus status = g.status;
        if (status == SegmentStatus.None) return Phase.None;
        if (status == SegmentStatus.AwaitingDraw) return Phase.AwaitingDraw;
        if (status != SegmentStatus.Voting) return Phase.Final;
        if (block.timestamp <= g.commitDeadline) return Phase.Commit;
        if (block.timestamp <= _revealDeadline(sessionId, g) && g.revealedCount < g.seatCount) return Phase.Reveal;
        return Phase.Finalizable;
    }

    /// @inheritdoc ITRUSTAudit
    function sessionParams(uint256 sessionId) external view returns (Params memory) {
        return _store.sessionParams[sessionId];
    }

    /// @inheritdoc ITRUSTAudit
    function minimumFee(SegmentInput[] calldata segments) external view returns (uint256) {
        Params memory p = _store.params.params();
        uint256 seats = 0;
        for (uint256 i; i < segments.length; ++i) {
            seats += p.committeeSize(segments[i].tier);
        }
        return SessionLifecycle.minimumFee(p.rewardPerSeatWei, seats, p.auditorShareBps);
    }

    /// @inheritdoc ITRUSTAudit
    function claimable(address account) external view returns (uint256) {
        return _store.claimableWei[account];
    }

    /// @inheritdoc ITRUSTAudit
    function sessionCount() external view returns (uint256) {
        return _store.sessionCount;
    }

    /// @notice The contracts this one works with.
    function dependencies() external view returns (address registry, address params, address randomness) {
        return (address(_store.registry), address(_store.params), address(_store.randomness));
    }

    /// @notice The contract that records key deliveries (`setSegmentKeys`).
    function segmentKeys() external view returns (address) {
        return _store.segmentKeys;
    }

    // ------------------------------------------------------------------ internals

    function _session(uint256 sessionId) private view returns (Session storage s) {
        s = _store.sessions[sessionId];
        if (s.status == SessionStatus.None) revert AuditUnknownSession(sessionId);
    }

    function _openSession(uint256 sessionId) private view returns (Session storage s) {
        s = _session(sessionId);
        if (s.status != SessionStatus.Open) revert AuditSessionNotOpen(sessionId, s.status);
    }

    function _segment(uint256 sessionId, Session storage s, uint256 segmentId) private view returns (Segment storage) {
        if (segmentId >= s.segmentCount) revert AuditUnknownSegment(sessionId, segmentId);
        return _store.segments[sessionId][segmentId];
    }

    // ------------------------------------------------------------------ internals: votes

    /// @dev A segment only votes while its session is open, so the segment's own slot is all a vote
    ///      reads; the session is looked at only to name the error.
    function _votingSegment(uint256 sessionId, uint256 segmentId) private view returns (Segment storage g) {
        g = _store.segments[sessionId][segmentId];
        SegmentStatus status = g.status;
        if (status == SegmentStatus.Voting) return g;
        if (status == SegmentStatus.None) _segment(sessionId, _session(sessionId), segmentId);
        revert AuditWrongSegmentStatus(sessionId, segmentId, status);
    }

    function _revealDeadline(uint256 sessionId, Segment storage g) private view returns (uint256) {
        return uint256(g.commitDeadline) + _store.sessionParams[sessionId].revealWindowSeconds;
    }

    function _seatIndexOf(uint256 sessionId, uint256 segmentId, Segment storage g, address auditor)
        private
        view
        returns (uint256)
    {
        uint256 size = g.seatCount;
        uint8 round = g.round;
        for (uint256 i; i < size; ++i) {
            if (_store.seats[sessionId][seatKey(segmentId, round, i)].auditor == auditor) return i;
        }
        revert AuditNotSeated(sessionId, segmentId, auditor);
    }

    function _seatOf(uint256 sessionId, uint256 segmentId, Segment storage g, uint256 seatIndex)
        private
        view
        returns (Seat storage st)
    {
        // `seatHeldBy`'s check, written out: through the storage pointer a free function takes,
        // it costs about 80 gas more on every commit and reveal.
        st = _store.seats[sessionId][seatKey(segmentId, g.round, seatIndex)];
        if (seatIndex >= g.seatCount || st.auditor != msg.sender) revert AuditNotSeated(sessionId, segmentId, msg.sender);
    }

    function _commit(uint256 sessionId, uint256 segmentId, Segment storage g, uint256 seatIndex, bytes32 commitment)
        private
    {
        if (commitment == bytes32(0)) revert AuditZeroCommitment();
        if (block.timestamp > g.commitDeadline) {
            revert AuditOutsideCommitWindow(sessionId, segmentId, block.timestamp, g.commitDeadline);
        }
        Seat storage st = _seatOf(sessionId, segmentId, g, seatIndex);
        // An abstained or released seat is done with the round.
        if (st.state != SEAT_SEATED) revert AuditSeatCommitted(sessionId, segmentId, seatIndex);
        // A seat's commitment is zero until its first commit (reveals, which clear it, only come
        // after the window), so this counts each seat once. When every seat holds a commitment
        // (or abstained), none can change any more, so nothing a reveal shows can be copied: the
        // window closes now instead of making everyone wait out the deadline.
        if (st.commitment == bytes32(0)) countCommitted(g);
        st.commitment = commitment; // a later commit in the window replaces an earlier one
        emit VoteCommitted(sessionId, segmentId, g.round, msg.sender);
    }

    function _reveal(uint256 sessionId, uint256 segmentId, Segment storage g, uint256 seatIndex, bool vote, bytes32 salt)
        private
    {
        uint256 revealDeadline = _revealDeadline(sessionId, g);
        if (block.timestamp <= g.commitDeadline || block.timestamp > revealDeadline) {
            revert AuditOutsideRevealWindow(sessionId, segmentId, block.timestamp, g.commitDeadline, revealDeadline);
        }
        Seat storage st = _seatOf(sessionId, segmentId, g, seatIndex);
        if (st.state != SEAT_SEATED) revert AuditAlreadyRevealed(sessionId, segmentId, msg.sender);
        bytes32 commitment = st.commitment;
        if (commitment == bytes32(0)) revert AuditNoCommitment(sessionId, segmentId, msg.sender);
        if (commitmentOf(sessionId, segmentId, g.round, msg.sender, vote, salt) != commitment) {
            revert AuditCommitmentMismatch(sessionId, segmentId, msg.sender);
        }
        st.state = vote ? SEAT_PASS : SEAT_FAIL;
        st.commitment = bytes32(0); // opened: no longer needed
        g.revealedCount += 1; // at most seatCount, a uint8
        g.entropy ^= uint64(uint256(salt));
        emit VoteRevealed(sessionId, segmentId, g.round, msg.sender, vote);
    }

    function _authorizeUpgrade(address) internal override onlyOwner {}
}
