// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {CommonBase} from "forge-std/Base.sol";
import {StdUtils} from "forge-std/StdUtils.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";
import {ERC1967Utils} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Utils.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";

import {TRUSTAudit} from "../../../src/TRUSTAudit.sol";
import {AuditorRegistry} from "../../../src/AuditorRegistry.sol";
import {ProtocolParams} from "../../../src/ProtocolParams.sol";
import {ITRUSTAudit} from "../../../src/interfaces/ITRUSTAudit.sol";
import {IAuditorRegistry} from "../../../src/interfaces/IAuditorRegistry.sol";
import {IRandomnessSource} from "../../../src/interfaces/IRandomnessSource.sol";
import {ReputationLib} from "../../../src/libraries/ReputationLib.sol";
import {ParamsLib} from "../../../src/libraries/ParamsLib.sol";
import {Params} from "../../../src/types/Params.sol";

/// @notice Drives the whole protocol (TRUSTAudit + AuditorRegistry) for the invariant suite.
/// @dev Every action bounds its inputs, picks its actors from a fixed set (auditors of the three
///      tiers, one provider, a stranger) and calls the protocol inside try/catch, so that a revert
///      never ends a run; the ghost variables record only what succeeded. Lifecycle actions that
///      need time to pass (draw, reveal, finalize) move the clock themselves when they must, so that
///      sessions reach their end within a run's depth.
///
///      Draw weights are modelled from the rules, not read back: each auditor's weight (its stake
///      while registered, available, at the tier minimum in force at its last re-evaluation and
///      credentialed for tier 3) and its history by block, which is what a draw must read at its
///      randomness block, and each tier's tree order. Draws are checked as they happen against a
///      reference draw (`_referenceDraw`, issue L2): `committeeSize` draws with replacement by stake
///      at the randomness block, one seat per distinct member weighing the draws it won (its
///      units), each unit backed and locked by P (issue H2). A committee is seated exactly when the
///      reference draw backs every unit, otherwise the round is retried with fresh randomness and
///      ends Undetermined at the third attempt; a draw never reverts once its randomness is known,
///      and it charges the lock exactly to the members it reached that unstaked after the
///      randomness block (issue M2). Every amount is modelled per unit: locks and forfeits
///      (units x P), compensation of released seats (units x R), rewards of aligned seats of a
///      decided segment's final round (per-seat reward x units), and the tally (eq. 3.3 over units).
///
///      Governance acts as a deployment's does: every protocol contract is owned by a
///      TimelockController, and each governance action (parameters, slashes, upgrades) is scheduled
///      there and executed once its delay has passed (the clock moves by the delay). Upgrades swap a
///      proxy between two implementations of the same code mid-run; every invariant must hold across
///      them, and the state each proxy shows must be the same before and after.
contract ProtocolHandler is CommonBase, StdUtils {
    uint256 internal constant BPS = 10_000;
    uint256 internal constant MAX_SEGMENTS = 2;
    /// @dev Sessions without a trace verdict at any time: the runs finish sessions rather than
    ///      open ever more of them.
    uint256 internal constant MAX_OPEN_SESSIONS = 2;

    /// @notice A segment of a session.
    struct SegmentRef {
        uint256 sessionId;
        uint256 segmentId;
    }

    /// @notice A segment whose verdict was recorded when first seen.
    struct FinalSegment {
        uint256 sessionId;
        uint256 segmentId;
        ITRUSTAudit.SegmentStatus status;
    }

    /// @notice What the handler committed for a seat, and how many reveals of it succeeded.
    ///         `everCommitted` is true once any commit of the seat succeeded (even one that opens to
    ///         nothing): what the audit contract counts towards closing the commit window.
    struct SeatGhost {
        bool committed;
        bool everCommitted;
        bool vote;
        bytes32 salt;
        uint256 reveals;
    }

    /// @notice A drawn round's commit window as the handler saw it: the deadline fixed at the draw,
    ///         the committee size (its draws), the seats (distinct members) they seated, the seats
    ///         that committed at least once, and the time of the commit that completed the
    ///         committee (0 while a seat has not committed).
    struct RoundGhost {
        uint48 drawnCommitDeadline;
        uint8 committeeSize;
        uint8 seatCount;
        uint8 committedSeats;
        uint256 closedAt;
    }

    /// @notice A seat that agreed with its decided segment's outcome: its reward (per-seat reward
    ///         times its units) is claimable.
    struct AlignedSeat {
        uint256 segmentId;
        uint256 seatIndex;
        address auditor;
        uint256 units;
        bool claimed;
    }

    /// @notice A seat of some round of a segment.
    struct SeatRef {
        uint256 sessionId;
        uint256 segmentId;
        uint8 round;
        uint256 index;
    }

    /// @notice What the reference draw (`_referenceDraw`) says a committee must be: the distinct
    ///         members in the order of their first draw with the draws each won (its units),
    ///         whether every one of the `committeeSize` draws found a member (`full`), and the
    ///         members passed over because they unbonded after the randomness block with at least
    ///         the lock unbonding (to be charged the lock); and how many members it passed over
    ///         because their unlocked stake could not back one more unit (for the call summary).
    struct ModelDraw {
        address[] members;
        uint256[] units;
        uint256 seated;
        uint256 unitsDrawn;
        bool full;
        address[] deserters;
        uint256 deserterCount;
        uint256 shortOfBacking;
    }

    /// @notice A seat's state just before its round is finalized.
    struct SeatBefore {
        address auditor;
        bool revealed;
        bool vote;
        uint96 stake;
        uint64 reputationWad;
        /// @dev Released by `claimUndelivered` before the round ended: settled already.
        bool released;
        /// @dev The draws the seat won (its weight).
        uint256 units;
        /// @dev Where the seat sits (its round and index), for the deferred record.
        uint8 round;
        uint256 index;
    }

    /// @notice What backed a seat when it was drawn (see `_backing`): its member's bonded stake
    ///         and `ghost_stakeLost` then, and its units.
    struct SeatBacking {
        uint256 stakeAtDraw;
        uint256 lostAtDraw;
        uint256 units;
    }

    /// @dev A revealed seat of a round that escalated: locked until the segment's verdict (M1).
    struct DeferredSeat {
        address auditor;
        bool vote;
        uint256 units;
        uint8 round;
        uint256 index;
    }

    /// @dev The most seats one auditor may settle in one finalization: one per round.
    uint256 internal constant MAX_SEATS_SETTLED_TOGETHER = 8;

    /// @dev One auditor's expected settlement in one finalization (an auditor may hold seats in
    ///      several of the rounds settled together, one per round).
    struct Expected {
        address auditor;
        uint96 stakeBefore;
        uint64 reputation; // after every update of this settlement, in the contract's order
        uint256 exactLoss; // silent seats: units x the lock each
        uint256[MAX_SEATS_SETTLED_TOGETHER] mayLose; // misaligned seats: each loses units x the lock, or nothing
        uint256 misaligned;
        uint256 seats;
    }

    mapping(bytes32 segmentKey => DeferredSeat[]) internal _deferred;

    TRUSTAudit public immutable audit;
    AuditorRegistry public immutable registry;
    ProtocolParams public immutable params;
    IERC20 public immutable token;
    /// @dev Owns every protocol contract; the handler proposes and executes through it.
    TimelockController public immutable timelock;
    /// @dev Whoever deployed the handler: the only caller of `setImplementations`.
    address internal immutable _deployer;
    address public immutable provider;
    address public immutable stranger;
    address public immutable treasury;
    address public immutable insurance;

    /// @dev Every auditor actor (registered or not yet), then the provider (registered in tier 1).
    address[] internal _auditors;
    /// @dev Everyone who may hold a balance in the protocol: auditors, provider, stranger, treasury,
    ///      insurance fund.
    address[] internal _everyone;
    mapping(address actor => uint8) public tierOf;

    // ---- sessions, as the handler saw them
    uint256[] internal _sessionIds;
    mapping(uint256 sessionId => ITRUSTAudit.SegmentInput[]) internal _inputs;
    mapping(uint256 sessionId => uint256) public finalizedSegments;
    SegmentRef[] internal _awaiting;
    SegmentRef[] internal _voting;
    FinalSegment[] internal _finals;
    uint256[] internal _traces;
    mapping(uint256 sessionId => bool) public traceRecorded;
    mapping(uint256 sessionId => bool) public traceValid;
    mapping(uint256 sessionId => bool) public traceDistributed;

    // ---- ghost state
    mapping(bytes32 seatKey => SeatGhost) internal _seats;
    mapping(address auditor => uint256) public ghost_locked;
    mapping(address auditor => uint256) public ghost_openSeats;
    /// @dev The tier minimum in force when the registry last re-evaluated the auditor's draw
    ///      weight (`_sync`): at the auditor's own actions, forfeits, slashes and `syncDrawWeights`,
    ///      not when governance changes the parameters.
    mapping(address auditor => uint256) public syncedMinStake;
    /// @dev The draw weight the rules give (see `_synced`).
    mapping(address auditor => uint256) public ghost_drawWeight;
    /// @dev Every change of `ghost_drawWeight`, by block (the last value of a block counts).
    mapping(address auditor => uint256[]) internal _historyBlocks;
    mapping(address auditor => uint256[]) internal _historyWeights;
    /// @dev Each tier's sortition tree as the registry builds it: a member is appended when its
    ///      draw weight first becomes non-zero and keeps its place for good (a draw reads the
    ///      members' intervals in this order, each as wide as its weight at the randomness block).
    mapping(uint8 tier => address[]) internal _leaves;
    mapping(address auditor => bool) internal _inTree;

    /// @dev The block of each auditor's last successful unstake request.
    mapping(address auditor => uint256) public unbondingBlockOf;
    /// @dev The weight each drawn seat must carry: the units the reference draw gives its member.
    mapping(bytes32 seatKey => uint256) internal _expectedSeatWeight;

    // ---- seat rewards
    mapping(uint256 sessionId => uint256) public feeOf;
    mapping(uint256 sessionId => AlignedSeat[]) internal _aligned;
    /// @dev Aligned seats claimed (entries of `_aligned`), and the units of the aligned seats
    ///      and of those claimed.
    mapping(uint256 sessionId => uint256) public claimedSeats;
    mapping(uint256 sessionId => uint256) public alignedUnits;
    mapping(uint256 sessionId => uint256) public claimedUnits;
    /// @dev Fixed when the session's fee is split: the auditors' share over its aligned units.
    mapping(uint256 sessionId => uint256) public ghost_perSeatWei;

    uint256 public ghost_tokensIn;
    uint256 public ghost_tokensOut;
    uint256 public ghost_insuranceTokensClaimed;
    uint256 public ghost_forfeited;
    uint256 public ghost_slashed;

    uint256 public ghost_feesIn;
    uint256 public ghost_ethWithdrawn;
    uint256 public ghost_ethToRegistry;
    uint256 public ghost_stakerRewardsClaimed;
    uint256 public ghost_ethClaimed;

    uint256 public ghost_maxRevealsPerSeat;
    uint256 public ghost_unseatedSuccesses;
    uint256 public ghost_wrongRevealsAccepted;
    uint256 public ghost_committeeViolations;
    /// @dev Draws that reverted once their randomness was known, draws reported unavailable while
    ///      the tier could seat the committee, and unavailable draws that neither retried with a
    ///      fresh block nor (at the last attempt) ended the segment Undetermined.
    uint256 public ghost_drawReverts;
    uint256 public ghost_falseUnavailable;
    uint256 public ghost_retryViolations;
    /// @dev Unavailable draws of a segment's round so far.
    mapping(bytes32 roundKey => uint256) internal _drawAttempts;
    mapping(bytes32 roundKey => RoundGhost) internal _rounds;
    /// @dev Commits accepted once every seat of their round had committed (the window is closed).
    uint256 public ghost_commitsAfterClose;
    uint256 public ghost_settlementViolations;
    /// @dev Finalizations whose outcome is not eq. 3.3 over the round's seats weighed by their
    ///      units (Passed / Failed at tau of the committee's units, else escalate, or Undetermined
    ///      at the last round or when undelivered units are more than half).
    uint256 public ghost_tallyMismatches;
    /// @dev Draws whose committee (members, their order, their units) or availability differs
    ///      from the reference draw's (`_referenceDraw`): draws with replacement by stake.
    uint256 public ghost_referenceDrawMismatches;
    /// @dev Draws that seated a unit its member's unlocked stake did not back, locked other than
    ///      units x P of a member, or seated units that do not add up to the committee size.
    uint256 public ghost_unbackedUnits;
    uint256 public ghost_traceVerdictMismatches;
    uint256 public ghost_refinalizations;
    /// @dev Slashes that took locked stake, or other than min(asked, unlocked + unbonding).
    uint256 public ghost_overSlashesAccepted;
    /// @dev Draw charges (issue M2) taken from someone other than a member counted at the
    ///      randomness block that unstaked after it and could not back the lock, or of another
    ///      amount than the lock.
    uint256 public ghost_chargeViolations;
    /// @dev What draws charged deserters (to the insurance fund).
    uint256 public ghost_deserterCharges;
    uint256 public ghost_badClaimsAccepted;
    /// @dev Issue H1: a session still registering that had a randomness block, a cancel that did
    ///      not refund the whole fee, or an opening that fixed another block than now + delay.
    uint256 public ghost_openingViolations;
    uint256 public ghost_claimMismatches;

    // ---- stake behind seats (issue H2)
    /// @dev Stake each auditor lost as a penalty (forfeits at settlement, governance slashes of its
    ///      bonded stake), cumulative: the only ways its bonded stake may shrink while it holds a seat.
    mapping(address auditor => uint256) public ghost_stakeLost;
    /// @dev Unstake requests accepted from an auditor that held an open seat (must stay zero:
    ///      the stake a seat weighs cannot leave before the seat settles).
    uint256 public ghost_unstakesWhileSeated;
    /// @dev Per drawn seat: its member's bonded stake at the draw and `ghost_stakeLost` then.
    mapping(bytes32 seatKey => SeatBacking) internal _backing;

    // ---- upgrades
    /// @dev Per upgradeable proxy (0 audit, 1 registry, 2 params): two implementations of the same
    ///      code that `upgrade` swaps between.
    address[2][3] internal _implementations;
    /// @dev Upgrades after which a proxy showed other state than before, pointed at another
    ///      implementation than the one governance chose, or upgrades accepted from a stranger.
    uint256 public ghost_upgradeViolations;
    uint256 internal _governanceNonce;
    /// @dev In how many quarters of the segments tier 1 is picked (the rest split between tiers
    ///      2 and 3).
    uint256 internal _tier1Quarters = 2;

    // ---- call counts (callSummary)
    mapping(bytes32 action => uint256) public calls;
    bytes32[] internal _actionNames;

    constructor(
        TRUSTAudit audit_,
        AuditorRegistry registry_,
        ProtocolParams params_,
        TimelockController timelock_,
        address provider_,
        address stranger_,
        address[] memory auditors_,
        uint8[] memory tiers_
    ) {
        audit = audit_;
        registry = registry_;
        params = params_;
        token = IERC20(registry_.stakingToken());
        timelock = timelock_;
        _deployer = msg.sender;
        provider = provider_;
        stranger = stranger_;
        treasury = params_.treasury();
        insurance = params_.insuranceFund();
        for (uint256 i; i < auditors_.length; ++i) {
            _auditors.push(auditors_[i]);
            _everyone.push(auditors_[i]);
            tierOf[auditors_[i]] = tiers_[i];
        }
        tierOf[provider_] = 1;
        _everyone.push(provider_);
        _everyone.push(stranger_);
        _everyone.push(treasury);
        _everyone.push(insurance);
        ghost_tokensIn = token.balanceOf(address(registry_)); // the stakes registered in setUp
        // Everyone registered in setUp was evaluated then, in this block.
        for (uint256 i; i < _everyone.length; ++i) {
            _synced(_everyone[i]);
        }
    }

    // =================================================================== registry actions

    function register(uint256 actorSeed, uint256 amount) external {
        _register(_auditors[actorSeed % _auditors.length], amount);
    }

    function _register(address a, uint256 amount) internal {
        uint8 tier = tierOf[a];
        uint256 needed = _minStake(tier);
        amount = _bound(amount, needed, 3 * needed);
        vm.prank(a);
        try registry.register(tier, keccak256(abi.encode("key", a)), "ipfs://auditor", amount) {
            ghost_tokensIn += amount;
            _synced(a);
            _count("register");
        } catch {
            _count("register (reverted)");
        }
    }

    function stake(uint256 actorSeed, uint256 amount) external {
        _stake(_auditors[actorSeed % _auditors.length], amount);
    }

    function _stake(address a, uint256 amount) internal {
        amount = _bound(amount, 1, 500e18);
        vm.prank(a);
        try registry.stake(amount) {
            ghost_tokensIn += amount;
            _synced(a);
            _count("stake");
        } catch {
            _count("stake (reverted)");
        }
    }

    function requestUnstake(uint256 actorSeed, uint256 amount, bool fullExit) external {
        _requestUnstake(_auditors[actorSeed % _auditors.length], amount, fullExit);
    }

    function _requestUnstake(address a, uint256 amount, bool fullExit) internal {
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(a);
        uint256 needed = _minStake(info.tier);
        if (fullExit || info.stake <= needed) {
            amount = info.stake;
        } else {
            amount = _bound(amount, 1, info.stake - needed);
        }
        vm.prank(a);
        try registry.requestUnstake(amount) {
            if (ghost_openSeats[a] != 0) ghost_unstakesWhileSeated += 1;
            unbondingBlockOf[a] = block.number;
            _synced(a);
            _count("requestUnstake");
        } catch {
            _count("requestUnstake (reverted)");
        }
    }

    /// @dev `waitForDelay` also mines past the blocks in which a draw may still charge the stake.
    function executeUnstake(uint256 actorSeed, bool waitForDelay) external {
        address a = _auditors[actorSeed % _auditors.length];
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(a);
        if (waitForDelay && info.unbonding != 0 && block.timestamp < info.unbondingReadyAt) {
            vm.warp(info.unbondingReadyAt);
        }
        uint256 reach = unbondingBlockOf[a] + ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS;
        if (waitForDelay && info.unbonding != 0 && block.number <= reach) vm.roll(reach + 1);
        uint256 before = token.balanceOf(a);
        vm.prank(a);
        try registry.executeUnstake() {
            ghost_tokensOut += token.balanceOf(a) - before;
            unbondingBlockOf[a] = 0; // nothing unbonding: no draw may pass it over as a deserter
            _count("executeUnstake");
        } catch {
            _count("executeUnstake (reverted)");
        }
    }

    /// @dev Two calls in three switch an auditor on, so that most draws can still be made.
    function setAvailable(uint256 actorSeed, uint256 choice) external {
        _setAvailable(_auditors[actorSeed % _auditors.length], choice % 3 != 0);
    }

    function _setAvailable(address a, bool available) internal {
        vm.prank(a);
        try registry.setAvailable(available) {
            _synced(a);
            _count("setAvailable");
        } catch {
            _count("setAvailable (reverted)");
        }
    }

    function claimStakerReward(uint256 actorSeed) external {
        address a = _holderOf(actorSeed, _hasStakerReward);
        uint256 before = a.balance;
        vm.prank(a);
        try registry.claimStakerReward() {
            ghost_stakerRewardsClaimed += a.balance - before;
            _count("claimStakerReward");
        } catch {
            _count("claimStakerReward (reverted)");
        }
    }

    /// @dev The insurance fund is the only account forfeits and slashes are credited to; anyone
    ///      else's claim must fail.
    function claimTokens(uint256 actorSeed) external {
        address a = actorSeed % 2 == 0 ? insurance : _everyone[actorSeed % _everyone.length];
        uint256 before = token.balanceOf(a);
        vm.prank(a);
        try registry.claimTokens() {
            uint256 paid = token.balanceOf(a) - before;
            ghost_tokensOut += paid;
            if (a == insurance) ghost_insuranceTokensClaimed += paid;
            _count("claimTokens");
        } catch {
            _count("claimTokens (reverted)");
        }
    }

    /// @dev Governance slash of unlocked and unbonding stake; one call in four asks for more than
    ///      may be taken, and must take exactly what may be (issue L3), never locked stake.
    function governanceSlash(uint256 actorSeed, uint256 amount) external {
        address a = _auditors[actorSeed % _auditors.length];
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(a);
        uint256 available = uint256(info.stake) - info.locked + info.unbonding;
        bool tooMuch = amount % 4 == 0;
        if (tooMuch) {
            amount = available + 1 + amount % 1e21;
        } else {
            if (available == 0) return;
            amount = _bound(amount, 1, available);
        }
        uint256 expected = amount < available ? amount : available;
        if (_govern(address(audit), abi.encodeCall(TRUSTAudit.slashAuditor, (a, amount, "invariant")))) {
            IAuditorRegistry.AuditorInfo memory afterSlash = registry.auditor(a);
            uint256 taken = uint256(info.stake) + info.unbonding - afterSlash.stake - afterSlash.unbonding;
            if (taken != expected || afterSlash.locked != info.locked || afterSlash.stake < afterSlash.locked) {
                ghost_overSlashesAccepted += 1;
            }
            ghost_slashed += taken;
            ghost_stakeLost[a] += uint256(info.stake) - afterSlash.stake;
            _synced(a);
            _count(tooMuch ? bytes32("governanceSlash (more than held)") : bytes32("governanceSlash"));
        } else {
            _count("governanceSlash (reverted)");
        }
    }

    /// @dev Governance changes the penalty per seat. Open sessions keep the lock of their snapshot.
    ///      One choice in four is a penalty near the tier-1 minimum stake, so that a member's
    ///      unlocked stake backs one unit or a few: the draw then passes members over for want of
    ///      backing, and a tier can run short of units (issue L2), which small penalties never do.
    function setPenalty(uint256 choice) external {
        Params memory p = params.params();
        uint96[4] memory penalties = [uint96(5e18), 13e18, 40e18, 60e18];
        p.penaltyPerSeat = penalties[choice % 4];
        _count(
            _govern(address(params), abi.encodeCall(ProtocolParams.setParams, (p)))
                ? bytes32("setPenalty")
                : bytes32("setPenalty (reverted)")
        );
    }

    /// @dev Governance moves every tier's minimum stake. Nobody is re-evaluated by it: an auditor
    ///      keeps its draw weight until its next action or a `syncDrawWeights` that names it.
    function setMinStakes(uint256 choice) external {
        Params memory p = params.params();
        uint96[3] memory tier1 = [uint96(100e18), 150e18, 250e18];
        uint96[3] memory tier2 = [uint96(200e18), 300e18, 450e18];
        uint96[3] memory tier3 = [uint96(300e18), 450e18, 600e18];
        (p.minStakeTier1, p.minStakeTier2, p.minStakeTier3) = (tier1[choice % 3], tier2[choice % 3], tier3[choice % 3]);
        _count(
            _govern(address(params), abi.encodeCall(ProtocolParams.setParams, (p)))
                ? bytes32("setMinStakes")
                : bytes32("setMinStakes (reverted)")
        );
    }

    /// @dev Anyone re-evaluates the auditors whose bit is set in `mask` (and, with bit 255, the
    ///      stranger, who is not registered and must be skipped).
    function syncDrawWeights(uint256 mask) external {
        uint256 n = _everyone.length;
        address[] memory list = new address[](n);
        uint256 k;
        for (uint256 i; i < n; ++i) {
            if ((mask >> i) & 1 == 1) list[k++] = _everyone[i];
        }
        if ((mask >> 255) & 1 == 1 && k < n) list[k++] = stranger;
        address[] memory accounts = new address[](k);
        for (uint256 i; i < k; ++i) {
            accounts[i] = list[i];
        }
        vm.prank(stranger);
        try registry.syncDrawWeights(accounts) {
            for (uint256 i; i < k; ++i) {
                if (registry.auditor(accounts[i]).registered) _synced(accounts[i]);
            }
            _count("syncDrawWeights");
        } catch {
            _count("syncDrawWeights (reverted)");
        }
    }

    // =================================================================== upgrades

    /// @notice Gives the handler the implementations `upgrade` swaps between: per proxy (audit,
    ///         registry, params), the one behind it now and a fresh one of the same code.
    function setImplementations(address[2][3] calldata implementations) external {
        require(msg.sender == _deployer, "handler: deployer only");
        _implementations = implementations;
    }

    /// @notice Sets in how many quarters of new segments tier 1 is picked (1 to 3; 2 by default).
    function setTier1Quarters(uint256 quarters) external {
        require(msg.sender == _deployer && quarters >= 1 && quarters <= 3, "handler: deployer only, 1-3");
        _tier1Quarters = quarters;
    }

    /// @notice Governance upgrades one proxy (`which` % 3: audit, registry, params) to the other
    ///         implementation of the same code, through the timelock. Everything the proxy shows
    ///         (sessions, seats' members and stakes, balances, parameters) must read the same after
    ///         as before, and the proxy must point at the implementation governance chose. A
    ///         stranger's upgrade must fail.
    function upgrade(uint256 which) external {
        which %= 3;
        address proxy = which == 0 ? address(audit) : which == 1 ? address(registry) : address(params);
        address current = implementationOf(proxy);
        address next = current == _implementations[which][0] ? _implementations[which][1] : _implementations[which][0];

        vm.prank(stranger);
        try UUPSUpgradeable(proxy).upgradeToAndCall(next, "") {
            ghost_upgradeViolations += 1;
        } catch {}

        // Scheduled and waited out as `_govern` does; the state is read after the wait, since some
        // views move with time alone (the stakers' share streams).
        bytes memory data = abi.encodeCall(UUPSUpgradeable.upgradeToAndCall, (next, ""));
        bytes32 salt = bytes32(++_governanceNonce);
        timelock.schedule(proxy, 0, data, bytes32(0), salt, timelock.getMinDelay());
        vm.warp(block.timestamp + timelock.getMinDelay());
        bytes32 before = stateFingerprint();
        try timelock.execute(proxy, 0, data, bytes32(0), salt) {}
        catch {
            ghost_upgradeViolations += 1; // governance can always upgrade to a valid implementation
            _count("upgrade (reverted)");
            return;
        }
        if (implementationOf(proxy) != next || stateFingerprint() != before) ghost_upgradeViolations += 1;
        _count(
            which == 0 ? bytes32("upgrade audit") : which == 1 ? bytes32("upgrade registry") : bytes32("upgrade params")
        );
    }

    /// @notice The implementation behind an ERC-1967 proxy.
    function implementationOf(address proxy) public view returns (address) {
        return address(uint160(uint256(vm.load(proxy, ERC1967Utils.IMPLEMENTATION_SLOT))));
    }

    /// @notice A digest of everything the three proxies show about the actors and sessions of
    ///         the run: the audit contract's sessions, segments, committees and seats (current
    ///         round), credited ETH and wiring; the registry's auditors, balances, totals and
    ///         draw weights; the parameters, treasury and insurance fund; and every balance.
    function stateFingerprint() public view returns (bytes32 h) {
        (address registry_, address params_, address randomness_) = audit.dependencies();
        h = keccak256(
            abi.encode(audit.sessionCount(), registry_, params_, randomness_, audit.owner(), address(audit).balance)
        );
        for (uint256 k; k < _sessionIds.length; ++k) {
            uint256 id = _sessionIds[k];
            h = keccak256(abi.encode(h, audit.session(id), audit.sessionParams(id)));
            for (uint256 j; j < _inputs[id].length; ++j) {
                ITRUSTAudit.SegmentView memory g = audit.segment(id, j);
                address[] memory members = audit.committee(id, j);
                h = keccak256(abi.encode(h, g, members));
                for (uint256 i; i < members.length; ++i) {
                    h = keccak256(abi.encode(h, audit.seat(id, j, g.round, i)));
                }
            }
        }
        h = keccak256(
            abi.encode(h, registry.totalStake(), registry.owner(), registry.auditContract(), address(registry).balance)
        );
        for (uint8 tier = 1; tier <= 3; ++tier) {
            h = keccak256(abi.encode(h, registry.eligibleCount(tier), registry.eligibleStake(tier)));
        }
        for (uint256 i; i < _everyone.length; ++i) {
            address a = _everyone[i];
            h = keccak256(
                abi.encode(
                    h,
                    registry.auditor(a),
                    registry.claimableTokens(a),
                    registry.pendingStakerReward(a),
                    audit.claimable(a),
                    token.balanceOf(a)
                )
            );
        }
        h = keccak256(abi.encode(h, params.params(), params.treasury(), params.insuranceFund(), params.owner()));
    }

    /// @dev Schedules `data` on `target` in the timelock, waits out its delay and executes it, as
    ///      governance does on a deployment; returns whether the call went through.
    function _govern(address target, bytes memory data) internal returns (bool) {
        bytes32 salt = bytes32(++_governanceNonce);
        uint256 delay = timelock.getMinDelay();
        timelock.schedule(target, 0, data, bytes32(0), salt, delay);
        vm.warp(block.timestamp + delay);
        try timelock.execute(target, 0, data, bytes32(0), salt) {
            return true;
        } catch {
            timelock.cancel(timelock.hashOperation(target, 0, data, bytes32(0), salt));
            return false;
        }
    }

    // =================================================================== time

    function warp(uint256 secondsForward) external {
        vm.warp(block.timestamp + _bound(secondsForward, 1, 40 minutes));
        _count("warp");
    }

    /// @dev Up to 300 blocks: sometimes past the 256 blocks BLOCKHASH reaches, so that a draw
    ///      finds its randomness expired and fixes a new block.
    function roll(uint256 blocksForward) external {
        vm.roll(block.number + _bound(blocksForward, 1, 300));
        _count("roll");
    }

    // =================================================================== sessions

    function createSession(uint256 seed, uint256 segments, uint256 extraFeeWei) external {
        _createSession(seed, segments, extraFeeWei);
    }

    /// @notice A session created empty and registered in two calls; with `cancel`, cancelled by
    ///         its provider before the last one (issue H1: nothing about its committees exists yet,
    ///         and the whole fee comes back).
    function createRegisterCancel(uint256 seed, uint256 extraFeeWei, bool cancel) external {
        if (_sessionIds.length - _traces.length >= MAX_OPEN_SESSIONS) {
            _count("createRegisterCancel (capped)");
            return;
        }
        ITRUSTAudit.SegmentInput[] memory inputs = _segmentInputs(seed, MAX_SEGMENTS);
        ITRUSTAudit.SegmentInput[] memory first = new ITRUSTAudit.SegmentInput[](1);
        ITRUSTAudit.SegmentInput[] memory rest = new ITRUSTAudit.SegmentInput[](MAX_SEGMENTS - 1);
        first[0] = inputs[0];
        for (uint256 i = 1; i < MAX_SEGMENTS; ++i) {
            rest[i - 1] = inputs[i];
        }
        uint256 fee = audit.minimumFee(inputs) + _bound(extraFeeWei, 0, 0.01 ether);
        vm.prank(provider);
        uint256 id = audit.createSession{value: fee}(keccak256(abi.encode("trace", seed)), MAX_SEGMENTS);
        vm.prank(provider);
        audit.registerSegments(id, first);
        if (audit.session(id).randomnessBlock != 0) ghost_openingViolations += 1;
        if (cancel) {
            uint256 before = provider.balance;
            vm.prank(provider);
            audit.cancelSession(id);
            if (provider.balance - before != fee) ghost_openingViolations += 1;
            _count("createRegisterCancel (cancelled)");
            return;
        }
        vm.prank(provider);
        try audit.registerSegments(id, rest) {
            ITRUSTAudit.SessionView memory v = audit.session(id);
            if (v.randomnessBlock != block.number + audit.sessionParams(id).randomnessDelayBlocks) {
                ghost_openingViolations += 1;
            }
            _recordSession(id, fee, inputs);
            _count("createRegisterCancel (opened)");
        } catch {
            // Fee below the minimum cannot happen (paid up front): count it as a violation.
            ghost_openingViolations += 1;
        }
    }

    function draw(uint256 pick) external {
        if (_awaiting.length == 0) return;
        _draw(pick % _awaiting.length);
    }

    /// @notice Mines past a segment's randomness block, lets an auditor of its tier change its
    ///         weight (stake more, unstake, switch availability, or join), then draws: the draw must
    ///         read every weight, and the tree, as they stood at the randomness block.
    function drawAfterChange(uint256 pick, uint256 actorSeed, uint256 amount, uint256 kind) external {
        if (_awaiting.length == 0) return;
        (uint256 index,, address a, IAuditorRegistry.AuditorInfo memory info) = _pastRandomness(pick, actorSeed);
        kind %= 4;
        if (!info.registered) {
            _register(a, amount);
        } else if (kind == 0) {
            _stake(a, amount);
        } else if (kind == 1) {
            _requestUnstake(a, amount, amount % 4 == 0);
        } else {
            _setAvailable(a, !info.available);
        }
        _draw(index);
        _count("drawAfterChange");
    }

    /// @dev The awaiting segment `pick` names, with its randomness block mined, and an auditor of
    ///         its tier (`actorSeed`) with its registry record.
    function _pastRandomness(uint256 pick, uint256 actorSeed)
        internal
        returns (uint256 index, ITRUSTAudit.SegmentView memory g, address a, IAuditorRegistry.AuditorInfo memory info)
    {
        index = pick % _awaiting.length;
        SegmentRef memory r = _awaiting[index];
        g = audit.segment(r.sessionId, r.segmentId);
        if (block.number <= g.randomnessBlock) vm.roll(uint256(g.randomnessBlock) + 1);
        a = _auditorOfTier(g.tier, actorSeed);
        info = registry.auditor(a);
    }

    /// @notice Issues M2 and H2: once a segment's randomness block is mined, a member of its tier
    ///         counted then (and holding no seat) leaves entirely or, with `keepMinimum`, unbonds
    ///         all but the tier minimum (the whale of H2, whose snapshot stake would win it draws),
    ///         and the segment is drawn: the draw must pass it over either way, and charge it the
    ///         lock from its unbonding stake if it reaches it (`_checkCharges`), unless it staked
    ///         back what the block counted (half of the kept-minimum leavers do): then it may sit.
    function desertThenDraw(uint256 pick, uint256 actorSeed, bool keepMinimum) external {
        if (_awaiting.length == 0) return;
        (uint256 index, ITRUSTAudit.SegmentView memory g, address a, IAuditorRegistry.AuditorInfo memory info) =
            _pastRandomness(pick, actorSeed);
        if (weightAt(a, g.randomnessBlock) != 0 && info.locked == 0 && info.unbonding == 0) {
            uint256 needed = _minStake(info.tier);
            // `_requestUnstake` leaves the minimum when asked for stake - minimum, and exits when
            // the stake is at the minimum already.
            _requestUnstake(a, info.stake > needed ? info.stake - needed : 0, !keepMinimum);
            // Half of the kept-minimum leavers stake back what the block counted: topped back up,
            // a member risks that much again and is no deserter (it may sit, and is not charged).
            uint256 counted = weightAt(a, g.randomnessBlock);
            uint256 now_ = registry.stakeOf(a);
            if (keepMinimum && (actorSeed >> 128) % 2 == 0 && now_ != 0 && counted > now_) _stake(a, counted - now_);
        }
        _draw(index);
        _count(keepMinimum ? bytes32("desertThenDraw (kept minimum)") : bytes32("desertThenDraw"));
    }

    /// @param behaviour Four bits per seat: 0 silent, 1 a commitment that opens to nothing, 2-3 the
    ///        minority vote, 4-15 the majority vote. Bit 200 sends batches; bits 210+ pick the
    ///        majority vote (Pass three times in four).
    function commit(uint256 pick, uint256 behaviour) external {
        if (_voting.length == 0) return;
        _commit(_voting[pick % _voting.length], behaviour);
    }

    /// @param behaviour Four bits per seat: 0 silent, 1 reveal the other vote (must fail), 2 reveal
    ///        and then reveal again (the second must fail), 3-15 reveal. Bit 200 sends batches.
    function reveal(uint256 pick, uint256 behaviour) external {
        if (_voting.length == 0) return;
        _reveal(_voting[pick % _voting.length], behaviour);
    }

    /// @notice Someone who holds no seat in the round tries to commit and reveal, singly and in
    ///         batches naming another member's seat. None of it may succeed.
    function outsiderVote(uint256 pick, uint256 actorSeed, bool vote, bytes32 salt) external {
        if (_voting.length == 0) return;
        SegmentRef memory r = _voting[pick % _voting.length];
        ITRUSTAudit.SegmentView memory g = audit.segment(r.sessionId, r.segmentId);
        address[] memory members = audit.committee(r.sessionId, r.segmentId);
        address who = _everyone[actorSeed % _everyone.length];
        if (_contains(members, who)) who = stranger;
        uint256 seatIndex = (actorSeed >> 8) % g.committeeSize;

        bytes32 c = audit.commitmentOf(r.sessionId, r.segmentId, g.round, who, vote, salt);
        vm.prank(who);
        try audit.commitVote(r.sessionId, r.segmentId, c) {
            ghost_unseatedSuccesses += 1;
        } catch {}

        ITRUSTAudit.SeatCommit[] memory commits = new ITRUSTAudit.SeatCommit[](1);
        commits[0] = ITRUSTAudit.SeatCommit(r.sessionId, r.segmentId, seatIndex, c);
        vm.prank(who);
        try audit.commitVotes(commits) {
            ghost_unseatedSuccesses += 1;
        } catch {}

        // Replays the member's own opening (vote and salt), which an observer may know.
        SeatGhost storage target = _seats[_seatKey(r.sessionId, r.segmentId, g.round, seatIndex)];
        vm.prank(who);
        try audit.revealVote(r.sessionId, r.segmentId, target.vote, target.salt) {
            ghost_unseatedSuccesses += 1;
        } catch {}

        ITRUSTAudit.SeatReveal[] memory reveals = new ITRUSTAudit.SeatReveal[](1);
        reveals[0] = ITRUSTAudit.SeatReveal(r.sessionId, r.segmentId, seatIndex, target.vote, target.salt);
        vm.prank(who);
        try audit.revealVotes(reveals) {
            ghost_unseatedSuccesses += 1;
        } catch {}
        _count("outsiderVote");
    }

    /// @dev Bits 128 and up of `pick` choose how the round ends: 0 in one go (`finalizeSegment`),
    ///      otherwise in steps of 1 to 7 seats (`settleSegment`, issue M4); both end in the same
    ///      state (`test/TRUSTAudit.Settle.t.sol`), checked here by the same settlement checks.
    function finalizeSegment(uint256 pick, bool waitForDeadline) external {
        if (_voting.length == 0) return;
        _finalizeSegment(pick % _voting.length, waitForDeadline, (pick >> 128) % 8);
    }

    function finalizeTrace(uint256 pick) external {
        uint256 n = _sessionIds.length;
        if (n == 0) return;
        // Prefer a session whose segments are all final; otherwise try one anyway (must fail).
        for (uint256 k; k < n; ++k) {
            uint256 id = _sessionIds[(pick % n + k) % n];
            if (!traceRecorded[id] && finalizedSegments[id] == _inputs[id].length) {
                _finalizeTrace(id);
                return;
            }
        }
        _finalizeTrace(_sessionIds[pick % n]);
    }

    function distributeRewards(uint256 pick) external {
        uint256 n = _traces.length;
        if (n == 0) return;
        for (uint256 k; k < n; ++k) {
            uint256 id = _traces[(pick % n + k) % n];
            if (!traceDistributed[id]) {
                _distribute(id);
                return;
            }
        }
    }

    function withdraw(uint256 actorSeed) external {
        address a = _holderOf(actorSeed, _hasEther);
        uint256 before = a.balance;
        vm.prank(a);
        try audit.withdraw() {
            ghost_ethWithdrawn += a.balance - before;
            _count("withdraw");
        } catch {
            _count("withdraw (reverted)");
        }
    }

    /// @notice An auditor claims its unclaimed aligned seats of a distributed session.
    /// @param behaviour Bits 0-7 pick the auditor among the session's unclaimed seats; bits 8-9
    ///        the mode: 0 or 3 claim them, then claim the first again (must fail), 1 claim them
    ///        with one more seat it may not claim (the whole call must fail), 2 another actor
    ///        claims them (must fail). With no unclaimed seat left, some actor claims a random
    ///        seat, which must fail.
    function claimRewards(uint256 pick, uint256 behaviour) external {
        uint256 n = _traces.length;
        if (n == 0) return;
        for (uint256 k; k < n; ++k) {
            uint256 id = _traces[(pick % n + k) % n];
            if (traceDistributed[id] && claimedSeats[id] < _aligned[id].length) {
                _claim(id, behaviour);
                return;
            }
        }
        uint256 any = _traces[pick % n];
        if (!traceDistributed[any]) return;
        address who = _everyone[(behaviour >> 16) % _everyone.length];
        _expectClaimFails(any, who, _randomSeat(any, behaviour >> 24));
    }

    /// @notice Tries to finalize again what is final, and to distribute a fee twice. None of it
    ///         may succeed.
    function refinalize(uint256 pick) external {
        if (_finals.length != 0) {
            FinalSegment memory f = _finals[pick % _finals.length];
            try audit.finalizeSegment(f.sessionId, f.segmentId) {
                ghost_refinalizations += 1;
            } catch {}
        }
        if (_traces.length != 0) {
            uint256 id = _traces[pick % _traces.length];
            try audit.finalizeTrace(id) {
                ghost_refinalizations += 1;
            } catch {}
            if (traceDistributed[id]) {
                uint256 before = address(registry).balance;
                try audit.distributeRewards(id) {
                    ghost_refinalizations += 1;
                    ghost_ethToRegistry += address(registry).balance - before;
                } catch {}
            }
        }
        _count("refinalize");
    }

    /// @notice Moves the protocol a step forward, the most advanced work first: split the fee of a
    ///         finalized trace (or, one time in three, claim seat rewards), record a trace verdict, move a voting segment on (commit and reveal
    ///         in its commit window, else finalize it), draw a committee, or open a session. Keeps
    ///         sessions reaching their end within a run's depth; the single-step actions above
    ///         interleave everything else.
    function advance(uint256 pick, uint256 behaviour) external {
        uint256 n = _traces.length;
        for (uint256 k; k < n; ++k) {
            uint256 id = _traces[(pick % n + k) % n];
            if (!traceDistributed[id]) {
                _distribute(id);
                return;
            }
            if (behaviour % 3 == 0 && claimedSeats[id] < _aligned[id].length) {
                _claim(id, behaviour);
                return;
            }
        }
        n = _sessionIds.length;
        for (uint256 k; k < n; ++k) {
            uint256 id = _sessionIds[(pick % n + k) % n];
            if (!traceRecorded[id] && finalizedSegments[id] == _inputs[id].length) {
                _finalizeTrace(id);
                return;
            }
        }
        if (_voting.length != 0 && (_awaiting.length == 0 || pick % 3 != 0)) {
            uint256 i = pick % _voting.length;
            SegmentRef memory r = _voting[i];
            ITRUSTAudit.SegmentView memory g = audit.segment(r.sessionId, r.segmentId);
            if (block.timestamp <= g.commitDeadline) {
                _commit(r, behaviour);
                _reveal(r, uint256(keccak256(abi.encode(behaviour)))); // warps past the commit window
            } else if (block.timestamp <= g.revealDeadline && g.revealedCount < g.seatCount && behaviour % 4 == 0) {
                _reveal(r, uint256(keccak256(abi.encode(behaviour))));
            } else {
                _finalizeSegment(i, true, (behaviour >> 8) % 4);
            }
        } else if (_awaiting.length != 0) {
            _draw(pick % _awaiting.length);
        } else {
            _createSession(pick, behaviour, behaviour >> 64);
        }
    }

    // =================================================================== lifecycle internals

    function _createSession(uint256 seed, uint256 segments, uint256 extraFeeWei) internal {
        if (_sessionIds.length - _traces.length >= MAX_OPEN_SESSIONS) {
            _count("createSession (capped)");
            return;
        }
        uint256 n = _bound(segments, 1, MAX_SEGMENTS);
        ITRUSTAudit.SegmentInput[] memory inputs = _segmentInputs(seed, n);
        uint256 fee = audit.minimumFee(inputs) + _bound(extraFeeWei, 0, 0.01 ether);
        vm.prank(provider);
        try audit.createSessionWithSegments{value: fee}(keccak256(abi.encode("trace", seed)), inputs) returns (
            uint256 id
        ) {
            _recordSession(id, fee, inputs);
            _count("createSession");
        } catch {
            _count("createSession (reverted)");
        }
    }

    function _recordSession(uint256 id, uint256 fee, ITRUSTAudit.SegmentInput[] memory inputs) internal {
        ghost_feesIn += fee;
        feeOf[id] = fee;
        _sessionIds.push(id);
        for (uint256 i; i < inputs.length; ++i) {
            _inputs[id].push(inputs[i]);
            _awaiting.push(SegmentRef(id, i));
        }
    }

    function _segmentInputs(uint256 seed, uint256 n) internal view returns (ITRUSTAudit.SegmentInput[] memory inputs) {
        inputs = new ITRUSTAudit.SegmentInput[](n);
        for (uint256 i; i < n; ++i) {
            uint256 r = uint256(keccak256(abi.encode(seed, i)));
            // Tier 1 in `_tier1Quarters` of four (half by default), tiers 2 and 3 the rest.
            uint8 tier = r % 4 < _tier1Quarters ? 1 : uint8(2 + (r >> 40) % 2);
            inputs[i] = ITRUSTAudit.SegmentInput({
                tier: tier,
                weight: uint32(1 + (r >> 8) % 10),
                critical: (r >> 16) % 4 == 0,
                contradiction: (r >> 24) % 8 == 0,
                contentDigest: keccak256(abi.encode("segment", seed, i))
            });
        }
    }

    function _draw(uint256 index) internal {
        SegmentRef memory r = _awaiting[index];
        ITRUSTAudit.SegmentView memory before = audit.segment(r.sessionId, r.segmentId);
        if (block.number <= before.randomnessBlock) vm.roll(uint256(before.randomnessBlock) + 1);
        // BLOCKHASH reaches 256 blocks back: older randomness is refreshed without a draw.
        bool expired = block.number > uint256(before.randomnessBlock) + 256;
        Params memory p = audit.sessionParams(r.sessionId);
        ModelDraw memory model;
        if (!expired) model = _referenceDraw(r, before, p.penaltyPerSeat);
        IAuditorRegistry.AuditorInfo[] memory infos = _infos();
        if (model.shortOfBacking != 0) _count("draw (short of backing)");
        try audit.assignAuditors(r.sessionId, r.segmentId) {
            _checkCharges(infos, model, before.randomnessBlock, p.penaltyPerSeat);
            ITRUSTAudit.SegmentView memory g = audit.segment(r.sessionId, r.segmentId);
            if (expired) {
                if (!_refreshed(g, p)) ghost_retryViolations += 1;
                _count("draw (randomness expired)");
            } else if (g.status == ITRUSTAudit.SegmentStatus.Voting) {
                _seated(r, before, g, infos, model, p.penaltyPerSeat);
                _voting.push(r);
                _removeAwaiting(index);
                _count("draw");
            } else {
                _unavailable(index, r, before, g, p);
                if (model.full) ghost_falseUnavailable += 1;
            }
        } catch {
            ghost_drawReverts += 1;
            _count("draw (reverted)");
        }
    }

    /// @dev Every actor's registry record now.
    function _infos() internal view returns (IAuditorRegistry.AuditorInfo[] memory infos) {
        infos = new IAuditorRegistry.AuditorInfo[](_everyone.length);
        for (uint256 i; i < infos.length; ++i) {
            infos[i] = registry.auditor(_everyone[i]);
        }
    }

    /// @dev What a draw took from unbonding stake: only the lock, only from a member the model
    ///      weighed at the randomness block that unstaked after it (it may not sit, issue M2), and
    ///      exactly from the deserters the reference draw reached. Nothing else changes any stake
    ///      or unbonding stake in a draw.
    function _checkCharges(
        IAuditorRegistry.AuditorInfo[] memory infos,
        ModelDraw memory model,
        uint256 randomnessBlock,
        uint256 lock
    ) internal {
        for (uint256 i; i < infos.length; ++i) {
            address a = _everyone[i];
            IAuditorRegistry.AuditorInfo memory now_ = registry.auditor(a);
            IAuditorRegistry.AuditorInfo memory was = infos[i];
            if (now_.stake != was.stake || now_.unbonding > was.unbonding) {
                ghost_chargeViolations += 1;
                continue;
            }
            uint256 charged = uint256(was.unbonding) - now_.unbonding;
            bool reached = _containsFirst(model.deserters, model.deserterCount, a);
            if (charged == 0) {
                if (reached) ghost_chargeViolations += 1; // a deserter the draw reached went free
                continue;
            }
            bool deserter = weightAt(a, randomnessBlock) != 0 && unbondingBlockOf[a] > randomnessBlock
                && was.stake < weightAt(a, randomnessBlock) && was.unbonding >= lock && a != provider;
            if (!deserter || !reached || charged != lock) ghost_chargeViolations += 1;
            ghost_forfeited += charged;
            ghost_deserterCharges += charged;
            _count("draw (deserter charged)");
        }
    }

    /// @dev Checks a seated committee against the reference draw (members in the order of their
    ///      first draw, each with its units) and the rules: one seat per distinct member of the
    ///      tier, never the provider, each weighing more than zero at the randomness block; units
    ///      that add up to the committee size, each backed by P of the member's stake unlocked
    ///      before the draw and locked by it (units x P, exactly). Records the locks.
    function _seated(
        SegmentRef memory r,
        ITRUSTAudit.SegmentView memory before,
        ITRUSTAudit.SegmentView memory g,
        IAuditorRegistry.AuditorInfo[] memory infos,
        ModelDraw memory model,
        uint256 lock
    ) internal {
        address[] memory members = audit.committee(r.sessionId, r.segmentId);
        if (!model.full || members.length != model.seated) ghost_referenceDrawMismatches += 1;
        uint256 unitsDrawn;
        for (uint256 i; i < members.length; ++i) {
            address m = members[i];
            if (_contains(_slice(members, i), m) || tierOf[m] != g.tier || m == provider) {
                ghost_committeeViolations += 1;
            }
            if (weightAt(m, before.randomnessBlock) == 0) ghost_committeeViolations += 1;
            unitsDrawn += _seatedOne(r, g.round, i, m, infos[_indexOf(m)], model, lock);
        }
        if (unitsDrawn != g.committeeSize) ghost_unbackedUnits += 1;
        if (members.length != g.seatCount || g.randomnessBlock != before.randomnessBlock) {
            ghost_committeeViolations += 1;
        }
        RoundGhost storage round = _rounds[_roundKey(r, g.round)];
        round.drawnCommitDeadline = g.commitDeadline;
        round.committeeSize = g.committeeSize;
        round.seatCount = g.seatCount;
    }

    /// @dev The tier could not seat the round: attempts 1 and 2 fix a fresh block, the third ends
    ///      the segment Undetermined (a final verdict). Nothing may be seated or locked.
    function _unavailable(
        uint256 index,
        SegmentRef memory r,
        ITRUSTAudit.SegmentView memory before,
        ITRUSTAudit.SegmentView memory g,
        Params memory p
    ) internal {
        uint256 attempts = ++_drawAttempts[_roundKey(r, before.round)];
        if (audit.committee(r.sessionId, r.segmentId).length != 0 || g.round != before.round) {
            ghost_retryViolations += 1;
        }
        if (attempts < 3) {
            if (!_refreshed(g, p)) ghost_retryViolations += 1;
            _count("draw (unavailable, retry)");
            return;
        }
        if (g.status != ITRUSTAudit.SegmentStatus.Undetermined) {
            ghost_retryViolations += 1;
            return;
        }
        _removeAwaiting(index);
        _releaseDeferred(r);
        _finals.push(FinalSegment(r.sessionId, r.segmentId, g.status));
        finalizedSegments[r.sessionId] += 1;
        _count("draw (unavailable, undetermined)");
    }

    /// @dev The segment still waits for a draw, from a block fixed now.
    function _refreshed(ITRUSTAudit.SegmentView memory g, Params memory p) internal view returns (bool) {
        return g.status == ITRUSTAudit.SegmentStatus.AwaitingDraw
            && g.randomnessBlock == block.number + p.randomnessDelayBlocks;
    }

    /// @dev Checks and records seat `i` of a round just drawn, held by `m` (`was`: its record before
    ///      the draw): its units, at least one, are the reference draw's, backed by P each of the
    ///      stake `m` had unlocked and locked by the draw (units x P, exactly). Returns the units.
    function _seatedOne(
        SegmentRef memory r,
        uint8 round,
        uint256 i,
        address m,
        IAuditorRegistry.AuditorInfo memory was,
        ModelDraw memory model,
        uint256 lock
    ) internal returns (uint256 units) {
        units = audit.seat(r.sessionId, r.segmentId, round, i).weight;
        ghost_locked[m] += units * lock;
        ghost_openSeats[m] += 1;
        if (units == 0) ghost_committeeViolations += 1;
        if (units > 1) _count("draw (a seat of several units)");
        IAuditorRegistry.AuditorInfo memory now_ = registry.auditor(m);
        if (units * lock > uint256(was.stake) - was.locked || now_.locked != uint256(was.locked) + units * lock) {
            ghost_unbackedUnits += 1;
        }
        bool modelled = i < model.seated && model.members[i] == m;
        if (!modelled || model.units[i] != units) ghost_referenceDrawMismatches += 1;
        bytes32 key = _seatKey(r.sessionId, r.segmentId, round, i);
        _expectedSeatWeight[key] = modelled ? model.units[i] : 0;
        _backing[key] = SeatBacking(now_.stake, ghost_stakeLost[m], units);
    }

    /// @dev The most members one draw passes over before it gives up (the registry's bound).
    uint256 internal constant MAX_PASSED_OVER = 64;

    /// @notice The committee a draw must seat, worked out from the rules alone (issue L2): the
    ///         round's `committeeSize` draws *with replacement* from the tier's members as of the
    ///         randomness block. Each draw maps `keccak256(seed, nonce)` uniformly over the weight
    ///         still in range, each member's interval as wide as its modelled weight at the
    ///         randomness block, in the tree's order. A member that wins a draw stays in range and
    ///         takes one more unit; it leaves the range (its interval taken out) only when it cannot
    ///         take the unit: it is the provider, it asked to unstake after the randomness block (a
    ///         deserter, recorded for the charge when it has at least P unbonding), or its unlocked
    ///         stake does not back one more unit of P. After 64 members passed over the draw gives
    ///         up. So each draw lands on a member with probability its own stake over the stake in
    ///         range, whatever it won before and however the rest of the stake is split.
    /// @dev The seed is the audit contract's: keccak256(randomness of the block, audit, session,
    ///      segment, round). Locks are the handler's own record (`ghost_locked`); the stake and
    ///      unbonding stake are read from the registry before the draw.
    function _referenceDraw(SegmentRef memory r, ITRUSTAudit.SegmentView memory g, uint256 lock)
        internal
        view
        returns (ModelDraw memory d)
    {
        (bool ready, bytes32 seed) = _seedOf(r, g);
        if (!ready) return d; // the draw refreshes its randomness instead
        d.members = new address[](g.committeeSize);
        d.units = new uint256[](g.committeeSize);
        d.deserters = new address[](MAX_PASSED_OVER);
        (uint256[] memory widths, uint256 weightLeft) = _widthsAt(g.tier, g.randomnessBlock);
        address[] storage leaves = _leaves[g.tier];
        uint256 passedOver;
        for (uint256 nonce; d.unitsDrawn < g.committeeSize; ++nonce) {
            if (weightLeft == 0 || passedOver == MAX_PASSED_OVER) break;
            uint256 i = _landing(widths, uint256(keccak256(abi.encode(seed, nonce))) % weightLeft);
            if (_takesUnit(d, leaves[i], g.randomnessBlock, lock)) continue;
            weightLeft -= widths[i];
            widths[i] = 0; // out of range for the rest of the draw
            ++passedOver;
        }
        d.full = d.unitsDrawn == g.committeeSize;
    }

    /// @dev The seed of the segment's draw, as the audit contract derives it: keccak256 of the
    ///      randomness of the round's block, the audit contract, session, segment and round.
    function _seedOf(SegmentRef memory r, ITRUSTAudit.SegmentView memory g)
        internal
        view
        returns (bool ready, bytes32 seed)
    {
        (,, address source) = audit.dependencies();
        (IRandomnessSource.Status status, bytes32 value) = IRandomnessSource(source).randomnessAt(g.randomnessBlock);
        ready = status == IRandomnessSource.Status.Ready;
        seed = keccak256(abi.encode(value, address(audit), r.sessionId, r.segmentId, g.round));
    }

    /// @dev The width of each member's interval in `tier`'s tree (in the tree's order) at the end
    ///      of `blockNumber`: its modelled weight then (zero for members added later), and their sum.
    function _widthsAt(uint8 tier, uint256 blockNumber) internal view returns (uint256[] memory widths, uint256 total) {
        address[] storage leaves = _leaves[tier];
        widths = new uint256[](leaves.length);
        for (uint256 i; i < widths.length; ++i) {
            widths[i] = weightAt(leaves[i], blockNumber);
            total += widths[i];
        }
    }

    /// @dev The member whose interval holds `x` when the intervals of `widths` are laid end to
    ///      end (members out of range, and of no weight, have zero width), for `x` below their sum.
    function _landing(uint256[] memory widths, uint256 x) internal pure returns (uint256 i) {
        while (x >= widths[i]) {
            x -= widths[i];
            ++i;
        }
    }

    /// @dev The reference draw's rule for a drawn `candidate`: gives it one more unit if it can
    ///      back it, else records it as a deserter when it unstaked after the randomness block and
    ///      now holds less than it weighed there, with at least `lock` unbonding, and returns false
    ///      (it leaves the range).
    function _takesUnit(ModelDraw memory d, address candidate, uint256 randomnessBlock, uint256 lock)
        internal
        view
        returns (bool)
    {
        if (candidate == provider) return false;
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(candidate);
        // A deserter asked to unstake after the randomness block and holds less than it weighed
        // there now (topped back up, it risks what the block counted), as the registry reads it.
        if (unbondingBlockOf[candidate] > randomnessBlock && info.stake < weightAt(candidate, randomnessBlock)) {
            if (info.unbonding >= lock) d.deserters[d.deserterCount++] = candidate;
            return false;
        }
        uint256 j;
        while (j < d.seated && d.members[j] != candidate) ++j;
        uint256 units = (j < d.seated ? d.units[j] : 0) + 1;
        if (uint256(info.stake) < ghost_locked[candidate] + units * lock) {
            d.shortOfBacking += 1;
            return false;
        }
        if (j == d.seated) {
            d.members[j] = candidate;
            d.seated += 1;
        }
        d.units[j] = units;
        d.unitsDrawn += 1;
        return true;
    }

    function _commit(SegmentRef memory r, uint256 behaviour) internal {
        uint8 round = audit.segment(r.sessionId, r.segmentId).round;
        address[] memory members = audit.committee(r.sessionId, r.segmentId);
        bool majority = (behaviour >> 210) % 4 != 0; // Pass three times in four
        bool batch = (behaviour >> 200) & 1 == 1;
        for (uint256 i; i < members.length; ++i) {
            uint256 mode = (behaviour >> (4 * (i % 16))) & 15;
            if (mode == 0) continue;
            if (mode == 15) {
                _abstainSeat(r, round, i, members[i]);
                continue;
            }
            bytes32 salt = keccak256(abi.encode(behaviour, r.sessionId, r.segmentId, round, i));
            _commitSeat(r, round, i, members[i], mode, mode <= 3 ? !majority : majority, salt, batch);
        }
    }

    /// @dev mode 1 commits a hash that opens to nothing; any other commits `vote`.
    function _commitSeat(
        SegmentRef memory r,
        uint8 round,
        uint256 index,
        address member,
        uint256 mode,
        bool vote,
        bytes32 salt,
        bool batch
    ) internal {
        bool garbage = mode == 1;
        bytes32 c = garbage
            ? keccak256(abi.encode("opens to nothing", salt))
            : audit.commitmentOf(r.sessionId, r.segmentId, round, member, vote, salt);
        bool closed = _everySeatCommitted(r, round);
        bool ok;
        if (batch) {
            ITRUSTAudit.SeatCommit[] memory commits = new ITRUSTAudit.SeatCommit[](1);
            commits[0] = ITRUSTAudit.SeatCommit(r.sessionId, r.segmentId, index, c);
            vm.prank(member);
            try audit.commitVotes(commits) {
                ok = true;
            } catch {}
        } else {
            vm.prank(member);
            try audit.commitVote(r.sessionId, r.segmentId, c) {
                ok = true;
            } catch {}
        }
        if (!ok) {
            _count("commit (reverted)");
            return;
        }
        if (closed) ghost_commitsAfterClose += 1;
        _recordCommit(r, round, index, !garbage, vote, salt);
    }

    /// @dev The seat says it will not vote: it counts towards closing the windows and settles as a
    ///      silent seat (its ghost never holds an opening commitment).
    function _abstainSeat(SegmentRef memory r, uint8 round, uint256 index, address member) internal {
        bool closed = _everySeatCommitted(r, round);
        vm.prank(member);
        try audit.abstain(r.sessionId, r.segmentId, index) {
            if (closed) ghost_commitsAfterClose += 1;
            SeatGhost storage s = _seats[_seatKey(r.sessionId, r.segmentId, round, index)];
            if (s.everCommitted) ghost_commitsAfterClose += 1; // a committed seat may not abstain
            s.everCommitted = true;
            s.committed = false;
            RoundGhost storage g = _rounds[_roundKey(r, round)];
            g.committedSeats += 1;
            if (g.committedSeats == g.seatCount) g.closedAt = block.timestamp;
            _count("abstain");
        } catch {
            _count("abstain (reverted)");
        }
    }

    /// @notice Nobody records key deliveries in this fixture (no `SegmentKeys`), so every round is
    ///         undelivered: past the delivery deadline, an uncommitted seat claims its release (M3).
    ///         Its lock leaves the handler's record at once; its settlement is skipped at finalize.
    function claimUndelivered(uint256 pick, uint256 seatSeed, bool waitForDeadline) external {
        if (_voting.length == 0) return;
        SegmentRef memory r = _voting[pick % _voting.length];
        ITRUSTAudit.SegmentView memory g = audit.segment(r.sessionId, r.segmentId);
        if (waitForDeadline && block.timestamp <= g.deliveryDeadline) vm.warp(uint256(g.deliveryDeadline) + 1);
        uint256 index = seatSeed % g.seatCount;
        address member = audit.committee(r.sessionId, r.segmentId)[index];
        uint256 units = _backing[_seatKey(r.sessionId, r.segmentId, g.round, index)].units;
        uint256 fee = audit.session(r.sessionId).feeWei;
        uint256 credited = audit.claimable(member);
        vm.prank(member);
        try audit.claimUndelivered(r.sessionId, r.segmentId, index) {
            uint256 lock = audit.sessionParams(r.sessionId).penaltyPerSeat;
            ghost_locked[member] -= units * lock;
            ghost_openSeats[member] -= 1;
            if (block.timestamp <= g.commitDeadline) {
                SeatGhost storage s = _seats[_seatKey(r.sessionId, r.segmentId, g.round, index)];
                if (!s.everCommitted) {
                    s.everCommitted = true;
                    RoundGhost storage rg = _rounds[_roundKey(r, g.round)];
                    rg.committedSeats += 1;
                    if (rg.committedSeats == rg.seatCount) rg.closedAt = block.timestamp;
                }
            }
            uint256 paid = audit.claimable(member) - credited;
            feeOf[r.sessionId] -= paid; // the split shares what is left of the fee
            // Paid R per unit of the seat out of the fee, never more than was left of it; nothing
            // else moves.
            uint256 owed = units * audit.sessionParams(r.sessionId).rewardPerSeatWei;
            if (paid != (fee < owed ? fee : owed) || audit.session(r.sessionId).feeWei != fee - paid) {
                ghost_claimMismatches += 1;
            }
            _count("claimUndelivered");
        } catch {
            _count("claimUndelivered (reverted)");
        }
    }

    function _everySeatCommitted(SegmentRef memory r, uint8 round) internal view returns (bool) {
        RoundGhost storage g = _rounds[_roundKey(r, round)];
        return g.committedSeats == g.seatCount;
    }

    /// @dev A commitment that opens to nothing is recorded as "not committed" (its reveal must
    ///      fail), but it counts towards closing the window like any other.
    function _recordCommit(SegmentRef memory r, uint8 round, uint256 index, bool opens, bool vote, bytes32 salt)
        internal
    {
        SeatGhost storage s = _seats[_seatKey(r.sessionId, r.segmentId, round, index)];
        if (!s.everCommitted) {
            s.everCommitted = true;
            RoundGhost storage g = _rounds[_roundKey(r, round)];
            g.committedSeats += 1;
            if (g.committedSeats == g.seatCount) g.closedAt = block.timestamp;
        }
        s.committed = opens;
        s.vote = vote;
        s.salt = salt;
        _count("commit");
    }

    function _reveal(SegmentRef memory r, uint256 behaviour) internal {
        ITRUSTAudit.SegmentView memory g = audit.segment(r.sessionId, r.segmentId);
        if (block.timestamp <= g.commitDeadline) vm.warp(uint256(g.commitDeadline) + 1);
        address[] memory members = audit.committee(r.sessionId, r.segmentId);
        bool batch = (behaviour >> 200) & 1 == 1;
        for (uint256 i; i < members.length; ++i) {
            uint256 mode = (behaviour >> (4 * (i % 16))) & 15;
            if (mode == 0) continue;
            SeatGhost storage s = _seats[_seatKey(r.sessionId, r.segmentId, g.round, i)];
            bool wrong = mode == 1;
            bool ok = _revealSeat(r, i, members[i], wrong ? !s.vote : s.vote, s.salt, batch);
            if (ok) {
                if (wrong || !s.committed) ghost_wrongRevealsAccepted += 1;
                _recordReveal(s);
            }
            if (mode == 2 && _revealSeat(r, i, members[i], s.vote, s.salt, !batch)) {
                _recordReveal(s);
            }
        }
    }

    function _revealSeat(SegmentRef memory r, uint256 index, address member, bool vote, bytes32 salt, bool batch)
        internal
        returns (bool ok)
    {
        if (batch) {
            ITRUSTAudit.SeatReveal[] memory reveals = new ITRUSTAudit.SeatReveal[](1);
            reveals[0] = ITRUSTAudit.SeatReveal(r.sessionId, r.segmentId, index, vote, salt);
            vm.prank(member);
            try audit.revealVotes(reveals) {
                ok = true;
            } catch {}
        } else {
            vm.prank(member);
            try audit.revealVote(r.sessionId, r.segmentId, vote, salt) {
                ok = true;
            } catch {}
        }
        _count(ok ? bytes32("reveal") : bytes32("reveal (reverted)"));
    }

    function _recordReveal(SeatGhost storage s) internal {
        s.reveals += 1;
        if (s.reveals > ghost_maxRevealsPerSeat) ghost_maxRevealsPerSeat = s.reveals;
    }

    function _finalizeSegment(uint256 index, bool waitForDeadline, uint256 chunk) internal {
        SegmentRef memory r = _voting[index];
        ITRUSTAudit.SegmentView memory g = audit.segment(r.sessionId, r.segmentId);
        if (waitForDeadline && block.timestamp <= g.revealDeadline) vm.warp(uint256(g.revealDeadline) + 1);
        SeatBefore[] memory seats = _seatsBefore(r, g);
        SeatBefore[] memory earlier = _deferredBefore(r);
        if (_endRound(r, chunk)) {
            ITRUSTAudit.SegmentView memory after_ = audit.segment(r.sessionId, r.segmentId);
            if (after_.status != _expectedOutcome(r, g, seats)) ghost_tallyMismatches += 1;
            _checkSettlement(r, after_.status, seats, earlier);
            _removeVoting(index);
            if (after_.status == ITRUSTAudit.SegmentStatus.AwaitingDraw) {
                if (after_.round != g.round + 1) ghost_settlementViolations += 1;
                _awaiting.push(r);
                _count("finalizeSegment (escalated)");
            } else {
                _finals.push(FinalSegment(r.sessionId, r.segmentId, after_.status));
                finalizedSegments[r.sessionId] += 1;
                _count("finalizeSegment");
            }
        } else {
            _count("finalizeSegment (reverted)");
        }
    }

    /// @dev Ends the segment's round in one go (`chunk == 0`) or in steps of `chunk` seats
    ///      (`settleSegment`, issue M4) within this call; false when it reverted (voting not over).
    ///      Once a step went through, every later one must too: a started settlement that stops
    ///      would lock its seats.
    function _endRound(SegmentRef memory r, uint256 chunk) internal returns (bool ok) {
        if (chunk == 0) {
            try audit.finalizeSegment(r.sessionId, r.segmentId) {
                return true;
            } catch {
                return false;
            }
        }
        for (uint256 steps;; ++steps) {
            try audit.settleSegment(r.sessionId, r.segmentId, chunk) returns (bool done) {
                if (done) {
                    _count(steps == 0 ? bytes32("settleSegment (one step)") : bytes32("settleSegment (steps)"));
                    return true;
                }
            } catch {
                if (steps != 0) ghost_settlementViolations += 1;
                return false;
            }
        }
    }

    /// @dev Eq. 3.3 over the round's seats, each weighing its units: Passed when the units that
    ///      revealed Pass reach tau of the committee's units (every draw's, silent and released
    ///      seats included), Failed likewise, else another round (`AwaitingDraw`) unless this was
    ///      the last one or more than half of the units were released for want of a key envelope
    ///      (issue M3), then Undetermined.
    function _expectedOutcome(SegmentRef memory r, ITRUSTAudit.SegmentView memory g, SeatBefore[] memory seats)
        internal
        view
        returns (ITRUSTAudit.SegmentStatus)
    {
        Params memory p = audit.sessionParams(r.sessionId);
        uint256 total;
        uint256 passUnits;
        uint256 failUnits;
        uint256 undelivered;
        for (uint256 i; i < seats.length; ++i) {
            uint256 units = seats[i].units;
            total += units;
            if (seats[i].released) undelivered += units;
            else if (seats[i].revealed && seats[i].vote) passUnits += units;
            else if (seats[i].revealed) failUnits += units;
        }
        if (passUnits * BPS >= uint256(p.tauBps) * total) return ITRUSTAudit.SegmentStatus.Passed;
        if (failUnits * BPS >= uint256(p.tauBps) * total) return ITRUSTAudit.SegmentStatus.Failed;
        if (g.round + 1 < p.maxRounds && undelivered * 2 <= total) return ITRUSTAudit.SegmentStatus.AwaitingDraw;
        return ITRUSTAudit.SegmentStatus.Undetermined;
    }

    function _segmentKey(SegmentRef memory r) internal pure returns (bytes32) {
        return keccak256(abi.encode(r.sessionId, r.segmentId));
    }

    /// @dev The segment ended Undetermined because its round could not be seated: the revealed seats
    ///      of its earlier rounds are released untouched.
    function _releaseDeferred(SegmentRef memory r) internal {
        DeferredSeat[] storage deferred = _deferred[_segmentKey(r)];
        uint256 lock = audit.sessionParams(r.sessionId).penaltyPerSeat;
        for (uint256 i; i < deferred.length; ++i) {
            ghost_locked[deferred[i].auditor] -= deferred[i].units * lock;
            ghost_openSeats[deferred[i].auditor] -= 1;
        }
        delete _deferred[_segmentKey(r)];
    }

    /// @dev The deferred seats of the segment's earlier rounds, with their auditors' state now.
    function _deferredBefore(SegmentRef memory r) internal view returns (SeatBefore[] memory seats) {
        DeferredSeat[] storage deferred = _deferred[_segmentKey(r)];
        seats = new SeatBefore[](deferred.length);
        for (uint256 i; i < seats.length; ++i) {
            DeferredSeat storage d = deferred[i];
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(d.auditor);
            seats[i] =
                SeatBefore(d.auditor, true, d.vote, info.stake, info.reputationWad, false, d.units, d.round, d.index);
        }
    }

    function _seatsBefore(SegmentRef memory r, ITRUSTAudit.SegmentView memory g)
        internal
        view
        returns (SeatBefore[] memory seats)
    {
        seats = new SeatBefore[](g.seatCount);
        for (uint256 i; i < seats.length; ++i) {
            ITRUSTAudit.SeatView memory v = audit.seat(r.sessionId, r.segmentId, g.round, i);
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(v.auditor);
            seats[i] = SeatBefore({
                auditor: v.auditor,
                revealed: v.revealed,
                vote: v.vote,
                stake: info.stake,
                reputationWad: info.reputationWad,
                released: v.undelivered,
                // The units the draw gave the seat (checked then), not what the view says now.
                units: _backing[_seatKey(r.sessionId, r.segmentId, g.round, i)].units,
                round: g.round,
                index: i
            });
        }
    }

    /// @dev Checks every seat settled by a finalization against the rules of section 3.3 and M1, and
    ///      releases the handler's record of its lock. When the round escalates only its silent seats
    ///      settle (each forfeits exactly the lock); its revealed seats stay locked and are recorded
    ///      as deferred. When the segment is decided, the round's seats and then every deferred seat
    ///      of its earlier rounds settle against the verdict: aligned seats keep their stake,
    ///      misaligned seats lose the lock or nothing, silent ones exactly the lock; reputation moves
    ///      by eq. 3.8 seat by seat in that order. When it ends Undetermined, revealed seats (this
    ///      round's and the deferred ones) are released untouched.
    function _checkSettlement(
        SegmentRef memory r,
        ITRUSTAudit.SegmentStatus status,
        SeatBefore[] memory seats,
        SeatBefore[] memory earlier
    ) internal {
        _recordAligned(r, status, seats);
        Params memory p = audit.sessionParams(r.sessionId);
        bool escalates = status == ITRUSTAudit.SegmentStatus.AwaitingDraw;
        bool decided = status == ITRUSTAudit.SegmentStatus.Passed || status == ITRUSTAudit.SegmentStatus.Failed;
        bool passed = status == ITRUSTAudit.SegmentStatus.Passed;
        DeferredSeat[] storage deferred = _deferred[_segmentKey(r)];
        Expected[] memory expected = new Expected[](seats.length + (escalates ? 0 : earlier.length));
        uint256 n;
        for (uint256 i; i < seats.length; ++i) {
            SeatBefore memory st = seats[i];
            if (st.released) continue; // settled at its claim, untouched here
            if (escalates && st.revealed) {
                // Stays locked, untouched.
                deferred.push(DeferredSeat(st.auditor, st.vote, st.units, st.round, st.index));
                continue;
            }
            n = _expect(expected, n, st.auditor, st.stake, st.reputationWad);
            _settleOne(expected, st, st.revealed ? (decided ? (st.vote == passed ? 1 : 2) : 0) : 3, p);
        }
        if (!escalates) {
            for (uint256 i; i < earlier.length; ++i) {
                SeatBefore memory d = earlier[i];
                n = _expect(expected, n, d.auditor, d.stake, d.reputationWad);
                _settleOne(expected, d, decided ? (d.vote == passed ? 1 : 2) : 0, p);
            }
            delete _deferred[_segmentKey(r)];
        }
        for (uint256 k; k < n; ++k) {
            Expected memory e = expected[k];
            IAuditorRegistry.AuditorInfo memory info = registry.auditor(e.auditor);
            uint256 lost = uint256(e.stakeBefore) - info.stake;
            ghost_forfeited += lost;
            ghost_stakeLost[e.auditor] += lost;
            if (lost != 0) _synced(e.auditor); // only a forfeit re-evaluates the draw weight
            bool ok = lost >= e.exactLoss && _someForfeited(e, lost - e.exactLoss) && info.reputationWad == e.reputation;
            if (!ok) ghost_settlementViolations += 1;
        }
    }

    /// @dev Whether `extra` is what some of the auditor's misaligned seats forfeit together (each
    ///      its units x the lock, or nothing): at most one seat per round, so few subsets.
    function _someForfeited(Expected memory e, uint256 extra) internal pure returns (bool) {
        for (uint256 subset; subset < (1 << e.misaligned); ++subset) {
            uint256 sum;
            for (uint256 j; j < e.misaligned; ++j) {
                if ((subset >> j) & 1 == 1) sum += e.mayLose[j];
            }
            if (sum == extra) return true;
        }
        return false;
    }

    /// @dev The entry of `auditor` in `expected` (added with its state before, if new); returns the
    ///      number of entries.
    function _expect(Expected[] memory expected, uint256 n, address auditor, uint96 stake, uint64 reputation)
        internal
        pure
        returns (uint256)
    {
        for (uint256 k; k < n; ++k) {
            if (expected[k].auditor == auditor) return n;
        }
        Expected memory e = expected[n];
        (e.auditor, e.stakeBefore, e.reputation) = (auditor, stake, reputation);
        return n + 1;
    }

    /// @dev Applies one settled seat to its auditor's expectation. `kind`: 0 released, 1 aligned,
    ///      2 misaligned, 3 silent. Every settled seat gives its lock back (units x P); a silent one
    ///      forfeits all of it, a misaligned one all of it or nothing. Reputation moves once per
    ///      seat, whatever its units.
    function _settleOne(Expected[] memory expected, SeatBefore memory st, uint256 kind, Params memory p) internal {
        uint256 k;
        while (expected[k].auditor != st.auditor) ++k;
        Expected memory e = expected[k];
        uint256 lock = st.units * p.penaltyPerSeat;
        ghost_locked[st.auditor] -= lock;
        ghost_openSeats[st.auditor] -= 1;
        e.seats += 1;
        if (kind == 0) return;
        e.reputation = ReputationLib.update(e.reputation, p.gammaWad, kind == 1);
        if (kind == 2) e.mayLose[e.misaligned++] = lock;
        if (kind == 3) e.exactLoss += lock;
    }

    function _finalizeTrace(uint256 id) internal {
        try audit.finalizeTrace(id) returns (bool valid) {
            if (traceRecorded[id]) ghost_refinalizations += 1;
            if (valid != _expectedVerdict(id)) ghost_traceVerdictMismatches += 1;
            traceRecorded[id] = true;
            traceValid[id] = valid;
            _traces.push(id);
            _count("finalizeTrace");
        } catch {
            _count("finalizeTrace (reverted)");
        }
    }

    /// @dev Eq. 3.5-3.6 plus the critical-path and contradiction rules, from the verdicts the
    ///      handler recorded and the segment inputs it registered.
    function _expectedVerdict(uint256 id) internal view returns (bool) {
        ITRUSTAudit.SegmentInput[] storage inputs = _inputs[id];
        uint256 total;
        uint256 passWeight;
        bool blocked;
        for (uint256 i; i < inputs.length; ++i) {
            ITRUSTAudit.SegmentStatus status = audit.segment(id, i).status;
            total += inputs[i].weight;
            if (status == ITRUSTAudit.SegmentStatus.Passed) {
                passWeight += inputs[i].weight;
            } else if (inputs[i].critical || inputs[i].contradiction) {
                blocked = true;
            }
        }
        return !blocked && passWeight * BPS >= uint256(audit.sessionParams(id).betaBps) * total;
    }

    function _distribute(uint256 id) internal {
        uint256 before = address(registry).balance;
        try audit.distributeRewards(id) {
            ghost_ethToRegistry += address(registry).balance - before;
            traceDistributed[id] = true;
            uint256 aligned = alignedUnits[id];
            uint256 auditorsWei = feeOf[id] * audit.sessionParams(id).auditorShareBps / BPS;
            ghost_perSeatWei[id] = aligned == 0 ? 0 : auditorsWei / aligned;
            _count("distributeRewards");
        } catch {
            _count("distributeRewards (reverted)");
        }
    }

    // =================================================================== views for the invariants

    function auditors() external view returns (address[] memory) {
        return _auditors;
    }

    function everyone() external view returns (address[] memory) {
        return _everyone;
    }

    /// @notice `ghost_locked` of every account of `everyone()`, in that order.
    function lockLedger() external view returns (uint256[] memory locked) {
        uint256 n = _everyone.length;
        locked = new uint256[](n);
        for (uint256 i; i < n; ++i) {
            locked[i] = ghost_locked[_everyone[i]];
        }
    }

    /// @notice For every account of `everyone()`: the tier minimum at its last re-evaluation and the
    ///         modelled draw weight now.
    function weightLedger() external view returns (uint256[] memory minStakes, uint256[] memory drawWeights) {
        uint256 n = _everyone.length;
        minStakes = new uint256[](n);
        drawWeights = new uint256[](n);
        for (uint256 i; i < n; ++i) {
            address a = _everyone[i];
            minStakes[i] = syncedMinStake[a];
            drawWeights[i] = ghost_drawWeight[a];
        }
    }

    /// @notice The modelled total draw weight of `tier` at the end of block `blockNumber`.
    function eligibleStakeAt(uint8 tier, uint256 blockNumber) external view returns (uint256 total) {
        for (uint256 i; i < _everyone.length; ++i) {
            if (tierOf[_everyone[i]] == tier) total += weightAt(_everyone[i], blockNumber);
        }
    }

    /// @notice What backed a drawn seat at its draw: its member's bonded stake and `ghost_stakeLost`.
    function seatBacking(uint256 sessionId, uint256 segmentId, uint8 round, uint256 index)
        external
        view
        returns (SeatBacking memory)
    {
        return _backing[_seatKey(sessionId, segmentId, round, index)];
    }

    /// @notice The revealed seats of earlier rounds of the segments still in progress (voting or
    ///         awaiting a draw): locked until their segment's verdict (issue M1).
    function deferredSeats() external view returns (SeatRef[] memory refs) {
        uint256 n;
        for (uint256 j; j < _voting.length; ++j) {
            n += _deferred[_segmentKey(_voting[j])].length;
        }
        for (uint256 j; j < _awaiting.length; ++j) {
            n += _deferred[_segmentKey(_awaiting[j])].length;
        }
        refs = new SeatRef[](n);
        uint256 k = _listDeferred(refs, 0, _voting);
        _listDeferred(refs, k, _awaiting);
    }

    /// @dev Writes the deferred seats of `segments` into `refs` from `k` on; returns the next free.
    function _listDeferred(SeatRef[] memory refs, uint256 k, SegmentRef[] storage segments)
        internal
        view
        returns (uint256)
    {
        for (uint256 j; j < segments.length; ++j) {
            DeferredSeat[] storage deferred = _deferred[_segmentKey(segments[j])];
            for (uint256 i; i < deferred.length; ++i) {
                refs[k++] = SeatRef(segments[j].sessionId, segments[j].segmentId, deferred[i].round, deferred[i].index);
            }
        }
        return k;
    }

    /// @notice The weight a drawn seat must carry (see `_expectedSeatWeight`).
    function expectedSeatWeight(uint256 sessionId, uint256 segmentId, uint8 round, uint256 index)
        external
        view
        returns (uint256)
    {
        return _expectedSeatWeight[_seatKey(sessionId, segmentId, round, index)];
    }

    /// @notice The modelled draw weight of `a` at the end of block `blockNumber`.
    function weightAt(address a, uint256 blockNumber) public view returns (uint256) {
        uint256[] storage blocks = _historyBlocks[a];
        for (uint256 k = blocks.length; k > 0; --k) {
            if (blocks[k - 1] <= blockNumber) return _historyWeights[a][k - 1];
        }
        return 0;
    }

    /// @notice The units of the aligned seats the handler recorded for a session, and of those
    ///         claimed.
    function alignedSeats(uint256 sessionId) external view returns (uint256 total, uint256 claimed) {
        return (alignedUnits[sessionId], claimedUnits[sessionId]);
    }

    /// @notice The ETH the audit contract owes for seats not claimed yet: per distributed session,
    ///         the per-seat reward times the units of its unclaimed aligned seats.
    function unclaimedSeatRewardsWei() external view returns (uint256 owed) {
        for (uint256 i; i < _traces.length; ++i) {
            uint256 id = _traces[i];
            if (traceDistributed[id]) owed += ghost_perSeatWei[id] * (alignedUnits[id] - claimedUnits[id]);
        }
    }

    function sessionIds() external view returns (uint256[] memory) {
        return _sessionIds;
    }

    function votingSegments() external view returns (SegmentRef[] memory) {
        return _voting;
    }

    function awaitingSegments() external view returns (SegmentRef[] memory) {
        return _awaiting;
    }

    function finalSegments() external view returns (FinalSegment[] memory) {
        return _finals;
    }

    function traces() external view returns (uint256[] memory) {
        return _traces;
    }

    /// @notice How many reveals of the seat succeeded.
    /// @notice The commit window of a segment's round as the handler saw it (see `RoundGhost`).
    function roundOf(uint256 sessionId, uint256 segmentId, uint8 round) external view returns (RoundGhost memory) {
        return _rounds[_roundKey(SegmentRef(sessionId, segmentId), round)];
    }

    function revealsOf(uint256 sessionId, uint256 segmentId, uint8 round, uint256 index)
        external
        view
        returns (uint256)
    {
        return _seats[_seatKey(sessionId, segmentId, round, index)].reveals;
    }

    function actionNames() external view returns (bytes32[] memory) {
        return _actionNames;
    }

    // =================================================================== helpers

    function _minStake(uint8 tier) internal view returns (uint256) {
        Params memory p = params.params();
        if (tier == 1) return p.minStakeTier1;
        if (tier == 2) return p.minStakeTier2;
        return p.minStakeTier3;
    }

    function _seatKey(uint256 sessionId, uint256 segmentId, uint8 round, uint256 index)
        internal
        pure
        returns (bytes32)
    {
        return keccak256(abi.encode(sessionId, segmentId, round, index));
    }

    /// @dev Three times in four, the first actor from `seed` on that holds something to claim (if
    ///      any); otherwise any actor, whose claim may fail.
    function _holderOf(uint256 seed, function(address) view returns (bool) holds) internal view returns (address) {
        uint256 n = _everyone.length;
        if (seed % 4 != 0) {
            for (uint256 k; k < n; ++k) {
                address a = _everyone[(seed % n + k) % n];
                if (holds(a)) return a;
            }
        }
        return _everyone[seed % n];
    }

    function _hasStakerReward(address a) internal view returns (bool) {
        return registry.pendingStakerReward(a) != 0;
    }

    function _hasEther(address a) internal view returns (bool) {
        return audit.claimable(a) != 0;
    }

    /// @dev The registry re-evaluated `a` (`_sync`): the weight the rules give under the current
    ///      parameters; a change is recorded by block (the last value of a block counts), as the
    ///      registry's weight history and sortition tree record it.
    function _synced(address a) internal {
        IAuditorRegistry.AuditorInfo memory info = registry.auditor(a);
        if (!info.registered) return;
        uint256 minimum = _minStake(info.tier);
        syncedMinStake[a] = minimum;
        bool eligible = info.available && info.stake >= minimum && (info.tier != 3 || info.credentialed);
        uint256 weight = eligible ? info.stake : 0;
        if (weight == ghost_drawWeight[a]) return;
        ghost_drawWeight[a] = weight;
        if (!_inTree[a]) {
            // First non-zero weight: the registry appends the member to its tier's tree.
            _inTree[a] = true;
            _leaves[info.tier].push(a);
        }
        uint256 n = _historyBlocks[a].length;
        if (n != 0 && _historyBlocks[a][n - 1] == block.number) {
            _historyWeights[a][n - 1] = weight;
        } else {
            _historyBlocks[a].push(block.number);
            _historyWeights[a].push(weight);
        }
    }

    /// @dev An auditor actor of `tier`, picked by `seed`.
    function _auditorOfTier(uint8 tier, uint256 seed) internal view returns (address) {
        uint256 n = _auditors.length;
        for (uint256 k; k < n; ++k) {
            address a = _auditors[(seed % n + k) % n];
            if (tierOf[a] == tier) return a;
        }
        return _auditors[seed % n];
    }

    function _roundKey(SegmentRef memory r, uint8 round) internal pure returns (bytes32) {
        return keccak256(abi.encode(r.sessionId, r.segmentId, round));
    }

    /// @dev Records the seats of a decided round that voted its outcome (its final round).
    function _recordAligned(SegmentRef memory r, ITRUSTAudit.SegmentStatus status, SeatBefore[] memory seats) internal {
        bool passed = status == ITRUSTAudit.SegmentStatus.Passed;
        if (!passed && status != ITRUSTAudit.SegmentStatus.Failed) return;
        for (uint256 i; i < seats.length; ++i) {
            if (seats[i].revealed && seats[i].vote == passed) {
                _aligned[r.sessionId].push(AlignedSeat(r.segmentId, i, seats[i].auditor, seats[i].units, false));
                alignedUnits[r.sessionId] += seats[i].units;
            }
        }
    }

    function _claim(uint256 id, uint256 behaviour) internal {
        AlignedSeat[] storage list = _aligned[id];
        // The auditor of the (behaviour % unclaimed)-th unclaimed seat, and all its unclaimed seats.
        uint256 target = (behaviour & 0xff) % (list.length - claimedSeats[id]);
        address who;
        for (uint256 i; i < list.length; ++i) {
            if (list[i].claimed) continue;
            if (target == 0) {
                who = list[i].auditor;
                break;
            }
            --target;
        }
        uint256[] memory mine = new uint256[](list.length);
        uint256 count;
        uint256 units;
        for (uint256 i; i < list.length; ++i) {
            if (!list[i].claimed && list[i].auditor == who) {
                mine[count++] = i;
                units += list[i].units;
            }
        }
        uint256 mode = (behaviour >> 8) % 4;
        ITRUSTAudit.SeatRef[] memory refs = new ITRUSTAudit.SeatRef[](mode == 1 ? count + 1 : count);
        for (uint256 k; k < count; ++k) {
            refs[k] = ITRUSTAudit.SeatRef(list[mine[k]].segmentId, list[mine[k]].seatIndex);
        }
        if (mode == 1) {
            // Any other seat of the session is not `who`'s to claim (all of its own are listed).
            refs[count] = _randomSeat(id, behaviour >> 16);
            _expectClaimsFail(id, who, refs);
            return;
        }
        if (mode == 2) {
            address other = _everyone[(behaviour >> 16) % _everyone.length];
            _expectClaimsFail(id, other == who ? stranger : other, refs);
            return;
        }
        uint256 before = who.balance;
        vm.prank(who);
        try audit.claimRewards(id, refs) {
            uint256 paid = who.balance - before;
            ghost_ethClaimed += paid;
            // Each seat earns the per-seat reward once per unit (issue L2).
            if (paid != ghost_perSeatWei[id] * units) ghost_claimMismatches += 1;
            for (uint256 k; k < count; ++k) {
                list[mine[k]].claimed = true;
            }
            claimedSeats[id] += count;
            claimedUnits[id] += units;
            _count("claimRewards");
        } catch {
            // Only a zero per-seat reward may refuse a claim of one's own aligned seats.
            if (ghost_perSeatWei[id] != 0) ghost_claimMismatches += 1;
            _count("claimRewards (reverted)");
            return;
        }
        // Claiming a paid seat again must fail, whatever the mode: a seat is paid once.
        _expectClaimFails(id, who, refs[0]);
    }

    /// @dev A seat of the session named by `seed`: any segment (one past the last too), any index up
    ///      to one past its committee.
    function _randomSeat(uint256 id, uint256 seed) internal view returns (ITRUSTAudit.SeatRef memory) {
        uint256 segmentId = seed % (_inputs[id].length + 1);
        uint256 size = audit.segment(id, segmentId).committeeSize;
        return ITRUSTAudit.SeatRef(segmentId, (seed >> 8) % (size + 1));
    }

    function _expectClaimFails(uint256 id, address who, ITRUSTAudit.SeatRef memory ref) internal {
        // `who`'s own unclaimed aligned seat would be a legitimate claim: not a test of refusal.
        AlignedSeat[] storage list = _aligned[id];
        for (uint256 i; i < list.length; ++i) {
            if (
                !list[i].claimed && list[i].auditor == who && list[i].segmentId == ref.segmentId
                    && list[i].seatIndex == ref.seatIndex
            ) return;
        }
        ITRUSTAudit.SeatRef[] memory refs = new ITRUSTAudit.SeatRef[](1);
        refs[0] = ref;
        _expectClaimsFail(id, who, refs);
    }

    function _expectClaimsFail(uint256 id, address who, ITRUSTAudit.SeatRef[] memory refs) internal {
        uint256 before = who.balance;
        vm.prank(who);
        try audit.claimRewards(id, refs) {
            ghost_badClaimsAccepted += 1;
            ghost_ethClaimed += who.balance - before;
        } catch {}
        _count("claimRewards (refused)");
    }

    function _count(bytes32 action) internal {
        if (calls[action]++ == 0) _actionNames.push(action);
    }

    function _contains(address[] memory list, address who) internal pure returns (bool) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == who) return true;
        }
        return false;
    }

    /// @dev Whether `who` is among the first `n` entries of `list`.
    function _containsFirst(address[] memory list, uint256 n, address who) internal pure returns (bool) {
        for (uint256 i; i < n; ++i) {
            if (list[i] == who) return true;
        }
        return false;
    }

    /// @dev The position of `who` in `_everyone` (every seated member is there).
    function _indexOf(address who) internal view returns (uint256 i) {
        while (_everyone[i] != who) ++i;
    }

    /// @dev The first `length` entries of `list`.
    function _slice(address[] memory list, uint256 length) internal pure returns (address[] memory out) {
        out = new address[](length);
        for (uint256 i; i < length; ++i) {
            out[i] = list[i];
        }
    }

    function _removeAwaiting(uint256 index) internal {
        _awaiting[index] = _awaiting[_awaiting.length - 1];
        _awaiting.pop();
    }

    function _removeVoting(uint256 index) internal {
        _voting[index] = _voting[_voting.length - 1];
        _voting.pop();
    }
}
