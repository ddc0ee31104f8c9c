// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {ProviderEscrow} from "../../src/billing/ProviderEscrow.sol";
import {IProviderEscrow} from "../../src/interfaces/IProviderEscrow.sol";

/// @notice A fresh escrow, two providers, the gateway (the operator they authorize) and a stranger.
abstract contract ProviderEscrowBase is Test {
    ProviderEscrow internal escrow;

    address internal provider = makeAddr("provider");
    address internal other = makeAddr("otherProvider");
    address internal gateway = makeAddr("gateway");
    address internal stranger = makeAddr("stranger");

    bytes32 internal constant ROOT = keccak256("the batch's trace root");
    bytes32 internal constant RID = keccak256("audit one");
    uint256 internal constant SESSION = 7;

    function setUp() public virtual {
        escrow = new ProviderEscrow();
        vm.deal(provider, 100 ether);
        vm.deal(other, 100 ether);
        vm.deal(stranger, 100 ether);
    }

    function fund(address who, uint256 amountWei) internal {
        vm.prank(who);
        escrow.deposit{value: amountWei}();
    }

    function allow(address who, address operator, uint256 maxPerChargeWei, uint256 allowanceWei) internal {
        vm.prank(who);
        escrow.authorize(operator, maxPerChargeWei, allowanceWei);
    }

    /// @notice `provider` with `depositWei` deposited and the gateway authorized for it all.
    function funded(uint256 depositWei) internal {
        fund(provider, depositWei);
        allow(provider, gateway, depositWei, depositWei);
    }

    function reserveAs(address operator, address who, bytes32 rid, uint256 amountWei) internal {
        vm.prank(operator);
        escrow.reserve(who, rid, amountWei);
    }

    function chargeAs(address operator, address who, bytes32 rid, uint256 amountWei) internal {
        vm.prank(operator);
        escrow.charge(who, rid, amountWei, SESSION, ROOT);
    }

    function balanceOf(address who) internal view returns (uint256 balanceWei, uint256 reservedWei) {
        return escrow.account(who);
    }

    function status(address who, bytes32 rid) internal view returns (IProviderEscrow.ReservationStatus) {
        return escrow.reservation(who, rid).status;
    }
}
