// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC1967Proxy} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol";
import {ERC1967Utils} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Utils.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts/proxy/utils/UUPSUpgradeable.sol";
import {Initializable} from "@openzeppelin/contracts/proxy/utils/Initializable.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";
import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";

import {TRUSTBase} from "./TRUSTBase.sol";
import {ProtocolParams} from "../src/ProtocolParams.sol";
import {IProtocolParams} from "../src/interfaces/IProtocolParams.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {ParamsLib} from "../src/libraries/ParamsLib.sol";
import {Params} from "../src/types/Params.sol";
import {ProtocolParamsUpgradeTarget, NotUpgradeable} from "./mocks/UpgradeTargets.sol";

/// @notice Deployment, range checks, governance through the timelock, recipients, versions and
///         upgrades of the parameter store.
contract ProtocolParamsTest is TRUSTBase {
    uint256 internal constant WAD = 1e18;
    uint256 internal constant BPS = 10_000;
    /// @dev TimelockController.OperationState.Ready, as `_encodeStateBitmap` encodes it.
    bytes32 internal constant READY_STATE_BITMAP = bytes32(uint256(1 << 2));

    address internal stranger = makeAddr("stranger");

    // ------------------------------------------------------------------ helpers

    function deployParams(address owner_, Params memory p, address treasury_, address insurance_)
        internal
        returns (ProtocolParams)
    {
        return ProtocolParams(
            address(
                new ERC1967Proxy(
                    address(new ProtocolParams()),
                    abi.encodeCall(ProtocolParams.initialize, (owner_, p, treasury_, insurance_))
                )
            )
        );
    }

    function assertParamsEq(Params memory a, Params memory b) internal pure {
        assertEq(keccak256(abi.encode(a)), keccak256(abi.encode(b)), "params differ");
    }

    /// @dev setParams(p) by the owner reverts naming `name` and `value`.
    function expectOutOfRange(Params memory p, string memory name, uint256 value) internal {
        vm.expectRevert(abi.encodeWithSelector(ParamsLib.ParamsOutOfRange.selector, name, value));
        params.setParams(p);
    }

    function implementationOf(address proxy) internal view returns (address) {
        return address(uint160(uint256(vm.load(proxy, ERC1967Utils.IMPLEMENTATION_SLOT))));
    }

    /// @dev A valid set that differs from the defaults in every field the tests look at.
    function otherParams() internal pure returns (Params memory p) {
        p = defaultParams();
        p.tauBps = 7_500;
        p.gammaWad = 0.2e18;
        p.committeeSizeTier1 = 5;
        p.penaltyPerSeat = 10e18;
        p.rewardPerSeatWei = 0.001 ether;
    }

    function scheduleSetParams(Params memory next, bytes32 salt) internal returns (bytes memory data, bytes32 id) {
        data = abi.encodeCall(ProtocolParams.setParams, (next));
        id = timelock.hashOperation(address(params), 0, data, bytes32(0), salt);
        vm.prank(governor);
        timelock.schedule(address(params), 0, data, bytes32(0), salt, TIMELOCK_DELAY);
    }

    // ------------------------------------------------------------------ initialize

    function test_initialize_setsParamsRecipientsVersionAndOwner() public view {
        assertParamsEq(params.params(), defaultParams());
        assertEq(params.version(), 1);
        assertEq(params.treasury(), treasury);
        assertEq(params.insuranceFund(), insurance);
        assertEq(params.owner(), address(this));
    }

    function test_initialize_emitsParamsUpdatedFromEmptyAndRecipients() public {
        Params memory empty;
        ProtocolParams impl = new ProtocolParams();
        vm.expectEmit(true, true, true, true);
        emit IProtocolParams.ParamsUpdated(1, empty, defaultParams());
        vm.expectEmit(true, true, true, true);
        emit IProtocolParams.RecipientsUpdated(address(0), treasury, address(0), insurance);
        new ERC1967Proxy(
            address(impl), abi.encodeCall(ProtocolParams.initialize, (address(this), defaultParams(), treasury, insurance))
        );
    }

    function test_initialize_revertsWhenCalledAgain() public {
        vm.expectRevert(Initializable.InvalidInitialization.selector);
        params.initialize(stranger, defaultParams(), treasury, insurance);
    }

    function test_initialize_revertsOnTheImplementation() public {
        ProtocolParams impl = new ProtocolParams();
        vm.expectRevert(Initializable.InvalidInitialization.selector);
        impl.initialize(address(this), defaultParams(), treasury, insurance);
    }

    function test_initialize_revertsWithZeroOwner() public {
        ProtocolParams impl = new ProtocolParams();
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableInvalidOwner.selector, address(0)));
        new ERC1967Proxy(
            address(impl), abi.encodeCall(ProtocolParams.initialize, (address(0), defaultParams(), treasury, insurance))
        );
    }

    function test_initialize_revertsWithOutOfRangeParams() public {
        Params memory p = defaultParams();
        p.tauBps = 5_000;
        ProtocolParams impl = new ProtocolParams();
        vm.expectRevert(abi.encodeWithSelector(ParamsLib.ParamsOutOfRange.selector, "tauBps", 5_000));
        new ERC1967Proxy(address(impl), abi.encodeCall(ProtocolParams.initialize, (address(this), p, treasury, insurance)));
    }

    function test_initialize_revertsWithZeroRecipient() public {
        ProtocolParams impl = new ProtocolParams();
        vm.expectRevert(IProtocolParams.ProtocolParamsZeroRecipient.selector);
        new ERC1967Proxy(
            address(impl), abi.encodeCall(ProtocolParams.initialize, (address(this), defaultParams(), address(0), insurance))
        );
    }

    // ------------------------------------------------------------------ ParamsLib.validate, one field at a time

    function test_validate_tauBps() public {
        Params memory p = defaultParams();
        p.tauBps = 5_000; // tau = 1/2 lets Pass and Fail both reach the threshold
        expectOutOfRange(p, "tauBps", 5_000);
        p.tauBps = 10_001;
        expectOutOfRange(p, "tauBps", 10_001);
        p.tauBps = 0;
        expectOutOfRange(p, "tauBps", 0);
    }

    function test_validate_betaBps() public {
        Params memory p = defaultParams();
        p.betaBps = 0;
        expectOutOfRange(p, "betaBps", 0);
        p.betaBps = 10_000; // beta in (0, 1), open on both sides (eq. 3.6)
        expectOutOfRange(p, "betaBps", 10_000);
    }

    function test_validate_gammaWad() public {
        Params memory p = defaultParams();
        p.gammaWad = 0;
        expectOutOfRange(p, "gammaWad", 0);
        p.gammaWad = uint64(WAD + 1);
        expectOutOfRange(p, "gammaWad", WAD + 1);
    }

    function test_validate_pMinBps() public {
        Params memory p = defaultParams();
        p.pMinBps = 0;
        expectOutOfRange(p, "pMinBps", 0);
        p.pMinBps = p.pMaxBps; // p_min < p_max strictly
        expectOutOfRange(p, "pMinBps", p.pMaxBps);
        p.pMinBps = p.pMaxBps + 1;
        expectOutOfRange(p, "pMinBps", p.pMaxBps + 1);
    }

    function test_validate_pMaxBps() public {
        Params memory p = defaultParams();
        p.pMaxBps = 10_001;
        expectOutOfRange(p, "pMaxBps", 10_001);
    }

    function test_validate_maxRounds() public {
        Params memory p = defaultParams();
        p.maxRounds = 0;
        expectOutOfRange(p, "maxRounds", 0);
        p.maxRounds = 5;
        expectOutOfRange(p, "maxRounds", 5);
    }

    function test_validate_committeeSizeTier1() public {
        Params memory p = defaultParams();
        p.committeeSizeTier1 = 0;
        expectOutOfRange(p, "committeeSizeTier1", 0);
        // maxRounds 3: 32 -> 65 -> 131 > 127.
        p.committeeSizeTier1 = 32;
        expectOutOfRange(p, "committeeSizeTier1", 32);
    }

    function test_validate_committeeSizeTier2() public {
        Params memory p = defaultParams();
        p.committeeSizeTier2 = 0;
        expectOutOfRange(p, "committeeSizeTier2", 0);
        p.committeeSizeTier2 = 32;
        expectOutOfRange(p, "committeeSizeTier2", 32);
    }

    function test_validate_committeeSizeTier3() public {
        Params memory p = defaultParams();
        p.committeeSizeTier3 = 0;
        expectOutOfRange(p, "committeeSizeTier3", 0);
        p.committeeSizeTier3 = 32;
        expectOutOfRange(p, "committeeSizeTier3", 32);
    }

    function test_validate_commitWindowSeconds() public {
        Params memory p = defaultParams();
        p.commitWindowSeconds = 0;
        expectOutOfRange(p, "commitWindowSeconds", 0);
        p.commitWindowSeconds = 30 days + 1;
        expectOutOfRange(p, "commitWindowSeconds", 30 days + 1);
    }

    function test_validate_revealWindowSeconds() public {
        Params memory p = defaultParams();
        p.revealWindowSeconds = 0;
        expectOutOfRange(p, "revealWindowSeconds", 0);
        p.revealWindowSeconds = 30 days + 1;
        expectOutOfRange(p, "revealWindowSeconds", 30 days + 1);
    }

    function test_validate_randomnessDelayBlocks() public {
        Params memory p = defaultParams();
        p.randomnessDelayBlocks = 0;
        expectOutOfRange(p, "randomnessDelayBlocks", 0);
        p.randomnessDelayBlocks = 129; // BLOCKHASH reaches 256 blocks back
        expectOutOfRange(p, "randomnessDelayBlocks", 129);
    }

    function test_validate_maxSegmentsPerSession() public {
        Params memory p = defaultParams();
        p.maxSegmentsPerSession = 0;
        expectOutOfRange(p, "maxSegmentsPerSession", 0);
        p.maxSegmentsPerSession = 4_097;
        expectOutOfRange(p, "maxSegmentsPerSession", 4_097);
    }

    function test_validate_penaltyPerSeat() public {
        Params memory p = defaultParams();
        p.penaltyPerSeat = 0;
        expectOutOfRange(p, "penaltyPerSeat", 0);
    }

    function test_validate_unbondingDelaySeconds() public {
        Params memory p = defaultParams();
        p.unbondingDelaySeconds = 365 days + 1;
        expectOutOfRange(p, "unbondingDelaySeconds", 365 days + 1);
    }

    function test_validate_minStakeTier1() public {
        Params memory p = defaultParams();
        p.minStakeTier1 = p.penaltyPerSeat - 1; // the minimum must back one seat
        expectOutOfRange(p, "minStakeTier1", p.penaltyPerSeat - 1);
    }

    function test_validate_minStakeTier2() public {
        Params memory p = defaultParams();
        p.minStakeTier2 = p.minStakeTier1 - 1;
        expectOutOfRange(p, "minStakeTier2", p.minStakeTier1 - 1);
    }

    function test_validate_minStakeTier3() public {
        Params memory p = defaultParams();
        p.minStakeTier3 = p.minStakeTier2 - 1;
        expectOutOfRange(p, "minStakeTier3", p.minStakeTier2 - 1);
    }

    function test_validate_initialReputationWad() public {
        Params memory p = defaultParams();
        p.initialReputationWad = uint64(WAD + 1);
        expectOutOfRange(p, "initialReputationWad", WAD + 1);
    }

    function test_validate_auditorShareBps() public {
        Params memory p = defaultParams();
        p.auditorShareBps = 0;
        p.treasuryShareBps += 7_000; // keep the split at 100% so that only this field is wrong
        expectOutOfRange(p, "auditorShareBps", 0);
    }

    function test_validate_feeSplitBps() public {
        Params memory p = defaultParams();
        p.insuranceShareBps -= 1;
        expectOutOfRange(p, "feeSplitBps", 9_999);
        p.insuranceShareBps += 2;
        expectOutOfRange(p, "feeSplitBps", 10_001);
    }

    function test_validate_namesTheFirstFieldOutOfRange() public {
        Params memory p = defaultParams();
        p.gammaWad = 0;
        p.penaltyPerSeat = 0;
        expectOutOfRange(p, "gammaWad", 0);
    }

    function test_validate_acceptsEveryBoundary() public {
        Params memory p = defaultParams();
        p.tauBps = 10_000;
        p.betaBps = 9_999;
        p.gammaWad = uint64(WAD);
        p.pMinBps = 9_999;
        p.pMaxBps = 10_000;
        p.maxRounds = 4;
        // The gas budget (M4): with four rounds a first committee of 3 settles at most
        // 3 + 7 + 15 + 31 = 56 seats at 180k gas each, under 12M; 4 would be 71.
        p.committeeSizeTier1 = 3;
        p.committeeSizeTier2 = 1;
        p.committeeSizeTier3 = 3;
        p.commitWindowSeconds = 30 days;
        p.revealWindowSeconds = 30 days;
        p.randomnessDelayBlocks = 128;
        p.maxSegmentsPerSession = 4_096;
        p.penaltyPerSeat = 1;
        p.unbondingDelaySeconds = 365 days;
        p.minStakeTier1 = 1;
        p.minStakeTier2 = 1;
        p.minStakeTier3 = 1;
        p.initialReputationWad = uint64(WAD);
        p.auditorShareBps = 10_000;
        p.treasuryShareBps = 0;
        p.stakerShareBps = 0;
        p.insuranceShareBps = 0;
        params.setParams(p);
        assertParamsEq(params.params(), p);

        p.tauBps = 5_001;
        p.betaBps = 1;
        p.gammaWad = 1;
        p.pMinBps = 1;
        p.pMaxBps = 2;
        p.maxRounds = 1;
        p.committeeSizeTier2 = 127; // one round: MAX_COMMITTEE_SIZE, settled in steps (M4)
        p.commitWindowSeconds = 1;
        p.revealWindowSeconds = 1;
        p.randomnessDelayBlocks = 1;
        p.maxSegmentsPerSession = 1;
        p.unbondingDelaySeconds = 0;
        p.initialReputationWad = 0;
        p.auditorShareBps = 1;
        p.insuranceShareBps = 9_999;
        params.setParams(p);
        assertParamsEq(params.params(), p);
    }

    function testFuzz_validate_tauBps(uint16 tau) public {
        Params memory p = defaultParams();
        p.tauBps = tau;
        if (tau <= 5_000 || tau > 10_000) {
            expectOutOfRange(p, "tauBps", tau);
        } else {
            params.setParams(p);
            assertEq(params.params().tauBps, tau);
        }
    }

    function testFuzz_validate_slashProbabilities(uint16 pMin, uint16 pMax) public {
        Params memory p = defaultParams();
        p.pMinBps = pMin;
        p.pMaxBps = pMax;
        if (pMin == 0 || pMin >= pMax) {
            expectOutOfRange(p, "pMinBps", pMin);
        } else if (pMax > 10_000) {
            expectOutOfRange(p, "pMaxBps", pMax);
        } else {
            params.setParams(p);
            assertEq(params.params().pMaxBps, pMax);
        }
    }

    /// @dev A size is accepted exactly when it and every escalated size (2k + 1 per round) stay
    ///      within 1..127.
    function testFuzz_validate_committeeSizeAndRounds(uint8 size, uint8 rounds) public {
        rounds = uint8(bound(rounds, 1, 4));
        Params memory p = defaultParams();
        p.maxRounds = rounds;
        p.committeeSizeTier1 = 1;
        p.committeeSizeTier2 = size;
        p.committeeSizeTier3 = 1;
        uint256 largest = size;
        uint256 seats = size;
        for (uint256 r = 1; r < rounds; ++r) {
            largest = 2 * largest + 1;
            seats += largest;
        }
        // The largest round must fit a committee and one draw's gas; a settlement step of
        // SETTLEMENT_CHUNK_SEATS with the rebuild of the deciding round's list (every round's
        // seats, M1), and the abandoning draw with the release of the earlier rounds, the
        // settlement budget (M4).
        uint256 chunk = seats < ParamsLib.SETTLEMENT_CHUNK_SEATS ? seats : ParamsLib.SETTLEMENT_CHUNK_SEATS;
        uint256 step = ParamsLib.SETTLEMENT_GAS_OVERHEAD + chunk * ParamsLib.SETTLEMENT_GAS_PER_SEAT
            + seats * ParamsLib.RECOMPUTE_GAS_PER_SEAT;
        uint256 abandon = ParamsLib.SETTLEMENT_GAS_OVERHEAD + largest * ParamsLib.DRAW_GAS_PER_SEAT
            + (seats - largest) * (ParamsLib.RELEASE_GAS_PER_SEAT + ParamsLib.RECOMPUTE_GAS_PER_SEAT);
        bool fits = largest <= 127 && largest * ParamsLib.DRAW_GAS_PER_SEAT <= ParamsLib.SETTLEMENT_GAS_BUDGET
            && step <= ParamsLib.SETTLEMENT_GAS_BUDGET && abandon <= ParamsLib.SETTLEMENT_GAS_BUDGET;
        if (size == 0 || !fits) {
            expectOutOfRange(p, "committeeSizeTier2", size);
        } else {
            params.setParams(p);
            assertEq(params.params().committeeSizeTier2, size);
        }
    }

    function testFuzz_validate_feeSplit(uint16 a, uint16 t, uint16 s, uint16 i) public {
        a = uint16(bound(a, 1, 10_000));
        Params memory p = defaultParams();
        p.auditorShareBps = a;
        p.treasuryShareBps = t;
        p.stakerShareBps = s;
        p.insuranceShareBps = i;
        uint256 sum = uint256(a) + t + s + i;
        if (sum != BPS) {
            expectOutOfRange(p, "feeSplitBps", sum);
        } else {
            params.setParams(p);
            assertEq(params.params().auditorShareBps, a);
        }
    }

    // ------------------------------------------------------------------ setParams

    function test_setParams_replacesEveryFieldAndIncrementsVersion() public {
        Params memory next = otherParams();
        params.setParams(next);
        assertParamsEq(params.params(), next);
        assertEq(params.version(), 2);
    }

    function test_setParams_emitsPreviousAndNewValues() public {
        Params memory next = otherParams();
        vm.expectEmit(true, true, true, true, address(params));
        emit IProtocolParams.ParamsUpdated(2, defaultParams(), next);
        params.setParams(next);
    }

    function test_setParams_revertsForNonOwner() public {
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, stranger));
        vm.prank(stranger);
        params.setParams(otherParams());
    }

    function test_setParams_outOfRangeLeavesParamsAndVersionAlone() public {
        Params memory p = otherParams();
        p.betaBps = 0;
        expectOutOfRange(p, "betaBps", 0);
        assertParamsEq(params.params(), defaultParams());
        assertEq(params.version(), 1);
    }

    function test_version_incrementsOncePerChange() public {
        Params memory p = defaultParams();
        for (uint256 i; i < 5; ++i) {
            p.tauBps = uint16(6_000 + i);
            params.setParams(p);
            assertEq(params.version(), 2 + i);
        }
        params.setRecipients(stranger, stranger);
        assertEq(params.version(), 6, "recipients are not parameters");
    }

    function test_setParams_appliesOnlyToSessionsCreatedAfterwards() public {
        ITRUSTAudit.SegmentInput[] memory segments = uniformSegments(1, 1);
        uint256 before = openSession(segments);
        params.setParams(otherParams());
        uint256 afterChange = openSession(segments);
        assertParamsEq(audit.sessionParams(before), defaultParams());
        assertParamsEq(audit.sessionParams(afterChange), otherParams());
        assertEq(audit.session(before).feeWei, 0.0006 ether * 3 * BPS / 7_000 + 1, "ceil(R * 3 seats / 70%)");
    }

    // ------------------------------------------------------------------ governance through the timelock

    function test_setParams_revertsForFormerOwnerAfterHandover() public {
        handToTimelock();
        assertEq(params.owner(), address(timelock));
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, address(this)));
        params.setParams(otherParams());
    }

    function test_setParams_revertsForGovernorCallingDirectly() public {
        handToTimelock();
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, governor));
        vm.prank(governor);
        params.setParams(otherParams());
    }

    function test_setParams_throughTimelockRevertsBeforeTheDelay() public {
        handToTimelock();
        (bytes memory data, bytes32 id) = scheduleSetParams(otherParams(), "early");
        vm.warp(block.timestamp + TIMELOCK_DELAY - 1);
        vm.expectRevert(
            abi.encodeWithSelector(TimelockController.TimelockUnexpectedOperationState.selector, id, READY_STATE_BITMAP)
        );
        vm.prank(governor);
        timelock.execute(address(params), 0, data, bytes32(0), "early");
        assertParamsEq(params.params(), defaultParams());
        assertEq(params.version(), 1);
    }

    function test_setParams_throughTimelockAppliesAfterTheDelay() public {
        handToTimelock();
        Params memory next = otherParams();
        (bytes memory data, bytes32 id) = scheduleSetParams(next, "on time");
        vm.warp(block.timestamp + TIMELOCK_DELAY);
        vm.expectEmit(true, true, true, true, address(params));
        emit IProtocolParams.ParamsUpdated(2, defaultParams(), next);
        vm.prank(governor);
        timelock.execute(address(params), 0, data, bytes32(0), "on time");
        assertParamsEq(params.params(), next);
        assertEq(params.version(), 2);
        assertTrue(timelock.isOperationDone(id));
    }

    function test_setParams_throughTimelockOutOfRangeRevertsAtExecution() public {
        handToTimelock();
        Params memory bad = defaultParams();
        bad.maxRounds = 0;
        (bytes memory data,) = scheduleSetParams(bad, "bad");
        vm.warp(block.timestamp + TIMELOCK_DELAY);
        vm.expectRevert(abi.encodeWithSelector(ParamsLib.ParamsOutOfRange.selector, "maxRounds", 0));
        vm.prank(governor);
        timelock.execute(address(params), 0, data, bytes32(0), "bad");
    }

    function test_timelock_refusesShorterDelay() public {
        handToTimelock();
        bytes memory data = abi.encodeCall(ProtocolParams.setParams, (otherParams()));
        vm.expectRevert(
            abi.encodeWithSelector(TimelockController.TimelockInsufficientDelay.selector, TIMELOCK_DELAY - 1, TIMELOCK_DELAY)
        );
        vm.prank(governor);
        timelock.schedule(address(params), 0, data, bytes32(0), "fast", TIMELOCK_DELAY - 1);
    }

    function test_timelock_refusesProposalsFromOthers() public {
        handToTimelock();
        bytes memory data = abi.encodeCall(ProtocolParams.setParams, (otherParams()));
        vm.expectRevert(
            abi.encodeWithSelector(
                IAccessControl.AccessControlUnauthorizedAccount.selector, address(this), timelock.PROPOSER_ROLE()
            )
        );
        timelock.schedule(address(params), 0, data, bytes32(0), "mine", TIMELOCK_DELAY);
    }

    // ------------------------------------------------------------------ setRecipients

    function test_setRecipients_replacesBothAndEmitsPreviousValues() public {
        address t2 = makeAddr("treasury2");
        address i2 = makeAddr("insurance2");
        vm.expectEmit(true, true, true, true, address(params));
        emit IProtocolParams.RecipientsUpdated(treasury, t2, insurance, i2);
        params.setRecipients(t2, i2);
        assertEq(params.treasury(), t2);
        assertEq(params.insuranceFund(), i2);
    }

    function test_setRecipients_revertsForZeroTreasury() public {
        vm.expectRevert(IProtocolParams.ProtocolParamsZeroRecipient.selector);
        params.setRecipients(address(0), insurance);
    }

    function test_setRecipients_revertsForZeroInsuranceFund() public {
        vm.expectRevert(IProtocolParams.ProtocolParamsZeroRecipient.selector);
        params.setRecipients(treasury, address(0));
    }

    function test_setRecipients_revertsForNonOwner() public {
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, stranger));
        vm.prank(stranger);
        params.setRecipients(stranger, stranger);
    }

    function test_setRecipients_onlyThroughTimelockAfterHandover() public {
        handToTimelock();
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, address(this)));
        params.setRecipients(stranger, stranger);
        governed(address(params), abi.encodeCall(ProtocolParams.setRecipients, (stranger, stranger)));
        assertEq(params.treasury(), stranger);
        assertEq(params.insuranceFund(), stranger);
    }

    // ------------------------------------------------------------------ UUPS upgrade

    function test_upgrade_byOwnerKeepsState() public {
        params.setParams(otherParams());
        address next = address(new ProtocolParamsUpgradeTarget());
        params.upgradeToAndCall(next, "");
        assertEq(implementationOf(address(params)), next);
        assertEq(ProtocolParamsUpgradeTarget(address(params)).upgradeMarker(), 2);
        assertParamsEq(params.params(), otherParams());
        assertEq(params.version(), 2);
        assertEq(params.treasury(), treasury);
        assertEq(params.owner(), address(this));
    }

    function test_upgrade_revertsForNonOwner() public {
        address before = implementationOf(address(params));
        address next = address(new ProtocolParamsUpgradeTarget());
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, stranger));
        vm.prank(stranger);
        params.upgradeToAndCall(next, "");
        assertEq(implementationOf(address(params)), before);
    }

    function test_upgrade_revertsForNonUUPSImplementation() public {
        address next = address(new NotUpgradeable());
        vm.expectRevert(abi.encodeWithSelector(ERC1967Utils.ERC1967InvalidImplementation.selector, next));
        params.upgradeToAndCall(next, "");
    }

    function test_upgrade_revertsWhenCalledOnTheImplementation() public {
        ProtocolParams impl = ProtocolParams(implementationOf(address(params)));
        address next = address(new ProtocolParamsUpgradeTarget());
        vm.expectRevert(UUPSUpgradeable.UUPSUnauthorizedCallContext.selector);
        impl.upgradeToAndCall(next, "");
    }

    function test_upgrade_onlyThroughTimelockAfterHandover() public {
        handToTimelock();
        address next = address(new ProtocolParamsUpgradeTarget());
        vm.expectRevert(abi.encodeWithSelector(OwnableUpgradeable.OwnableUnauthorizedAccount.selector, address(this)));
        params.upgradeToAndCall(next, "");
        governed(address(params), abi.encodeCall(UUPSUpgradeable.upgradeToAndCall, (next, "")));
        assertEq(implementationOf(address(params)), next);
    }
}
