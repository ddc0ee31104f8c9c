// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTBase} from "./TRUSTBase.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";

contract SmokeTest is TRUSTBase {
    function test_fullSession() public {
        addAuditors("llm", 2, 8, 2_000e18);
        uint256 id = openSession(uniformSegments(2, 2));
        drawAll(id);
        commitAll(id, 0, true);
        commitAll(id, 1, false);
        toCommitEnd(id, 0);
        revealAll(id, 0, true);
        revealAll(id, 1, false);
        audit.finalizeSegment(id, 0);
        audit.finalizeSegment(id, 1);
        bool valid = audit.finalizeTrace(id);
        assertFalse(valid);
        audit.distributeRewards(id);
        address[] memory m = audit.committee(id, 0);
        assertGt(audit.claimable(m[0]), 0);
    }
}
