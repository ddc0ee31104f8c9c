// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {AuditorRegistryBase} from "./AuditorRegistryBase.sol";
import {TRUSTAudit} from "../src/TRUSTAudit.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";

/// @notice Governance slashes (through TRUSTAudit.slashAuditor), forfeits of silent seats, and
///         claims of the forfeited tokens.
contract AuditorRegistrySlashingTest is AuditorRegistryBase {
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
        emit IAuditorRegistry.StakeForfeited(alice, 50e18, insurance, "governance");
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

    function test_slash_neverTouchesLockedStake() public {
        addAuditor("bob", 1, 150e18);
        addAuditor("carol", 1, 150e18);
        vm.prank(alice);
        registry.requestUnstake(50e18); // stake 150, unbonding 50
        (uint256 sessionId, address[] memory members) = openSeatedSession();
        assertTrue(contains(members, alice));
        assertEq(info(alice).locked, PENALTY);

        // Free stake is 150 - 8 = 142, unbonding 50: at most 192, whatever is asked (issue L3:
        // the slash takes what is there rather than reverting).
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakeForfeited(alice, 192e18, insurance, "governance");
        vm.expectEmit(true, true, true, true, address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, alice, 192e18);
        slash(alice, 193e18);
        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertEq(a.stake, PENALTY, "only the locked stake is left");
        assertEq(a.locked, PENALTY);
        assertEq(a.unbonding, 0);
        assertEq(registry.claimableTokens(insurance), 192e18);
        assertEq(registry.eligibleCount(1), 2, "below the minimum: no longer drawn");
        // Nothing within reach: a further slash takes nothing.
        vm.expectEmit(true, true, true, true, address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, alice, 0);
        slash(alice, 1);
        assertEq(info(alice).stake, PENALTY);
        assertEq(registry.claimableTokens(insurance), 192e18);

        // The seat is still backed: it settles normally.
        settleAligned(sessionId);
        a = info(alice);
        assertEq(a.locked, 0);
        assertEq(a.stake, PENALTY);
    }

    /// @notice Asked for more than its stake and unbonding stake, a slash takes all of both.
    function test_slash_takesWhatIsThereWhenAskedForMore() public {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.StakeForfeited(alice, 200e18, insurance, "governance");
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

    function test_settlement_silentSeatsForfeitTheirLock() public {
        address bob = addAuditor("bob", 1, 150e18);
        address carol = addAuditor("carol", 1, 150e18);
        (uint256 sessionId,) = openSeatedSession();
        toRevealEnd(sessionId, 0);
        audit.finalizeSegment(sessionId, 0); // nobody revealed: escalates, every seat forfeits
        assertEq(registry.stakeOf(alice), 200e18 - PENALTY);
        assertEq(registry.stakeOf(bob), 150e18 - PENALTY);
        assertEq(registry.stakeOf(carol), 150e18 - PENALTY);
        assertEq(info(alice).locked, 0);
        assertEq(registry.reputationOf(alice), 0.45e18, "reputation down (eq. 3.8)");
        assertEq(registry.claimableTokens(insurance), 3 * PENALTY);
        assertEq(registry.totalStake(), 500e18 - 3 * PENALTY);
        assertEq(token.balanceOf(address(registry)), 500e18);
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
