// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AuditorRegistryBase} from "./AuditorRegistryBase.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {ParamsLib} from "../src/libraries/ParamsLib.sol";

/// @notice The stakers' share of fees: notification, streaming over the reward period, pro-rata
///         accrual, claims and carry-over. Most tests let a whole period pass (`streamOut`), after
///         which a notification is paid out in full; `test/security/L1.JustInTimeStake.t.sol` tests
///         the streaming itself.
contract AuditorRegistryRewardsTest is AuditorRegistryBase {
    uint256 internal constant WAD = 1e18;
    uint256 internal constant PERIOD = ParamsLib.STAKER_REWARD_PERIOD_SECONDS;

    /// @dev Lets the running period end: everything notified so far has been streamed.
    function streamOut() internal {
        vm.warp(block.timestamp + PERIOD);
    }

    /// @dev Notifies `amountWei` and lets its whole period pass.
    function notifyAndStream(uint256 amountWei) internal {
        notifyAsAudit(amountWei);
        streamOut();
    }

    function claimAs(address a) internal returns (uint256 paid) {
        uint256 before = a.balance;
        vm.prank(a);
        registry.claimStakerReward();
        paid = a.balance - before;
    }

    // ------------------------------------------------------------------ notification through the audit contract

    function test_distributeRewards_notifiesTheStakersShare() public {
        address[] memory committee = addAuditors("t1-", 1, 3, 200e18);
        address outsider = addAuditor("t2", 2, 1_400e18); // stakes, never seated here
        uint256 total = 2_000e18;
        (uint256 sessionId,) = openSeatedSession();
        uint256 fee = audit.session(sessionId).feeWei;
        uint256 stakersWei = fee * 1_000 / 10_000;
        uint256 rewardPerStakeWad = stakersWei * WAD / total;

        voteAll(sessionId, 0, true);
        audit.finalizeSegment(sessionId, 0);
        audit.finalizeTrace(sessionId);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakerRewardNotified(
            stakersWei, stakersWei, stakersWei * WAD / PERIOD, block.timestamp + PERIOD, 0
        );
        audit.distributeRewards(sessionId);

        assertEq(address(registry).balance, stakersWei);
        for (uint256 i; i < committee.length; ++i) {
            assertEq(registry.pendingStakerReward(committee[i]), 0, "nothing before any time passed");
        }
        streamOut();
        for (uint256 i; i < committee.length; ++i) {
            assertEq(registry.pendingStakerReward(committee[i]), 200e18 * rewardPerStakeWad / WAD);
        }
        assertEq(registry.pendingStakerReward(outsider), 1_400e18 * rewardPerStakeWad / WAD, "every staker shares");
        assertApproxEqAbs(registry.pendingStakerReward(outsider), 7 * registry.pendingStakerReward(committee[0]), 7);
    }

    function test_notifyStakerReward_emitsTheRateAndTheAccumulator() public {
        addAuditor("a", 1, 400e18);
        notifyAsAudit(1 ether);
        vm.warp(block.timestamp + PERIOD / 2);
        // Half of the first ether was released at 400 tokens; the other half rolls into the new rate.
        uint256 accumulator = 0.5 ether * WAD / 400e18;
        vm.deal(address(audit), 1 ether);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakerRewardNotified(
            1 ether, 1.5 ether, 1.5 ether * WAD / PERIOD, block.timestamp + PERIOD, accumulator
        );
        vm.prank(address(audit));
        registry.notifyStakerReward{value: 1 ether}();
        assertEq(registry.rewardPerStakeWad(), accumulator);
    }

    function test_stakerRewardStream_viewsTheRunningPeriod() public {
        addAuditor("a", 1, 100e18);
        IAuditorRegistry.StakerRewardStream memory s = registry.stakerRewardStream();
        assertEq(abi.encode(s), abi.encode(IAuditorRegistry.StakerRewardStream(0, 0, 0, 0, 0)), "nothing yet");
        notifyAsAudit(7 ether);
        uint256 finish = block.timestamp + PERIOD;
        vm.warp(block.timestamp + PERIOD / 7);
        s = registry.stakerRewardStream();
        assertEq(s.rateWad, 7 ether * WAD / PERIOD);
        assertEq(s.periodFinish, finish);
        assertEq(s.streamingWei, 6 ether, "six days of seven left");
        assertEq(s.carriedWei, 0);
        assertEq(s.rewardPerStakeWad, 1 ether * WAD / 100e18);
        assertEq(registry.pendingStakerReward(registry.auditContract()), 0);
        vm.warp(finish + 1 days);
        s = registry.stakerRewardStream();
        assertEq(s.streamingWei, 0, "the period ended");
        assertEq(s.rewardPerStakeWad, 7 ether * WAD / 100e18);
    }

    // ------------------------------------------------------------------ pending and claims

    function test_pendingStakerReward_proRataToStake() public {
        address a = addAuditor("a", 1, 100e18);
        address b = addAuditor("b", 2, 3_000e18);
        address c = addAuditor("c", 1, 900e18);
        notifyAndStream(4 ether);
        assertEq(registry.pendingStakerReward(a), 0.1 ether);
        assertEq(registry.pendingStakerReward(b), 3 ether);
        assertEq(registry.pendingStakerReward(c), 0.9 ether);
    }

    function testFuzz_pendingStakerReward_proRataToStake(uint96 stakeA, uint96 stakeB, uint256 amountWei) public {
        stakeA = uint96(bound(stakeA, MIN_TIER1, 1e27));
        stakeB = uint96(bound(stakeB, MIN_TIER1, 1e27));
        amountWei = bound(amountWei, 1, 1_000 ether);
        address a = addAuditor("a", 1, stakeA);
        address b = addAuditor("b", 1, stakeB);
        notifyAndStream(amountWei);
        uint256 rewardPerStakeWad = amountWei * WAD / (uint256(stakeA) + stakeB);
        uint256 pa = registry.pendingStakerReward(a);
        uint256 pb = registry.pendingStakerReward(b);
        assertEq(pa, uint256(stakeA) * rewardPerStakeWad / WAD);
        assertEq(pb, uint256(stakeB) * rewardPerStakeWad / WAD);
        assertLe(pa + pb, amountWei, "never more than received");
    }

    function test_claimStakerReward_paysAndResets() public {
        address a = addAuditor("a", 1, 100e18);
        address b = addAuditor("b", 1, 300e18);
        notifyAndStream(1 ether);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakerRewardClaimed(a, 0.25 ether);
        assertEq(claimAs(a), 0.25 ether);
        assertEq(registry.pendingStakerReward(a), 0);
        assertEq(claimAs(b), 0.75 ether);
        assertEq(address(registry).balance, 0);
    }

    function test_claimStakerReward_revertsWithNothingToClaim() public {
        address a = addAuditor("a", 1, 100e18);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingToClaim.selector, a));
        vm.prank(a);
        registry.claimStakerReward();
    }

    function test_claimStakerReward_revertsForStranger() public {
        addAuditor("a", 1, 100e18);
        notifyAndStream(1 ether);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingToClaim.selector, stranger));
        vm.prank(stranger);
        registry.claimStakerReward();
    }

    function test_claimStakerReward_revertsOnSecondClaim() public {
        address a = addAuditor("a", 1, 100e18);
        notifyAndStream(1 ether);
        claimAs(a);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingToClaim.selector, a));
        vm.prank(a);
        registry.claimStakerReward();
    }

    function test_claimStakerReward_paysWhatStreamedSoFar() public {
        address a = addAuditor("a", 1, 100e18);
        notifyAsAudit(1 ether);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingToClaim.selector, a));
        vm.prank(a);
        registry.claimStakerReward();
        vm.warp(block.timestamp + PERIOD / 4);
        assertEq(claimAs(a), 0.25 ether, "a quarter of the period");
        vm.warp(block.timestamp + PERIOD);
        assertEq(claimAs(a), 0.75 ether, "the rest once it ended");
        assertEq(address(registry).balance, 0);
    }

    function test_stakerReward_stakeChangesApplyFromTheirTime() public {
        address a = addAuditor("a", 1, 100e18);
        address b = addAuditor("b", 1, 300e18);
        notifyAndStream(1 ether); // a 0.25, b 0.75
        token.transfer(a, 200e18);
        vm.startPrank(a);
        token.approve(address(registry), 200e18);
        registry.stake(200e18);
        vm.stopPrank();
        assertEq(registry.pendingStakerReward(a), 0.25 ether, "a top-up earns nothing retroactively");
        notifyAndStream(1.2 ether); // a 0.6, b 0.6
        assertEq(registry.pendingStakerReward(a), 0.85 ether);
        assertEq(registry.pendingStakerReward(b), 1.35 ether);
    }

    function test_stakerReward_unbondingStakeStopsEarning() public {
        address a = addAuditor("a", 1, 100e18);
        address b = addAuditor("b", 1, 100e18);
        notifyAndStream(1 ether);
        vm.prank(a);
        registry.requestUnstake(100e18);
        notifyAndStream(1 ether);
        assertEq(registry.pendingStakerReward(a), 0.5 ether, "accrued before leaving, kept");
        assertEq(registry.pendingStakerReward(b), 1.5 ether);
        assertEq(claimAs(a), 0.5 ether, "claimable after leaving");
    }

    function test_stakerReward_slashedStakeStopsEarning() public {
        address a = addAuditor("a", 1, 200e18);
        address b = addAuditor("b", 1, 200e18);
        notifyAndStream(1 ether);
        audit.slashAuditor(a, 100e18, "governance");
        notifyAndStream(0.9 ether); // a 100 / 300, b 200 / 300
        assertEq(registry.pendingStakerReward(a), 0.5 ether + 0.3 ether);
        assertEq(registry.pendingStakerReward(b), 0.5 ether + 0.6 ether);
    }

    function test_stakerReward_forfeitedSeatsStopEarning() public {
        address[] memory members = addAuditors("t1-", 1, 3, 100e18 + PENALTY);
        (uint256 sessionId,) = openSeatedSession();
        toRevealEnd(sessionId, 0);
        audit.finalizeSegment(sessionId, 0); // silent: each forfeits the penalty
        notifyAndStream(3 ether);
        for (uint256 i; i < members.length; ++i) {
            assertEq(registry.stakeOf(members[i]), 100e18);
            assertEq(registry.pendingStakerReward(members[i]), 1 ether);
        }
    }

    // ------------------------------------------------------------------ carry-over

    function test_notifyStakerReward_carriesOverWhatStreamsWhileNobodyStakes() public {
        notifyAsAudit(1 ether);
        assertEq(address(registry).balance, 1 ether);
        vm.warp(block.timestamp + PERIOD / 2);
        IAuditorRegistry.StakerRewardStream memory s = registry.stakerRewardStream();
        assertEq(s.carriedWei, 0.5 ether, "the first half streamed to nobody: carried");
        assertEq(s.streamingWei, 0.5 ether);

        address a = addAuditor("a", 1, 100e18);
        assertEq(registry.pendingStakerReward(a), 0, "nothing is paid for time before the stake");
        streamOut();
        assertEq(registry.pendingStakerReward(a), 0.5 ether, "the second half, staked throughout");
        notifyAndStream(0.5 ether);
        assertEq(registry.pendingStakerReward(a), 1.5 ether, "the carried half streams with the next notification");
        assertEq(claimAs(a), 1.5 ether);
        assertEq(address(registry).balance, 0);
    }

    function test_notifyStakerReward_carriesOverAfterEveryoneLeft() public {
        address a = addAuditor("a", 1, 100e18);
        vm.prank(a);
        registry.requestUnstake(100e18);
        notifyAndStream(1 ether);
        assertEq(registry.pendingStakerReward(a), 0);
        assertEq(registry.stakerRewardStream().carriedWei, 1 ether);
        address b = addAuditor("b", 1, 100e18);
        notifyAndStream(1 wei);
        // (1 ether + 1) streamed to 100 tokens: each release floors to whole wei per token, and
        // the period's last release leaves the odd wei streaming.
        assertEq(registry.pendingStakerReward(b), 1 ether);
        assertEq(registry.stakerRewardStream().streamingWei, 1);
    }

    function test_notifyStakerReward_keepsRoundingDustStreaming() public {
        address a = addAuditor("a", 1, 300e18);
        notifyAndStream(100); // 100 wei * 1e18 / 300e18 = 0 per token: nothing can be paid yet
        assertEq(registry.pendingStakerReward(a), 0);
        assertEq(registry.stakerRewardStream().streamingWei, 100, "kept, not lost");
        notifyAndStream(200); // 300 wei: exactly 1e18 / 1e18 per token
        assertEq(registry.pendingStakerReward(a), 300);
        assertEq(registry.stakerRewardStream().streamingWei, 0);
    }

    // ------------------------------------------------------------------ solvency

    /// @dev Regression: the unallocated remainder used to be computed with a floored allocation,
    ///      which carried the fractional wei already promised to stakers into the next notification.
    ///      After a few notifications a sole staker's pending reward exceeded the ETH received and the
    ///      claim reverted.
    function test_claimStakerReward_soleStakerIsPaidAfterManyNotifications() public {
        address a = addAuditor("a", 1, 101_934_280_757_301_011_828);
        notifyAndStream(411);
        notifyAndStream(382);
        notifyAndStream(5_016);
        uint256 received = 411 + 382 + 5_016;
        assertLe(registry.pendingStakerReward(a), received, "never more than received");
        assertLe(registry.pendingStakerReward(a), address(registry).balance);
        claimAs(a);
    }

    function testFuzz_stakerReward_pendingNeverExceedsBalance(
        uint96[3] memory stakes,
        uint64[6] memory amounts,
        uint32[6] memory waits,
        uint256 claimMask
    ) public {
        address[] memory stakers = new address[](3);
        for (uint256 i; i < 3; ++i) {
            stakers[i] = addAuditor(string.concat("s", vm.toString(i)), 1, bound(stakes[i], MIN_TIER1, 1e22));
        }
        for (uint256 k; k < amounts.length; ++k) {
            uint256 amount = bound(amounts[k], 1, 1e15);
            notifyAsAudit(amount);
            vm.warp(block.timestamp + bound(waits[k], 0, 2 * PERIOD));
            if ((claimMask >> k) & 1 == 1) {
                address who = stakers[(claimMask >> (8 + k)) % 3];
                if (registry.pendingStakerReward(who) != 0) claimAs(who);
            }
            uint256 pending;
            for (uint256 i; i < 3; ++i) {
                pending += registry.pendingStakerReward(stakers[i]);
            }
            IAuditorRegistry.StakerRewardStream memory s = registry.stakerRewardStream();
            assertLe(pending + s.streamingWei + s.carriedWei, address(registry).balance, "pending rewards are backed");
        }
        streamOut();
        for (uint256 i; i < 3; ++i) {
            if (registry.pendingStakerReward(stakers[i]) != 0) claimAs(stakers[i]); // reverts if unbacked
        }
    }
}
