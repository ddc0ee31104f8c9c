// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";
import {ERC1967Proxy} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol";
import {Initializable} from "@openzeppelin/contracts/proxy/utils/Initializable.sol";

import {AuditorRegistryBase} from "./AuditorRegistryBase.sol";
import {AuditorRegistry} from "../src/AuditorRegistry.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {IProtocolParams} from "../src/interfaces/IProtocolParams.sol";

/// @notice Deployment, registration, profiles and views of the auditor registry.
contract AuditorRegistryRegistrationTest is AuditorRegistryBase {
    address internal alice = makeAddr("alice");

    function registerAs(address a, uint8 tier, uint256 amount) internal {
        vm.prank(a);
        registry.register(tier, keyOf(a), "ipfs://profile", amount);
    }

    // ------------------------------------------------------------------ initialize

    function test_initialize_setsOwnerTokenParamsAndNoAuditContract() public {
        AuditorRegistry fresh = AuditorRegistry(
            address(
                new ERC1967Proxy(
                    address(new AuditorRegistry()),
                    abi.encodeCall(AuditorRegistry.initialize, (governor, token, IProtocolParams(address(params))))
                )
            )
        );
        assertEq(fresh.owner(), governor);
        assertEq(fresh.stakingToken(), address(token));
        assertEq(fresh.protocolParams(), address(params));
        assertEq(fresh.auditContract(), address(0));
        assertEq(fresh.totalStake(), 0);
    }

    function test_initialize_revertsForZeroToken() public {
        address impl = address(new AuditorRegistry());
        vm.expectRevert(IAuditorRegistry.RegistryZeroAddress.selector);
        new ERC1967Proxy(
            impl, abi.encodeCall(AuditorRegistry.initialize, (governor, IERC20(address(0)), IProtocolParams(address(params))))
        );
    }

    function test_initialize_revertsForZeroParams() public {
        address impl = address(new AuditorRegistry());
        vm.expectRevert(IAuditorRegistry.RegistryZeroAddress.selector);
        new ERC1967Proxy(impl, abi.encodeCall(AuditorRegistry.initialize, (governor, token, IProtocolParams(address(0)))));
    }

    function test_initialize_revertsWhenCalledAgain() public {
        vm.expectRevert(Initializable.InvalidInitialization.selector);
        registry.initialize(stranger, token, IProtocolParams(address(params)));
    }

    // ------------------------------------------------------------------ register

    function test_register_tier1() public {
        fund(alice, MIN_TIER1);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.AuditorRegistered(alice, 1, keyOf(alice), "ipfs://alice");
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.Staked(alice, MIN_TIER1, MIN_TIER1, MIN_TIER1);
        vm.prank(alice);
        registry.register(1, keyOf(alice), "ipfs://alice", MIN_TIER1);

        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertTrue(a.registered);
        assertEq(a.tier, 1);
        assertTrue(a.available, "starts available");
        assertFalse(a.credentialed);
        assertEq(a.stake, MIN_TIER1);
        assertEq(a.locked, 0);
        assertEq(a.unbonding, 0);
        assertEq(a.unbondingReadyAt, 0);
        assertEq(a.reputationWad, 0.5e18, "initial reputation");
        assertEq(a.encryptionKey, keyOf(alice));
        assertEq(a.metadataURI, "ipfs://alice");
        assertEq(token.balanceOf(alice), 0);
        assertEq(token.balanceOf(address(registry)), MIN_TIER1);
        assertEq(registry.totalStake(), MIN_TIER1);
        assertEq(registry.eligibleCount(1), 1);
        assertEq(registry.eligibleStake(1), MIN_TIER1);
        assertEq(registry.eligibleCount(2), 0);
    }

    function test_register_tier2() public {
        fund(alice, 1_500e18);
        registerAs(alice, 2, 1_500e18);
        assertEq(info(alice).tier, 2);
        assertEq(registry.stakeOf(alice), 1_500e18);
        assertEq(registry.eligibleCount(2), 1);
        assertEq(registry.eligibleStake(2), 1_500e18);
        assertEq(registry.eligibleStake(1), 0);
    }

    function test_register_tier3WithCredential() public {
        registry.grantCredential(alice);
        fund(alice, MIN_TIER3);
        registerAs(alice, 3, MIN_TIER3);
        IAuditorRegistry.AuditorInfo memory a = info(alice);
        assertEq(a.tier, 3);
        assertTrue(a.credentialed);
        assertEq(registry.eligibleCount(3), 1);
        assertEq(registry.eligibleStake(3), MIN_TIER3);
    }

    function test_register_totalStakeAddsUpAcrossTiers() public {
        addAuditor("t1", 1, 150e18);
        addAuditor("t2", 2, 1_200e18);
        addAuditor("t3", 3, 12_000e18);
        assertEq(registry.totalStake(), 150e18 + 1_200e18 + 12_000e18);
        assertEq(token.balanceOf(address(registry)), registry.totalStake());
    }

    function test_register_revertsForTierZero() public {
        fund(alice, MIN_TIER1);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryUnknownTier.selector, 0));
        registerAs(alice, 0, MIN_TIER1);
    }

    function test_register_revertsForTierFour() public {
        fund(alice, MIN_TIER3);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryUnknownTier.selector, 4));
        registerAs(alice, 4, MIN_TIER3);
    }

    function testFuzz_register_revertsForUnknownTier(uint8 tier) public {
        tier = uint8(bound(tier, 4, type(uint8).max));
        fund(alice, MIN_TIER3);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryUnknownTier.selector, tier));
        registerAs(alice, tier, MIN_TIER3);
    }

    function test_register_revertsForZeroEncryptionKey() public {
        fund(alice, MIN_TIER1);
        vm.expectRevert(IAuditorRegistry.RegistryZeroEncryptionKey.selector);
        vm.prank(alice);
        registry.register(1, bytes32(0), "ipfs://alice", MIN_TIER1);
    }

    function test_register_revertsForTier3WithoutCredential() public {
        fund(alice, MIN_TIER3);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCredentialRequired.selector, alice, 3));
        registerAs(alice, 3, MIN_TIER3);
    }

    function test_register_revertsForTier3AfterCredentialRevoked() public {
        registry.grantCredential(alice);
        registry.revokeCredential(alice);
        fund(alice, MIN_TIER3);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryCredentialRequired.selector, alice, 3));
        registerAs(alice, 3, MIN_TIER3);
    }

    function test_register_revertsBelowTier1Minimum() public {
        fund(alice, MIN_TIER1);
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryInsufficientStake.selector, alice, MIN_TIER1 - 1, MIN_TIER1)
        );
        registerAs(alice, 1, MIN_TIER1 - 1);
    }

    function test_register_revertsBelowTier2Minimum() public {
        fund(alice, MIN_TIER2);
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryInsufficientStake.selector, alice, 999e18, MIN_TIER2)
        );
        registerAs(alice, 2, 999e18);
    }

    function test_register_revertsBelowTier3Minimum() public {
        registry.grantCredential(alice);
        fund(alice, MIN_TIER3);
        vm.expectRevert(
            abi.encodeWithSelector(IAuditorRegistry.RegistryInsufficientStake.selector, alice, MIN_TIER2, MIN_TIER3)
        );
        registerAs(alice, 3, MIN_TIER2);
    }

    function test_register_revertsForZeroAmount() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryInsufficientStake.selector, alice, 0, MIN_TIER1));
        registerAs(alice, 1, 0);
    }

    function testFuzz_register_belowMinimumReverts(uint8 tier, uint256 amount) public {
        tier = uint8(bound(tier, 1, 3));
        uint256 needed = tier == 1 ? MIN_TIER1 : tier == 2 ? MIN_TIER2 : MIN_TIER3;
        amount = bound(amount, 0, needed - 1);
        registry.grantCredential(alice);
        fund(alice, needed);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryInsufficientStake.selector, alice, amount, needed));
        registerAs(alice, tier, amount);
    }

    function testFuzz_register_atOrAboveMinimumStakesExactly(uint8 tier, uint256 amount) public {
        tier = uint8(bound(tier, 1, 3));
        uint256 needed = tier == 1 ? MIN_TIER1 : tier == 2 ? MIN_TIER2 : MIN_TIER3;
        amount = bound(amount, needed, type(uint96).max);
        registry.grantCredential(alice);
        fund(alice, amount);
        registerAs(alice, tier, amount);
        assertEq(registry.stakeOf(alice), amount);
        assertEq(registry.eligibleStake(tier), amount);
        assertEq(token.balanceOf(address(registry)), amount);
    }

    function test_register_revertsAboveUint96() public {
        uint256 amount = uint256(type(uint96).max) + 1;
        fund(alice, amount);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryStakeOverflow.selector, alice, amount));
        registerAs(alice, 1, amount);
    }

    function test_register_revertsTwice() public {
        fund(alice, 2 * MIN_TIER1);
        registerAs(alice, 1, MIN_TIER1);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryAlreadyRegistered.selector, alice));
        registerAs(alice, 1, MIN_TIER1);
    }

    function test_register_revertsTwiceEvenInAnotherTier() public {
        fund(alice, MIN_TIER1 + MIN_TIER2);
        registerAs(alice, 1, MIN_TIER1);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryAlreadyRegistered.selector, alice));
        registerAs(alice, 2, MIN_TIER2);
    }

    function test_register_revertsAgainAfterFullExit() public {
        fund(alice, 2 * MIN_TIER1);
        registerAs(alice, 1, MIN_TIER1);
        vm.prank(alice);
        registry.requestUnstake(MIN_TIER1);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryAlreadyRegistered.selector, alice));
        registerAs(alice, 1, MIN_TIER1);
    }

    function test_register_revertsWithoutAllowance() public {
        token.transfer(alice, MIN_TIER1);
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(registry), 0, MIN_TIER1
            )
        );
        registerAs(alice, 1, MIN_TIER1);
    }

    // ------------------------------------------------------------------ updateProfile

    function test_updateProfile_replacesKeyAndMetadata() public {
        fund(alice, MIN_TIER1);
        registerAs(alice, 1, MIN_TIER1);
        bytes32 key = keccak256("new key");
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.ProfileUpdated(alice, key, "ipfs://new");
        vm.prank(alice);
        registry.updateProfile(key, "ipfs://new");
        assertEq(registry.encryptionKeyOf(alice), key);
        assertEq(info(alice).metadataURI, "ipfs://new");
        assertEq(registry.stakeOf(alice), MIN_TIER1, "stake untouched");
    }

    function test_updateProfile_revertsForZeroKey() public {
        fund(alice, MIN_TIER1);
        registerAs(alice, 1, MIN_TIER1);
        vm.expectRevert(IAuditorRegistry.RegistryZeroEncryptionKey.selector);
        vm.prank(alice);
        registry.updateProfile(bytes32(0), "ipfs://new");
    }

    function test_updateProfile_revertsWhenNotRegistered() public {
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotRegistered.selector, stranger));
        vm.prank(stranger);
        registry.updateProfile(keccak256("k"), "ipfs://x");
    }

    // ------------------------------------------------------------------ views

    function test_views_unknownAccountIsEmpty() public view {
        IAuditorRegistry.AuditorInfo memory a = info(stranger);
        assertFalse(a.registered);
        assertEq(a.tier, 0);
        assertEq(a.stake, 0);
        assertEq(registry.reputationOf(stranger), 0);
        assertEq(registry.stakeOf(stranger), 0);
        assertEq(registry.encryptionKeyOf(stranger), bytes32(0));
        assertEq(registry.pendingStakerReward(stranger), 0);
        assertEq(registry.claimableTokens(stranger), 0);
    }

    function test_views_matchTheAuditorRecord() public {
        address a = addAuditor("viewed", 2, 1_234e18);
        assertEq(registry.reputationOf(a), info(a).reputationWad);
        assertEq(registry.stakeOf(a), 1_234e18);
        assertEq(registry.encryptionKeyOf(a), keyOf(a));
        assertEq(registry.stakingToken(), address(token));
        assertEq(registry.auditContract(), address(audit));
        assertEq(registry.protocolParams(), address(params));
    }
}
