// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

import {ITRUSTAudit} from "../interfaces/ITRUSTAudit.sol";
import {Params} from "../types/Params.sol";
import {AuditStorage, Session, Segment, Seat, BPS, SEAT_PASS, SEAT_FAIL, SEAT_CLAIMED, seatKey} from "../types/AuditStorage.sol";

/// @title FeeSplit
/// @notice A finalized session's fee: the split (70/15/10/5 by default, eq. 3.10 and section 6.1)
///         and the auditors' claims of their aligned seats.
/// @dev An external library delegate-called by `TRUSTAudit` (the ETH it moves is the audit
///      contract's). ETH flows: fees in = fees of undistributed sessions + credited balances +
///      withdrawn + the stakers' share sent to the registry; the invariant suite checks it.
library FeeSplit {
    /// @notice Splits the fee of a finalized session (see `ITRUSTAudit.distributeRewards`).
    function distribute(AuditStorage storage $, uint256 sessionId) external {
        Session storage s = $.sessions[sessionId];
        if (s.status != ITRUSTAudit.SessionStatus.Finalized) revert ITRUSTAudit.AuditNotFinalized(sessionId, s.status);
        s.status = ITRUSTAudit.SessionStatus.Distributed;
        Params storage p = $.sessionParams[sessionId];
        uint256 fee = s.feeWei;
        // Floors everywhere; the insurance fund takes the remainder, so the four shares add up to
        // the fee exactly.
        uint256 auditorsWei = Math.mulDiv(fee, p.auditorShareBps, BPS);
        uint256 treasuryWei = Math.mulDiv(fee, p.treasuryShareBps, BPS);
        uint256 stakersWei = Math.mulDiv(fee, p.stakerShareBps, BPS);
        uint256 insuranceWei = fee - auditorsWei - treasuryWei - stakersWei;

        uint256 aligned = s.alignedSeats;
        // With no aligned seat (nobody revealed, or only undecided rounds) the auditors' share goes
        // to the treasury, and so does the rounding dust of the per-seat split.
        uint256 dustWei = aligned == 0 ? auditorsWei : auditorsWei % aligned;
        uint256 perSeatWei = aligned == 0 ? 0 : auditorsWei / aligned;
        s.perSeatWei = uint96(perSeatWei); // <= auditorsWei <= feeWei, a uint96
        treasuryWei += dustWei;
        $.claimableWei[$.params.treasury()] += treasuryWei;
        $.claimableWei[$.params.insuranceFund()] += insuranceWei;
        emit ITRUSTAudit.RewardsDistributed(sessionId, auditorsWei - dustWei, perSeatWei, treasuryWei, stakersWei, insuranceWei);
        // The registry is ours (set at initialization by governance), not an arbitrary recipient.
        // slither-disable-next-line arbitrary-send-eth
        if (stakersWei != 0) $.registry.notifyStakerReward{value: stakersWei}();
    }

    /// @notice Pays `claimant` the reward of its aligned seats (see `ITRUSTAudit.claimRewards`).
    function claim(AuditStorage storage $, address claimant, uint256 sessionId, ITRUSTAudit.SeatRef[] calldata seats)
        external
    {
        Session storage s = $.sessions[sessionId];
        if (s.status != ITRUSTAudit.SessionStatus.Distributed) {
            revert ITRUSTAudit.AuditNotDistributed(sessionId, s.status);
        }
        uint256 units = 0;
        for (uint256 i; i < seats.length; ++i) {
            units += _claimSeat($, claimant, sessionId, seats[i].segmentId, seats[i].seatIndex);
        }
        uint256 owed = s.perSeatWei * units;
        if (owed == 0) revert ITRUSTAudit.AuditNothingToWithdraw(claimant);
        emit ITRUSTAudit.RewardsClaimed(sessionId, claimant, units, owed);
        Address.sendValue(payable(claimant), owed);
    }

    /// @dev Marks the claimant's aligned seat claimed and returns its units.
    function _claimSeat(
        AuditStorage storage $,
        address claimant,
        uint256 sessionId,
        uint256 segmentId,
        uint256 seatIndex
    ) private returns (uint256) {
        Segment storage g = $.segments[sessionId][segmentId];
        // Only the final round of a decided segment has aligned seats.
        ITRUSTAudit.SegmentStatus status = g.status;
        uint8 alignedState = status == ITRUSTAudit.SegmentStatus.Passed ? SEAT_PASS : SEAT_FAIL;
        Seat storage st = $.seats[sessionId][seatKey(segmentId, g.round, seatIndex)];
        bool decided = status == ITRUSTAudit.SegmentStatus.Passed || status == ITRUSTAudit.SegmentStatus.Failed;
        if (!decided || seatIndex >= g.seatCount || st.auditor != claimant || st.state != alignedState) {
            revert ITRUSTAudit.AuditSeatNotRewarded(sessionId, segmentId, seatIndex, claimant);
        }
        st.state = SEAT_CLAIMED;
        return st.weight;
    }
}
