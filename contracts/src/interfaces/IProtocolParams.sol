// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Params} from "../types/Params.sol";

/// @title IProtocolParams
/// @notice The one home of every TRUST protocol parameter, changed only by governance (a
///         TimelockController owns the deployed contract).
/// @dev Sessions copy the parameters when they are created, so a change never applies to a session
///      that is already open.
interface IProtocolParams {
    /// @notice The parameters changed. Carries the previous and the new value of every field.
    event ParamsUpdated(uint256 indexed version, Params previous, Params current);
    /// @notice The accounts that receive the treasury and insurance shares of fees changed.
    event RecipientsUpdated(address previousTreasury, address treasury, address previousInsuranceFund, address insuranceFund);

    /// @notice A recipient was the zero address.
    error ProtocolParamsZeroRecipient();
    /// @notice The unbonding delay must outlast the owning timelock's delay (finding L3): a slash waiting
    ///         in the timelock then always finds the unbonding stake still within reach.
    error ProtocolParamsUnbondingWithinTimelock(uint256 unbondingDelaySeconds, uint256 timelockDelaySeconds);

    /// @notice The current parameters.
    function params() external view returns (Params memory);

    /// @notice How many times the parameters have changed since deployment (starts at 1).
    function version() external view returns (uint256);

    /// @notice The account that receives the treasury share (15% by default) of every fee.
    function treasury() external view returns (address);

    /// @notice The account that receives the insurance share (5% by default) of every fee and the
    ///         staking tokens forfeited by slashed and silent seats.
    function insuranceFund() external view returns (address);

    /// @notice Replaces every parameter at once.
    /// @dev Owner (governance) only. Reverts with `ParamsLib.ParamsOutOfRange` naming the first field
    ///      out of range. Emits `ParamsUpdated`.
    function setParams(Params calldata next) external;

    /// @notice Replaces the fee recipients. Owner (governance) only. Emits `RecipientsUpdated`.
    function setRecipients(address treasury_, address insuranceFund_) external;
}
