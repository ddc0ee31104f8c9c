// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {ITRUSTAudit} from "./interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "./interfaces/IAuditorRegistry.sol";
import {IProtocolParams} from "./interfaces/IProtocolParams.sol";
import {IRandomnessSource} from "./interfaces/IRandomnessSource.sol";
import {Params} from "./types/Params.sol";
import {DrawRequest, SeatOutcome, SeatSettlement, SettlementTerms} from "./types/Settlement.sol";
import {ParamsLib} from "./libraries/ParamsLib.sol";

/// @title TRUSTAudit
/// @notice Audit sessions of the TRUST network: segments, committees, commit-reveal votes,
///         segment and trace finalization, and the fee split (paper sections 3.2, 3.3, 3.5, 6.1).
/// @dev Deployed behind an ERC-1967 proxy (UUPS); governance (a TimelockController) owns it.
///      Phases are derived from timestamps stored per segment; nothing needs a keeper to advance.
///      ETH flows: fees in = fees of undistributed sessions + credited balances + withdrawn + the
///      stakers' share sent to the registry; the invariant suite checks it.
contract TRUSTAudit is ITRUSTAudit, Initializable, UUPSUpgradeable, OwnableUpgradeable, ReentrancyGuardTransient {
    using ParamsLib for Params;
    using SafeCast for uint256;

    uint256 private constant _BPS = 10_000;

    uint8 private constant _FLAG_CRITICAL = 1;
    uint8 private constant _FLAG_CONTRADICTION = 2;

    uint8 private constant _SEAT_EMPTY = 0;
    uint8 private constant _SEAT_SEATED = 1;
    uint8 private constant _SEAT_PASS = 2;
    uint8 private constant _SEAT_FAIL = 3;
    /// @dev An aligned seat whose reward was claimed.
    uint8 private constant _SEAT_CLAIMED = 4;

    /// @dev Slot layout:
    ///      0: provider 160 | segmentCount 16 | registeredCount 16 | finalizedCount 16 | status 8 | valid 8
    ///      1: traceRoot
    ///      2: feeWei 96 | perSeatWei 96 (set by `distributeRewards`) | randomnessBlock 40 | requiredSeats 24
    ///      3: totalWeight 64 | passWeight 64 | criticalFailed 32 | contradictionsConfirmed 32 |
    ///         alignedSeats 32 | paramsVersion 32
    ///      Counts of segments fit 16 bits (maxSegmentsPerSession <= 4096), seats 24 bits
    ///      (4096 segments x 127 seats), fees 96 bits (7.9e10 ETH).
    struct Session {
        address provider;
        uint16 segmentCount;
        uint16 registeredCount;
        uint16 finalizedCount;
        SessionStatus status;
        bool valid;
        bytes32 traceRoot;
        uint96 feeWei;
        uint96 perSeatWei;
        uint40 randomnessBlock;
        uint24 requiredSeats;
        uint64 totalWeight;
        uint64 passWeight;
        uint32 criticalFailed;
        uint32 contradictionsConfirmed;
        uint32 alignedSeats;
        uint32 paramsVersion;
    }

    /// @dev Slot layout (everything a vote touches lives in slot 0, so a commit or a reveal writes
    ///      one slot of the segment):
    ///      0: tier 8 | flags 8 | status 8 | round 8 | committeeSize 8 | revealedCount 8 | weight 32 |
    ///         commitDeadline 48 | randomnessBlock 40 | entropy 72 | committedCount 8 | drawAttempts 8
    ///      1: contentDigest
    ///      The reveal deadline is commitDeadline + the session's reveal window. `committedCount`
    ///      counts the round's seats that committed at least once; when it reaches the committee size
    ///      the commit window closes early (commitDeadline = that block's timestamp - 1). `entropy` is
    ///      the low 72 bits of the draw seed, XORed with every revealed salt: slash rolls come from
    ///      it, so no auditor can predict its own roll when it commits (a roll needs 14 bits; 72
    ///      leave 2^72 values no seat can steer). `drawAttempts` counts the round's draws that found
    ///      too few members.
    struct Segment {
        uint8 tier;
        uint8 flags;
        SegmentStatus status;
        uint8 round;
        uint8 committeeSize;
        uint8 revealedCount;
        uint32 weight;
        uint48 commitDeadline;
        uint40 randomnessBlock;
        uint72 entropy;
        uint8 committedCount;
        uint8 drawAttempts;
        bytes32 contentDigest;
    }

    /// @dev Slot layout: 0: auditor 160 | weight 88 | state 8;  1: commitment.
    ///      `weight` is the auditor's stake at the draw, clamped to 2^88 - 1 (3e8 tokens of 18
    ///      decimals): the seat's voting weight is fixed when the committee is drawn.
    struct Seat {
        address auditor;
        uint88 weight;
        uint8 state;
        bytes32 commitment;
    }

    IAuditorRegistry private _registry;
    IProtocolParams private _params;
    IRandomnessSource private _randomness;
    uint256 private _sessionCount;

    mapping(uint256 sessionId => Session) private _sessions;
    mapping(uint256 sessionId => Params) private _sessionParams;
    mapping(uint256 sessionId => mapping(uint256 segmentId => Segment)) private _segments;
    /// @dev Keyed by `_seatKey(segmentId, round, index)`.
    mapping(uint256 sessionId => mapping(uint256 seatKey => Seat)) private _seats;
    mapping(address account => uint256) private _claimableWei;

    /// @notice The randomness source changed.
    event RandomnessSourceChanged(address previous, address current);
    /// @notice A provider cancelled a session before registering all its segments; fee refunded.
    event SessionCancelled(uint256 indexed sessionId, uint256 refundWei);

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
        _registry = registry_;
        _params = params_;
        _randomness = randomness_;
    }

    // ------------------------------------------------------------------ sessions

    /// @inheritdoc ITRUSTAudit
    function createSession(bytes32 traceRoot, uint256 segmentCount) external payable returns (uint256 sessionId) {
        sessionId = _createSession(traceRoot, segmentCount);
    }

    /// @inheritdoc ITRUSTAudit
    function createSessionWithSegments(bytes32 traceRoot, SegmentInput[] calldata segments)
        external
        payable
        returns (uint256 sessionId)
    {
        sessionId = _createSession(traceRoot, segments.length);
        _registerSegments(sessionId, _sessions[sessionId], segments);
    }

    /// @inheritdoc ITRUSTAudit
    function registerSegments(uint256 sessionId, SegmentInput[] calldata segments) external payable {
        Session storage s = _session(sessionId);
        if (msg.sender != s.provider) revert AuditNotProvider(sessionId, msg.sender);
        if (s.status != SessionStatus.Registering) revert AuditSessionNotOpen(sessionId, s.status);
        s.feeWei += msg.value.toUint96();
        _registerSegments(sessionId, s, segments);
    }

    /// @notice Cancels a session whose segments are not all registered yet, refunding the fee.
    /// @dev Provider only. Nothing was drawn, so nobody else has anything at stake.
    function cancelSession(uint256 sessionId) external nonReentrant {
        Session storage s = _session(sessionId);
        if (msg.sender != s.provider) revert AuditNotProvider(sessionId, msg.sender);
        if (s.status != SessionStatus.Registering) revert AuditSessionNotOpen(sessionId, s.status);
        uint256 refund = s.feeWei;
        s.feeWei = 0;
        s.status = SessionStatus.Distributed;
        emit SessionCancelled(sessionId, refund);
        if (refund != 0) Address.sendValue(payable(msg.sender), refund);
    }

    // ------------------------------------------------------------------ committees

    /// @inheritdoc ITRUSTAudit
    function assignAuditors(uint256 sessionId, uint256 segmentId) external {
        _assign(sessionId, _openSession(sessionId), segmentId);
    }

    /// @inheritdoc ITRUSTAudit
    function assignAuditorsBatch(uint256 sessionId, uint256[] calldata segmentIds) external {
        Session storage s = _openSession(sessionId);
        for (uint256 i; i < segmentIds.length; ++i) {
            _assign(sessionId, s, segmentIds[i]);
        }
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

    // ------------------------------------------------------------------ finalization

    /// @inheritdoc ITRUSTAudit
    function finalizeSegment(uint256 sessionId, uint256 segmentId) external nonReentrant returns (bool passed) {
        passed = _finalizeSegment(sessionId, _openSession(sessionId), segmentId, _params.insuranceFund());
    }

    /// @inheritdoc ITRUSTAudit
    function finalizeSegments(uint256 sessionId, uint256[] calldata segmentIds) external nonReentrant {
        Session storage s = _openSession(sessionId);
        address beneficiary = _params.insuranceFund();
        for (uint256 i; i < segmentIds.length; ++i) {
            _finalizeSegment(sessionId, s, segmentIds[i], beneficiary);
        }
    }

    /// @inheritdoc ITRUSTAudit
    function finalizeTrace(uint256 sessionId) external returns (bool valid) {
        Session storage s = _openSession(sessionId);
        if (s.finalizedCount != s.segmentCount) revert AuditSegmentsPending(sessionId, s.finalizedCount, s.segmentCount);
        Params storage p = _sessionParams[sessionId];
        // eq. 3.5-3.6: W >= beta * sum(w); plus the critical path and contradictions (sec. 3.2.3).
        valid = uint256(s.passWeight) * _BPS >= uint256(p.betaBps) * s.totalWeight && s.criticalFailed == 0
            && s.contradictionsConfirmed == 0;
        s.valid = valid;
        s.status = SessionStatus.Finalized;
        emit TraceFinalized(sessionId, valid);
    }

    // ------------------------------------------------------------------ money

    /// @inheritdoc ITRUSTAudit
    function distributeRewards(uint256 sessionId) external nonReentrant {
        Session storage s = _session(sessionId);
        if (s.status != SessionStatus.Finalized) revert AuditNotFinalized(sessionId, s.status);
        s.status = SessionStatus.Distributed;
        Params storage p = _sessionParams[sessionId];
        uint256 fee = s.feeWei;
        // Floors everywhere; the insurance fund takes the remainder, so the four shares add up to
        // the fee exactly.
        uint256 auditorsWei = fee * p.auditorShareBps / _BPS;
        uint256 treasuryWei = fee * p.treasuryShareBps / _BPS;
        uint256 stakersWei = fee * p.stakerShareBps / _BPS;
        uint256 insuranceWei = fee - auditorsWei - treasuryWei - stakersWei;

        uint256 aligned = s.alignedSeats;
        // With no aligned seat (nobody revealed, or only undecided rounds) the auditors' share goes
        // to the treasury, and so does the rounding dust of the per-seat split.
        uint256 dustWei = aligned == 0 ? auditorsWei : auditorsWei % aligned;
        uint256 perSeatWei = aligned == 0 ? 0 : auditorsWei / aligned;
        s.perSeatWei = uint96(perSeatWei); // <= auditorsWei <= feeWei, a uint96
        treasuryWei += dustWei;
        _claimableWei[_params.treasury()] += treasuryWei;
        _claimableWei[_params.insuranceFund()] += insuranceWei;
        emit RewardsDistributed(sessionId, auditorsWei - dustWei, perSeatWei, treasuryWei, stakersWei, insuranceWei);
        // The registry is ours (set at initialization by governance), not an arbitrary recipient.
        // slither-disable-next-line arbitrary-send-eth
        if (stakersWei != 0) _registry.notifyStakerReward{value: stakersWei}();
    }

    /// @inheritdoc ITRUSTAudit
    function claimRewards(uint256 sessionId, SeatRef[] calldata seats) external nonReentrant {
        Session storage s = _session(sessionId);
        if (s.status != SessionStatus.Distributed) revert AuditNotDistributed(sessionId, s.status);
        for (uint256 i; i < seats.length; ++i) {
            uint256 segmentId = seats[i].segmentId;
            uint256 seatIndex = seats[i].seatIndex;
            Segment storage g = _segments[sessionId][segmentId];
            // Only the final round of a decided segment has aligned seats.
            SegmentStatus status = g.status;
            uint8 alignedState = status == SegmentStatus.Passed ? _SEAT_PASS : _SEAT_FAIL;
            Seat storage st = _seats[sessionId][_seatKey(segmentId, g.round, seatIndex)];
            bool decided = status == SegmentStatus.Passed || status == SegmentStatus.Failed;
            if (!decided || seatIndex >= g.committeeSize || st.auditor != msg.sender || st.state != alignedState) {
                revert AuditSeatNotRewarded(sessionId, segmentId, seatIndex, msg.sender);
            }
            st.state = _SEAT_CLAIMED;
        }
        uint256 owed = s.perSeatWei * seats.length;
        if (owed == 0) revert AuditNothingToWithdraw(msg.sender);
        emit RewardsClaimed(sessionId, msg.sender, seats.length, owed);
        Address.sendValue(payable(msg.sender), owed);
    }

    /// @inheritdoc ITRUSTAudit
    function withdraw() external nonReentrant {
        uint256 owed = _claimableWei[msg.sender];
        if (owed == 0) revert AuditNothingToWithdraw(msg.sender);
        _claimableWei[msg.sender] = 0;
        emit Withdrawn(msg.sender, owed);
        Address.sendValue(payable(msg.sender), owed);
    }

    /// @inheritdoc ITRUSTAudit
    function slashAuditor(address auditor, uint256 amount, string calldata reason) external onlyOwner {
        _registry.slash(auditor, amount, _params.insuranceFund(), reason);
        emit AuditorSlashed(auditor, amount);
    }

    /// @notice Replaces the randomness source (owner only), for example with an on-chain VRF.
    function setRandomnessSource(IRandomnessSource randomness_) external onlyOwner {
        if (address(randomness_) == address(0)) revert AuditZeroAddress();
        emit RandomnessSourceChanged(address(_randomness), address(randomness_));
        _randomness = randomness_;
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
        Session storage s = _sessions[sessionId];
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
            alignedSeats: s.alignedSeats
        });
    }

    /// @inheritdoc ITRUSTAudit
    function segment(uint256 sessionId, uint256 segmentId) external view returns (SegmentView memory v) {
        Segment storage g = _segments[sessionId][segmentId];
        v = SegmentView({
            tier: g.tier,
            weight: g.weight,
            critical: g.flags & _FLAG_CRITICAL != 0,
            contradiction: g.flags & _FLAG_CONTRADICTION != 0,
            status: g.status,
            round: g.round,
            committeeSize: g.committeeSize,
            revealedCount: g.revealedCount,
            commitDeadline: g.commitDeadline,
            revealDeadline: g.commitDeadline == 0 ? 0 : uint48(_revealDeadline(sessionId, g)),
            randomnessBlock: g.randomnessBlock,
            contentDigest: g.contentDigest
        });
    }

    /// @inheritdoc ITRUSTAudit
    function seat(uint256 sessionId, uint256 segmentId, uint8 round, uint256 seatIndex)
        external
        view
        returns (SeatView memory v)
    {
        Seat storage st = _seats[sessionId][_seatKey(segmentId, round, seatIndex)];
        uint8 state = st.state;
        // A claimed seat voted with the outcome of its (final) round.
        bool vote = state == _SEAT_PASS
            || (state == _SEAT_CLAIMED && _segments[sessionId][segmentId].status == SegmentStatus.Passed);
        v = SeatView({
            auditor: st.auditor,
            weight: st.weight,
            committed: st.commitment != bytes32(0) || state >= _SEAT_PASS,
            revealed: state >= _SEAT_PASS,
            vote: vote,
            claimed: state == _SEAT_CLAIMED
        });
    }

    /// @inheritdoc ITRUSTAudit
    function committee(uint256 sessionId, uint256 segmentId) external view returns (address[] memory members) {
        Segment storage g = _segments[sessionId][segmentId];
        if (g.commitDeadline == 0) return members; // not drawn in this round yet
        members = new address[](g.committeeSize);
        for (uint256 i; i < members.length; ++i) {
            members[i] = _seats[sessionId][_seatKey(segmentId, g.round, i)].auditor;
        }
    }

    /// @inheritdoc ITRUSTAudit
    function phase(uint256 sessionId, uint256 segmentId) external view returns (Phase) {
        Segment storage g = _segments[sessionId][segmentId];
        SegmentStatus status = g.status;
        if (status == SegmentStatus.None) return Phase.None;
        if (status == SegmentStatus.AwaitingDraw) return Phase.AwaitingDraw;
        if (status != SegmentStatus.Voting) return Phase.Final;
        if (block.timestamp <= g.commitDeadline) return Phase.Commit;
        if (block.timestamp <= _revealDeadline(sessionId, g) && g.revealedCount < g.committeeSize) return Phase.Reveal;
        return Phase.Finalizable;
    }

    /// @inheritdoc ITRUSTAudit
    function sessionParams(uint256 sessionId) external view returns (Params memory) {
        return _sessionParams[sessionId];
    }

    /// @inheritdoc ITRUSTAudit
    function minimumFee(SegmentInput[] calldata segments) external view returns (uint256) {
        Params memory p = _params.params();
        uint256 seats = 0;
        for (uint256 i; i < segments.length; ++i) {
            seats += p.committeeSize(segments[i].tier);
        }
        return _minimumFee(p.rewardPerSeatWei, seats, p.auditorShareBps);
    }

    /// @inheritdoc ITRUSTAudit
    function claimable(address account) external view returns (uint256) {
        return _claimableWei[account];
    }

    /// @inheritdoc ITRUSTAudit
    function sessionCount() external view returns (uint256) {
        return _sessionCount;
    }

    /// @notice The contracts this one works with.
    function dependencies() external view returns (address registry, address params, address randomness) {
        return (address(_registry), address(_params), address(_randomness));
    }

    // ------------------------------------------------------------------ internals: sessions

    function _createSession(bytes32 traceRoot, uint256 segmentCount) private returns (uint256 sessionId) {
        Params memory p = _params.params();
        if (segmentCount == 0) revert AuditZeroSegments();
        if (segmentCount > p.maxSegmentsPerSession) revert AuditTooManySegments(segmentCount, p.maxSegmentsPerSession);
        sessionId = ++_sessionCount;
        Session storage s = _sessions[sessionId];
        s.provider = msg.sender;
        s.segmentCount = uint16(segmentCount); // <= maxSegmentsPerSession <= 4096
        s.traceRoot = traceRoot;
        s.feeWei = msg.value.toUint96();
        // Fixed now, known only once that block is mined: nobody can predict the committees.
        s.randomnessBlock = (block.number + p.randomnessDelayBlocks).toUint40();
        s.status = SessionStatus.Registering;
        s.paramsVersion = _params.version().toUint32();
        _sessionParams[sessionId] = p;
        emit SessionCreated(sessionId, traceRoot);
        emit SessionOpened(sessionId, msg.sender, segmentCount, msg.value, s.randomnessBlock, s.paramsVersion);
    }

    function _registerSegments(uint256 sessionId, Session storage s, SegmentInput[] calldata inputs) private {
        uint256 first = s.registeredCount;
        if (first + inputs.length > s.segmentCount) {
            revert AuditSegmentsOverflow(sessionId, first, inputs.length, s.segmentCount);
        }
        Params storage p = _sessionParams[sessionId];
        uint256 seats = s.requiredSeats;
        uint256 weight = s.totalWeight;
        for (uint256 i; i < inputs.length; ++i) {
            SegmentInput calldata input = inputs[i];
            if (!ParamsLib.isTier(input.tier)) revert AuditInvalidSegment(first + i, "tier");
            if (input.weight == 0) revert AuditInvalidSegment(first + i, "weight");
            if (input.contentDigest == bytes32(0)) revert AuditInvalidSegment(first + i, "contentDigest");
            uint8 size = p.storedCommitteeSize(input.tier);
            Segment storage g = _segments[sessionId][first + i];
            g.tier = input.tier;
            g.flags = (input.critical ? _FLAG_CRITICAL : 0) | (input.contradiction ? _FLAG_CONTRADICTION : 0);
            g.status = SegmentStatus.AwaitingDraw;
            g.committeeSize = size;
            g.weight = input.weight;
            g.randomnessBlock = s.randomnessBlock;
            g.contentDigest = input.contentDigest;
            seats += size;
            weight += input.weight;
            emit SegmentRegistered(
                sessionId, first + i, input.tier, input.weight, input.critical, input.contradiction, input.contentDigest
            );
        }
        s.registeredCount = uint16(first + inputs.length); // <= segmentCount <= 4096
        s.requiredSeats = uint24(seats); // <= 4096 segments * 127 seats < 2^24
        s.totalWeight = uint64(weight); // <= 4096 segments * (2^32 - 1)
        if (s.registeredCount == s.segmentCount) {
            // Every first-round seat must be able to earn R from the auditors' share.
            uint256 needed = _minimumFee(p.rewardPerSeatWei, seats, p.auditorShareBps);
            if (s.feeWei < needed) revert AuditFeeTooLow(s.feeWei, needed);
            s.status = SessionStatus.Open;
        }
    }

    function _minimumFee(uint256 rewardPerSeatWei, uint256 seats, uint256 auditorShareBps) private pure returns (uint256) {
        return Math.mulDiv(rewardPerSeatWei * seats, _BPS, auditorShareBps, Math.Rounding.Ceil);
    }

    function _session(uint256 sessionId) private view returns (Session storage s) {
        s = _sessions[sessionId];
        if (s.status == SessionStatus.None) revert AuditUnknownSession(sessionId);
    }

    function _openSession(uint256 sessionId) private view returns (Session storage s) {
        s = _session(sessionId);
        if (s.status != SessionStatus.Open) revert AuditSessionNotOpen(sessionId, s.status);
    }

    function _segment(uint256 sessionId, Session storage s, uint256 segmentId) private view returns (Segment storage) {
        if (segmentId >= s.segmentCount) revert AuditUnknownSegment(sessionId, segmentId);
        return _segments[sessionId][segmentId];
    }

    // ------------------------------------------------------------------ internals: committees

    function _assign(uint256 sessionId, Session storage s, uint256 segmentId) private {
        Segment storage g = _segment(sessionId, s, segmentId);
        if (g.status != SegmentStatus.AwaitingDraw) revert AuditWrongSegmentStatus(sessionId, segmentId, g.status);
        Params storage p = _sessionParams[sessionId];
        uint256 randomnessBlock = g.randomnessBlock;
        (IRandomnessSource.Status status, bytes32 value) = _randomness.randomnessAt(randomnessBlock);
        if (status == IRandomnessSource.Status.Pending) {
            revert AuditRandomnessPending(sessionId, segmentId, randomnessBlock);
        }
        if (status == IRandomnessSource.Status.Expired) {
            _redraw(sessionId, segmentId, g, p);
            return;
        }
        bytes32 seed = keccak256(abi.encode(value, address(this), sessionId, segmentId, g.round));
        address[] memory members = _seatCommittee(sessionId, segmentId, g, seed, randomnessBlock, s.provider);
        if (members.length == 0) {
            // The tier could not seat the committee at that block: try again with fresh randomness
            // (members may join or free their stake), and give up after MAX_DRAW_ATTEMPTS so that a
            // tier without enough auditors never holds the session's fee forever.
            uint8 attempts = g.drawAttempts + 1; // <= MAX_DRAW_ATTEMPTS
            g.drawAttempts = attempts;
            emit CommitteeUnavailable(sessionId, segmentId, g.round, attempts);
            if (attempts < ParamsLib.MAX_DRAW_ATTEMPTS) _redraw(sessionId, segmentId, g, p);
            else _record(sessionId, s, segmentId, g, SegmentStatus.Undetermined);
            return;
        }
        uint48 commitDeadline = (block.timestamp + p.commitWindowSeconds).toUint48();
        g.status = SegmentStatus.Voting;
        g.commitDeadline = commitDeadline;
        g.entropy = uint72(uint256(seed)); // the low 72 bits
        emit CommitteeDrawn(
            sessionId, segmentId, g.round, g.tier, members, commitDeadline, commitDeadline + p.revealWindowSeconds
        );
    }

    /// @dev Fixes a new randomness block for the round's draw.
    function _redraw(uint256 sessionId, uint256 segmentId, Segment storage g, Params storage p) private {
        uint40 next = (block.number + p.randomnessDelayBlocks).toUint40();
        g.randomnessBlock = next;
        emit RandomnessRefreshed(sessionId, segmentId, next);
    }

    /// @dev Draws the committee in the registry (which locks each seat's penalty) and records the
    ///      seats with their weight at the randomness block.
    function _seatCommittee(
        uint256 sessionId,
        uint256 segmentId,
        Segment storage g,
        bytes32 seed,
        uint256 randomnessBlock,
        address provider
    ) private returns (address[] memory members) {
        uint8 round = g.round;
        uint96[] memory weights;
        (members, weights) = _registry.drawCommittee(
            DrawRequest({
                tier: g.tier,
                size: g.committeeSize,
                seed: seed,
                randomnessBlock: randomnessBlock,
                excluded: provider,
                lockPerSeat: _sessionParams[sessionId].penaltyPerSeat
            })
        );
        for (uint256 i; i < members.length; ++i) {
            Seat storage st = _seats[sessionId][_seatKey(segmentId, round, i)];
            st.auditor = members[i];
            st.weight = weights[i] > type(uint88).max ? type(uint88).max : uint88(weights[i]);
            st.state = _SEAT_SEATED;
        }
    }

    // ------------------------------------------------------------------ internals: votes

    /// @dev A segment only votes while its session is open, so the segment's own slot is all a vote
    ///      reads; the session is looked at only to name the error.
    function _votingSegment(uint256 sessionId, uint256 segmentId) private view returns (Segment storage g) {
        g = _segments[sessionId][segmentId];
        SegmentStatus status = g.status;
        if (status == SegmentStatus.Voting) return g;
        if (status == SegmentStatus.None) _segment(sessionId, _session(sessionId), segmentId);
        revert AuditWrongSegmentStatus(sessionId, segmentId, status);
    }

    function _revealDeadline(uint256 sessionId, Segment storage g) private view returns (uint256) {
        return uint256(g.commitDeadline) + _sessionParams[sessionId].revealWindowSeconds;
    }

    function _seatIndexOf(uint256 sessionId, uint256 segmentId, Segment storage g, address auditor)
        private
        view
        returns (uint256)
    {
        uint256 size = g.committeeSize;
        uint8 round = g.round;
        for (uint256 i; i < size; ++i) {
            if (_seats[sessionId][_seatKey(segmentId, round, i)].auditor == auditor) return i;
        }
        revert AuditNotSeated(sessionId, segmentId, auditor);
    }

    function _seatOf(uint256 sessionId, uint256 segmentId, Segment storage g, uint256 seatIndex)
        private
        view
        returns (Seat storage st)
    {
        st = _seats[sessionId][_seatKey(segmentId, g.round, seatIndex)];
        if (seatIndex >= g.committeeSize || st.auditor != msg.sender) revert AuditNotSeated(sessionId, segmentId, msg.sender);
    }

    function _commit(uint256 sessionId, uint256 segmentId, Segment storage g, uint256 seatIndex, bytes32 commitment)
        private
    {
        if (commitment == bytes32(0)) revert AuditZeroCommitment();
        if (block.timestamp > g.commitDeadline) {
            revert AuditOutsideCommitWindow(sessionId, segmentId, block.timestamp, g.commitDeadline);
        }
        Seat storage st = _seatOf(sessionId, segmentId, g, seatIndex);
        // A seat's commitment is zero until its first commit (reveals, which clear it, only come
        // after the window), so this counts each seat once.
        if (st.commitment == bytes32(0)) {
            uint8 committed = g.committedCount + 1; // at most committeeSize, a uint8
            g.committedCount = committed;
            // Every seat holds a commitment: none can change any more, so nothing a reveal shows can
            // be copied. Close the window now instead of making everyone wait out the deadline;
            // reveals are accepted from this block on, and the reveal window starts here.
            if (committed == g.committeeSize) g.commitDeadline = uint48(block.timestamp - 1);
        }
        st.commitment = commitment; // a later commit in the window replaces an earlier one
        emit VoteCommitted(sessionId, segmentId, msg.sender);
    }

    function _reveal(uint256 sessionId, uint256 segmentId, Segment storage g, uint256 seatIndex, bool vote, bytes32 salt)
        private
    {
        uint256 revealDeadline = _revealDeadline(sessionId, g);
        if (block.timestamp <= g.commitDeadline || block.timestamp > revealDeadline) {
            revert AuditOutsideRevealWindow(sessionId, segmentId, block.timestamp, g.commitDeadline, revealDeadline);
        }
        Seat storage st = _seatOf(sessionId, segmentId, g, seatIndex);
        if (st.state != _SEAT_SEATED) revert AuditAlreadyRevealed(sessionId, segmentId, msg.sender);
        bytes32 commitment = st.commitment;
        if (commitment == bytes32(0)) revert AuditNoCommitment(sessionId, segmentId, msg.sender);
        if (commitmentOf(sessionId, segmentId, g.round, msg.sender, vote, salt) != commitment) {
            revert AuditCommitmentMismatch(sessionId, segmentId, msg.sender);
        }
        st.state = vote ? _SEAT_PASS : _SEAT_FAIL;
        st.commitment = bytes32(0); // opened: no longer needed
        g.revealedCount += 1; // at most committeeSize, a uint8
        g.entropy ^= uint72(uint256(salt));
        emit VoteRevealed(sessionId, segmentId, msg.sender, vote);
    }

    // ------------------------------------------------------------------ internals: finalization

    function _finalizeSegment(uint256 sessionId, Session storage s, uint256 segmentId, address beneficiary)
        private
        returns (bool passed)
    {
        Segment storage g = _segment(sessionId, s, segmentId);
        if (g.status != SegmentStatus.Voting) revert AuditWrongSegmentStatus(sessionId, segmentId, g.status);
        uint256 revealDeadline = _revealDeadline(sessionId, g);
        if (block.timestamp <= revealDeadline && g.revealedCount < g.committeeSize) {
            revert AuditVotingNotOver(sessionId, segmentId, block.timestamp, revealDeadline);
        }
        Params storage p = _sessionParams[sessionId];
        (SeatSettlement[] memory seats, SegmentStatus outcome) = _tally(sessionId, segmentId, g, p);

        uint256 forfeited = _registry.settleSeats(
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
            if (forfeited & (1 << i) != 0) emit AuditorSlashed(seats[i].auditor, p.penaltyPerSeat);
        }

        if (outcome == SegmentStatus.Voting) {
            _escalate(sessionId, segmentId, g, p);
            return false;
        }
        uint256 aligned = 0;
        for (uint256 i; i < seats.length; ++i) {
            if (seats[i].outcome == SeatOutcome.Aligned) ++aligned;
        }
        s.alignedSeats += uint32(aligned); // <= committee size
        passed = _record(sessionId, s, segmentId, g, outcome);
    }

    /// @dev Records a segment's final verdict in the session's tallies.
    function _record(uint256 sessionId, Session storage s, uint256 segmentId, Segment storage g, SegmentStatus outcome)
        private
        returns (bool passed)
    {
        passed = outcome == SegmentStatus.Passed;
        g.status = outcome;
        s.finalizedCount += 1; // at most segmentCount
        if (passed) {
            s.passWeight += g.weight;
        } else {
            if (g.flags & _FLAG_CRITICAL != 0) s.criticalFailed += 1;
            // An undetermined contradiction is an unresolved `contradicts` edge: it invalidates too.
            if (g.flags & _FLAG_CONTRADICTION != 0) s.contradictionsConfirmed += 1;
        }
        emit SegmentFinalized(sessionId, segmentId, passed);
    }

    /// @dev Counts the round's stake-weighted votes (eq. 3.3) and decides every seat's outcome.
    ///      The denominator is the whole committee's weight: a silent seat counts against both
    ///      Pass and Fail. Returns `SegmentStatus.Voting` as the outcome for "escalate".
    function _tally(uint256 sessionId, uint256 segmentId, Segment storage g, Params storage p)
        private
        view
        returns (SeatSettlement[] memory seats, SegmentStatus outcome)
    {
        uint256 size = g.committeeSize;
        uint8 round = g.round;
        seats = new SeatSettlement[](size);
        uint8[] memory states = new uint8[](size);
        uint256 total = 0;
        uint256 passWeight = 0;
        uint256 failWeight = 0;
        for (uint256 i; i < size; ++i) {
            Seat storage st = _seats[sessionId][_seatKey(segmentId, round, i)];
            uint256 w = st.weight;
            uint8 state = st.state;
            seats[i].auditor = st.auditor;
            states[i] = state;
            total += w;
            if (state == _SEAT_PASS) passWeight += w;
            else if (state == _SEAT_FAIL) failWeight += w;
        }
        uint256 tau = p.tauBps;
        if (passWeight * _BPS >= tau * total) outcome = SegmentStatus.Passed;
        else if (failWeight * _BPS >= tau * total) outcome = SegmentStatus.Failed;
        else if (round + 1 < p.maxRounds) outcome = SegmentStatus.Voting;
        else outcome = SegmentStatus.Undetermined;

        bool decided = outcome == SegmentStatus.Passed || outcome == SegmentStatus.Failed;
        uint8 alignedState = outcome == SegmentStatus.Passed ? _SEAT_PASS : _SEAT_FAIL;
        uint72 entropy = g.entropy;
        for (uint256 i; i < size; ++i) {
            uint8 state = states[i];
            if (state == _SEAT_SEATED) {
                seats[i].outcome = SeatOutcome.Silent;
            } else if (!decided) {
                seats[i].outcome = SeatOutcome.Released;
            } else if (state == alignedState) {
                seats[i].outcome = SeatOutcome.Aligned;
            } else {
                seats[i].outcome = SeatOutcome.Misaligned;
                // Uniform in [0, 10_000): the slash roll of eq. 3.9, from the draw seed and every
                // revealed salt, which no auditor knew in full when it committed.
                seats[i].slashRollBps = uint16(uint256(keccak256(abi.encode(entropy, i))) % _BPS);
            }
        }
    }

    function _escalate(uint256 sessionId, uint256 segmentId, Segment storage g, Params storage p) private {
        uint8 round = g.round + 1; // < maxRounds <= 4
        uint8 tier = g.tier < ParamsLib.TIER_HUMAN ? g.tier + 1 : ParamsLib.TIER_HUMAN;
        // ParamsLib.validate bounds every escalated size by MAX_COMMITTEE_SIZE (127).
        uint8 size = uint8(ParamsLib.escalatedSize(g.committeeSize));
        uint40 randomnessBlock = (block.number + p.randomnessDelayBlocks).toUint40();
        g.round = round;
        g.tier = tier;
        g.committeeSize = size;
        g.status = SegmentStatus.AwaitingDraw;
        g.revealedCount = 0;
        g.committedCount = 0;
        g.commitDeadline = 0;
        g.drawAttempts = 0;
        g.randomnessBlock = randomnessBlock;
        emit SegmentEscalated(sessionId, segmentId, round, tier, size, randomnessBlock);
    }

    function _seatKey(uint256 segmentId, uint8 round, uint256 index) private pure returns (uint256) {
        return (segmentId << 16) | (uint256(round) << 8) | index;
    }

    function _authorizeUpgrade(address) internal override onlyOwner {}
}
