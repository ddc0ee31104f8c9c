// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ProtocolParams} from "../../src/ProtocolParams.sol";
import {AuditorRegistry} from "../../src/AuditorRegistry.sol";

/// @notice A next version of ProtocolParams for the UUPS upgrade tests: same storage, one new view.
contract ProtocolParamsUpgradeTarget is ProtocolParams {
    function upgradeMarker() external pure returns (uint256) {
        return 2;
    }
}

/// @notice A next version of AuditorRegistry for the UUPS upgrade tests: same storage, one new view.
contract AuditorRegistryUpgradeTarget is AuditorRegistry {
    function upgradeMarker() external pure returns (uint256) {
        return 2;
    }
}

/// @notice Not UUPS: an upgrade to it must be refused (it would brick the proxy).
contract NotUpgradeable {
    function upgradeMarker() external pure returns (uint256) {
        return 0;
    }
}
