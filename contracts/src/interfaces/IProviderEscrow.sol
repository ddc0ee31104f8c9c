// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IProviderEscrow
/// @notice Prepaid ETH of model providers, from which an operator they authorize (a gateway that
///         opens audit sessions on their behalf) takes each session's share of the fee.
///         - A provider `deposit`s ETH and `authorize`s an operator with a cap per charge and a total
///           allowance. It `withdraw`s its unspent deposit at any time, except what a pending
///           reservation holds.
///         - The operator `reserve`s a provider's share BEFORE it opens the session that the share
///           pays for, then `charge`s it (naming the session and its trace root) once the session is
///           open, or `release`s it if the session never opened. A withdrawal that front-runs the
///           reservation makes the reservation fail, so the operator learns it before paying anything;
///           one that comes after it cannot touch the reserved amount.
///         - A reservation the operator neither charges nor releases within `RESERVATION_SECONDS`
///           lapses: anyone may then release it to the provider, so an operator that disappears
///           cannot hold a provider's money.
///         The escrow holds only the providers' deposits; it has no owner, no upgrade path and no
///         fee: nobody but the operator a provider authorized can take anything from it, and never
///         more than that provider's authorization and deposit allow.
interface IProviderEscrow {
    // ------------------------------------------------------------------ types

    /// @notice Where a reservation is: never made, waiting for its charge, charged, or released.
    enum ReservationStatus {
        None,
        Pending,
        Charged,
        Released
    }

    /// @notice One reservation of a provider's deposit by an operator.
    /// @dev Slot 0: operator (20 bytes), expiresAt (6), status (1); slot 1: amountWei.
    struct Reservation {
        address operator;
        uint48 expiresAt;
        ReservationStatus status;
        uint128 amountWei;
    }

    // ------------------------------------------------------------------ errors

    /// @notice A deposit, withdrawal, reservation or charge of zero wei (`account` asked for it).
    error EscrowZeroAmount(address account);
    /// @notice `provider` holds `availableWei` that no reservation holds; `neededWei` were asked for.
    error EscrowInsufficientBalance(address provider, uint256 availableWei, uint256 neededWei);
    /// @notice `operator` may reserve at most `maxPerChargeWei` of `provider`'s deposit at once
    ///         (zero: it is not authorized at all).
    error EscrowChargeCapExceeded(address provider, address operator, uint256 amountWei, uint256 maxPerChargeWei);
    /// @notice `operator` has `allowanceWei` left of what `provider` authorized in total.
    error EscrowAllowanceExceeded(address provider, address operator, uint256 amountWei, uint256 allowanceWei);
    /// @notice The id `reservationId` of `provider` was used before (every id is used once).
    error EscrowReservationExists(address provider, bytes32 reservationId);
    /// @notice The reservation is not pending (never made, already charged or released).
    error EscrowReservationNotPending(address provider, bytes32 reservationId, ReservationStatus status);
    /// @notice Only the reservation's `operator` may charge it (or release it before it lapses).
    error EscrowNotReservationOperator(address provider, bytes32 reservationId, address caller, address operator);
    /// @notice The reservation lapsed at `expiresAt`: it can no longer be charged.
    error EscrowReservationExpired(address provider, bytes32 reservationId, uint256 expiresAt);
    /// @notice The reservation holds only `reservedWei`.
    error EscrowChargeExceedsReservation(
        address provider, bytes32 reservationId, uint256 amountWei, uint256 reservedWei
    );
    /// @notice Sending `amountWei` to `to` failed (a contract that refuses ETH).
    error EscrowTransferFailed(address to, uint256 amountWei);

    // ------------------------------------------------------------------ events

    /// @notice `provider` deposited `amountWei`; its deposit is now `balanceWei`.
    event Deposited(address indexed provider, uint256 amountWei, uint256 balanceWei);
    /// @notice `provider` withdrew `amountWei`; its deposit is now `balanceWei`.
    event Withdrawn(address indexed provider, uint256 amountWei, uint256 balanceWei);
    /// @notice `provider` set what `operator` may take: at most `maxPerChargeWei` per reservation and
    ///         `allowanceWei` in total from now on (both zero: revoked). The old values are given.
    event Authorized(
        address indexed provider,
        address indexed operator,
        uint256 oldMaxPerChargeWei,
        uint256 oldAllowanceWei,
        uint256 maxPerChargeWei,
        uint256 allowanceWei
    );
    /// @notice `operator` reserved `amountWei` of `provider`'s deposit until `expiresAt`.
    event Reserved(
        address indexed provider,
        address indexed operator,
        bytes32 indexed reservationId,
        uint256 amountWei,
        uint256 expiresAt,
        uint256 allowanceLeftWei
    );
    /// @notice `operator` took `amountWei` of a reservation as `provider`'s share of session
    ///         `sessionId` (whose trace root is `traceRoot`); `releasedWei` of it went back to the
    ///         provider's available deposit, which now holds `balanceWei` in all.
    event Charged(
        address indexed provider,
        address indexed operator,
        bytes32 indexed reservationId,
        uint256 amountWei,
        uint256 releasedWei,
        uint256 sessionId,
        bytes32 traceRoot,
        uint256 balanceWei
    );
    /// @notice A reservation of `amountWei` went back to `provider`, released by `by` (its operator,
    ///         or anyone once it lapsed).
    event Released(
        address indexed provider, address indexed operator, bytes32 indexed reservationId, uint256 amountWei, address by
    );

