// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";
import {ParamsLib} from "../../src/libraries/ParamsLib.sol";

/// @notice Issue M2, sybils exhausting the skip budget. The attack: 70 accounts of 1,000 tokens each
///         (70,000 of the tier's 70,500 at the snapshot) unbond all their stake once the seed is
///         public and before the draw. Each one drawn cannot back a seat and is passed over; after
///         64 passed over the draw gives up, and with a fresh wave of sybils for each of the three
///         attempts the segment ends Undetermined.
///         On 96c3011 (passing over cost nothing) one wave of 70 made the first draw fail with
///         nobody charged, and three waves of 100 sybils (300 accounts, 300,000 tokens) made all
///         three draws of the segment fail, it ended Undetermined (the trace invalid), and every
///         sybil withdrew its 1,000 tokens in full after the unbonding delay.
///         The defence asserted here: a member counted in the snapshot that asked to unstake after
///         it (even in part, since 7430925) is passed over and charged the lock P from its
///         unbonding stake (to the insurance fund) when drawn, even though the draw fails: one wave
///         of 70 loses 64 x 8 = 512 tokens, three waves of 100 lose 1,536. The retry reads a fresh
///         snapshot without the departed sybils and gives its three draws to honest members, who
///         decide the segment; the sybils get back only what was not charged, and not before every
///         draw that counted them is over.
contract M2SkipBudgetTest is TRUSTAuditBase {
    uint256 internal constant SYBILS = 70;
    uint256 internal constant SYBIL_STAKE = 1_000e18;
    uint256 internal constant PENALTY = 8e18;

    address[] internal honest;

    function setUp() public override {
        super.setUp();
        honest = addAuditors("honest-", 1, 5, 100e18);
    }

    function wave(string memory prefix, uint256 count) internal returns (address[] memory) {
        return addAuditors(prefix, 1, count, SYBIL_STAKE);
    }

    function desert(address[] memory accounts) internal {
        for (uint256 i; i < accounts.length; ++i) {
            vm.prank(accounts[i]);
            registry.requestUnstake(SYBIL_STAKE);
        }
    }

    /// @dev What each of `accounts` was charged (its unbonding stake short of what it unstaked).
    function charged(address[] memory accounts) internal view returns (uint256 total, uint256 count) {
        for (uint256 i; i < accounts.length; ++i) {
            uint256 lost = SYBIL_STAKE - registry.auditor(accounts[i]).unbonding;
            if (lost != 0) {
                assertEq(lost, PENALTY, "charged the lock, once per draw that reached it");
                total += lost;
                ++count;
            }
        }
    }

    function test_M2_desertersArePaidForAndHonestMembersDecide() public {
        address[] memory sybils = wave("sybil-", SYBILS);
        uint256 id = openSingle(1);
        uint256 b = audit.session(id).randomnessBlock;
        vm.roll(b + 1);
        desert(sybils);

        vm.expectEmit(address(audit));
        emit ITRUSTAudit.CommitteeUnavailable(id, 0, 0, 1);
        audit.assignAuditors(id, 0);
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.AwaitingDraw));
        (uint256 lost, uint256 count) = charged(sybils);
        // Honest members are never passed over (each backs twelve draws), so the draw gave up after
        // passing over 64 sybils, and charged each of them.
        assertEq(count, 64, "the 64 passed over were sybils, each charged");
        assertEq(registry.claimableTokens(insurance), lost, "to the insurance fund");

        // The retry reads a snapshot after they left: only honest members can be drawn, and they
        // take all three draws, each backed by P locked.
        drawSegment(id, 0);
        address[] memory members = audit.committee(id, 0);
        uint256 units;
        for (uint256 i; i < members.length; ++i) {
            assertTrue(contains(honest, members[i]), "an honest member");
            uint256 won = audit.seat(id, 0, 0, i).weight;
            assertEq(registry.auditor(members[i]).locked, won * PENALTY);
            units += won;
        }
        assertEq(units, 3);
        voteAll(id, 0, true);
        assertTrue(audit.finalizeSegment(id, 0));
        (uint256 lostAfter,) = charged(sybils);
        assertEq(lostAfter, lost, "the retry charged nobody");

        // The sybils get back what was not charged, once every draw that counted them is over.
        address first = sybils[0];
        uint256 readyAt = registry.auditor(first).unbondingReadyAt;
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryUnbondingNotReady.selector, first, readyAt, block.timestamp)
        );
        vm.prank(first);
        registry.executeUnstake();
        vm.warp(block.timestamp + 7 days);
        vm.roll(b + 1 + ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS + 1);
        uint256 paidOut;
        for (uint256 i; i < sybils.length; ++i) {
            uint256 before = token.balanceOf(sybils[i]);
            vm.prank(sybils[i]);
            registry.executeUnstake();
            paidOut += token.balanceOf(sybils[i]) - before;
        }
        assertEq(paidOut, SYBILS * SYBIL_STAKE - lost, "the sybils lost what they were charged");
        emit log_named_decimal_uint("tokens the sybils lost (one wave)", lost, 18);
    }

    /// @notice The attack at full strength: a fresh wave of 100 sybils (100,000 tokens against the
    ///         honest 500) for each of the three draws. Each wave sits in its own draw's snapshot
    ///         and leaves after it, so the segment can still be forced Undetermined, but every wave
    ///         pays the lock for each of its members drawn: the skip budget is bought with
    ///         forfeited stake (3 x 64 x P here: since 7430925 the budget is 64 members passed
    ///         over, honest members drawn take units instead; it was 3 + 64 before), not borrowed
    ///         for free.
    function test_M2_threeWavesPayForEverySkip() public {
        uint256 id = openSingle(1);
        uint256 totalLost;
        for (uint256 w; w < ParamsLib.MAX_DRAW_ATTEMPTS; ++w) {
            address[] memory sybils = wave(string.concat("wave-", vm.toString(w), "-"), 100);
            // Registered before this attempt's randomness block, gone right after it.
            uint256 b = audit.segment(id, 0).randomnessBlock;
            assertLe(block.number, b);
            vm.roll(b + 1);
            desert(sybils);
            audit.assignAuditors(id, 0);
            (uint256 lost, uint256 count) = charged(sybils);
            assertEq(count, 64, "each wave is charged for every member passed over (the budget, 64)");
            totalLost += lost;
        }
        assertEq(uint8(audit.segment(id, 0).status), uint8(ITRUSTAudit.SegmentStatus.Undetermined));
        assertEq(registry.claimableTokens(insurance), totalLost);
        emit log_named_decimal_uint("tokens three waves lost to force one Undetermined", totalLost, 18);
    }
}
