// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

import {ProviderEscrow} from "../../src/billing/ProviderEscrow.sol";
import {IProviderEscrow} from "../../src/interfaces/IProviderEscrow.sol";
import {ProviderEscrowBase} from "./ProviderEscrowBase.sol";

/// @notice A provider contract that tries to withdraw twice from inside its own withdrawal.
contract ReentrantWithdrawer {
    ProviderEscrow internal immutable _escrow;
    bytes public innerError;
    uint256 public received;

    constructor(ProviderEscrow escrow_) {
        _escrow = escrow_;
    }

    function depositAndWithdraw(uint256 amountWei) external payable {
        _escrow.deposit{value: msg.value}();
        _escrow.withdraw(amountWei);
    }

    receive() external payable {
        received += msg.value;
        if (received == msg.value) {
            // The first payment: try again before the first call has returned.
            try _escrow.withdraw(msg.value) {}
            catch (bytes memory reason) {
                innerError = reason;
            }
        }
    }
}

/// @notice An operator contract that tries to charge the same reservation twice from the payment.
contract ReentrantOperator {
    ProviderEscrow internal immutable _escrow;
    address internal _provider;
    bytes32 internal _rid;
    bytes public innerError;

    constructor(ProviderEscrow escrow_) {
        _escrow = escrow_;
    }

    function reserveAndCharge(address provider, bytes32 rid, uint256 amountWei) external {
        (_provider, _rid) = (provider, rid);
        _escrow.reserve(provider, rid, amountWei);
        _escrow.charge(provider, rid, amountWei, 1, bytes32(0));
    }

    receive() external payable {
        try _escrow.charge(_provider, _rid, msg.value, 1, bytes32(0)) {}
        catch (bytes memory reason) {
            innerError = reason;
        }
    }
}

/// @notice An operator that refuses ETH: only its own charges fail.
contract RefusingOperator {
    function reserveAndCharge(ProviderEscrow escrow, address provider, bytes32 rid, uint256 amountWei) external {
        escrow.reserve(provider, rid, amountWei);
        escrow.charge(provider, rid, amountWei, 1, bytes32(0));
    }
}

