// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

/// @title ReputationLib
/// @notice The reputation EMA (eq. 3.8 / 4.15) and reputation-weighted slashing probability
///         (eq. 3.9 / 4.16) of the TRUST paper, in fixed point.
library ReputationLib {
    uint256 internal constant WAD = 1e18;

    /// @notice r <- (1 - gamma) r + gamma * 1[vote correct].
    /// @dev Rounds down, so reputation never exceeds 1: (1-g) r + g <= (1-g) + g = 1 when r <= 1.
    ///      The result fits in uint64 because it is at most WAD < 2^64.
    function update(uint64 reputationWad, uint64 gammaWad, bool correct) internal pure returns (uint64) {
        uint256 next = Math.mulDiv(reputationWad, WAD - gammaWad, WAD);
        if (correct) next += gammaWad;
        return uint64(next);
    }

    /// @notice p_slash(r) = p_min + (p_max - p_min)(1 - r), in basis points.
    /// @dev Rounds up (against the slashed seat, as fees and slashes do in this protocol).
    function slashProbabilityBps(uint64 reputationWad, uint16 pMinBps, uint16 pMaxBps) internal pure returns (uint256) {
        uint256 r = reputationWad > WAD ? WAD : reputationWad;
        return pMinBps + Math.mulDiv(pMaxBps - pMinBps, WAD - r, WAD, Math.Rounding.Ceil);
    }
}