    // ------------------------------------------------------------------ the provider

    /// @notice Adds `msg.value` to the caller's deposit.
    /// @dev Emits `Deposited`. Reverts `EscrowZeroAmount` for zero.
    function deposit() external payable;

    /// @notice Sends `amountWei` of the caller's deposit back to it.
    /// @dev Emits `Withdrawn`. Reverts `EscrowInsufficientBalance` if more than the deposit less what
    ///      pending reservations hold, `EscrowTransferFailed` if the caller refuses the ETH.
    /// @param amountWei What to withdraw.
    function withdraw(uint256 amountWei) external;

    /// @notice Sets what `operator` may take from the caller's deposit; replaces the previous values.
    /// @dev Emits `Authorized`. A reservation made before stays chargeable (the operator may already
    ///      have paid the session it covers). As with ERC-20 `approve`, an operator watching the
    ///      mempool can spend the old allowance before a lower one lands: each reservation is still
    ///      bounded by the per-charge cap, and by the deposit.
    /// @param operator Who may reserve and charge.
    /// @param maxPerChargeWei The most one reservation may hold.
    /// @param allowanceWei The most all future reservations may hold together.
    function authorize(address operator, uint256 maxPerChargeWei, uint256 allowanceWei) external;

    // ------------------------------------------------------------------ the operator

    /// @notice Reserves `amountWei` of `provider`'s deposit under `reservationId` (unique per provider)
    ///         for `RESERVATION_SECONDS`; the caller is the operator.
    /// @dev Emits `Reserved`. Spends the caller's allowance (whatever becomes of the reservation).
    ///      Reverts `EscrowZeroAmount`, `EscrowReservationExists`, `EscrowChargeCapExceeded`,
    ///      `EscrowAllowanceExceeded`, `EscrowInsufficientBalance`.
    function reserve(address provider, bytes32 reservationId, uint256 amountWei) external;

    /// @notice Takes `amountWei` of the caller's pending reservation as `provider`'s share of session
    ///         `sessionId` with trace root `traceRoot`, sent to the caller; the rest of the
    ///         reservation goes back to the provider.
    /// @dev Emits `Charged`. Reverts `EscrowZeroAmount`, `EscrowReservationNotPending`,
    ///      `EscrowNotReservationOperator`, `EscrowReservationExpired`,
    ///      `EscrowChargeExceedsReservation`, `EscrowTransferFailed`. The session and root are
    ///      recorded, not checked: anyone can compare them with the audit contract's session.
    function charge(address provider, bytes32 reservationId, uint256 amountWei, uint256 sessionId, bytes32 traceRoot)
        external;

    /// @notice Gives a pending reservation back to `provider`: by its operator at any time, by anyone
    ///         once it lapsed.
    /// @dev Emits `Released`. Reverts `EscrowReservationNotPending`, `EscrowNotReservationOperator`
    ///      (someone else, before it lapsed).
    function release(address provider, bytes32 reservationId) external;

    // ------------------------------------------------------------------ views

    /// @notice How long a reservation stays chargeable, in seconds.
    function RESERVATION_SECONDS() external view returns (uint256);

    /// @notice `provider`'s deposit and the part of it that pending reservations hold.
    /// @return balanceWei The whole deposit.
    /// @return reservedWei What reservations hold (not withdrawable).
    function account(address provider) external view returns (uint256 balanceWei, uint256 reservedWei);

    /// @notice What `provider` could withdraw now (its deposit less its reservations).
    function available(address provider) external view returns (uint256);

    /// @notice What `operator` may still reserve of `provider`'s deposit.
    /// @return maxPerChargeWei The most one reservation may hold.
    /// @return allowanceWei What all further reservations may hold together.
    function authorization(address provider, address operator)
        external
        view
        returns (uint256 maxPerChargeWei, uint256 allowanceWei);

    /// @notice One reservation.
    function reservation(address provider, bytes32 reservationId) external view returns (Reservation memory);
}
