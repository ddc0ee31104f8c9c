// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {Params} from "../../src/types/Params.sol";
import {ParamsLib} from "../../src/libraries/ParamsLib.sol";

/// @notice Issue M4, a round too big to finalize. A round of 127 draws from a tier of 2,048
///         members in which every seat stays silent costs about 20.3M gas to settle in one
///         transaction, above the 16,777,216 a transaction may use (EIP-7825): the fee and every
///         seat's stake would lock forever. Main defended it only by rejecting such committees in
///         `ParamsLib.validate` (at most 66 draws with one round, 8 first draws with three).
///         On 21e09b8 this test does not compile (`settleSegment` does not exist) and, written
///         against that contract, fails at `setParams` (`ParamsOutOfRange("committeeSizeTier1",
///         127)`). The defence asserted here: `validate` admits the largest committee
///         (`MAX_COMMITTEE_SIZE`), settling it in one go still needs more than the budget, and
///         settling it in steps of `SETTLEMENT_CHUNK_SEATS` keeps every step under the budget
///         and ends with every stake unlocked and the verdict recorded.
/// @dev Each call is its own transaction (`isolate`), so storage is cold again in each, as on chain.
/// forge-config: default.isolate = true
contract M4ChunkedSettlementTest is TRUSTBase {
    uint256 internal constant MEMBERS = 2_048;

    function test_M4_theLargestRoundSettlesInStepsWithinTheBudget() public {
        Params memory p = defaultParams();
        p.maxRounds = 1;
        p.committeeSizeTier1 = uint8(ParamsLib.MAX_COMMITTEE_SIZE);
        params.setParams(p); // main: ParamsOutOfRange("committeeSizeTier1", 127)
        for (uint256 i; i < MEMBERS; ++i) {
            addAuditor(string.concat("m", vm.toString(i)), 1, 100e18 + (i % 97) * 1e18);
        }
        uint256 sessionId = openSession(uniformSegments(1, 1));
        vm.roll(audit.session(sessionId).randomnessBlock + 1);
        audit.assignAuditors(sessionId, 0);
        address[] memory members = audit.committee(sessionId, 0);
        toRevealEnd(sessionId, 0); // every seat silent: each forfeits

        // In one go: above the budget (and, at this size, close to the transaction cap).
        uint256 snapshot = vm.snapshotState();
        uint256 before = gasleft();
        audit.finalizeSegment(sessionId, 0);
        uint256 oneGo = before - gasleft();
        vm.revertToState(snapshot);
        emit log_named_uint("seats", members.length);
        emit log_named_uint("settlement in one go", oneGo);
        assertGt(oneGo, ParamsLib.SETTLEMENT_GAS_BUDGET, "in one go the round does not fit the budget");

        // In steps: each under the budget.
        uint256 largest = 0;
        uint256 steps = 0;
        bool done = false;
        while (!done) {
            before = gasleft();
            done = audit.settleSegment(sessionId, 0, ParamsLib.SETTLEMENT_CHUNK_SEATS);
            uint256 used = before - gasleft();
            if (used > largest) largest = used;
            ++steps;
        }
        emit log_named_uint("steps", steps);
        emit log_named_uint("largest step", largest);
        emit log_named_uint("largest step per seat", largest / ParamsLib.SETTLEMENT_CHUNK_SEATS);
        assertEq(steps, (members.length + ParamsLib.SETTLEMENT_CHUNK_SEATS - 1) / ParamsLib.SETTLEMENT_CHUNK_SEATS);
        assertLe(largest, ParamsLib.SETTLEMENT_GAS_BUDGET, "every step within the budget");
        assertEq(uint8(audit.segment(sessionId, 0).status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertEq(audit.session(sessionId).finalizedCount, 1);
        for (uint256 i; i < members.length; ++i) {
            assertEq(registry.auditor(members[i]).locked, 0, "every seat's stake settled");
        }
    }
}
