// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {ITRUSTAudit} from "../interfaces/ITRUSTAudit.sol";
import {Params} from "../types/Params.sol";
import {AuditStorage, Session, Segment, BPS, FLAG_CRITICAL, FLAG_CONTRADICTION} from "../types/AuditStorage.sol";
import {ParamsLib} from "../libraries/ParamsLib.sol";

/// @title SessionLifecycle
/// @notice How a session is created, registered, opened and cancelled (paper section 3.5).
/// @dev An external library: `TRUSTAudit` delegate-calls it with its storage, so events and errors
///      are the audit contract's. The rule this file keeps (issue H1, committee grinding): every
///      input that selects a committee (the segments with their tiers, weights and flags, and the
///      fee) is fixed before the randomness that seeds the committees is even requested. The
///      randomness block is fixed when the last segment is registered, the session opens in the
///      same call, and nothing about it can change afterwards; a session can be cancelled only
///      before that, when no seed exists, so cancelling and re-creating never re-rolls a committee.
library SessionLifecycle {
    using ParamsLib for Params;
    using SafeCast for uint256;

    /// @notice Creates a session (its segments follow in `register`, in this call or later ones).
    function create(AuditStorage storage $, address provider, bytes32 traceRoot, uint256 segmentCount, uint256 feeWei)
        public
        returns (uint256 sessionId)
    {
        Params memory p = $.params.params();
        if (segmentCount == 0) revert ITRUSTAudit.AuditZeroSegments();
        if (segmentCount > p.maxSegmentsPerSession) {
            revert ITRUSTAudit.AuditTooManySegments(segmentCount, p.maxSegmentsPerSession);
        }
        sessionId = ++$.sessionCount;
        Session storage s = $.sessions[sessionId];
        s.provider = provider;
        s.segmentCount = uint16(segmentCount); // <= maxSegmentsPerSession <= 4096
        s.traceRoot = traceRoot;
        s.feeWei = feeWei.toUint96();
        s.status = ITRUSTAudit.SessionStatus.Registering;
        s.paramsVersion = $.params.version().toUint32();
        $.sessionParams[sessionId] = p;
        emit ITRUSTAudit.SessionCreated(sessionId, traceRoot);
    }

    /// @notice `create` and `register` of every segment in one call: the session opens at once.
    function createWithSegments(
        AuditStorage storage $,
        address provider,
        bytes32 traceRoot,
        ITRUSTAudit.SegmentInput[] calldata inputs,
        uint256 feeWei
    ) external returns (uint256 sessionId) {
        sessionId = create($, provider, traceRoot, inputs.length, feeWei);
        _register($, sessionId, $.sessions[sessionId], inputs);
    }

    /// @notice Registers the next segments of a session (provider only); `feeWei` adds to the fee.
    function register(
        AuditStorage storage $,
        address caller,
        uint256 sessionId,
        ITRUSTAudit.SegmentInput[] calldata inputs,
        uint256 feeWei
    ) external {
        Session storage s = _registering($, caller, sessionId);
        s.feeWei += feeWei.toUint96();
        _register($, sessionId, s, inputs);
    }

    /// @notice Cancels a session that is still registering, refunding its fee: no randomness was
    ///         requested for it, so nobody has seen, or can ever see, its committees.
    function cancel(AuditStorage storage $, address caller, uint256 sessionId) external {
        Session storage s = _registering($, caller, sessionId);
        uint256 refund = s.feeWei;
        s.feeWei = 0;
        s.status = ITRUSTAudit.SessionStatus.Distributed;
        emit ITRUSTAudit.SessionCancelled(sessionId, refund);
        if (refund != 0) Address.sendValue(payable(caller), refund);
    }

    /// @notice The fee a session needing `seats` first-round seats must pay: R per seat from the
    ///         auditors' share.
    function minimumFee(uint256 rewardPerSeatWei, uint256 seats, uint256 auditorShareBps) internal pure returns (uint256) {
        return Math.mulDiv(rewardPerSeatWei * seats, BPS, auditorShareBps, Math.Rounding.Ceil);
    }

    function _registering(AuditStorage storage $, address caller, uint256 sessionId)
        private
        view
        returns (Session storage s)
    {
        s = $.sessions[sessionId];
        if (s.status == ITRUSTAudit.SessionStatus.None) revert ITRUSTAudit.AuditUnknownSession(sessionId);
        if (caller != s.provider) revert ITRUSTAudit.AuditNotProvider(sessionId, caller);
        if (s.status != ITRUSTAudit.SessionStatus.Registering) {
            revert ITRUSTAudit.AuditSessionNotOpen(sessionId, s.status);
        }
    }

    function _register(
        AuditStorage storage $,
        uint256 sessionId,
        Session storage s,
        ITRUSTAudit.SegmentInput[] calldata inputs
    ) private {
        uint256 first = s.registeredCount;
        if (first + inputs.length > s.segmentCount) {
            revert ITRUSTAudit.AuditSegmentsOverflow(sessionId, first, inputs.length, s.segmentCount);
        }
        Params storage p = $.sessionParams[sessionId];
        uint256 seats = s.requiredSeats;
        uint256 weight = s.totalWeight;
        uint32 lightest = first == 0 ? type(uint32).max : s.minWeight;
        uint32 heaviest = s.maxWeight;
        for (uint256 i; i < inputs.length; ++i) {
            ITRUSTAudit.SegmentInput calldata input = inputs[i];
            if (!ParamsLib.isTier(input.tier)) revert ITRUSTAudit.AuditInvalidSegment(first + i, "tier");
            if (input.weight == 0) revert ITRUSTAudit.AuditInvalidSegment(first + i, "weight");
            if (input.contentDigest == bytes32(0)) revert ITRUSTAudit.AuditInvalidSegment(first + i, "contentDigest");
            if (input.weight < lightest) lightest = input.weight;
            if (input.weight > heaviest) heaviest = input.weight;
            if (uint256(heaviest) > uint256(lightest) * p.maxWeightRatio) {
                revert ITRUSTAudit.AuditWeightsTooUneven(first + i, lightest, heaviest, p.maxWeightRatio);
            }
            uint8 size = p.storedCommitteeSize(input.tier);
            Segment storage g = $.segments[sessionId][first + i];
            g.tier = input.tier;
            g.flags = (input.critical ? FLAG_CRITICAL : 0) | (input.contradiction ? FLAG_CONTRADICTION : 0);
            g.status = ITRUSTAudit.SegmentStatus.AwaitingDraw;
            g.committeeSize = size;
            g.weight = input.weight;
            g.contentDigest = input.contentDigest;
            seats += size;
            weight += input.weight;
            emit ITRUSTAudit.SegmentRegistered(
                sessionId, first + i, input.tier, input.weight, input.critical, input.contradiction, input.contentDigest
            );
        }
        s.registeredCount = uint16(first + inputs.length); // <= segmentCount <= 4096
        s.requiredSeats = uint24(seats); // <= 4096 segments * 127 seats < 2^24
        s.totalWeight = uint64(weight); // <= 4096 segments * (2^32 - 1)
        s.minWeight = lightest;
        s.maxWeight = heaviest;
        if (s.registeredCount == s.segmentCount) _open($, sessionId, s, p, seats);
    }

    /// @dev Every input is fixed: check the fee, then fix the randomness block and ask the source
    ///      for it. From here on the session cannot be cancelled.
    function _open(AuditStorage storage $, uint256 sessionId, Session storage s, Params storage p, uint256 seats)
        private
    {
        // Every first-round seat must be able to earn R from the auditors' share.
        uint256 needed = minimumFee(p.rewardPerSeatWei, seats, p.auditorShareBps);
        if (s.feeWei < needed) revert ITRUSTAudit.AuditFeeTooLow(s.feeWei, needed);
        s.status = ITRUSTAudit.SessionStatus.Open;
        uint40 randomnessBlock = (block.number + p.randomnessDelayBlocks).toUint40();
        s.randomnessBlock = randomnessBlock;
        emit ITRUSTAudit.SessionOpened(
            sessionId, s.provider, s.segmentCount, s.feeWei, randomnessBlock, s.paramsVersion
        );
        $.randomness.request(randomnessBlock);
    }
}
