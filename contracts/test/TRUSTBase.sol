// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {ERC1967Proxy} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

import {TRUSTAudit} from "../src/TRUSTAudit.sol";
import {AuditorRegistry} from "../src/AuditorRegistry.sol";
import {ProtocolParams} from "../src/ProtocolParams.sol";
import {BlockhashRandomness} from "../src/randomness/BlockhashRandomness.sol";
import {TrustToken} from "../src/token/TrustToken.sol";
import {ITRUSTAudit} from "../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../src/interfaces/IAuditorRegistry.sol";
import {IProtocolParams} from "../src/interfaces/IProtocolParams.sol";
import {IRandomnessSource} from "../src/interfaces/IRandomnessSource.sol";
import {Params} from "../src/types/Params.sol";

/// @notice Shared fixture: the whole protocol behind proxies, governed by a timelock, plus helpers
///         to register auditors and drive a session through its phases.
abstract contract TRUSTBase is Test {
    uint256 internal constant TIMELOCK_DELAY = 1 days;
    uint256 internal constant SUPPLY = 1e30;

    TrustToken internal token;
    ProtocolParams internal params;
    AuditorRegistry internal registry;
    TRUSTAudit internal audit;
    BlockhashRandomness internal randomness;
    TimelockController internal timelock;

    address internal governor = makeAddr("governor");
    address internal treasury = makeAddr("treasury");
    address internal insurance = makeAddr("insurance");
    address internal provider = makeAddr("provider");

    function setUp() public virtual {
        vm.roll(100);
        vm.warp(1_700_000_000);
        token = new TrustToken(address(this), SUPPLY);
        address[] memory proposers = new address[](1);
        proposers[0] = governor;
        address[] memory executors = new address[](1);
        executors[0] = governor;
        timelock = new TimelockController(TIMELOCK_DELAY, proposers, executors, address(0));

        randomness = new BlockhashRandomness();
        params = ProtocolParams(
            address(
                new ERC1967Proxy(
                    address(new ProtocolParams()),
                    abi.encodeCall(ProtocolParams.initialize, (address(this), defaultParams(), treasury, insurance))
                )
            )
        );
        registry = AuditorRegistry(
            address(
                new ERC1967Proxy(
                    address(new AuditorRegistry()),
                    abi.encodeCall(AuditorRegistry.initialize, (address(this), token, IProtocolParams(address(params))))
                )
            )
        );
        audit = TRUSTAudit(
            address(
                new ERC1967Proxy(
                    address(new TRUSTAudit()),
                    abi.encodeCall(
                        TRUSTAudit.initialize,
                        (
                            address(this),
                            IAuditorRegistry(address(registry)),
                            IProtocolParams(address(params)),
                            IRandomnessSource(address(randomness))
                        )
                    )
                )
            )
        );
        registry.setAuditContract(address(audit));
        vm.deal(provider, 1_000 ether);
    }

    /// @notice The defaults of the TRUST paper (tau 0.66, gamma 0.1, p_min 0.35, p_max 0.5,
    ///         70/15/10/5) with test-friendly amounts.
    function defaultParams() internal pure returns (Params memory p) {
        p.tauBps = 6_600;
        p.betaBps = 6_500;
        p.gammaWad = 0.1e18;
        p.pMinBps = 3_500;
        p.pMaxBps = 5_000;
        p.committeeSizeTier1 = 3;
        p.committeeSizeTier2 = 5;
        p.committeeSizeTier3 = 5;
        p.maxRounds = 3;
        p.commitWindowSeconds = 1 hours;
        p.revealWindowSeconds = 1 hours;
        p.randomnessDelayBlocks = 2;
        p.maxSegmentsPerSession = 256;
        p.rewardPerSeatWei = 0.0006 ether;
        p.penaltyPerSeat = 8e18;
        p.unbondingDelaySeconds = 7 days;
        p.minStakeTier1 = 100e18;
        p.minStakeTier2 = 1_000e18;
        p.minStakeTier3 = 10_000e18;
        p.initialReputationWad = 0.5e18;
        p.auditorShareBps = 7_000;
        p.treasuryShareBps = 1_500;
        p.stakerShareBps = 1_000;
        p.insuranceShareBps = 500;
        p.maxWeightRatio = 10;
    }

    /// @notice Hands ownership of every protocol contract to the timelock (as a deployment does).
    function handToTimelock() internal {
        params.transferOwnership(address(timelock));
        registry.transferOwnership(address(timelock));
        audit.transferOwnership(address(timelock));
    }

    /// @notice Schedules `data` on `target` through the timelock, waits the delay and executes it.
    function governed(address target, bytes memory data) internal {
        bytes32 salt = keccak256(abi.encode(target, data, block.timestamp));
        vm.prank(governor);
        timelock.schedule(target, 0, data, bytes32(0), salt, TIMELOCK_DELAY);
        vm.warp(block.timestamp + TIMELOCK_DELAY);
        vm.prank(governor);
        timelock.execute(target, 0, data, bytes32(0), salt);
    }

    /// @notice Creates, funds and registers an auditor of `tier` with `stakeAmount` staked.
    function addAuditor(string memory name, uint8 tier, uint256 stakeAmount) internal returns (address a) {
        a = makeAddr(name);
        token.transfer(a, stakeAmount);
        if (tier == 3 && !registry.auditor(a).credentialed) registry.grantCredential(a);
        vm.startPrank(a);
        token.approve(address(registry), stakeAmount);
        registry.register(tier, keccak256(abi.encode("x25519", a)), string.concat("ipfs://", name), stakeAmount);
        vm.stopPrank();
    }

    /// @notice Registers `count` auditors of `tier`, each staking `stakeAmount`.
    function addAuditors(string memory prefix, uint8 tier, uint256 count, uint256 stakeAmount)
        internal
        returns (address[] memory list)
    {
        list = new address[](count);
        for (uint256 i; i < count; ++i) {
            list[i] = addAuditor(string.concat(prefix, vm.toString(i)), tier, stakeAmount);
        }
    }

    function segmentInput(uint8 tier, uint32 weight, bool critical, bool contradiction, bytes32 digest)
        internal
        pure
        returns (ITRUSTAudit.SegmentInput memory)
    {
        return ITRUSTAudit.SegmentInput({
            tier: tier, weight: weight, critical: critical, contradiction: contradiction, contentDigest: digest
        });
    }

    /// @notice `count` segments of `tier`, weight 1, none critical.
    function uniformSegments(uint256 count, uint8 tier) internal pure returns (ITRUSTAudit.SegmentInput[] memory list) {
        list = new ITRUSTAudit.SegmentInput[](count);
        for (uint256 i; i < count; ++i) {
            list[i] = segmentInput(tier, 1, false, false, keccak256(abi.encode("segment", i)));
        }
    }

    /// @notice Opens a session for `segments` paying exactly the minimum fee.
    function openSession(ITRUSTAudit.SegmentInput[] memory segments) internal returns (uint256 sessionId) {
        uint256 fee = audit.minimumFee(segments);
        vm.prank(provider);
        sessionId = audit.createSessionWithSegments{value: fee}(keccak256("trace"), segments);
    }

    /// @notice Mines past the session's randomness block and draws every segment.
    function drawAll(uint256 sessionId) internal {
        ITRUSTAudit.SessionView memory s = audit.session(sessionId);
        uint256 target = s.randomnessBlock + 1;
        if (block.number < target) vm.roll(target);
        uint256[] memory ids = new uint256[](s.segmentCount);
        for (uint256 i; i < ids.length; ++i) {
            ids[i] = i;
        }
        audit.assignAuditorsBatch(sessionId, ids);
    }

    function saltFor(address auditor, uint256 sessionId, uint256 segmentId, uint8 round) internal pure returns (bytes32) {
        return keccak256(abi.encode("salt", auditor, sessionId, segmentId, round));
    }

    /// @notice The seat `auditor` commits `vote` on the current round of a segment.
    function commitAs(address auditor, uint256 sessionId, uint256 segmentId, bool vote) internal {
        uint8 round = audit.segment(sessionId, segmentId).round;
        bytes32 c = audit.commitmentOf(sessionId, segmentId, round, auditor, vote, saltFor(auditor, sessionId, segmentId, round));
        vm.prank(auditor);
        audit.commitVote(sessionId, segmentId, c);
    }

    function revealAs(address auditor, uint256 sessionId, uint256 segmentId, bool vote) internal {
        uint8 round = audit.segment(sessionId, segmentId).round;
        vm.prank(auditor);
        audit.revealVote(sessionId, segmentId, vote, saltFor(auditor, sessionId, segmentId, round));
    }

    function toCommitEnd(uint256 sessionId, uint256 segmentId) internal {
        vm.warp(uint256(audit.segment(sessionId, segmentId).commitDeadline) + 1);
    }

    function toRevealEnd(uint256 sessionId, uint256 segmentId) internal {
        vm.warp(uint256(audit.segment(sessionId, segmentId).revealDeadline) + 1);
    }

    /// @notice Every seat of a segment's current round commits `vote`.
    function commitAll(uint256 sessionId, uint256 segmentId, bool vote) internal {
        address[] memory members = audit.committee(sessionId, segmentId);
        for (uint256 i; i < members.length; ++i) {
            commitAs(members[i], sessionId, segmentId, vote);
        }
    }

    /// @notice Every seat of a segment's current round reveals `vote` (call after the commit window).
    function revealAll(uint256 sessionId, uint256 segmentId, bool vote) internal {
        address[] memory members = audit.committee(sessionId, segmentId);
        for (uint256 i; i < members.length; ++i) {
            revealAs(members[i], sessionId, segmentId, vote);
        }
    }

    /// @notice Every seat of a segment's current round commits and reveals `vote`.
    function voteAll(uint256 sessionId, uint256 segmentId, bool vote) internal {
        commitAll(sessionId, segmentId, vote);
        toCommitEnd(sessionId, segmentId);
        revealAll(sessionId, segmentId, vote);
    }
}

