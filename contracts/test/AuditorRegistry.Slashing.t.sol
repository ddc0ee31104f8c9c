// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {AuditorRegistryDrawBase} from "./AuditorRegistryDrawBase.sol";
import {TRUSTAudit} from "../src/TRUSTAudit.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {ReputationLib} from "../src/libraries/ReputationLib.sol";
import {DrawRequest, SeatOutcome, SeatSettlement, SettlementTerms} from "../src/types/Settlement.sol";

/// @notice Governance slashes (through TRUSTAudit.slashAuditor), forfeits of silent seats (a seat
///         of `units` draws locked and forfeits units * P, issue L2), settlement, and claims of
///         the forfeited tokens.
contract AuditorRegistrySlashingTest is AuditorRegistryDrawBase {
    address internal alice;

    function setUp() public override {
        super.setUp();
        alice = addAuditor("alice", 1, 200e18);
    }

    function slash(address a, uint256 amount) internal {
        audit.slashAuditor(a, amount, "governance");
    }

    // ------------------------------------------------------------------ slash

    function test_slash_takesUnlockedStakeForTheInsuranceFund() public {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakeForfeited(alice, 50e18, insurance, "governance", 150e18, 0);
        vm.expectEmit(true, true, true, true, address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, alice, 50e18);
        slash(alice, 50e18);
        assertEq(registry.stakeOf(alice), 150e18);
        assertEq(registry.totalStake(), 150e18);
        assertEq(registry.eligibleStake(1), 150e18);
        assertEq(registry.claimableTokens(insurance), 50e18);
        assertEq(token.balanceOf(address(registry)), 200e18, "the tokens stay until claimed");
    }

    function test_slash_takesUnbondingAfterUnlockedStake() public {
        vm.prank(alice);
        registry.requestUnstake(50e18); // stake 150, unbonding 50
        // The event says where the tokens came from: the stake and unbonding left after it.
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakeForfeited(alice, 170e18, insurance, "governance", 0, 30e18);
        slash(alice, 170e18);
        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertEq(a.stake, 0);
        assertEq(a.unbonding, 30e18);
        assertEq(registry.totalStake(), 0);
        assertEq(registry.claimableTokens(insurance), 170e18);
    }

    function test_slash_unbondingOnlyAfterFullExit() public {
        vm.prank(alice);
        registry.requestUnstake(200e18);
        slash(alice, 200e18);
        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertEq(a.stake, 0);
        assertEq(a.unbonding, 0);
        vm.warp(block.timestamp + UNBONDING);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingUnbonding.selector, alice));
        vm.prank(alice);
        registry.executeUnstake();
    }

    /// @notice Alice, the only tier-1 auditor, holds one seat of three units: 3P = 24 locked.
    function test_slash_neverTouchesLockedStake() public {
        vm.prank(alice);
        registry.requestUnstake(50e18); // stake 150, unbonding 50
        (uint256 sessionId, address[] memory members) = openSeatedSession();
        assertEq(members.length, 1);
        assertEq(members[0], alice);
        assertEq(audit.seat(sessionId, 0, 0, 0).weight, 3, "one seat of three units");
        assertEq(info(alice).locked, 3 * PENALTY);

        // Free stake is 150 - 24 = 126, unbonding 50: at most 176, whatever is asked (issue L3:
        // the slash takes what is there rather than reverting).
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakeForfeited(alice, 176e18, insurance, "governance", 3 * PENALTY, 0);
        vm.expectEmit(true, true, true, true, address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, alice, 176e18);
        slash(alice, 193e18);
        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertEq(a.stake, 3 * PENALTY, "only the locked stake is left");
        assertEq(a.locked, 3 * PENALTY);
        assertEq(a.unbonding, 0);
        assertEq(registry.claimableTokens(insurance), 176e18);
        assertEq(registry.eligibleCount(1), 0, "below the minimum: no longer drawn");
        // Nothing within reach: a further slash takes nothing.
        vm.expectEmit(true, true, true, true, address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, alice, 0);
        slash(alice, 1);
        assertEq(info(alice).stake, 3 * PENALTY);
        assertEq(registry.claimableTokens(insurance), 176e18);

        // The seat is still backed: it settles normally.
        settleAligned(sessionId);
        a = info(alice);
        assertEq(a.locked, 0);
        assertEq(a.stake, 3 * PENALTY);
    }

    /// @notice Asked for more than its stake and unbonding stake, a slash takes all of both.
    function test_slash_takesWhatIsThereWhenAskedForMore() public {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakeForfeited(alice, 200e18, insurance, "governance", 0, 0);
        vm.expectEmit(true, true, true, true, address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, alice, 200e18);
        slash(alice, 200e18 + 1);
        assertEq(registry.stakeOf(alice), 0);
        assertEq(registry.claimableTokens(insurance), 200e18);
        assertEq(registry.eligibleCount(1), 0);
    }

    /// @notice The slash returns what it took (the audit contract reports it in AuditorSlashed).
    function test_slash_returnsWhatItTook() public {
        vm.prank(address(audit));
        assertEq(registry.slash(alice, 50e18, insurance, "direct"), 50e18);
        vm.prank(address(audit));
        assertEq(registry.slash(alice, 1_000e18, insurance, "direct"), 150e18);
        vm.prank(address(audit));
        assertEq(registry.slash(alice, 1, insurance, "direct"), 0);
        assertEq(registry.claimableTokens(insurance), 200e18);
    }

    function testFuzz_slash_takesUnlockedThenUnbonding(uint256 unbond, uint256 amount) public {
        unbond = bound(unbond, 1, 100e18);
        vm.prank(alice);
        registry.requestUnstake(unbond);
        uint256 stakeBefore = 200e18 - unbond;
        uint256 available = 200e18;
        amount = bound(amount, 1, available + 1e18);
        uint256 taken = amount < available ? amount : available;
        vm.expectEmit(true, true, true, true, address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, alice, taken);
        slash(alice, amount);
        uint256 fromStake = taken < stakeBefore ? taken : stakeBefore;
        assertEq(registry.stakeOf(alice), stakeBefore - fromStake);
        assertEq(info(alice).unbonding, unbond - (taken - fromStake));
        assertEq(registry.claimableTokens(insurance), taken);
        assertEq(registry.totalStake(), stakeBefore - fromStake);
    }

    function test_slash_revertsForZeroAmount() public {
        vm.expectRevert(IAuditorRegistry.RegistryZeroAmount.selector);
        slash(alice, 0);
    }

    function test_slash_revertsWhenNotRegistered() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotRegistered.selector, stranger));
        slash(stranger, 1);
    }

    function test_slashAuditor_revertsForNonOwner() public {
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, stranger));
        vm.prank(stranger);
        audit.slashAuditor(alice, 1, "no");
    }

    function test_slash_creditsTheCurrentInsuranceFund() public {
        address fund2 = makeAddr("fund2");
        params.setRecipients(treasury, fund2);
        slash(alice, 10e18);
        assertEq(registry.claimableTokens(fund2), 10e18);
        assertEq(registry.claimableTokens(insurance), 0);
    }

    function test_slash_onlyThroughTimelockAfterHandover() public {
        handToTimelock();
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, address(this)));
        slash(alice, 1e18);
        governed(address(audit), abi.encodeCall(TRUSTAudit.slashAuditor, (alice, 1e18, "governance")));
        assertEq(registry.stakeOf(alice), 199e18);
    }

    // ------------------------------------------------------------------ forfeits of silent seats

    /// @notice Nobody reveals: every seat forfeits its units * P (the units add up to the three
    ///         draws, so 3P in all), each seated auditor's reputation moves down once, whatever its
    ///         units, and nobody else is touched.
    function test_settlement_silentSeatsForfeitTheirLock() public {
        address bob = addAuditor("bob", 1, 150e18);
        address carol = addAuditor("carol", 1, 150e18);
        (uint256 sessionId,) = openSeatedSession();
        (address[] memory members, uint96[] memory units) = seatUnits(sessionId, 0);
        assertCommittee(members, units, 3);
        toRevealEnd(sessionId, 0);
        for (uint256 i; i < members.length; ++i) {
            uint256 stakeAfter = registry.stakeOf(members[i]) - units[i] * PENALTY;
            vm.expectEmit(true, true, true, true, address(registry));
            emit IAuditorRegistry.StakeForfeited(members[i], units[i] * PENALTY, insurance, "no reveal", stakeAfter, 0);
        }
        for (uint256 i; i < members.length; ++i) {
            vm.expectEmit(true, true, true, true, address(audit));
            emit ITRUSTAudit.AuditorSlashed(sessionId, members[i], units[i] * PENALTY);
        }
        audit.finalizeSegment(sessionId, 0); // nobody revealed: escalates, every seat forfeits
        address[3] memory everyone = [alice, bob, carol];
        uint256[3] memory staked = [uint256(200e18), 150e18, 150e18];
        for (uint256 k; k < 3; ++k) {
            uint256 u = unitsIn(members, units, everyone[k]);
            assertEq(registry.stakeOf(everyone[k]), staked[k] - u * PENALTY, "forfeits units * P");
            assertEq(info(everyone[k]).locked, 0);
            assertEq(registry.reputationOf(everyone[k]), u == 0 ? 0.5e18 : 0.45e18, "down once per seat (eq. 3.8)");
        }
        assertEq(registry.claimableTokens(insurance), 3 * PENALTY);
        assertEq(registry.totalStake(), 500e18 - 3 * PENALTY);
        assertEq(token.balanceOf(address(registry)), 500e18);
    }

    /// @notice Alice alone backs all three draws: one seat of weight 3 that locked 3P. Silent, it
    ///         forfeits 3P in one forfeit (one event each, carrying 3P) and its reputation moves
    ///         down once, as one seat's.
    function test_settlement_aSilentSeatOfThreeUnitsForfeitsThreeLocks() public {
        (uint256 sessionId, address[] memory members) = openSeatedSession();
        assertEq(members.length, 1);
        assertEq(members[0], alice);
        assertEq(audit.seat(sessionId, 0, 0, 0).weight, 3);
        assertEq(info(alice).locked, 3 * PENALTY);
        toRevealEnd(sessionId, 0);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakeForfeited(alice, 3 * PENALTY, insurance, "no reveal", 200e18 - 3 * PENALTY, 0);
        vm.expectEmit(true, true, true, true, address(audit));
        emit ITRUSTAudit.AuditorSlashed(sessionId, alice, 3 * PENALTY);
        audit.finalizeSegment(sessionId, 0);
        assertEq(registry.stakeOf(alice), 200e18 - 3 * PENALTY);
        assertEq(info(alice).locked, 0);
        assertEq(registry.reputationOf(alice), 0.45e18, "one seat: one step down");
        assertEq(registry.claimableTokens(insurance), 3 * PENALTY);
        assertEq(registry.totalStake(), 200e18 - 3 * PENALTY);
    }

    /// @notice `settleSeats` with units, called as the audit contract on a seat of three units
    ///         (alice alone, 3P locked): aligned, it unlocks 3P and forfeits nothing; silent, it
    ///         forfeits 3P; misaligned under p_slash (roll 0), 3P; misaligned above it (roll
    ///         9,999), nothing; released, nothing and no reputation change. Each unlocks 3P.
    function test_settleSeats_unlocksAndForfeitsUnitsTimesTheLock() public {
        SettlementTerms memory terms = SettlementTerms({
            lockPerSeat: PENALTY, gammaWad: 0.1e18, pMinBps: 3_500, pMaxBps: 5_000, beneficiary: insurance
        });
        SeatOutcome[5] memory outcomes = [
            SeatOutcome.Aligned,
            SeatOutcome.Silent,
            SeatOutcome.Misaligned,
            SeatOutcome.Misaligned,
            SeatOutcome.Released
        ];
        uint16[5] memory rolls = [uint16(0), 0, 0, 9_999, 0];
        bool[5] memory forfeits = [false, true, true, false, false];
        uint256 stakeNow = 200e18;
        uint256 forfeited;
        for (uint256 k; k < outcomes.length; ++k) {
            vm.roll(block.number + 1);
            (address[] memory members, uint96[] memory units) =
                requestDraw(drawRequest(1, block.number - 1, 3, keccak256(abi.encode("units", k)), address(0), PENALTY));
            assertEq(members[0], alice);
            assertEq(units[0], 3);
            assertEq(info(alice).locked, 3 * PENALTY);
            uint64 reputation = uint64(registry.reputationOf(alice));
            SeatSettlement[] memory seats = new SeatSettlement[](1);
            seats[0] = SeatSettlement({auditor: alice, outcome: outcomes[k], slashRollBps: rolls[k], units: 3});
            if (forfeits[k]) {
                vm.expectEmit(true, true, true, true, address(registry));
                emit IAuditorRegistry.StakeForfeited(
                    alice,
                    3 * PENALTY,
                    insurance,
                    k == 1 ? "no reveal" : "vote against consensus",
                    stakeNow - 3 * PENALTY,
                    0
                );
            }
            vm.prank(address(audit));
            uint256 mask = registry.settleSeats(seats, terms);
            assertEq(mask, forfeits[k] ? 1 : 0, "forfeit mask");
            if (forfeits[k]) {
                stakeNow -= 3 * PENALTY;
                forfeited += 3 * PENALTY;
            }
            assertEq(info(alice).locked, 0, "unlocks units * P");
            assertEq(registry.stakeOf(alice), stakeNow, "forfeits units * P, or nothing");
            assertEq(registry.claimableTokens(insurance), forfeited);
            if (outcomes[k] == SeatOutcome.Released) {
                assertEq(registry.reputationOf(alice), reputation);
            } else {
                assertEq(
                    registry.reputationOf(alice), ReputationLib.update(reputation, 0.1e18, k == 0), "one step (eq. 3.8)"
                );
            }
        }
        assertEq(registry.totalStake(), 200e18 - forfeited);
    }

    // ------------------------------------------------------------------ claimTokens

    function test_claimTokens_paysTheBeneficiary() public {
        slash(alice, 30e18);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.TokensClaimed(insurance, 30e18);
        vm.prank(insurance);
        registry.claimTokens();
        assertEq(token.balanceOf(insurance), 30e18);
        assertEq(registry.claimableTokens(insurance), 0);
        assertEq(token.balanceOf(address(registry)), 170e18);
        assertEq(registry.stakeOf(alice), 170e18);
    }

    function test_claimTokens_revertsWithNothingToClaim() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingToClaim.selector, insurance));
        vm.prank(insurance);
        registry.claimTokens();
    }

    function test_claimTokens_revertsOnSecondClaim() public {
        slash(alice, 30e18);
        vm.prank(insurance);
        registry.claimTokens();
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingToClaim.selector, insurance));
        vm.prank(insurance);
        registry.claimTokens();
    }

    function test_claimTokens_accumulatesSlashesAndForfeits() public {
        addAuditor("bob", 1, 150e18);
        addAuditor("carol", 1, 150e18);
        (uint256 sessionId,) = openSeatedSession();
        slash(alice, 20e18);
        toRevealEnd(sessionId, 0);
        audit.finalizeSegment(sessionId, 0);
        assertEq(registry.claimableTokens(insurance), 20e18 + 3 * PENALTY);
        vm.prank(insurance);
        registry.claimTokens();
        assertEq(token.balanceOf(insurance), 20e18 + 3 * PENALTY);
    }
}
