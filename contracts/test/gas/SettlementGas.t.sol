// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {Params} from "../../src/types/Params.sol";
import {ParamsLib} from "../../src/libraries/ParamsLib.sol";

/// @notice Issue M4: a round too big to finalize. The worst case of one finalization is the largest
///         round the parameters allow with every seat silent (each forfeit rewrites the member's
///         leaf in a sortition tree of thousands, O(log n) history writes), plus, since undecided
///         rounds stay locked until the verdict (M1), every earlier round's seats judged against
///         it. `ParamsLib.validate` rejects parameters whose worst case exceeds
///         `SETTLEMENT_GAS_BUDGET`; this measures the worst case the bound allows.
contract SettlementGasTest is TRUSTBase {
    uint256 internal constant MEMBERS = 2_048;

    /// @dev The largest first-round tier-1 committee `validate` accepts with `maxRounds` rounds.
    function largestAllowed(uint8 maxRounds) internal pure returns (uint8 size) {
        Params memory p = defaultParams();
        p.maxRounds = maxRounds;
        for (uint8 k = 1; k < 128; ++k) {
            p.committeeSizeTier1 = k;
            if (!ParamsLib.isValid(p)) break;
            size = k;
        }
    }

    function _crowd(uint256 count) internal {
        for (uint256 i; i < count; ++i) {
            addAuditor(string.concat("m", vm.toString(i)), 1, 100e18 + (i % 97) * 1e18);
        }
    }

    /// @dev A one-segment session of tier 1 with `size` seats, drawn; returns the draw's gas.
    function _drawn(uint8 size, uint8 maxRounds) internal returns (uint256 sessionId, uint256 drawGas) {
        Params memory p = defaultParams();
        p.committeeSizeTier1 = size;
        p.maxRounds = maxRounds;
        params.setParams(p);
        sessionId = openSession(uniformSegments(1, 1));
        vm.roll(audit.session(sessionId).randomnessBlock + 1);
        uint256 before = gasleft();
        audit.assignAuditors(sessionId, 0);
        drawGas = before - gasleft();
        assertEq(uint8(audit.segment(sessionId, 0).status), uint8(ITRUSTAudit.SegmentStatus.Voting), "drawn");
    }

    function test_largestAllowedRound_everySeatSilent_fitsTheBudget() public {
        _crowd(MEMBERS);
        uint8 size = largestAllowed(1);
        (uint256 sessionId, uint256 drawGas) = _drawn(size, 1);
        toRevealEnd(sessionId, 0);
        uint256 before = gasleft();
        audit.finalizeSegment(sessionId, 0);
        uint256 settleGas = before - gasleft();
        emit log_named_uint("largest one-round committee", size);
        emit log_named_uint("draw gas", drawGas);
        emit log_named_uint("draw gas per seat", drawGas / size);
        emit log_named_uint("finalize gas (every seat forfeits)", settleGas);
        emit log_named_uint("finalize gas per seat", settleGas / size);
        assertLe(drawGas, ParamsLib.SETTLEMENT_GAS_BUDGET, "draw within the budget");
        assertLe(settleGas, ParamsLib.SETTLEMENT_GAS_BUDGET, "finalization within the budget");
        assertLe(settleGas / size, ParamsLib.SETTLEMENT_GAS_PER_SEAT, "the per-seat figure validate uses holds");
    }
}