// ---------------------------------------------------------------------- TRUSTAudit suite helpers

/// @notice Helpers shared by the `TRUSTAudit.*.t.sol` suites: parameter changes before
///         `handToTimelock()`, single-segment draws, and votes cast by named auditors (a committee's
///         seat order is random, so tests address seats by auditor, not by index).
abstract contract TRUSTAuditBase is TRUSTBase {
    uint256 internal constant WAD = 1e18;
    uint256 internal constant BPS = 10_000;

    /// @notice Replaces every protocol parameter as the owner (this contract, until `handToTimelock()`).
    function applyParams(Params memory p) internal {
        params.setParams(p);
    }

    /// @notice `auditor` stakes `amount` more tokens (handed over by this contract).
    function stakeMore(address auditor, uint256 amount) internal {
        token.transfer(auditor, amount);
        vm.startPrank(auditor);
        token.approve(address(registry), amount);
        registry.stake(amount);
        vm.stopPrank();
    }

    /// @notice Stakes what `auditor` lost, back up to `target`: a one-unit member (stake < 2P) that
    ///         forfeited P backs no unit until it does.
    function refill(address auditor, uint256 target) internal {
        uint256 current = registry.auditor(auditor).stake;
        if (current < target) stakeMore(auditor, target - current);
    }

    /// @notice Mines past the segment's own randomness block (an escalation fixes a new one).
    function rollPastRandomness(uint256 sessionId, uint256 segmentId) internal {
        uint256 target = uint256(audit.segment(sessionId, segmentId).randomnessBlock) + 1;
        if (block.number < target) vm.roll(target);
    }

    /// @notice Warps past the latest commit deadline among the session's segments (never back in
    ///         time). Segments whose every seat committed closed their window early, and their
    ///         reveal windows may end before this.
    function toLatestCommitEnd(uint256 sessionId) internal {
        uint256 latest = _latestDeadline(sessionId, false);
        if (block.timestamp <= latest) vm.warp(latest + 1);
    }

    /// @notice Warps past the latest reveal deadline among the session's segments (never back in time).
    function toLatestRevealEnd(uint256 sessionId) internal {
        uint256 latest = _latestDeadline(sessionId, true);
        if (block.timestamp <= latest) vm.warp(latest + 1);
    }

    function _latestDeadline(uint256 sessionId, bool reveal) private view returns (uint256 latest) {
        uint256 segmentCount = audit.session(sessionId).segmentCount;
        for (uint256 s; s < segmentCount; ++s) {
            ITRUSTAudit.SegmentView memory g = audit.segment(sessionId, s);
            uint256 deadline = reveal ? g.revealDeadline : g.commitDeadline;
            if (deadline > latest) latest = deadline;
        }
    }

    /// @notice Mines past the segment's randomness block, draws its committee and returns it.
    function drawSegment(uint256 sessionId, uint256 segmentId) internal returns (address[] memory members) {
        rollPastRandomness(sessionId, segmentId);
        audit.assignAuditors(sessionId, segmentId);
        members = audit.committee(sessionId, segmentId);
    }

    /// @notice Opens a one-segment session of `tier` (weight 1, not critical) at the minimum fee.
    function openSingle(uint8 tier) internal returns (uint256 sessionId) {
        sessionId = openSession(uniformSegments(1, tier));
    }

    /// @notice The index of the seat `auditor` holds in the segment's current round.
    function seatIndexOf(uint256 sessionId, uint256 segmentId, address auditor) internal view returns (uint256) {
        address[] memory members = audit.committee(sessionId, segmentId);
        for (uint256 i; i < members.length; ++i) {
            if (members[i] == auditor) return i;
        }
        revert("auditor not seated");
    }

    /// @notice `voters[i]` commits `votes[i]`; after the commit window every one of them reveals.
    ///         Seats not listed stay silent.
    function castVotes(uint256 sessionId, uint256 segmentId, address[] memory voters, bool[] memory votes) internal {
        require(voters.length == votes.length, "castVotes: lengths");
        for (uint256 i; i < voters.length; ++i) {
            commitAs(voters[i], sessionId, segmentId, votes[i]);
        }
        toCommitEnd(sessionId, segmentId);
        for (uint256 i; i < voters.length; ++i) {
            revealAs(voters[i], sessionId, segmentId, votes[i]);
        }
    }

    function contains(address[] memory list, address who) internal pure returns (bool) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == who) return true;
        }
        return false;
    }

    /// @notice One seat of a session, named as `claimRewards` takes it.
    function seatRef(uint256 segmentId, uint256 seatIndex) internal pure returns (ITRUSTAudit.SeatRef[] memory refs) {
        refs = new ITRUSTAudit.SeatRef[](1);
        refs[0] = ITRUSTAudit.SeatRef({segmentId: segmentId, seatIndex: seatIndex});
    }

    /// @notice Two seats of a session, in this order.
    function seatRefs(uint256 segment0, uint256 index0, uint256 segment1, uint256 index1)
        internal
        pure
        returns (ITRUSTAudit.SeatRef[] memory refs)
    {
        refs = new ITRUSTAudit.SeatRef[](2);
        refs[0] = ITRUSTAudit.SeatRef({segmentId: segment0, seatIndex: index0});
        refs[1] = ITRUSTAudit.SeatRef({segmentId: segment1, seatIndex: index1});
    }

    /// @notice The unclaimed seats of `auditor` that agree with a decided segment's outcome, in the
    ///         final round of each segment of the session: what `claimRewards` pays for.
    function alignedSeatsOf(uint256 sessionId, address auditor) internal view returns (ITRUSTAudit.SeatRef[] memory refs) {
        uint256 segmentCount = audit.session(sessionId).segmentCount;
        ITRUSTAudit.SeatRef[] memory found = new ITRUSTAudit.SeatRef[](segmentCount);
        uint256 n;
        for (uint256 s; s < segmentCount; ++s) {
            ITRUSTAudit.SegmentView memory g = audit.segment(sessionId, s);
            bool passed = g.status == ITRUSTAudit.SegmentStatus.Passed;
            if (!passed && g.status != ITRUSTAudit.SegmentStatus.Failed) continue;
            for (uint256 i; i < g.committeeSize; ++i) {
                ITRUSTAudit.SeatView memory v = audit.seat(sessionId, s, g.round, i);
                if (v.auditor == auditor && v.revealed && !v.claimed && v.vote == passed) {
                    found[n++] = ITRUSTAudit.SeatRef({segmentId: s, seatIndex: i});
                }
            }
        }
        refs = new ITRUSTAudit.SeatRef[](n);
        for (uint256 i; i < n; ++i) {
            refs[i] = found[i];
        }
    }

    /// @notice `auditor` claims the rewards of `refs`; returns the ETH it received.
    function claimAs(address auditor, uint256 sessionId, ITRUSTAudit.SeatRef[] memory refs) internal returns (uint256) {
        uint256 before = auditor.balance;
        vm.prank(auditor);
        audit.claimRewards(sessionId, refs);
        return auditor.balance - before;
    }

    /// @notice `account` withdraws its credited ETH (treasury, insurance fund); returns the amount.
    function withdrawAs(address account) internal returns (uint256) {
        uint256 before = account.balance;
        vm.prank(account);
        audit.withdraw();
        return account.balance - before;
    }

    function addrs(address a) internal pure returns (address[] memory list) {
        list = new address[](1);
        list[0] = a;
    }

    function addrs(address a, address b) internal pure returns (address[] memory list) {
        list = new address[](2);
        (list[0], list[1]) = (a, b);
    }

    function addrs(address a, address b, address c) internal pure returns (address[] memory list) {
        list = new address[](3);
        (list[0], list[1], list[2]) = (a, b, c);
    }

    function bools(bool a) internal pure returns (bool[] memory list) {
        list = new bool[](1);
        list[0] = a;
    }

    function bools(bool a, bool b) internal pure returns (bool[] memory list) {
        list = new bool[](2);
        (list[0], list[1]) = (a, b);
    }

    function bools(bool a, bool b, bool c) internal pure returns (bool[] memory list) {
        list = new bool[](3);
        (list[0], list[1], list[2]) = (a, b, c);
    }

    function ids(uint256 a) internal pure returns (uint256[] memory list) {
        list = new uint256[](1);
        list[0] = a;
    }

    function ids(uint256 a, uint256 b) internal pure returns (uint256[] memory list) {
        list = new uint256[](2);
        (list[0], list[1]) = (a, b);
    }
}
