// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {Checkpoints} from "@openzeppelin/contracts/utils/structs/Checkpoints.sol";
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
///      which the invariant suite checks against the token balance.
contract AuditorRegistry is IAuditorRegistry, Initializable, UUPSUpgradeable, OwnableUpgradeable, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;
    using SafeCast for uint256;
    using ParamsLib for Params;
    using SortitionTree for SortitionTree.Tree;
    using Checkpoints for Checkpoints.Trace208;

    /// @dev Draws rejected (member already seated, excluded, short of unlocked stake, or weighing
    ///      less at the randomness block than in the tree) before the draw switches to correcting
    ///      the tree for the rest of the draw.
    uint256 private constant _REJECTIONS_BEFORE_EXCLUSION = 8;
    /// @dev Members whose tree weight one draw may correct beyond the committee itself.
    uint256 private constant _MAX_EXTRA_EXCLUSIONS = 128;

    /// @dev Slot layout:
    ///      0: stake 96 | locked 96 | reputationWad 64      (written by every seat lock and settlement)
    ///      1: treeWeight 96 | treeIndex 32 | tier 8 | registered 8 | available 8 | credentialed 8 |
    ///         weightChangedAt 40 | decreasePending 8    (read by every draw)
    ///      2: unbonding 96 | unbondingReadyAt 48 | drawWeight 96
    ///      3: encryptionKey
    ///      Invariants: locked <= stake, so every open seat's penalty is backed; treeWeight >=
    ///      the draw weight at every block a draw may still use (see `_sync`).
    struct Auditor {
        uint96 stake;
        uint96 locked;
        uint64 reputationWad;
        uint96 treeWeight;
        uint32 treeIndex;
        uint8 tier;
        bool registered;
        bool available;
        bool credentialed;
        uint40 weightChangedAt;
        bool decreasePending;
        uint96 unbonding;
        uint48 unbondingReadyAt;
        uint96 drawWeight;
        bytes32 encryptionKey;
    }

    /// @dev The state of one committee draw, in memory (too many values for the stack).
    struct Draw {
        uint8 tier;
        bytes32 seed;
        uint256 randomnessBlock;
        address excluded;
        uint96 lockPerSeat;
        address[] members;
        uint96[] weights;
        uint256 seated;
        address[] corrected; // members whose tree weight is changed for the rest of the draw
        uint96[] correctedTo;
        uint256 correctedCount;
        bool correcting;
        uint256 rejections;
        uint256 nonce;
    }

    IERC20 private _token;
    IProtocolParams private _params;
    address private _audit;

    mapping(address account => Auditor) private _auditors;
    mapping(address account => string) private _metadataURIs;
    mapping(uint8 tier => SortitionTree.Tree) private _pools;
    mapping(uint8 tier => uint256) private _eligibleCounts;
    mapping(uint8 tier => uint256) private _eligibleStakes;
    /// @dev Every change of an auditor's draw weight, by block: a draw reads the weight at its
    ///      randomness block, so that nothing done after that block's hash is public counts.
    mapping(address account => Checkpoints.Trace208) private _weightHistory;
    uint256 private _totalStake;

    // Stakers' share of fees: a reward-per-stake accumulator (Synthetix StakingRewards).
    uint256 private _rewardPerStakeWad;
    uint256 private _unallocatedRewardWei;
    mapping(address account => uint256) private _rewardPerStakePaidWad;
    mapping(address account => uint256) private _accruedRewardWei;

    mapping(address account => uint256) private _claimableTokens;

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
        au.unbonding = 0;
        au.unbondingReadyAt = 0;
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
    function settleDrawWeight(address account) external {
        _lowerSettledWeight(account, _auditors[account]);
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
        uint256 randomnessBlock = request.randomnessBlock;
        if (randomnessBlock >= block.number || block.number - randomnessBlock > ParamsLib.DRAW_HISTORY_BLOCKS) {
            revert RegistryRandomnessOutOfWindow(randomnessBlock, block.number);
        }
        uint256 size = request.size;
        uint96 lockPerSeat = request.lockPerSeat;
        Draw memory d = Draw({
            tier: request.tier,
            seed: request.seed,
            randomnessBlock: randomnessBlock,
            excluded: request.excluded,
            lockPerSeat: lockPerSeat,
            members: new address[](size),
            weights: new uint96[](size),
            seated: 0,
            corrected: new address[](0), // allocated if the draw switches to correcting
            correctedTo: new uint96[](0),
            correctedCount: 0,
            correcting: false,
            rejections: 0,
            nonce: 0
        });
        SortitionTree.Tree storage pool = _pools[request.tier];
        while (d.seated < size) {
            _drawOne(pool, d);
        }
        for (uint256 i; i < d.correctedCount; ++i) {
            Auditor storage au = _auditors[d.corrected[i]];
            pool.update(au.treeIndex, d.correctedTo[i], au.treeWeight);
        }
        members = d.members;
        weights = d.weights;
        // Locking changes no draw weight (unlocked stake is checked at each draw instead).
        for (uint256 i; i < size; ++i) {
            _auditors[members[i]].locked += lockPerSeat; // _drawOne checked stake - locked >= lockPerSeat
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
            au.locked -= terms.lockPerSeat;
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
                    au.stake -= terms.lockPerSeat; // locked + this lock <= stake before the unlock
                    forfeitedTotal += terms.lockPerSeat;
                    forfeitedMask |= 1 << i;
                    emit StakeForfeited(
                        seat.auditor,
                        terms.lockPerSeat,
                        terms.beneficiary,
                        seat.outcome == SeatOutcome.Silent ? "no reveal" : "vote against consensus"
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
    function slash(address account, uint256 amount, address beneficiary, string calldata reason) external onlyAudit {
        Auditor storage au = _registered(account);
        if (amount == 0) revert RegistryZeroAmount();
        if (beneficiary == address(0)) revert RegistryZeroAddress();
        uint256 free = au.stake - au.locked;
        if (amount > free + au.unbonding) revert RegistryExceedsStake(account, amount, free + au.unbonding);
        _checkpoint(account, au);
        uint256 fromStake = amount < free ? amount : free;
        au.stake -= uint96(fromStake); // fromStake <= free <= stake
        _totalStake -= fromStake;
        au.unbonding -= uint96(amount - fromStake); // checked: amount - fromStake <= unbonding
        _claimableTokens[beneficiary] += amount;
        _sync(account, au, _params.params());
        emit StakeForfeited(account, amount, beneficiary, reason);
    }

    /// @inheritdoc IAuditorRegistry
    function notifyStakerReward() external payable onlyAudit {
        uint256 amount = msg.value + _unallocatedRewardWei;
        uint256 stakeTotal = _totalStake;
        if (stakeTotal == 0) {
            // Nobody to pay yet: carried into the next notification.
            _unallocatedRewardWei = amount;
            emit StakerRewardNotified(msg.value, _rewardPerStakeWad);
            return;
        }
        uint256 increment = amount * ParamsLib.WAD / stakeTotal; // floor: never pays out more than received
        _rewardPerStakeWad += increment;
        // Ceil: the fraction of a wei that the increment promises stakers is allocated, not carried;
        // carrying it would promise it again with the next notification, until the pending rewards
        // exceed the ETH held. increment * stakeTotal <= amount * WAD, so this is at most `amount`.
        _unallocatedRewardWei = amount - Math.mulDiv(increment, stakeTotal, ParamsLib.WAD, Math.Rounding.Ceil);
        emit StakerRewardNotified(msg.value, _rewardPerStakeWad);
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
        return _eligibleStakes[tier];
    }

    /// @inheritdoc IAuditorRegistry
    function sortitionWeight(uint8 tier) external view returns (uint256) {
        return _pools[tier].total();
    }

    /// @inheritdoc IAuditorRegistry
    function pendingStakerReward(address account) external view returns (uint256) {
        return _accruedRewardWei[account]
            + uint256(_auditors[account].stake) * (_rewardPerStakeWad - _rewardPerStakePaidWad[account]) / ParamsLib.WAD;
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

    /// @dev Brings the staker-reward accounting of `account` up to date; call before its stake changes.
    function _checkpoint(address account, Auditor storage au) private {
        uint256 accumulator = _rewardPerStakeWad;
        uint256 paid = _rewardPerStakePaidWad[account];
        if (accumulator == paid) return;
        _accruedRewardWei[account] += uint256(au.stake) * (accumulator - paid) / ParamsLib.WAD;
        _rewardPerStakePaidWad[account] = accumulator;
    }

    /// @dev Puts the auditor's draw weight in line with the current rules: its stake when it may be
    ///      drawn, zero otherwise (eq. 3.2's indicator terms). Locked stake does not enter: seats
    ///      come and go with every draw and settlement, and rewriting the tree each time would cost
    ///      O(log n) writes per seat; a member short of unlocked stake is skipped by the draw instead.
    ///
    ///      Every change is recorded by block in `_weightHistory`. An increase enters the tree at
    ///      once; a decrease leaves the tree weight where it was until `DRAW_HISTORY_BLOCKS` have
    ///      passed, so that the tree never weighs a member less than it weighed at any randomness
    ///      block still in use (the draw's rejection step needs that).
    function _sync(address account, Auditor storage au, Params memory p) private {
        uint8 tier = au.tier;
        bool eligible = au.registered && au.available && au.stake >= p.minStake(tier)
            && (tier != ParamsLib.TIER_HUMAN || au.credentialed);
        uint96 weight = eligible ? au.stake : 0;
        uint96 previous = au.drawWeight;
        if (weight == previous) {
            _lowerSettledWeight(account, au);
            return;
        }
        au.drawWeight = weight;
        au.weightChangedAt = uint40(block.number); // block numbers stay below 2^40 for eons
        // The previous and new values that `push` returns are `previous` and `weight` already.
        // slither-disable-next-line unused-return
        _weightHistory[account].push(uint48(block.number), weight);
        if (previous == 0) ++_eligibleCounts[tier];
        else if (weight == 0) --_eligibleCounts[tier];
        _eligibleStakes[tier] = _eligibleStakes[tier] + weight - previous;
        if (weight >= au.treeWeight) {
            _setTreeWeight(account, au, weight);
            au.decreasePending = false;
        } else {
            au.decreasePending = true;
        }
        emit DrawWeightChanged(account, weight);
    }

    /// @dev Lowers the tree weight to the draw weight once no usable randomness predates the
    ///      decrease.
    function _lowerSettledWeight(address account, Auditor storage au) private {
        if (au.decreasePending && block.number > uint256(au.weightChangedAt) + ParamsLib.DRAW_HISTORY_BLOCKS) {
            _setTreeWeight(account, au, au.drawWeight);
            au.decreasePending = false;
        }
    }

    function _setTreeWeight(address account, Auditor storage au, uint96 weight) private {
        SortitionTree.Tree storage pool = _pools[au.tier];
        if (au.treeIndex == 0) {
            au.treeIndex = pool.append(account, weight).toUint32();
        } else {
            pool.update(au.treeIndex, au.treeWeight, weight);
        }
        au.treeWeight = weight;
    }

    /// @dev One proposal from the pool, by rejection sampling towards the weights at the
    ///      randomness block. The tree holds, for every member, a weight at least its weight at any
    ///      block a draw may still use (increases enter at once, decreases after
    ///      `DRAW_HISTORY_BLOCKS`); a proposal of `candidate` is accepted with probability
    ///      weightAt(randomnessBlock) / treeWeight, so each seat goes to a member with probability
    ///      proportional to its stake at the randomness block (eq. 3.2), whatever anyone did after.
    ///      Members already seated, the excluded account, and members short of unlocked stake have
    ///      target weight zero. Once rejections pass `_REJECTIONS_BEFORE_EXCLUSION`, the draw
    ///      instead corrects each proposed member's tree weight to its target for the rest of the
    ///      draw (zero for the seated), so every later proposal either seats someone or corrects a
    ///      member for good: the draw ends within `corrected.length` proposals.
    function _drawOne(SortitionTree.Tree storage pool, Draw memory d) private {
        uint256 weightLeft = pool.total();
        if (weightLeft == 0) revert RegistryCommitteeUnavailable(d.tier, d.members.length, d.seated);
        // The member's tree index is not needed here.
        // slither-disable-next-line unused-return
        (address candidate,) = pool.draw(uint256(keccak256(abi.encode(d.seed, d.nonce++))) % weightLeft);
        Auditor storage au = _auditors[candidate];
        uint96 target = 0;
        if (candidate != d.excluded && au.stake - au.locked >= d.lockPerSeat && !_contains(d.members, d.seated, candidate)) {
            target = _weightAt(candidate, au, d.randomnessBlock);
        }
        (bool isCorrected, uint96 proposal) = _proposalWeight(d, candidate, au.treeWeight);
        if (d.correcting) {
            if (target == proposal) _seat(d, candidate, target);
            _correct(pool, d, candidate, target == proposal ? 0 : target, isCorrected, proposal);
            return;
        }
        // Accept with probability target / proposal (always when equal, never when zero).
        if (target == proposal || (target != 0 && uint256(keccak256(abi.encode(d.seed, d.nonce++))) % proposal < target)) {
            _seat(d, candidate, target);
        } else if (++d.rejections > _REJECTIONS_BEFORE_EXCLUSION) {
            d.correcting = true;
            d.corrected = new address[](d.members.length + 1 + _MAX_EXTRA_EXCLUSIONS);
            d.correctedTo = new uint96[](d.corrected.length);
            for (uint256 i; i < d.seated; ++i) {
                (bool c, uint96 w) = _proposalWeight(d, d.members[i], _auditors[d.members[i]].treeWeight);
                _correct(pool, d, d.members[i], 0, c, w);
            }
            if (_inPool(d.excluded, d.tier)) _correct(pool, d, d.excluded, 0, false, _auditors[d.excluded].treeWeight);
        }
    }

    function _seat(Draw memory d, address member, uint96 weight) private pure {
        d.members[d.seated] = member;
        d.weights[d.seated] = weight;
        ++d.seated;
    }

    /// @dev The weight `member` has in the tree during this draw: corrected, or its stored one.
    function _proposalWeight(Draw memory d, address member, uint96 treeWeight)
        private
        pure
        returns (bool corrected, uint96 weight)
    {
        for (uint256 i; i < d.correctedCount; ++i) {
            if (d.corrected[i] == member) return (true, d.correctedTo[i]);
        }
        return (false, treeWeight);
    }

    /// @dev Sets `member`'s tree weight to `to` for the rest of the draw (restored at its end).
    function _correct(
        SortitionTree.Tree storage pool,
        Draw memory d,
        address member,
        uint96 to,
        bool alreadyCorrected,
        uint96 from
    ) private {
        pool.update(_auditors[member].treeIndex, from, to);
        if (alreadyCorrected) {
            for (uint256 i; i < d.correctedCount; ++i) {
                if (d.corrected[i] == member) d.correctedTo[i] = to;
            }
            return;
        }
        if (d.correctedCount == d.corrected.length) {
            revert RegistryCommitteeUnavailable(d.tier, d.members.length, d.seated);
        }
        d.corrected[d.correctedCount] = member;
        d.correctedTo[d.correctedCount] = to;
        ++d.correctedCount;
    }

    /// @dev The draw weight of `account` at the end of block `blockNumber`.
    function _weightAt(address account, Auditor storage au, uint256 blockNumber) private view returns (uint96) {
        if (au.weightChangedAt <= blockNumber) return au.decreasePending ? au.drawWeight : au.treeWeight;
        // Changed since: read the history (rare: only members who changed after the randomness).
        return uint96(_weightHistory[account].upperLookupRecent(uint48(blockNumber))); // stored from uint96
    }

    function _inPool(address account, uint8 tier) private view returns (bool) {
        Auditor storage au = _auditors[account];
        return account != address(0) && au.tier == tier && au.treeWeight != 0;
    }

    function _contains(address[] memory list, uint256 length, address who) private pure returns (bool) {
        for (uint256 i; i < length; ++i) {
            if (list[i] == who) return true;
        }
        return false;
    }
}
