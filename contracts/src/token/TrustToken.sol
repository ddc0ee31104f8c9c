// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";

/// @title TrustToken
/// @notice The staking token of a TRUST deployment: a fixed supply minted once to `holder`.
/// @dev Deployments on a chain with an existing staking token skip this contract and pass that
///      token's address to the registry instead.
contract TrustToken is ERC20, ERC20Permit {
    constructor(address holder, uint256 supply) ERC20("TRUST Stake", "TRUST") ERC20Permit("TRUST Stake") {
        _mint(holder, supply);
    }
}
