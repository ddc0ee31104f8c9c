// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC1967Proxy} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol";
import {ERC1967Utils} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Utils.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {SegmentKeysBase} from "./SegmentKeysBase.sol";
import {SegmentKeys} from "../src/SegmentKeys.sol";
import {ISegmentKeys} from "../src/interfaces/ISegmentKeys.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {NotUpgradeable} from "./mocks/UpgradeTargets.sol";

/// @notice A next version of SegmentKeys for the upgrade tests: same storage, one new view.
contract SegmentKeysUpgradeTarget is SegmentKeys {
    function upgradeMarker() external pure returns (uint256) {
        return 2;
    }
}

/// @notice Deployment, ownership and UUPS upgrades of `SegmentKeys`: governance only.
contract SegmentKeysGovernanceTest is SegmentKeysBase {
    function implementationOf(address proxy) internal view returns (address) {
        return address(uint160(uint256(vm.load(proxy, ERC1967Utils.IMPLEMENTATION_SLOT))));
    }

    function test_initialize_revertsOnZeroAudit() public {
        address implementation = address(new SegmentKeys());
        vm.expectRevert(abi.encodeWithSelector(ISegmentKeys.SegmentKeysZeroAddress.selector));
        new ERC1967Proxy(
            implementation, abi.encodeCall(SegmentKeys.initialize, (address(this), ITRUSTAudit(address(0))))
        );
    }

    function test_initialize_isDisabledOnTheImplementation() public {
        SegmentKeys implementation = new SegmentKeys();
        vm.expectRevert(abi.encodeWithSignature("InvalidInitialization()"));
        implementation.initialize(address(this), ITRUSTAudit(address(audit)));
    }

    function test_upgrade_byOwnerKeepsState() public {
        address next = address(new SegmentKeysUpgradeTarget());
        keys.upgradeToAndCall(next, "");
        assertEq(implementationOf(address(keys)), next);
        assertEq(SegmentKeysUpgradeTarget(address(keys)).upgradeMarker(), 2);
        assertEq(address(keys.audit()), address(audit));
        assertEq(keys.owner(), address(this));
    }

    function test_upgrade_revertsForNonOwner() public {
        address before = implementationOf(address(keys));
        address next = address(new SegmentKeysUpgradeTarget());
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, provider));
        vm.prank(provider);
        keys.upgradeToAndCall(next, "");
        assertEq(implementationOf(address(keys)), before);
    }

    function test_upgrade_revertsForNonUUPSImplementation() public {
        address next = address(new NotUpgradeable());
        vm.expectRevert(abi.encodeWithSelector(ERC1967Utils.ERC1967InvalidImplementation.selector, next));
        keys.upgradeToAndCall(next, "");
    }

    function test_upgrade_onlyThroughTimelockAfterHandover() public {
        keys.transferOwnership(address(timelock));
        address next = address(new SegmentKeysUpgradeTarget());
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, address(this)));
        keys.upgradeToAndCall(next, "");

        governed(address(keys), abi.encodeCall(UUPSUpgradeable.upgradeToAndCall, (next, "")));
        assertEq(SegmentKeysUpgradeTarget(address(keys)).upgradeMarker(), 2);
        assertEq(keys.owner(), address(timelock));
    }
}
