// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {IProtocolParams} from "./interfaces/IProtocolParams.sol";
import {Params} from "./types/Params.sol";
import {ParamsLib} from "./libraries/ParamsLib.sol";

/// @dev The one view of OpenZeppelin's `TimelockController` this contract reads.
interface ITimelockDelay {
    function getMinDelay() external view returns (uint256);
}

/// @title ProtocolParams
/// @notice The single home of every TRUST protocol parameter (tau, beta, gamma, p_min, p_max, R, P,
///         k per tier, windows, minimum stakes, fee split, unbonding delay, maximum rounds).
/// @dev Owned by a TimelockController: a change is scheduled, waits out the timelock's delay, and
///      only then applies, and then only to sessions created afterwards (sessions copy the values).
contract ProtocolParams is IProtocolParams, Initializable, UUPSUpgradeable, OwnableUpgradeable {
    using ParamsLib for Params;

    Params private _current;
    uint256 private _version;
    address private _treasury;
    address private _insuranceFund;

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    /// @notice Sets the owner (governance), the first parameters and the fee recipients.
    function initialize(address owner_, Params calldata initial, address treasury_, address insuranceFund_)
        external
        initializer
    {
        _setParams(_current, initial); // all zero before the first version
        __Ownable_init(owner_); // after the parameters: the owner's delay is checked against them
        _setRecipients(treasury_, insuranceFund_);
    }

    /// @inheritdoc IProtocolParams
    function params() external view returns (Params memory) {
        return _current;
    }

    /// @inheritdoc IProtocolParams
    function version() external view returns (uint256) {
        return _version;
    }

    /// @inheritdoc IProtocolParams
    function treasury() external view returns (address) {
        return _treasury;
    }

    /// @inheritdoc IProtocolParams
    function insuranceFund() external view returns (address) {
        return _insuranceFund;
    }

    /// @inheritdoc IProtocolParams
    function setParams(Params calldata next) external onlyOwner {
        _setParams(_current, next);
    }

    /// @inheritdoc IProtocolParams
    function setRecipients(address treasury_, address insuranceFund_) external onlyOwner {
        _setRecipients(treasury_, insuranceFund_);
    }

    /// @dev Ownership moves only to a governor whose delay the current unbonding delay outlasts.
    function _transferOwnership(address newOwner) internal override {
        _checkUnbondingOutlasts(_current.unbondingDelaySeconds, newOwner);
        super._transferOwnership(newOwner);
    }

    /// @dev Reverts when `governor` is a timelock (it answers `getMinDelay`) whose delay is at least
    ///      `unbondingDelaySeconds` (finding L3): a slash scheduled there must find the stake that its
    ///      target started unbonding when it saw the slash coming still within reach. The timelock
    ///      can change its own delay later (`updateDelay`, through itself); the unbonding delay is
    ///      checked again at every parameter change. An owner that is no timelock has no delay.
    function _checkUnbondingOutlasts(uint256 unbondingDelaySeconds, address governor) private view {
        if (governor.code.length == 0) return;
        // A low-level call: an owner with a fallback that returns nothing (a multisig) must not
        // make the ownership transfer revert on decoding.
        (bool ok, bytes memory answer) = governor.staticcall(abi.encodeCall(ITimelockDelay.getMinDelay, ()));
        if (!ok || answer.length != 32) return; // not a timelock
        uint256 delay = abi.decode(answer, (uint256));
        if (delay != 0 && unbondingDelaySeconds <= delay) {
            revert ProtocolParamsUnbondingWithinTimelock(unbondingDelaySeconds, delay);
        }
    }

    function _setParams(Params memory previous, Params calldata next) private {
        next.validate();
        _checkUnbondingOutlasts(next.unbondingDelaySeconds, owner());
        _current = next;
        emit ParamsUpdated(++_version, previous, next);
    }

    function _setRecipients(address treasury_, address insuranceFund_) private {
        if (treasury_ == address(0) || insuranceFund_ == address(0)) revert ProtocolParamsZeroRecipient();
        emit RecipientsUpdated(_treasury, treasury_, _insuranceFund, insuranceFund_);
        _treasury = treasury_;
        _insuranceFund = insuranceFund_;
    }

    function _authorizeUpgrade(address) internal override onlyOwner {}
}
