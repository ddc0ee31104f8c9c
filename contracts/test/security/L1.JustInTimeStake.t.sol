// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {AuditorRegistryBase} from "../AuditorRegistryBase.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";
import {ParamsLib} from "../../src/libraries/ParamsLib.sol";

/// @notice Issue L1, just-in-time staking. Three tier-1 auditors have staked 100 tokens each for
///         weeks; a session of theirs is finalized and its `distributeRewards` is pending. The
///         attacker sees it, registers with 9,700 tokens in the same block, just before it, and asks
///         to unstake in the next block.
///         On 5855ab8 the whole stakers' share was credited at once to whoever was staked at that
///         moment: the attacker took 97% of it (0.0001746 ETH of 0.00018, against 0.0000018 for each
///         auditor who had been staked all along) for twelve seconds of stake, and every session's
///         share was open to the same trick.
///         The defence asserted here: each notification is streamed over
///         `ParamsLib.STAKER_REWARD_PERIOD_SECONDS` (Synthetix StakingRewards), so stake earns only
///         for the time it is staked: the attacker's twelve seconds earn twelve seconds' worth, and
///         the auditors staked through the period take the rest.
contract L1JustInTimeStakeTest is AuditorRegistryBase {
    uint256 internal constant JIT_STAKE = 9_700e18;

    address[] internal honest;
    address internal attacker = makeAddr("attacker");
    uint256 internal sessionId;
    uint256 internal stakersWei;

    function setUp() public override {
        super.setUp();
        honest = addAuditors("t1-", 1, 3, MIN_TIER1);
        (sessionId,) = openSeatedSession();
        voteAll(sessionId, 0, true);
        audit.finalizeSegment(sessionId, 0);
        audit.finalizeTrace(sessionId);
        stakersWei = audit.session(sessionId).feeWei * 1_000 / 10_000;
        fund(attacker, JIT_STAKE);
    }

    /// @dev The attack: register in front of `distributeRewards`, ask to unstake one block later.
    function justInTime() internal {
        vm.prank(attacker);
        registry.register(1, keyOf(attacker), "ipfs://jit", JIT_STAKE);
        audit.distributeRewards(sessionId);
        vm.roll(block.number + 1);
        vm.warp(block.timestamp + 12);
        vm.prank(attacker);
        registry.requestUnstake(JIT_STAKE);
    }

    function claimed(address a) internal returns (uint256 paid) {
        if (registry.pendingStakerReward(a) == 0) return 0;
        uint256 before = a.balance;
        vm.prank(a);
        registry.claimStakerReward();
        paid = a.balance - before;
    }

    function test_L1_aJustInTimeStakerEarnsOnlyItsSeconds() public {
        justInTime();
        uint256 taken = registry.pendingStakerReward(attacker);
        emit log_named_uint("stakers' share (wei)", stakersWei);
        emit log_named_uint("taken by the just-in-time staker (wei)", taken);
        // 12 s of a 7-day stream, of which it held 97% of the stake: about 0.0019% of the share.
        uint256 bound = stakersWei * 12 / ParamsLib.STAKER_REWARD_PERIOD_SECONDS + 1;
        assertLe(taken, bound, "no more than its twelve seconds of the stream");
        assertLt(taken * 10_000, stakersWei, "under 0.01% of the stakers' share");

        // The auditors who stay staked through the period take the rest, a third each.
        vm.warp(block.timestamp + ParamsLib.STAKER_REWARD_PERIOD_SECONDS);
        assertEq(registry.pendingStakerReward(attacker), taken, "nothing more once it left");
        uint256 paid = claimed(attacker);
        for (uint256 i; i < honest.length; ++i) {
            uint256 share = claimed(honest[i]);
            // Within a wei per token of their stake: the last release's floor (left streaming).
            assertApproxEqAbs(share, (stakersWei - taken) / 3, 300, "a third of what the attacker did not take");
            paid += share;
        }
        IAuditorRegistry.StakerRewardStream memory s = registry.stakerRewardStream();
        assertEq(s.carriedWei, 0);
        assertEq(address(registry).balance, stakersWei - paid, "the registry holds what was not paid");
        assertLe(stakersWei - paid - s.streamingWei, 4, "the rest is still streaming, but for sub-wei floors");
        assertLe(s.streamingWei, 300 + 1, "under a wei per token of stake waits for the next release");
    }

    function test_L1_aLongTimeStakerEarnsItsTimeWeightedShare() public {
        audit.distributeRewards(sessionId);
        // Halfway through the stream, the attacker joins with 97% of the stake and stays.
        vm.warp(block.timestamp + ParamsLib.STAKER_REWARD_PERIOD_SECONDS / 2);
        vm.prank(attacker);
        registry.register(1, keyOf(attacker), "ipfs://late", JIT_STAKE);
        vm.warp(block.timestamp + ParamsLib.STAKER_REWARD_PERIOD_SECONDS);
        // First half: the auditors alone (1/6 each); second half: 97% to the attacker.
        uint256 half = stakersWei / 2;
        assertApproxEqAbs(registry.pendingStakerReward(attacker), half * 97 / 100, 10_000);
        for (uint256 i; i < honest.length; ++i) {
            assertApproxEqAbs(registry.pendingStakerReward(honest[i]), half / 3 + half / 100, 10_000);
        }
    }

    function test_L1_aSecondNotificationRollsTheRestIntoTheNewRate() public {
        audit.distributeRewards(sessionId);
        uint256 period = ParamsLib.STAKER_REWARD_PERIOD_SECONDS;
        vm.warp(block.timestamp + period / 4);
        IAuditorRegistry.StakerRewardStream memory before = registry.stakerRewardStream();
        notifyAsAudit(1 ether);
        IAuditorRegistry.StakerRewardStream memory s = registry.stakerRewardStream();
        assertEq(s.periodFinish, block.timestamp + period, "a new full period");
        assertEq(s.streamingWei, before.streamingWei + 1 ether, "the rest of the running period rolls in");
        assertEq(s.rateWad, s.streamingWei * 1e18 / period);
        vm.warp(block.timestamp + period);
        uint256 pending;
        for (uint256 i; i < honest.length; ++i) {
            pending += registry.pendingStakerReward(honest[i]);
        }
        assertApproxEqAbs(pending, stakersWei + 1 ether, 1_000, "all of both notifications, once the period ends");
        assertLe(pending, address(registry).balance);
    }

    function test_L1_notificationEmitsTheRateAndThePeriodEnd() public {
        uint256 period = ParamsLib.STAKER_REWARD_PERIOD_SECONDS;
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakerRewardNotified(
            stakersWei, stakersWei, stakersWei * 1e18 / period, block.timestamp + period, 0
        );
        audit.distributeRewards(sessionId);
    }

    /// @notice Conservation: whatever the stakes, notifications, waits, stake changes and claims,
    ///         every notified wei is paid out, still pending to a staker, still streaming, or carried
    ///         to the next notification (a period's release while nobody staked, and the whole-wei
    ///         remainder of a division); the only surplus is the fractions of a wei that the stakers'
    ///         floors leave, at most one wei per checkpoint, and the ETH held always covers the rest.
    function testFuzz_L1_everyNotifiedWeiIsAccountedFor(uint256 seed) public {
        address[] memory stakers = new address[](4);
        stakers[0] = honest[0];
        stakers[1] = honest[1];
        stakers[2] = honest[2];
        stakers[3] = attacker;
        uint256 notified;
        uint256 paid;
        uint256 checkpoints;
        bool attackerIn;
        for (uint256 k; k < 12; ++k) {
            uint256 r = uint256(keccak256(abi.encode(seed, k)));
            uint256 action = r % 5;
            if (action == 0) {
                uint256 amount = bound(r >> 8, 1, 10 ether);
                notifyAsAudit(amount);
                notified += amount;
            } else if (action == 1) {
                vm.warp(block.timestamp + bound(r >> 8, 1, 10 days));
            } else if (action == 2) {
                if (!attackerIn) {
                    vm.prank(attacker);
                    registry.register(1, keyOf(attacker), "ipfs://a", JIT_STAKE);
                    attackerIn = true;
                } else if (registry.auditor(attacker).stake != 0 && registry.auditor(attacker).unbonding == 0) {
                    vm.prank(attacker);
                    registry.requestUnstake(JIT_STAKE);
                }
                ++checkpoints;
            } else if (action == 3) {
                address who = stakers[(r >> 8) % 4];
                paid += claimed(who);
                ++checkpoints;
            } else {
                fund(honest[2], 1e18);
                vm.prank(honest[2]);
                registry.stake(1e18);
                ++checkpoints;
            }
            uint256 pending;
            for (uint256 i; i < stakers.length; ++i) {
                pending += registry.pendingStakerReward(stakers[i]);
            }
            IAuditorRegistry.StakerRewardStream memory s = registry.stakerRewardStream();
            uint256 accounted = paid + pending + s.streamingWei + s.carriedWei;
            assertLe(accounted, notified, "never more than notified");
            assertLe(notified - accounted, 2 * (checkpoints + k) + 4, "only sub-wei floors are not accounted");
            assertEq(address(registry).balance, notified - paid, "the registry holds what was not paid");
        }
    }
}
