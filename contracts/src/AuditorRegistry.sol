// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {IAuditorRegistry} from "./interfaces/IAuditorRegistry.sol";
import {IProtocolParams} from "./interfaces/IProtocolParams.sol";
import {Params} from "./types/Params.sol";
import {DrawRequest, SeatOutcome, SeatSettlement, SettlementTerms} from "./types/Settlement.sol";
import {ParamsLib} from "./libraries/ParamsLib.sol";
import {ReputationLib} from "./libraries/ReputationLib.sol";
import {SortitionTree} from "./libraries/SortitionTree.sol";

/// @title AuditorRegistry
/// @notice Auditors, their stake, reputation and tier, and the stake-weighted committee draw.
/// @dev Deployed behind an ERC-1967 proxy (UUPS); governance (a TimelockController) owns it and is
///      the only party that can upgrade it, grant tier-3 credentials, or point it at a new audit
///      contract. Token flows:
///        staked tokens  = sum of stakes + sum of unbonding amounts + sum of claimable forfeits,
///      which the invariant suite checks against the token balance; and ETH:
///        ETH held = stakers' rewards accrued and pending + still streaming + carried + surplus,
///      where the surplus is the fractions of a wei that each staker's floored share leaves.
contract AuditorRegistry is IAuditorRegistry, Initializable, UUPSUpgradeable, OwnableUpgradeable, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;
    using SafeCast for uint256;
    using ParamsLib for Params;
    using SortitionTree for SortitionTree.Tree;

    /// @dev Members a draw may pass over (the excluded account, members short of unlocked stake)
    ///      before it gives up: bounds the work and memory of one draw.
    uint256 private constant _MAX_SKIPPED = 64;

    /// @dev Slot layout:
    ///      0: stake 96 | locked 96 | reputationWad 64      (written by every seat lock and settlement)
    ///      1: drawWeight 96 | treeIndex 32 | tier 8 | registered 8 | available 8 | credentialed 8
    ///      2: unbonding 96 | unbondingReadyAt 48 | unbondingBlock 48
    ///      3: encryptionKey
    ///      Invariants: locked <= stake, so every open seat's penalty is backed; drawWeight is the
    ///      member's leaf in its tier's sortition tree.
    struct Auditor {
        uint96 stake;
        uint96 locked;
        uint64 reputationWad;
        uint96 drawWeight;
        uint32 treeIndex;
        uint8 tier;
        bool registered;
        bool available;
        bool credentialed;
        uint96 unbonding;
        uint48 unbondingReadyAt;
        /// @dev The block of the unstake request: a draw on a snapshot before it counted this
        ///      stake, so it stays chargeable for `ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS` blocks.
        uint48 unbondingBlock;
        bytes32 encryptionKey;
    }

    /// @dev A draw in progress: the distinct members seated so far with the draws each won (its
    ///      units), how many members and units that is, the weight intervals it no longer lands in
    ///      (members passed over), sorted by where they start in the tree as of the snapshot block,
    ///      and the members passed over because they unbonded after the snapshot (to be charged).
    /// @dev The stakers' reward stream (issue L1), one slot: rateWad 160 | periodFinish 48 |
    ///      updatedAt 48, read by every checkpoint. `rateWad` is wei per second times 1e18; the
    ///      accumulator `_rewardPerStakeWad` holds what was released up to `updatedAt`.
    struct RewardStream {
        uint160 rateWad;
        uint48 periodFinish;
        uint48 updatedAt;
    }

    struct Taken {
        address[] members;
        uint96[] weights;
        uint256 seated;
        uint256 units;
        uint256[] starts;
        uint256[] widths;
        uint256 count;
        address[] deserters;
        uint256 deserterCount;
    }

    IERC20 private _token;
    IProtocolParams private _params;
    address private _audit;

    mapping(address account => Auditor) private _auditors;
    mapping(address account => string) private _metadataURIs;
    mapping(uint8 tier => SortitionTree.Tree) private _pools;
    mapping(uint8 tier => uint256) private _eligibleCounts;
    uint256 private _totalStake;

    // Stakers' share of fees: a reward-per-stake accumulator, streamed over time (Synthetix
    // StakingRewards; see `_release`).
    uint256 private _rewardPerStakeWad;
    /// @dev Wei waiting for the next notification (streamed while nobody staked). This slot held
    ///      the undistributed remainder before streaming, which the next notification streams too.
    uint256 private _carriedRewardWei;
    mapping(address account => uint256) private _rewardPerStakePaidWad;
    mapping(address account => uint256) private _accruedRewardWei;

    mapping(address account => uint256) private _claimableTokens;

    // Appended with the streamed stakers' share (issue L1): every slot above keeps its place, and
    // the OpenZeppelin parents keep theirs in ERC-7201 namespaces (no __gap to collide with).
    RewardStream private _stream;
    /// @dev Wei notified and not yet released into the accumulator (see `StakerRewardStream`).
    uint256 private _streamingWei;

    modifier onlyAudit() {
        if (msg.sender != _audit) revert RegistryNotAuditContract(msg.sender);
        _;
    }

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    /// @notice Sets the owner (governance), the staking token and the parameter store.
    function initialize(address owner_, IERC20 token, IProtocolParams params_) external initializer {
        if (address(token) == address(0) || address(params_) == address(0)) revert RegistryZeroAddress();
        __Ownable_init(owner_);
        _token = token;
        _params = params_;
    }

    // ------------------------------------------------------------------ auditors

    /// @inheritdoc IAuditorRegistry
    function register(uint8 tier, bytes32 encryptionKey, string calldata metadataURI, uint256 amount)
        external
        nonReentrant
    {
        Auditor storage au = _auditors[msg.sender];
        if (au.registered) revert RegistryAlreadyRegistered(msg.sender);
        if (!ParamsLib.isTier(tier)) revert RegistryUnknownTier(tier);
        if (encryptionKey == bytes32(0)) revert RegistryZeroEncryptionKey();
        if (tier == ParamsLib.TIER_HUMAN && !au.credentialed) revert RegistryCredentialRequired(msg.sender, tier);
        Params memory p = _params.params();
        uint256 needed = p.minStake(tier);
        if (amount < needed) revert RegistryInsufficientStake(msg.sender, amount, needed);

        _checkpoint(msg.sender, au);
        au.registered = true;
        au.tier = tier;
        au.available = true;
        au.reputationWad = p.initialReputationWad;
        au.encryptionKey = encryptionKey;
        _metadataURIs[msg.sender] = metadataURI;
        _addStake(msg.sender, au, amount);
        _sync(msg.sender, au, p);
        emit AuditorRegistered(msg.sender, tier, encryptionKey, metadataURI);
        emit Staked(msg.sender, amount, au.stake, _totalStake);
        _token.safeTransferFrom(msg.sender, address(this), amount);
    }

    /// @inheritdoc IAuditorRegistry
    function updateProfile(bytes32 encryptionKey, string calldata metadataURI) external {
        Auditor storage au = _registered(msg.sender);
        if (encryptionKey == bytes32(0)) revert RegistryZeroEncryptionKey();
        au.encryptionKey = encryptionKey;
        _metadataURIs[msg.sender] = metadataURI;
        emit ProfileUpdated(msg.sender, encryptionKey, metadataURI);
    }

    /// @inheritdoc IAuditorRegistry
    function stake(uint256 amount) external nonReentrant {
        Auditor storage au = _registered(msg.sender);
        if (amount == 0) revert RegistryZeroAmount();
        _checkpoint(msg.sender, au);
        _addStake(msg.sender, au, amount);
        _sync(msg.sender, au, _params.params());
        emit Staked(msg.sender, amount, au.stake, _totalStake);
        _token.safeTransferFrom(msg.sender, address(this), amount);
    }

    /// @inheritdoc IAuditorRegistry
    function requestUnstake(uint256 amount) external {
        Auditor storage au = _registered(msg.sender);
        if (amount == 0) revert RegistryZeroAmount();
        if (au.locked != 0) revert RegistryHasOpenSeats(msg.sender, au.locked);
        if (au.unbonding != 0) revert RegistryUnbondingPending(msg.sender, au.unbonding, au.unbondingReadyAt);
        if (amount > au.stake) revert RegistryExceedsStake(msg.sender, amount, au.stake);
        Params memory p = _params.params();
        uint256 remaining = au.stake - amount;
        uint256 needed = p.minStake(au.tier);
        // Stay at or above the tier minimum, or leave entirely.
        if (remaining != 0 && remaining < needed) revert RegistryInsufficientStake(msg.sender, remaining, needed);

        _checkpoint(msg.sender, au);
        au.stake = uint96(remaining); // remaining < au.stake, a uint96
        _totalStake -= amount;
        au.unbonding = uint96(amount); // amount <= au.stake, a uint96
        uint48 readyAt = (block.timestamp + p.unbondingDelaySeconds).toUint48();
        au.unbondingReadyAt = readyAt;
        au.unbondingBlock = block.number.toUint48();
        _sync(msg.sender, au, p);
        emit UnstakeRequested(msg.sender, amount, remaining, readyAt);
    }

    /// @inheritdoc IAuditorRegistry
    function executeUnstake() external nonReentrant {
        Auditor storage au = _auditors[msg.sender];
        uint256 amount = au.unbonding;
        if (amount == 0) revert RegistryNothingUnbonding(msg.sender);
        if (block.timestamp < au.unbondingReadyAt) {
            revert RegistryUnbondingNotReady(msg.sender, au.unbondingReadyAt, block.timestamp);
        }
        // A draw on a snapshot taken before the request may still charge this stake (see `_fill`).
        uint256 reachBlock = uint256(au.unbondingBlock) + ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS;
        if (block.number <= reachBlock) revert RegistryUnbondingInReach(msg.sender, reachBlock, block.number);
        au.unbonding = 0;
        au.unbondingReadyAt = 0;
        au.unbondingBlock = 0;
        emit Unstaked(msg.sender, amount);
        _token.safeTransfer(msg.sender, amount);
    }

    /// @inheritdoc IAuditorRegistry
    function setAvailable(bool available) external {
        Auditor storage au = _registered(msg.sender);
        au.available = available;
        _sync(msg.sender, au, _params.params());
        emit AvailabilityChanged(msg.sender, available);
    }

    /// @inheritdoc IAuditorRegistry
    function claimStakerReward() external nonReentrant {
        Auditor storage au = _auditors[msg.sender];
        _checkpoint(msg.sender, au);
        uint256 owed = _accruedRewardWei[msg.sender];
        // Exactly nothing accrued (the amount depends on the time only through the stream's floors).
        // slither-disable-next-line incorrect-equality
        if (owed == 0) revert RegistryNothingToClaim(msg.sender);
        _accruedRewardWei[msg.sender] = 0;
        emit StakerRewardClaimed(msg.sender, owed);
        Address.sendValue(payable(msg.sender), owed);
    }

    /// @inheritdoc IAuditorRegistry
    function claimTokens() external nonReentrant {
        uint256 owed = _claimableTokens[msg.sender];
        if (owed == 0) revert RegistryNothingToClaim(msg.sender);
        _claimableTokens[msg.sender] = 0;
        emit TokensClaimed(msg.sender, owed);
        _token.safeTransfer(msg.sender, owed);
    }

    /// @inheritdoc IAuditorRegistry
    function syncDrawWeights(address[] calldata accounts) external {
        Params memory p = _params.params();
        for (uint256 i; i < accounts.length; ++i) {
            Auditor storage au = _auditors[accounts[i]];
            if (au.registered) _sync(accounts[i], au, p);
        }
    }

    // ------------------------------------------------------------------ governance

    /// @inheritdoc IAuditorRegistry
    function grantCredential(address account) external onlyOwner {
        if (account == address(0)) revert RegistryZeroAddress();
        Auditor storage au = _auditors[account];
        au.credentialed = true;
        _sync(account, au, _params.params());
        emit CredentialGranted(account);
    }

    /// @inheritdoc IAuditorRegistry
    function revokeCredential(address account) external onlyOwner {
        Auditor storage au = _auditors[account];
        au.credentialed = false;
        _sync(account, au, _params.params());
        emit CredentialRevoked(account);
    }

    /// @inheritdoc IAuditorRegistry
    function setAuditContract(address audit) external onlyOwner {
        if (audit == address(0)) revert RegistryZeroAddress();
        emit AuditContractChanged(_audit, audit);
        _audit = audit;
    }

    // ------------------------------------------------------------------ audit contract

    /// @inheritdoc IAuditorRegistry
    function drawCommittee(DrawRequest calldata request)
        external
        onlyAudit
        returns (address[] memory members, uint96[] memory weights)
    {
        uint256 snapshotBlock = request.snapshotBlock;
        if (snapshotBlock >= block.number) revert RegistryRandomnessNotPast(snapshotBlock, block.number);
        uint256 size = request.size;
        members = new address[](size);
        weights = new uint96[](size);
        Taken memory taken = Taken({
            members: members,
            weights: weights,
            seated: 0,
            units: 0,
            starts: new uint256[](_MAX_SKIPPED),
            widths: new uint256[](_MAX_SKIPPED),
            count: 0,
            deserters: new address[](_MAX_SKIPPED),
            deserterCount: 0
        });
        _fill(request, taken);
        if (taken.deserterCount != 0) _chargeDeserters(taken.deserters, taken.deserterCount, request.lockPerSeat);
        if (taken.units < size) {
            // Not enough stake to back the committee: nothing is locked, the caller decides what
            // happens next.
            emit CommitteeUnavailable(request.tier, size, taken.units);
            return (new address[](0), new uint96[](0));
        }
        uint256 seated = taken.seated;
        assembly ("memory-safe") {
            mstore(members, seated)
            mstore(weights, seated)
        }
        // Locking changes no draw weight (unlocked stake is checked at each draw instead).
        for (uint256 i; i < seated; ++i) {
            _auditors[members[i]].locked += weights[i] * request.lockPerSeat; // _admit checked the stake
        }
    }

    /// @inheritdoc IAuditorRegistry
    function settleSeats(SeatSettlement[] calldata seats, SettlementTerms calldata terms)
        external
        onlyAudit
        returns (uint256 forfeitedMask)
    {
        uint256 forfeitedTotal = 0;
        // Read from the parameter store at the first forfeit only; unused until then.
        // slither-disable-next-line uninitialized-local
        Params memory p;
        bool loaded = false;
        for (uint256 i; i < seats.length; ++i) {
            SeatSettlement calldata seat = seats[i];
            Auditor storage au = _auditors[seat.auditor];
            uint96 lock = terms.lockPerSeat * seat.units;
            au.locked -= lock;
            uint64 before = au.reputationWad;
            if (seat.outcome != SeatOutcome.Released) {
                bool aligned = seat.outcome == SeatOutcome.Aligned;
                bool forfeits = seat.outcome == SeatOutcome.Silent
                    || (
                        seat.outcome == SeatOutcome.Misaligned
                            && seat.slashRollBps < ReputationLib.slashProbabilityBps(before, terms.pMinBps, terms.pMaxBps)
                    );
                au.reputationWad = ReputationLib.update(before, terms.gammaWad, aligned);
                emit ReputationUpdated(seat.auditor, au.reputationWad);
                if (forfeits) {
                    _checkpoint(seat.auditor, au);
                    au.stake -= lock; // locked + this lock <= stake before the unlock
                    forfeitedTotal += lock;
                    forfeitedMask |= 1 << i;
                    emit StakeForfeited(
                        seat.auditor,
                        lock,
                        terms.beneficiary,
                        seat.outcome == SeatOutcome.Silent ? "no reveal" : "vote against consensus",
                        au.stake,
                        au.unbonding
                    );
                    // Only a forfeit changes the stake, and with it the draw weight.
                    if (!loaded) {
                        p = _params.params();
                        loaded = true;
                    }
                    _sync(seat.auditor, au, p);
                }
            }
        }
        if (forfeitedTotal != 0) {
            _totalStake -= forfeitedTotal;
            _claimableTokens[terms.beneficiary] += forfeitedTotal;
        }
    }

    /// @inheritdoc IAuditorRegistry
    function slash(address account, uint256 amount, address beneficiary, string calldata reason)
        external
        onlyAudit
        returns (uint256 taken)
    {
        Auditor storage au = _registered(account);
        if (amount == 0) revert RegistryZeroAmount();
        if (beneficiary == address(0)) revert RegistryZeroAddress();
        uint256 free = au.stake - au.locked;
        // Take what is there: a slash decided while its target moved stake out of reach (or lost
        // some to forfeits) still takes the rest instead of reverting.
        uint256 reachable = free + au.unbonding;
        amount = amount < reachable ? amount : reachable;
        taken = amount;
        _checkpoint(account, au);
        uint256 fromStake = amount < free ? amount : free;
        au.stake -= uint96(fromStake); // fromStake <= free <= stake
        _totalStake -= fromStake;
        au.unbonding -= uint96(amount - fromStake); // checked: amount - fromStake <= unbonding
        _claimableTokens[beneficiary] += amount;
        _sync(account, au, _params.params());
        emit StakeForfeited(account, amount, beneficiary, reason, au.stake, au.unbonding);
    }

    /// @inheritdoc IAuditorRegistry
    function notifyStakerReward() external payable onlyAudit {
        uint256 accumulator = _advance();
        // The rest of the running period and what was carried join the new amount: one rate, one
        // full period from now (a notification never shortens what is already streaming).
        uint256 streaming = _streamingWei + msg.value;
        uint256 carried = _carriedRewardWei;
        if (carried != 0) {
            streaming += carried;
            _carriedRewardWei = 0;
        }
        _streamingWei = streaming;
        uint256 finish = block.timestamp + ParamsLib.STAKER_REWARD_PERIOD_SECONDS;
        // Floor: the fraction of a wei per second it drops stays in `_streamingWei` and is paid with
        // the period's last release (see `_release`).
        uint256 rateWad = streaming * ParamsLib.WAD / ParamsLib.STAKER_REWARD_PERIOD_SECONDS;
        _stream = RewardStream({
            rateWad: rateWad.toUint160(), periodFinish: finish.toUint48(), updatedAt: block.timestamp.toUint48()
        });
        emit StakerRewardNotified(msg.value, streaming, rateWad, finish, accumulator);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IAuditorRegistry
    function auditor(address account) external view returns (AuditorInfo memory info) {
        Auditor storage au = _auditors[account];
        info = AuditorInfo({
            registered: au.registered,
            tier: au.tier,
            available: au.available,
            credentialed: au.credentialed,
            stake: au.stake,
            locked: au.locked,
            unbonding: au.unbonding,
            unbondingReadyAt: au.unbondingReadyAt,
            unbondingReachBlock: au.unbonding == 0 ? 0 : uint48(au.unbondingBlock + ParamsLib.MAX_SNAPSHOT_AGE_BLOCKS),
            reputationWad: au.reputationWad,
            encryptionKey: au.encryptionKey,
            metadataURI: _metadataURIs[account]
        });
    }

    /// @inheritdoc IAuditorRegistry
    function reputationOf(address account) external view returns (uint256) {
        return _auditors[account].reputationWad;
    }

    /// @inheritdoc IAuditorRegistry
    function stakeOf(address account) external view returns (uint256) {
        return _auditors[account].stake;
    }

    /// @inheritdoc IAuditorRegistry
    function encryptionKeyOf(address account) external view returns (bytes32) {
        return _auditors[account].encryptionKey;
    }

    /// @inheritdoc IAuditorRegistry
    function totalStake() external view returns (uint256) {
        return _totalStake;
    }

    /// @inheritdoc IAuditorRegistry
    function eligibleCount(uint8 tier) external view returns (uint256) {
        return _eligibleCounts[tier];
    }

    /// @inheritdoc IAuditorRegistry
    function eligibleStake(uint8 tier) external view returns (uint256) {
        return _pools[tier].total();
    }

    /// @inheritdoc IAuditorRegistry
    function eligibleStakeAt(uint8 tier, uint256 blockNumber) external view returns (uint256) {
        if (blockNumber >= block.number) revert RegistryRandomnessNotPast(blockNumber, block.number);
        return _pools[tier].totalAt(blockNumber);
    }

    /// @inheritdoc IAuditorRegistry
    function drawWeightAt(address account, uint256 blockNumber) external view returns (uint256) {
        if (blockNumber >= block.number) revert RegistryRandomnessNotPast(blockNumber, block.number);
        Auditor storage au = _auditors[account];
        return _pools[au.tier].weightAt(au.treeIndex, blockNumber);
    }

    /// @inheritdoc IAuditorRegistry
    function pendingStakerReward(address account) external view returns (uint256) {
        (uint256 accumulator,,,) = _release(_stream);
        return _accruedRewardWei[account]
            + uint256(_auditors[account].stake) * (accumulator - _rewardPerStakePaidWad[account]) / ParamsLib.WAD;
    }

    /// @inheritdoc IAuditorRegistry
    function stakerRewardStream() external view returns (StakerRewardStream memory stream) {
        RewardStream memory st = _stream;
        (uint256 accumulator, uint256 spentWei, uint256 idleWei,) = _release(st);
        stream = StakerRewardStream({
            rateWad: st.rateWad,
            periodFinish: st.periodFinish,
            streamingWei: _streamingWei - spentWei - idleWei,
            carriedWei: _carriedRewardWei + idleWei,
            rewardPerStakeWad: accumulator
        });
    }

    /// @inheritdoc IAuditorRegistry
    function rewardPerStakeWad() external view returns (uint256 accumulator) {
        (accumulator,,,) = _release(_stream);
    }

    /// @inheritdoc IAuditorRegistry
    function claimableTokens(address account) external view returns (uint256) {
        return _claimableTokens[account];
    }

    /// @inheritdoc IAuditorRegistry
    function stakingToken() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc IAuditorRegistry
    function auditContract() external view returns (address) {
        return _audit;
    }

    /// @notice The parameter store this registry reads its current rules from.
    function protocolParams() external view returns (address) {
        return address(_params);
    }

    // ------------------------------------------------------------------ internals

    function _authorizeUpgrade(address) internal override onlyOwner {}

    function _registered(address account) private view returns (Auditor storage au) {
        au = _auditors[account];
        if (!au.registered) revert RegistryNotRegistered(account);
    }

    function _addStake(address account, Auditor storage au, uint256 amount) private {
        uint256 next = uint256(au.stake) + amount;
        if (next > type(uint96).max) revert RegistryStakeOverflow(account, next);
        au.stake = uint96(next); // checked just above
        _totalStake += amount;
    }

    /// @dev Brings the staker-reward accounting of `account` up to date; call before its stake changes
    ///      (and before `_totalStake` changes: the stream up to now is paid at the old total).
    function _checkpoint(address account, Auditor storage au) private {
        uint256 accumulator = _advance();
        uint256 paid = _rewardPerStakePaidWad[account];
        if (accumulator <= paid) return; // the accumulator only grows: nothing new since the last checkpoint
        _accruedRewardWei[account] += uint256(au.stake) * (accumulator - paid) / ParamsLib.WAD;
        _rewardPerStakePaidWad[account] = accumulator;
    }

    /// @dev Releases the stream up to now into the accumulator (or, while nobody stakes, into the
    ///      carried amount) and returns the accumulator. After the first call at a timestamp, later
    ///      ones in the same block find nothing to release and write nothing: a settlement's
    ///      forfeits after the first pay one more warm read each.
    function _advance() private returns (uint256 accumulator) {
        RewardStream memory st = _stream;
        uint256 spentWei;
        uint256 idleWei;
        uint256 until;
        (accumulator, spentWei, idleWei, until) = _release(st);
        // `<=`: until never precedes updatedAt; equal when this timestamp already released.
        if (until <= st.updatedAt) return accumulator;
        _stream.updatedAt = uint48(until); // until <= periodFinish, a uint48
        if (spentWei != 0) {
            _rewardPerStakeWad = accumulator;
            _streamingWei -= spentWei;
        }
        if (idleWei != 0) {
            _streamingWei -= idleWei;
            _carriedRewardWei += idleWei;
        }
    }

    /// @dev The stream from `st.updatedAt` to now (capped at the period's end): the accumulator
    ///      after it, the wei it pays stakers (`spentWei`), the wei released while nobody staked
    ///      (`idleWei`, carried to the next notification instead of paid in a lump to whoever stakes
    ///      next) and the time it reaches. A release is what is streaming less what the rest of the
    ///      period will pay (`rateWad` x seconds left, over 1e18), so the period's last release pays
    ///      everything left. The accumulator's increment floors (stakers are never promised more
    ///      than was released) and `spentWei` ceils it, so the fraction of a wei the increment
    ///      promises counts as paid; the rest of the release (less than stake total / 1e18 + 1 wei)
    ///      stays streaming and is due at the next release. Hence the pending rewards never exceed
    ///      what was notified less what is streaming or carried: always backed by the ETH held.
    function _release(RewardStream memory st)
        private
        view
        returns (uint256 accumulator, uint256 spentWei, uint256 idleWei, uint256 until)
    {
        accumulator = _rewardPerStakeWad;
        uint256 finish = st.periodFinish;
        until = block.timestamp < finish ? block.timestamp : finish;
        if (until <= st.updatedAt) return (accumulator, 0, 0, st.updatedAt);
        // Everything streaming beyond what the rest of the period pays is due: the rate's share of
        // the time since the last release, and what earlier releases could not pay (so their floors
        // do not pile up into a lump at the period's end). Ceil: never due early.
        uint256 streaming = _streamingWei;
        uint256 scheduled = Math.mulDiv(st.rateWad, finish - until, ParamsLib.WAD, Math.Rounding.Ceil);
        uint256 releaseWei = streaming > scheduled ? streaming - scheduled : 0;
        uint256 stakeTotal = _totalStake;
        if (stakeTotal == 0) return (accumulator, 0, releaseWei, until);
        uint256 increment = releaseWei * ParamsLib.WAD / stakeTotal;
        accumulator += increment;
        // increment * stakeTotal <= releaseWei * WAD, so this is at most `releaseWei`.
        spentWei = Math.mulDiv(increment, stakeTotal, ParamsLib.WAD, Math.Rounding.Ceil);
    }

    /// @dev Puts the auditor's draw weight in line with the current rules: its stake when it may be
    ///      drawn, zero otherwise (eq. 3.2's indicator terms). Locked stake does not enter: seats
    ///      come and go with every draw and settlement, and rewriting the tree each time would cost
    ///      O(log n) writes per seat; a member short of unlocked stake is passed over by the draw.
    ///      The tree records the change at this block; draws read it as of their randomness block.
    function _sync(address account, Auditor storage au, Params memory p) private {
        uint8 tier = au.tier;
        bool eligible = au.registered && au.available && au.stake >= p.minStake(tier)
            && (tier != ParamsLib.TIER_HUMAN || au.credentialed);
        uint96 weight = eligible ? au.stake : 0;
        uint96 previous = au.drawWeight;
        if (weight == previous) return;
        au.drawWeight = weight;
        if (previous == 0) ++_eligibleCounts[tier];
        else if (weight == 0) --_eligibleCounts[tier];
        SortitionTree.Tree storage pool = _pools[tier];
        if (au.treeIndex == 0) {
            au.treeIndex = pool.append(account, weight).toUint32();
        } else {
            pool.update(au.treeIndex, previous, weight);
        }
        emit DrawWeightChanged(account, weight);
    }

    /// @dev Draws from the tree as of the snapshot block until every one of the committee's
    ///      `size` draws has a member, the weight runs out or too many members were passed over;
    ///      records the distinct members with how many draws each won (its units), and the members
    ///      passed over because they unbonded after the snapshot (to be charged).
    ///      Draws are *with replacement* (issue L2): a member stays in the range after it wins a
    ///      draw, so its expected units are `size * stake / total` whether its stake sits in one
    ///      account or is split over many, and splitting buys neither seats nor rewards (Kleros v2
    ///      draws jurors the same way). Each unit locks `lockPerSeat`, votes with weight one and
    ///      is paid and charged as one seat (issue H2: every unit of voting weight is backed by P
    ///      of stake locked until the seat settles). A member leaves the range for the rest of the
    ///      draw (its interval is taken out) when it cannot take the unit: it is the excluded
    ///      account, it unbonded after the snapshot (a deserter, charged P when its unbonding
    ///      stake covers it), or its unlocked stake does not back one more unit.
    function _fill(DrawRequest calldata request, Taken memory taken) private view {
        uint256 snapshotBlock = request.snapshotBlock;
        SortitionTree.Tree storage pool = _pools[request.tier];
        uint256 count = pool.sizeAt(snapshotBlock);
        uint256 weightLeft = pool.totalAt(snapshotBlock);
        uint256 size = request.size;
        for (uint256 nonce = 0; taken.units < size; ++nonce) {
            if (weightLeft == 0 || taken.count == taken.starts.length) break;
            uint256 value = _skipTaken(taken, uint256(keccak256(abi.encode(request.seed, nonce))) % weightLeft);
            (address candidate, uint256 start, uint256 weight) = pool.drawAt(value, snapshotBlock, count);
            if (_admit(request, candidate, weight, taken)) continue;
            _take(taken, start, weight);
            weightLeft -= weight;
        }
    }

    /// @dev Gives `candidate` one more unit of the committee if it can back it, else records it as
    ///      a deserter when it unbonded after the snapshot, and returns false (it leaves the draw).
    function _admit(DrawRequest calldata request, address candidate, uint256 snapshotWeight, Taken memory taken)
        private
        view
        returns (bool)
    {
        if (candidate == request.excluded) return false;
        Auditor storage au = _auditors[candidate];
        // Counted in the snapshot, then (partly) unbonded: stake that may leave votes nothing. An
        // unstake request lowers the stake, so only a member now below its snapshot weight can be
        // one (the unbonding slot is read for those only); one that topped its stake back up
        // risks at least what the snapshot counted.
        if (au.stake < snapshotWeight && au.unbondingBlock > request.snapshotBlock) {
            if (au.unbonding >= request.lockPerSeat) taken.deserters[taken.deserterCount++] = candidate;
            return false;
        }
        uint256 seated = taken.seated;
        uint256 j = 0;
        while (j < seated && taken.members[j] != candidate) ++j;
        uint256 units = (j < seated ? taken.weights[j] : 0) + 1;
        if (uint256(au.stake) - au.locked < units * request.lockPerSeat) return false;
        if (j == seated) {
            taken.members[j] = candidate;
            taken.seated = seated + 1;
        }
        taken.weights[j] = uint96(units); // <= size
        ++taken.units;
        return true;
    }

    /// @dev Forfeits `lock` of each deserter's unbonding stake to the insurance fund.
    function _chargeDeserters(address[] memory deserters, uint256 count, uint96 lock) private {
        address beneficiary = _params.insuranceFund();
        for (uint256 i; i < count; ++i) {
            address account = deserters[i];
            Auditor storage au = _auditors[account];
            au.unbonding -= lock; // _fill checked unbonding >= lock
            _claimableTokens[beneficiary] += lock;
            emit StakeForfeited(
                account, lock, beneficiary, "unbonded after the draw's snapshot", au.stake, au.unbonding
            );
        }
    }

    /// @dev Maps `value`, uniform over the weight not yet taken, to the whole tree's range by
    ///      stepping over every taken interval that starts at or before it (the intervals are
    ///      disjoint and sorted): uniform over the members not taken, in proportion to weight.
    function _skipTaken(Taken memory taken, uint256 value) private pure returns (uint256) {
        for (uint256 i; i < taken.count; ++i) {
            if (taken.starts[i] > value) break;
            value += taken.widths[i];
        }
        return value;
    }

    /// @dev Records a taken interval, keeping the list sorted by start.
    function _take(Taken memory taken, uint256 start, uint256 width) private pure {
        uint256 i = taken.count;
        for (; i > 0 && taken.starts[i - 1] > start; --i) {
            taken.starts[i] = taken.starts[i - 1];
            taken.widths[i] = taken.widths[i - 1];
        }
        taken.starts[i] = start;
        taken.widths[i] = width;
        ++taken.count;
    }
}