/// @notice What an operator, a provider or a stranger might try, and why each fails.
contract ProviderEscrowAttacksTest is ProviderEscrowBase {
    // ------------------------------------------------------------------ the operator over-charging

    function test_overCharge_beyondTheReservation_reverts() public {
        funded(1 ether);
        reserveAs(gateway, provider, RID, 0.1 ether);
        vm.expectRevert(
            abi.encodeWithSelector(
                IProviderEscrow.EscrowChargeExceedsReservation.selector, provider, RID, 0.1 ether + 1, 0.1 ether
            )
        );
        chargeAs(gateway, provider, RID, 0.1 ether + 1);
    }

    function test_overCharge_beyondTheCapPerCharge_reverts() public {
        fund(provider, 10 ether);
        allow(provider, gateway, 1 ether, 10 ether);
        vm.expectRevert(
            abi.encodeWithSelector(
                IProviderEscrow.EscrowChargeCapExceeded.selector, provider, gateway, 1 ether + 1, 1 ether
            )
        );
        reserveAs(gateway, provider, RID, 1 ether + 1);
    }

    function test_overCharge_twiceTheSameReservation_reverts() public {
        funded(1 ether);
        reserveAs(gateway, provider, RID, 0.1 ether);
        chargeAs(gateway, provider, RID, 0.1 ether);
        vm.expectRevert(
            abi.encodeWithSelector(
                IProviderEscrow.EscrowReservationNotPending.selector,
                provider,
                RID,
                IProviderEscrow.ReservationStatus.Charged
            )
        );
        chargeAs(gateway, provider, RID, 0.1 ether);
        vm.expectRevert(abi.encodeWithSelector(IProviderEscrow.EscrowReservationExists.selector, provider, RID));
        reserveAs(gateway, provider, RID, 0.1 ether);
    }

    function test_operatorWhoseAllowanceIsUsedUp_cannotReserve() public {
        fund(provider, 10 ether);
        allow(provider, gateway, 1 ether, 1.5 ether);
        reserveAs(gateway, provider, keccak256("a"), 1 ether);
        chargeAs(gateway, provider, keccak256("a"), 1 ether);
        vm.expectRevert(
            abi.encodeWithSelector(
                IProviderEscrow.EscrowAllowanceExceeded.selector, provider, gateway, 1 ether, 0.5 ether
            )
        );
        reserveAs(gateway, provider, keccak256("b"), 1 ether);
        reserveAs(gateway, provider, keccak256("b"), 0.5 ether); // exactly what is left
        vm.expectRevert(
            abi.encodeWithSelector(IProviderEscrow.EscrowAllowanceExceeded.selector, provider, gateway, 1, 0)
        );
        reserveAs(gateway, provider, keccak256("c"), 1);
    }

    function testFuzz_operator_neverTakesMoreThanAuthorizedOrDeposited(
        uint96 depositWei,
        uint96 capWei,
        uint96 allowanceWei,
        uint96[4] calldata asks
    ) public {
        depositWei = uint96(bound(depositWei, 1, 50 ether));
        fund(provider, depositWei);
        allow(provider, gateway, capWei, allowanceWei);
        uint256 taken;
        for (uint256 i; i < asks.length; ++i) {
            bytes32 rid = bytes32(i + 1);
            vm.prank(gateway);
            try escrow.reserve(provider, rid, asks[i]) {
                chargeAs(gateway, provider, rid, asks[i]);
                taken += asks[i];
                assertLe(asks[i], capWei);
            } catch {}
        }
        assertEq(gateway.balance, taken);
        assertLe(taken, allowanceWei);
        assertLe(taken, depositWei);
        (uint256 balance,) = balanceOf(provider);
        assertEq(balance, depositWei - taken);
    }

    // ------------------------------------------------------------------ someone else charging

    function test_chargeByANonOperator_reverts() public {
        funded(1 ether);
        // Never authorized: its cap is zero.
        vm.expectRevert(
            abi.encodeWithSelector(IProviderEscrow.EscrowChargeCapExceeded.selector, provider, stranger, 1, 0)
        );
        reserveAs(stranger, provider, RID, 1);
        // Nor can it charge, or release early, the gateway's reservation.
        reserveAs(gateway, provider, RID, 0.5 ether);
        vm.expectRevert(
            abi.encodeWithSelector(
                IProviderEscrow.EscrowNotReservationOperator.selector, provider, RID, stranger, gateway
            )
        );
        chargeAs(stranger, provider, RID, 0.5 ether);
        vm.expectRevert(
            abi.encodeWithSelector(
                IProviderEscrow.EscrowNotReservationOperator.selector, provider, RID, stranger, gateway
            )
        );
        vm.prank(stranger);
        escrow.release(provider, RID);
    }

    function test_anAuthorizationIsPerProvider() public {
        funded(1 ether);
        fund(other, 1 ether); // the other provider authorized nobody
        vm.expectRevert(abi.encodeWithSelector(IProviderEscrow.EscrowChargeCapExceeded.selector, other, gateway, 1, 0));
        reserveAs(gateway, other, RID, 1);
    }

    // ------------------------------------------------------------------ the provider racing the operator

    function test_withdrawalFrontRunningTheReservation_failsItBeforeTheSessionIsPaid() public {
        funded(1 ether);
        vm.prank(provider);
        escrow.withdraw(1 ether); // lands first
        vm.expectRevert(
            abi.encodeWithSelector(IProviderEscrow.EscrowInsufficientBalance.selector, provider, 0, 0.3 ether)
        );
        reserveAs(gateway, provider, RID, 0.3 ether);
    }

    function test_withdrawalAfterTheReservation_cannotTouchIt() public {
        funded(1 ether);
        reserveAs(gateway, provider, RID, 0.3 ether);
        vm.expectRevert(
            abi.encodeWithSelector(IProviderEscrow.EscrowInsufficientBalance.selector, provider, 0.7 ether, 1 ether)
        );
        vm.prank(provider);
        escrow.withdraw(1 ether);
        vm.prank(provider);
        escrow.withdraw(0.7 ether);
        // Revoking the authorization does not take back a reservation the gateway already relied on.
        allow(provider, gateway, 0, 0);
        chargeAs(gateway, provider, RID, 0.3 ether);
        assertEq(gateway.balance, 0.3 ether);
        assertEq(address(escrow).balance, 0);
    }

    function test_theProviderCannotReleaseAReservationBeforeItLapses() public {
        funded(1 ether);
        reserveAs(gateway, provider, RID, 0.3 ether);
        vm.expectRevert(
            abi.encodeWithSelector(
                IProviderEscrow.EscrowNotReservationOperator.selector, provider, RID, provider, gateway
            )
        );
        vm.prank(provider);
        escrow.release(provider, RID);
    }

    // ------------------------------------------------------------------ an operator that vanishes

    function test_aLapsedReservation_cannotBeChargedAndAnyoneReleasesIt() public {
        funded(1 ether);
        reserveAs(gateway, provider, RID, 0.3 ether);
        vm.warp(block.timestamp + escrow.RESERVATION_SECONDS() + 1);
        uint256 expiresAt = escrow.reservation(provider, RID).expiresAt;
        vm.expectRevert(
            abi.encodeWithSelector(IProviderEscrow.EscrowReservationExpired.selector, provider, RID, expiresAt)
        );
        chargeAs(gateway, provider, RID, 0.3 ether);
        vm.prank(stranger);
        escrow.release(provider, RID);
        assertEq(escrow.available(provider), 1 ether);
        assertEq(uint8(status(provider, RID)), uint8(IProviderEscrow.ReservationStatus.Released));
    }

    // ------------------------------------------------------------------ reentrancy

    function test_reentrancyOnWithdraw_isRefused() public {
        ReentrantWithdrawer attacker = new ReentrantWithdrawer(escrow);
        fund(provider, 5 ether); // someone else's money sits in the escrow too
        attacker.depositAndWithdraw{value: 1 ether}(1 ether);
        assertEq(attacker.received(), 1 ether, "paid once");
        assertEq(
            attacker.innerError(),
            abi.encodeWithSelector(ReentrancyGuardTransient.ReentrancyGuardReentrantCall.selector)
        );
        assertEq(address(escrow).balance, 5 ether);
        (uint256 balance,) = balanceOf(address(attacker));
        assertEq(balance, 0);
    }

    function test_reentrancyOnCharge_isRefused() public {
        ReentrantOperator attacker = new ReentrantOperator(escrow);
        funded(1 ether);
        allow(provider, address(attacker), 1 ether, 1 ether);
        attacker.reserveAndCharge(provider, RID, 0.2 ether);
        assertEq(address(attacker).balance, 0.2 ether);
        assertEq(
            attacker.innerError(),
            abi.encodeWithSelector(ReentrancyGuardTransient.ReentrancyGuardReentrantCall.selector)
        );
        assertEq(address(escrow).balance, 0.8 ether);
    }

    function test_anOperatorRefusingEth_blocksOnlyItsOwnCharge() public {
        RefusingOperator refusing = new RefusingOperator();
        funded(1 ether);
        allow(provider, address(refusing), 1 ether, 1 ether);
        vm.expectRevert(
            abi.encodeWithSelector(IProviderEscrow.EscrowTransferFailed.selector, address(refusing), 0.2 ether)
        );
        refusing.reserveAndCharge(escrow, provider, RID, 0.2 ether);
        assertEq(escrow.available(provider), 1 ether, "the whole attempt reverted");
        vm.prank(provider);
        escrow.withdraw(1 ether);
    }
}
