// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC1967Utils} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Utils.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts/proxy/utils/UUPSUpgradeable.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {AuditorRegistryBase} from "./AuditorRegistryBase.sol";
import {AuditorRegistry} from "../src/AuditorRegistry.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {DrawRequest, SeatOutcome, SeatSettlement, SettlementTerms} from "../src/types/Settlement.sol";
import {Params} from "../src/types/Params.sol";
import {AuditorRegistryUpgradeTarget, NotUpgradeable} from "./mocks/UpgradeTargets.sol";

/// @notice Credentials, the audit-contract pointer, the audit-only entry points and upgrades.
contract AuditorRegistryGovernanceTest is AuditorRegistryBase {
    address internal alice = makeAddr("alice");

    function implementationOf(address proxy) internal view returns (address) {
        return address(uint160(uint256(vm.load(proxy, ERC1967Utils.IMPLEMENTATION_SLOT))));
    }

    function expectNotOwner(address caller) internal {
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, caller));
    }

    // ------------------------------------------------------------------ credentials

    function test_grantCredential_setsTheFlagAndEmits() public {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CredentialGranted(alice);
        registry.grantCredential(alice);
        assertTrue(info(alice).credentialed);
        assertFalse(info(alice).registered, "a credential does not register");
    }

    function test_grantCredential_revertsForNonOwner() public {
        expectNotOwner(stranger);
        vm.prank(stranger);
        registry.grantCredential(alice);
    }

    function test_grantCredential_revertsForZeroAddress() public {
        vm.expectRevert(IAuditorRegistry.RegistryZeroAddress.selector);
        registry.grantCredential(address(0));
    }

    function test_revokeCredential_clearsTheFlagAndEmits() public {
        registry.grantCredential(alice);
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.CredentialRevoked(alice);
        registry.revokeCredential(alice);
        assertFalse(info(alice).credentialed);
    }

    function test_revokeCredential_revertsForNonOwner() public {
        registry.grantCredential(alice);
        expectNotOwner(stranger);
        vm.prank(stranger);
        registry.revokeCredential(alice);
    }

    function test_revokeCredential_removesTier3DrawWeight() public {
        address human = addAuditor("human", 3, 12_000e18);
        assertEq(registry.eligibleCount(3), 1);
        registry.revokeCredential(human);
        assertEq(registry.eligibleCount(3), 0);
        assertEq(registry.eligibleStake(3), 0);
        assertEq(registry.stakeOf(human), 12_000e18, "the stake stays");
        registry.grantCredential(human);
        assertEq(registry.eligibleCount(3), 1);
        assertEq(registry.eligibleStake(3), 12_000e18);
    }

    /// @notice A revoked human is never drawn: with one of six revoked, the five draws of a tier-3
    ///         committee seat every other human, one unit each.
    /// @dev The subject is the credential, not the draw: with P = 6,000 each human of 10,000 backs
    ///      exactly one unit, so a human drawn again leaves the draw and the five draws seat five
    ///      distinct humans (sampling without replacement, issue L2's fixture). The lower tiers'
    ///      minimums rise with P, which every tier's minimum must back.
    function test_revokeCredential_revokedTier3AuditorIsNotDrawn() public {
        Params memory p = defaultParams();
        (p.penaltyPerSeat, p.minStakeTier1, p.minStakeTier2) = (6_000e18, 6_000e18, 6_000e18);
        params.setParams(p);
        address[] memory humans = addAuditors("human", 3, 6, 10_000e18);
        registry.revokeCredential(humans[2]);
        assertEq(registry.eligibleCount(3), 5);
        uint256 sessionId = openSession(uniformSegments(1, 3)); // tier 3: five draws
        drawAll(sessionId);
        address[] memory members = audit.committee(sessionId, 0);
        assertEq(members.length, 5);
        assertFalse(contains(members, humans[2]));
        assertEq(info(humans[2]).locked, 0);
        for (uint256 i; i < humans.length; ++i) {
            if (i == 2) continue;
            assertTrue(contains(members, humans[i]), "every other human is seated");
            assertEq(info(humans[i]).locked, 6_000e18, "one unit each");
        }
    }

    function test_revokeCredential_hasNoEffectBelowTier3() public {
        address llm = addAuditor("llm", 2, 1_000e18);
        registry.grantCredential(llm);
        registry.revokeCredential(llm);
        assertEq(registry.eligibleCount(2), 1);
        assertEq(registry.eligibleStake(2), 1_000e18);
    }

    function test_credentials_onlyThroughTimelockAfterHandover() public {
        handToTimelock();
        expectNotOwner(address(this));
        registry.grantCredential(alice);
        governed(address(registry), abi.encodeCall(AuditorRegistry.grantCredential, (alice)));
        assertTrue(info(alice).credentialed);
        governed(address(registry), abi.encodeCall(AuditorRegistry.revokeCredential, (alice)));
        assertFalse(info(alice).credentialed);
    }

    // ------------------------------------------------------------------ setAuditContract

    function test_setAuditContract_replacesAndEmits() public {
        vm.expectEmit(true, true, true, true, address(registry));
        emit IAuditorRegistry.AuditContractChanged(address(audit), stranger);
        registry.setAuditContract(stranger);
        assertEq(registry.auditContract(), stranger);
    }

    function test_setAuditContract_revertsForZeroAddress() public {
        vm.expectRevert(IAuditorRegistry.RegistryZeroAddress.selector);
        registry.setAuditContract(address(0));
    }

    function test_setAuditContract_revertsForNonOwner() public {
        expectNotOwner(stranger);
        vm.prank(stranger);
        registry.setAuditContract(stranger);
    }

    function test_setAuditContract_cutsOffThePreviousAuditContract() public {
        addAuditors("t1-", 1, 3, 100e18);
        uint256 sessionId = openSession(uniformSegments(1, 1));
        registry.setAuditContract(stranger);
        vm.roll(audit.session(sessionId).randomnessBlock + 1);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotAuditContract.selector, address(audit)));
        audit.assignAuditors(sessionId, 0);
    }

    // ------------------------------------------------------------------ audit-only entry points

    function test_drawCommittee_revertsForOthers() public {
        addAuditors("t1-", 1, 3, 100e18);
        DrawRequest memory request = DrawRequest({
            tier: 1,
            size: 3,
            seed: bytes32(0),
            snapshotBlock: block.number - 1,
            excluded: address(0),
            lockPerSeat: PENALTY
        });
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotAuditContract.selector, address(this)));
        registry.drawCommittee(request);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotAuditContract.selector, stranger));
        vm.prank(stranger);
        registry.drawCommittee(request);
    }

    function test_settleSeats_revertsForOthers() public {
        address a = addAuditor("a", 1, 100e18);
        SeatSettlement[] memory seats = new SeatSettlement[](1);
        seats[0] = SeatSettlement({auditor: a, outcome: SeatOutcome.Silent, slashRollBps: 0, units: 1});
        SettlementTerms memory terms = SettlementTerms({
            lockPerSeat: PENALTY, gammaWad: 0.1e18, pMinBps: 3_500, pMaxBps: 5_000, beneficiary: stranger
        });
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotAuditContract.selector, stranger));
        vm.prank(stranger);
        registry.settleSeats(seats, terms);
    }

    function test_slash_revertsForOthers() public {
        address a = addAuditor("a", 1, 100e18);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotAuditContract.selector, address(this)));
        registry.slash(a, 1, address(this), "owner of the registry, not the audit contract");
        assertEq(registry.stakeOf(a), 100e18);
    }

    function test_notifyStakerReward_revertsForOthers() public {
        vm.deal(stranger, 1 ether);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotAuditContract.selector, stranger));
        vm.prank(stranger);
        registry.notifyStakerReward{value: 1 ether}();
    }

    function test_auditOnly_followsTheNewAuditContract() public {
        address a = addAuditor("a", 1, 100e18);
        registry.setAuditContract(stranger);
        vm.prank(stranger);
        registry.slash(a, 1e18, stranger, "new audit contract");
        assertEq(registry.claimableTokens(stranger), 1e18);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNotAuditContract.selector, address(audit)));
        vm.prank(address(audit));
        registry.slash(a, 1e18, stranger, "old audit contract");
    }

    // ------------------------------------------------------------------ UUPS upgrade

    function test_upgrade_byOwnerKeepsState() public {
        address a = addAuditor("a", 2, 1_500e18);
        address next = address(new AuditorRegistryUpgradeTarget());
        registry.upgradeToAndCall(next, "");
        assertEq(implementationOf(address(registry)), next);
        assertEq(AuditorRegistryUpgradeTarget(address(registry)).upgradeMarker(), 2);
        assertEq(registry.stakeOf(a), 1_500e18);
        assertEq(registry.eligibleStake(2), 1_500e18);
        assertEq(registry.auditContract(), address(audit));
        assertEq(registry.owner(), address(this));
    }

    function test_upgrade_revertsForNonOwner() public {
        address before = implementationOf(address(registry));
        address next = address(new AuditorRegistryUpgradeTarget());
        expectNotOwner(stranger);
        vm.prank(stranger);
        registry.upgradeToAndCall(next, "");
        assertEq(implementationOf(address(registry)), before);
    }

    function test_upgrade_revertsForTheAuditContract() public {
        address next = address(new AuditorRegistryUpgradeTarget());
        expectNotOwner(address(audit));
        vm.prank(address(audit));
        registry.upgradeToAndCall(next, "");
    }

    function test_upgrade_revertsForNonUUPSImplementation() public {
        address next = address(new NotUpgradeable());
        vm.expectRevert(abi.encodeWithSelector(ERC1967Utils.ERC1967InvalidImplementation.selector, next));
        registry.upgradeToAndCall(next, "");
    }

    function test_upgrade_onlyThroughTimelockAfterHandover() public {
        handToTimelock();
        address next = address(new AuditorRegistryUpgradeTarget());
        expectNotOwner(address(this));
        registry.upgradeToAndCall(next, "");
        governed(address(registry), abi.encodeCall(UUPSUpgradeable.upgradeToAndCall, (next, "")));
        assertEq(implementationOf(address(registry)), next);
    }
}
