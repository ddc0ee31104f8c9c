// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IProviderEscrow} from "../../src/interfaces/IProviderEscrow.sol";
import {ProviderEscrowBase} from "./ProviderEscrowBase.sol";

/// @notice Deposit, authorize, reserve, charge, release and withdraw as the gateway uses them.
contract ProviderEscrowLifecycleTest is ProviderEscrowBase {
    function test_deposit_addsToTheCallersBalance() public {
        vm.expectEmit(true, false, false, true, address(escrow));
        emit IProviderEscrow.Deposited(provider, 1 ether, 1 ether);
        fund(provider, 1 ether);
        fund(provider, 2 ether);
        (uint256 balance, uint256 reserved) = balanceOf(provider);
        assertEq(balance, 3 ether);
        assertEq(reserved, 0);
        assertEq(address(escrow).balance, 3 ether);
    }

    function test_deposit_revertsOnZero() public {
        vm.expectRevert(abi.encodeWithSelector(IProviderEscrow.EscrowZeroAmount.selector, provider));
        fund(provider, 0);
    }

    function test_plainEthTransfer_isRefused() public {
        vm.prank(stranger);
        (bool ok,) = address(escrow).call{value: 1 ether}("");
        assertFalse(ok, "ETH arrives only through deposit(), which credits its sender");
    }

    function test_reserveThenCharge_paysTheOperatorAndReturnsTheRest() public {
        funded(1 ether);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit IProviderEscrow.Reserved(provider, gateway, RID, 0.3 ether, block.timestamp + 1 hours, 0.7 ether);
        reserveAs(gateway, provider, RID, 0.3 ether);
        (uint256 balance, uint256 reserved) = balanceOf(provider);
        assertEq(balance, 1 ether);
        assertEq(reserved, 0.3 ether);
        assertEq(escrow.available(provider), 0.7 ether);

        vm.expectEmit(true, true, true, true, address(escrow));
        emit IProviderEscrow.Charged(provider, gateway, RID, 0.25 ether, 0.05 ether, SESSION, ROOT, 0.75 ether);
        chargeAs(gateway, provider, RID, 0.25 ether);
        assertEq(gateway.balance, 0.25 ether);
        (balance, reserved) = balanceOf(provider);
        assertEq(balance, 0.75 ether);
        assertEq(reserved, 0);
        assertEq(uint8(status(provider, RID)), uint8(IProviderEscrow.ReservationStatus.Charged));
        assertEq(address(escrow).balance, 0.75 ether);
    }

    function test_release_byTheOperator_returnsTheReservation() public {
        funded(1 ether);
        reserveAs(gateway, provider, RID, 0.4 ether);
        vm.expectEmit(true, true, true, true, address(escrow));
        emit IProviderEscrow.Released(provider, gateway, RID, 0.4 ether, gateway);
        vm.prank(gateway);
        escrow.release(provider, RID);
        assertEq(escrow.available(provider), 1 ether);
        (, uint256 allowance) = escrow.authorization(provider, gateway);
        assertEq(allowance, 0.6 ether, "a released reservation still spent its allowance");
    }

    function test_withdraw_returnsTheUnreservedDeposit() public {
        funded(1 ether);
        reserveAs(gateway, provider, RID, 0.4 ether);
        uint256 before = provider.balance;
        vm.prank(provider);
        escrow.withdraw(0.6 ether);
        assertEq(provider.balance, before + 0.6 ether);
        vm.expectRevert(abi.encodeWithSelector(IProviderEscrow.EscrowInsufficientBalance.selector, provider, 0, 1 wei));
        vm.prank(provider);
        escrow.withdraw(1 wei);
    }

    function test_authorize_replacesAndReportsTheOldValues() public {
        allow(provider, gateway, 1 ether, 5 ether);
        vm.expectEmit(true, true, false, true, address(escrow));
        emit IProviderEscrow.Authorized(provider, gateway, 1 ether, 5 ether, 0, 0);
        allow(provider, gateway, 0, 0);
        (uint256 cap, uint256 allowance) = escrow.authorization(provider, gateway);
        assertEq(cap, 0);
        assertEq(allowance, 0);
    }

    function test_reservations_ofConcurrentEpochs_areIndependent() public {
        funded(1 ether);
        reserveAs(gateway, provider, keccak256("epoch 1"), 0.2 ether);
        reserveAs(gateway, provider, keccak256("epoch 2"), 0.3 ether);
        chargeAs(gateway, provider, keccak256("epoch 2"), 0.3 ether);
        (, uint256 reserved) = balanceOf(provider);
        assertEq(reserved, 0.2 ether);
        chargeAs(gateway, provider, keccak256("epoch 1"), 0.1 ether);
        assertEq(escrow.available(provider), 0.6 ether);
    }
}
