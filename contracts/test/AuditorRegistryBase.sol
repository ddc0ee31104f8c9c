// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTBase} from "./TRUSTBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";

/// @notice Helpers shared by the AuditorRegistry.*.t.sol suites, on top of the protocol fixture.
abstract contract AuditorRegistryBase is TRUSTBase {
    uint256 internal constant MIN_TIER1 = 100e18;
    uint256 internal constant MIN_TIER2 = 1_000e18;
    uint256 internal constant MIN_TIER3 = 10_000e18;
    uint96 internal constant PENALTY = 8e18;
    uint256 internal constant UNBONDING = 7 days;

    address internal stranger = makeAddr("stranger");

    /// @dev The encryption key `addAuditor` registers `a` with.
    function keyOf(address a) internal pure returns (bytes32) {
        return keccak256(abi.encode("x25519", a));
    }

    /// @dev Gives `a` `amount` staking tokens and approves the registry for them.
    function fund(address a, uint256 amount) internal {
        token.transfer(a, amount);
        vm.prank(a);
        token.approve(address(registry), type(uint256).max);
    }

    function info(address a) internal view returns (IAuditorRegistry.AuditorInfo memory) {
        return registry.auditor(a);
    }

    /// @dev A session of one tier-1 segment whose committee (three draws, with replacement) is
    ///      drawn: each member holds one open seat of the units it won (issue L2). Every one of
    ///      three tier-1 auditors is seated only when each backs a single unit (P > stake / 2).
    function openSeatedSession() internal returns (uint256 sessionId, address[] memory members) {
        sessionId = openSession(uniformSegments(1, 1));
        drawAll(sessionId);
        members = audit.committee(sessionId, 0);
    }

    /// @dev Every seat of segment 0 votes Pass, and the session is finalized and distributed.
    function settleAligned(uint256 sessionId) internal {
        voteAll(sessionId, 0, true);
        audit.finalizeSegment(sessionId, 0);
        audit.finalizeTrace(sessionId);
        audit.distributeRewards(sessionId);
    }

    /// @dev Sends a staker reward to the registry as the audit contract does.
    function notifyAsAudit(uint256 amountWei) internal {
        vm.deal(address(audit), address(audit).balance + amountWei);
        vm.prank(address(audit));
        registry.notifyStakerReward{value: amountWei}();
    }

    function contains(address[] memory list, address who) internal pure returns (bool) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == who) return true;
        }
        return false;
    }
}
