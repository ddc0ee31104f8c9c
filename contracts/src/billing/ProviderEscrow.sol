// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {IProviderEscrow} from "../interfaces/IProviderEscrow.sol";

/// @title ProviderEscrow
/// @notice Providers prepay audit fees here; a gateway they authorize takes each session's share
///         (see `IProviderEscrow`).
/// @dev Not upgradeable and without an owner, on purpose: the contract holds other people's money and
///      every rule that protects it is in this file, so no key (not even governance's) can change
///      them. A new version is a new contract that providers move to by withdrawing.
///      Invariants (tested in `ProviderEscrow.Invariants.t.sol`):
///      - `address(this).balance == sum of every account's balanceWei` (ETH arrives only through
///        `deposit`: there is no `receive`);
///      - for each provider, `reservedWei == sum of its pending reservations` and
///        `reservedWei <= balanceWei`;
///      - an operator's reservations never exceed the allowance the provider gave it.
contract ProviderEscrow is IProviderEscrow, ReentrancyGuardTransient {
    using SafeCast for uint256;

    /// @dev One slot per provider: its deposit and what pending reservations hold of it.
    struct Account {
        uint128 balanceWei;
        uint128 reservedWei;
    }

    /// @dev One slot per (provider, operator).
    struct Authorization {
        uint128 maxPerChargeWei;
        uint128 allowanceWei;
    }

    /// @inheritdoc IProviderEscrow
    /// @dev An hour: the gateway charges seconds after it opened the session (a few blocks after the
    ///      reservation); the bound only matters when the operator vanished in between.
    uint256 public constant RESERVATION_SECONDS = 1 hours;

    mapping(address provider => Account) private _accounts;
    mapping(address provider => mapping(address operator => Authorization)) private _authorizations;
    mapping(address provider => mapping(bytes32 reservationId => Reservation)) private _reservations;

    // ------------------------------------------------------------------ the provider

    /// @inheritdoc IProviderEscrow
    function deposit() external payable {
        if (msg.value == 0) revert EscrowZeroAmount(msg.sender);
        Account storage a = _accounts[msg.sender];
        uint128 balance = (uint256(a.balanceWei) + msg.value).toUint128();
        a.balanceWei = balance;
        emit Deposited(msg.sender, msg.value, balance);
    }

    /// @inheritdoc IProviderEscrow
    function withdraw(uint256 amountWei) external nonReentrant {
        if (amountWei == 0) revert EscrowZeroAmount(msg.sender);
        Account storage a = _accounts[msg.sender];
        uint256 free = a.balanceWei - a.reservedWei;
        if (amountWei > free) revert EscrowInsufficientBalance(msg.sender, free, amountWei);
        // amountWei <= free <= balanceWei < 2^128: the cast and the subtraction cannot fail.
        uint128 balance = a.balanceWei - uint128(amountWei);
        a.balanceWei = balance;
        emit Withdrawn(msg.sender, amountWei, balance);
        _payCaller(amountWei);
    }

    /// @inheritdoc IProviderEscrow
    function authorize(address operator, uint256 maxPerChargeWei, uint256 allowanceWei) external {
        Authorization storage auth = _authorizations[msg.sender][operator];
        (uint256 oldMax, uint256 oldAllowance) = (auth.maxPerChargeWei, auth.allowanceWei);
        auth.maxPerChargeWei = maxPerChargeWei.toUint128();
        auth.allowanceWei = allowanceWei.toUint128();
        emit Authorized(msg.sender, operator, oldMax, oldAllowance, maxPerChargeWei, allowanceWei);
    }

    // ------------------------------------------------------------------ the operator

    /// @inheritdoc IProviderEscrow
    function reserve(address provider, bytes32 reservationId, uint256 amountWei) external {
        if (amountWei == 0) revert EscrowZeroAmount(msg.sender);
        Reservation storage r = _reservations[provider][reservationId];
        if (r.status != ReservationStatus.None) revert EscrowReservationExists(provider, reservationId);
        Authorization storage auth = _authorizations[provider][msg.sender];
        if (amountWei > auth.maxPerChargeWei) {
            revert EscrowChargeCapExceeded(provider, msg.sender, amountWei, auth.maxPerChargeWei);
        }
        if (amountWei > auth.allowanceWei) {
            revert EscrowAllowanceExceeded(provider, msg.sender, amountWei, auth.allowanceWei);
        }
        Account storage a = _accounts[provider];
        uint256 free = a.balanceWei - a.reservedWei;
        if (amountWei > free) revert EscrowInsufficientBalance(provider, free, amountWei);
        // amountWei <= allowanceWei and <= free, both uint128: the narrowing and arithmetic are exact.
        uint128 amount = uint128(amountWei);
        uint128 allowanceLeft = auth.allowanceWei - amount;
        auth.allowanceWei = allowanceLeft;
        a.reservedWei += amount;
        uint48 expiresAt = (block.timestamp + RESERVATION_SECONDS).toUint48();
        r.operator = msg.sender;
        r.expiresAt = expiresAt;
        r.status = ReservationStatus.Pending;
        r.amountWei = amount;
        emit Reserved(provider, msg.sender, reservationId, amountWei, expiresAt, allowanceLeft);
    }

    /// @inheritdoc IProviderEscrow
    function charge(address provider, bytes32 reservationId, uint256 amountWei, uint256 sessionId, bytes32 traceRoot)
        external
        nonReentrant
    {
        if (amountWei == 0) revert EscrowZeroAmount(msg.sender);
        Reservation storage r = _pending(provider, reservationId);
        if (r.operator != msg.sender) {
            revert EscrowNotReservationOperator(provider, reservationId, msg.sender, r.operator);
        }
        if (block.timestamp > r.expiresAt) revert EscrowReservationExpired(provider, reservationId, r.expiresAt);
        uint128 reserved = r.amountWei;
        if (amountWei > reserved) revert EscrowChargeExceedsReservation(provider, reservationId, amountWei, reserved);
        r.status = ReservationStatus.Charged;
        Account storage a = _accounts[provider];
        // reserved <= a.reservedWei <= a.balanceWei (invariant), amountWei <= reserved: no underflow.
        a.reservedWei -= reserved;
        uint128 balance = a.balanceWei - uint128(amountWei);
        a.balanceWei = balance;
        emit Charged(
            provider, msg.sender, reservationId, amountWei, reserved - amountWei, sessionId, traceRoot, balance
        );
        // Paid to the caller itself, so a push cannot be used to block anyone else (the style guide's
        // pull payments protect third parties; here the only party hurt by a refusal is the caller).
        _payCaller(amountWei);
    }

    /// @inheritdoc IProviderEscrow
    function release(address provider, bytes32 reservationId) external {
        Reservation storage r = _pending(provider, reservationId);
        if (r.operator != msg.sender && block.timestamp <= r.expiresAt) {
            revert EscrowNotReservationOperator(provider, reservationId, msg.sender, r.operator);
        }
        r.status = ReservationStatus.Released;
        uint128 amount = r.amountWei;
        _accounts[provider].reservedWei -= amount; // amount is part of reservedWei (invariant)
        emit Released(provider, r.operator, reservationId, amount, msg.sender);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IProviderEscrow
    function account(address provider) external view returns (uint256 balanceWei, uint256 reservedWei) {
        Account storage a = _accounts[provider];
        return (a.balanceWei, a.reservedWei);
    }

    /// @inheritdoc IProviderEscrow
    function available(address provider) external view returns (uint256) {
        Account storage a = _accounts[provider];
        return a.balanceWei - a.reservedWei;
    }

    /// @inheritdoc IProviderEscrow
    function authorization(address provider, address operator)
        external
        view
        returns (uint256 maxPerChargeWei, uint256 allowanceWei)
    {
        Authorization storage auth = _authorizations[provider][operator];
        return (auth.maxPerChargeWei, auth.allowanceWei);
    }

    /// @inheritdoc IProviderEscrow
    function reservation(address provider, bytes32 reservationId) external view returns (Reservation memory) {
        return _reservations[provider][reservationId];
    }

    // ------------------------------------------------------------------ internals

    function _pending(address provider, bytes32 reservationId) private view returns (Reservation storage r) {
        r = _reservations[provider][reservationId];
        if (r.status != ReservationStatus.Pending) {
            revert EscrowReservationNotPending(provider, reservationId, r.status);
        }
    }

    /// @dev ETH only ever leaves to the caller: a provider withdrawing its own deposit, or an
    ///      operator charging its own reservation. State is final before this call
    ///      (checks-effects-interactions) and both callers are nonReentrant: a reentering recipient
    ///      finds nothing left to take twice.
    function _payCaller(uint256 amountWei) private {
        // The destination is always msg.sender, and the amount was checked against the caller's own
        // deposit (withdraw) or its own reservation (charge): nothing here is "arbitrary".
        // slither-disable-next-line arbitrary-send-eth
        (bool ok,) = msg.sender.call{value: amountWei}("");
        if (!ok) revert EscrowTransferFailed(msg.sender, amountWei);
    }
}
