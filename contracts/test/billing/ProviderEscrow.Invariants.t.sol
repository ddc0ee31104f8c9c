// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {ProviderEscrow} from "../../src/billing/ProviderEscrow.sol";
import {IProviderEscrow} from "../../src/interfaces/IProviderEscrow.sol";

/// @notice Drives the escrow with bounded random actions of three providers and two operators, and
///         keeps ghost sums of what should be where.
contract ProviderEscrowHandler is Test {
    ProviderEscrow internal immutable _escrow;
    address[3] internal _providers = [makeAddr("p0"), makeAddr("p1"), makeAddr("p2")];
    address[2] internal _operators = [makeAddr("o0"), makeAddr("o1")];

    struct Made {
        address provider;
        bytes32 rid;
    }

    Made[] internal _made;
    uint256 public ghostDeposited;
    uint256 public ghostWithdrawn;
    uint256 public ghostCharged;
    mapping(address provider => mapping(address operator => uint256)) public ghostAuthorized;
    mapping(address provider => mapping(address operator => uint256)) public ghostReserved;

    constructor(ProviderEscrow escrow_) {
        _escrow = escrow_;
    }

    function providers() external view returns (address[3] memory) {
        return _providers;
    }

    function operators() external view returns (address[2] memory) {
        return _operators;
    }

    function made() external view returns (Made[] memory) {
        return _made;
    }

    function deposit(uint256 who, uint256 amountWei) external {
        address p = _providers[who % 3];
        amountWei = bound(amountWei, 1, 10 ether);
        vm.deal(p, amountWei);
        vm.prank(p);
        _escrow.deposit{value: amountWei}();
        ghostDeposited += amountWei;
    }

    function withdraw(uint256 who, uint256 amountWei) external {
        address p = _providers[who % 3];
        uint256 free = _escrow.available(p);
        if (free == 0) return;
        amountWei = bound(amountWei, 1, free);
        vm.prank(p);
        _escrow.withdraw(amountWei);
        ghostWithdrawn += amountWei;
    }

    function authorize(uint256 who, uint256 op, uint256 capWei, uint256 allowanceWei) external {
        address p = _providers[who % 3];
        address o = _operators[op % 2];
        capWei = bound(capWei, 0, 5 ether);
        allowanceWei = bound(allowanceWei, 0, 20 ether);
        vm.prank(p);
        _escrow.authorize(o, capWei, allowanceWei);
        // From now on the operator may reserve allowanceWei more than it already reserved.
        ghostAuthorized[p][o] = ghostReserved[p][o] + allowanceWei;
    }

    function reserve(uint256 who, uint256 op, uint256 amountWei) external {
        address p = _providers[who % 3];
        address o = _operators[op % 2];
        amountWei = bound(amountWei, 1, 5 ether);
        bytes32 rid = keccak256(abi.encode(_made.length));
        vm.prank(o);
        try _escrow.reserve(p, rid, amountWei) {
            _made.push(Made(p, rid));
            ghostReserved[p][o] += amountWei;
        } catch {}
    }

    function charge(uint256 index, uint256 amountWei) external {
        if (_made.length == 0) return;
        Made memory m = _made[index % _made.length];
        IProviderEscrow.Reservation memory r = _escrow.reservation(m.provider, m.rid);
        if (r.status != IProviderEscrow.ReservationStatus.Pending || block.timestamp > r.expiresAt) return;
        amountWei = bound(amountWei, 1, r.amountWei);
        vm.prank(r.operator);
        _escrow.charge(m.provider, m.rid, amountWei, 1, bytes32(0));
        ghostCharged += amountWei;
    }

    function release(uint256 index, bool lapse) external {
        if (_made.length == 0) return;
        Made memory m = _made[index % _made.length];
        IProviderEscrow.Reservation memory r = _escrow.reservation(m.provider, m.rid);
        if (r.status != IProviderEscrow.ReservationStatus.Pending) return;
        if (lapse) vm.warp(r.expiresAt + 1);
        vm.prank(lapse ? address(this) : r.operator);
        _escrow.release(m.provider, m.rid);
    }
}

contract ProviderEscrowInvariantsTest is Test {
    ProviderEscrow internal escrow;
    ProviderEscrowHandler internal handler;

    function setUp() public {
        escrow = new ProviderEscrow();
        handler = new ProviderEscrowHandler(escrow);
        targetContract(address(handler));
    }

    function invariant_ethBacksEveryDeposit() public view {
        address[3] memory providers = handler.providers();
        uint256 sum;
        for (uint256 i; i < providers.length; ++i) {
            (uint256 balance,) = escrow.account(providers[i]);
            sum += balance;
        }
        assertEq(address(escrow).balance, sum);
        assertEq(address(escrow).balance, handler.ghostDeposited() - handler.ghostWithdrawn() - handler.ghostCharged());
    }

    function invariant_reservedIsThePendingReservationsAndFitsTheDeposit() public view {
        address[3] memory providers = handler.providers();
        ProviderEscrowHandler.Made[] memory made = handler.made();
        for (uint256 i; i < providers.length; ++i) {
            uint256 pending;
            for (uint256 j; j < made.length; ++j) {
                if (made[j].provider != providers[i]) continue;
                IProviderEscrow.Reservation memory r = escrow.reservation(made[j].provider, made[j].rid);
                if (r.status == IProviderEscrow.ReservationStatus.Pending) pending += r.amountWei;
            }
            (uint256 balance, uint256 reserved) = escrow.account(providers[i]);
            assertEq(reserved, pending);
            assertLe(reserved, balance);
        }
    }

    function invariant_noOperatorReservesMoreThanAuthorized() public view {
        address[3] memory providers = handler.providers();
        address[2] memory operators = handler.operators();
        for (uint256 i; i < providers.length; ++i) {
            for (uint256 j; j < operators.length; ++j) {
                assertLe(
                    handler.ghostReserved(providers[i], operators[j]),
                    handler.ghostAuthorized(providers[i], operators[j])
                );
            }
        }
    }
}
