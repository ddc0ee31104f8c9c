// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../src/interfaces/IAuditorRegistry.sol";
import {IProtocolParams} from "../../src/interfaces/IProtocolParams.sol";
import {ProtocolParams} from "../../src/ProtocolParams.sol";
import {Params} from "../../src/types/Params.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

/// @notice Issue L3, dodging a governance slash. Governance proposes, through the timelock (one day),
///         to slash an auditor's whole stake of 1,000 tokens; the auditor sees the proposal and,
///         before it can execute, either unbonds everything or takes a seat so that part of its
///         stake is locked and less than the proposed amount is within reach.
///         On 96c3011 unbonding did not dodge the slash (it already reached unbonding stake), but
///         taking one seat did: with 992 tokens in reach the slash of 1,000 reverted
///         (RegistryExceedsStake), the timelock operation failed, and the auditor kept everything.
///         The defence asserted here: the slash takes min(amount, unlocked + unbonding), so the
///         operation executes and takes all that is there, while the locked stake still backs the
///         open seat. A seat locks P per draw it won (7430925): the target, the tier's only member,
///         takes all three draws of a committee, so 3P (24 tokens) stay locked and 976 are taken.
contract L3SlashDodgeTest is TRUSTAuditBase {
    uint256 internal constant STAKE = 1_000e18;
    uint256 internal constant PENALTY = 8e18;
    uint256 internal constant UNITS = 3; // the tier-1 committee's draws, all the target's

    address internal target;
    bytes internal proposal;
    bytes32 internal salt = keccak256("slash proposal");

    function setUp() public override {
        super.setUp();
        // The tier's only member: every draw of a tier-1 committee lands on it.
        target = addAuditor("target", 1, STAKE);
        handToTimelock();
        proposal = abi.encodeCall(ITRUSTAudit.slashAuditor, (target, STAKE, "fraud"));
        vm.prank(governor);
        timelock.schedule(address(audit), 0, proposal, bytes32(0), salt, TIMELOCK_DELAY);
    }

    function execute() internal {
        vm.warp(block.timestamp + TIMELOCK_DELAY);
        vm.prank(governor);
        timelock.execute(address(audit), 0, proposal, bytes32(0), salt);
    }

    function test_L3_unbondingDoesNotDodgeTheQueuedSlash() public {
        vm.prank(target);
        registry.requestUnstake(STAKE); // everything, at once
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, target, STAKE);
        execute();
        IAuditorRegistry.AuditorInfo memory a = registry.auditor(target);
        assertEq(a.stake, 0);
        assertEq(a.unbonding, 0, "taken from the unbonding stake");
        assertEq(registry.claimableTokens(insurance), STAKE);
        vm.warp(block.timestamp + 7 days);
        vm.expectRevert(abi.encodeWithSelector(IAuditorRegistry.RegistryNothingUnbonding.selector, target));
        vm.prank(target);
        registry.executeUnstake();
    }

    function test_L3_aLockedSeatDoesNotDodgeTheQueuedSlash() public {
        // Half an hour before the slash can execute, the target takes a seat: the tier's only
        // member, it wins all three draws (one seat of weight three, 3P locked).
        vm.warp(block.timestamp + TIMELOCK_DELAY - 30 minutes);
        uint256 id = openSingle(1);
        address[] memory members = drawSegment(id, 0);
        assertEq(abi.encode(members), abi.encode(addrs(target)));
        assertEq(audit.seat(id, 0, 0, 0).weight, UNITS);
        uint256 locked = UNITS * PENALTY;
        assertEq(registry.auditor(target).locked, locked);

        vm.warp(block.timestamp + 30 minutes);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(0, target, STAKE - locked);
        vm.prank(governor);
        timelock.execute(address(audit), 0, proposal, bytes32(0), salt);
        IAuditorRegistry.AuditorInfo memory a = registry.auditor(target);
        assertEq(a.stake, locked, "only the locked stake is left");
        assertEq(a.locked, locked, "the open seat stays backed");
        assertEq(registry.claimableTokens(insurance), STAKE - locked);

        // The seat still settles; silent, the target forfeits its lock too (P per unit).
        toRevealEnd(id, 0);
        vm.expectEmit(address(audit));
        emit ITRUSTAudit.AuditorSlashed(id, target, locked);
        audit.finalizeSegment(id, 0);
        assertEq(registry.auditor(target).stake, 0);
        assertEq(registry.auditor(target).locked, 0);
        assertEq(registry.claimableTokens(insurance), STAKE);
    }

    /// @dev Schedules `call` on the parameters through the timelock and expects its execution to
    ///      revert with `error`.
    function expectRefusedThroughTimelock(bytes memory call, bytes memory error) internal {
        bytes32 id = keccak256(call);
        vm.prank(governor);
        timelock.schedule(address(params), 0, call, bytes32(0), id, TIMELOCK_DELAY);
        vm.warp(block.timestamp + TIMELOCK_DELAY);
        vm.prank(governor);
        vm.expectRevert(error);
        timelock.execute(address(params), 0, call, bytes32(0), id);
    }

    /// @dev The unbonding delay must outlast the timelock's: a parameter change that would let
    ///      unbonding stake leave before a queued slash executes is refused.
    function test_L3_unbondingDelayWithinTheTimelockIsRefused() public {
        Params memory p = defaultParams();
        p.unbondingDelaySeconds = uint32(TIMELOCK_DELAY);
        expectRefusedThroughTimelock(
            abi.encodeCall(ProtocolParams.setParams, (p)),
            abi.encodeWithSelector(
                IProtocolParams.ProtocolParamsUnbondingWithinTimelock.selector, TIMELOCK_DELAY, TIMELOCK_DELAY
            )
        );
        p.unbondingDelaySeconds = uint32(TIMELOCK_DELAY + 1);
        governed(address(params), abi.encodeCall(ProtocolParams.setParams, (p)));
        assertEq(params.params().unbondingDelaySeconds, TIMELOCK_DELAY + 1);
    }

    /// @dev Nor can ownership move to a timelock slower than the unbonding delay; an owner that is
    ///      no timelock (an account, a contract without `getMinDelay`) has no delay to outlast.
    function test_L3_ownershipMovesOnlyToATimelockTheUnbondingDelayOutlasts() public {
        address[] memory members = new address[](1);
        members[0] = governor;
        TimelockController slow = new TimelockController(30 days, members, members, address(0));
        expectRefusedThroughTimelock(
            abi.encodeWithSignature("transferOwnership(address)", address(slow)),
            abi.encodeWithSelector(IProtocolParams.ProtocolParamsUnbondingWithinTimelock.selector, 7 days, 30 days)
        );
        governed(address(params), abi.encodeWithSignature("transferOwnership(address)", address(registry)));
        assertEq(params.owner(), address(registry), "a contract without getMinDelay has no delay");
    }
}
