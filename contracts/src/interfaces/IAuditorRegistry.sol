// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {DrawRequest, SeatSettlement, SettlementTerms} from "../types/Settlement.sol";

/// @title IAuditorRegistry
/// @notice Auditor registration, staking, unbonding, tier credentials, availability, reputation and
///         the stake-weighted committee draw of the TRUST network (paper sections 3.1-3.3).
interface IAuditorRegistry {
    /// @notice A read-only view of one auditor.
    struct AuditorInfo {
        bool registered;
        uint8 tier;
        bool available;
        bool credentialed;
        uint96 stake;
        uint96 locked;
        uint96 unbonding;
        uint48 unbondingReadyAt;
        /// @dev `executeUnstake` also waits until the block after this one: until then a draw on a
        ///      snapshot taken before the request may still charge the stake (zero: nothing unbonding).
        uint48 unbondingReachBlock;
        uint64 reputationWad;
        bytes32 encryptionKey;
        string metadataURI;
    }

    /// @notice The stakers' share of fees as it is streamed (issue L1): each notification is paid
    ///         out over `ParamsLib.STAKER_REWARD_PERIOD_SECONDS`, pro rata to stake and to the time
    ///         it was staked. Figures as of now (the stream advanced to this block's time).
    struct StakerRewardStream {
        /// @dev Wei per second, times 1e18, paid out until `periodFinish`.
        uint256 rateWad;
        /// @dev When the running period ends (unix seconds; in the past once it ended).
        uint256 periodFinish;
        /// @dev Wei received and not yet paid into the accumulator: the rest of the running
        ///      period, plus the fractions of a wei the accumulator could not express (they are
        ///      paid with the period's last release or roll into the next notification).
        uint256 streamingWei;
        /// @dev Wei waiting for the next notification: what was streamed while nobody staked.
        uint256 carriedWei;
        /// @dev The accumulator: wei per token of stake, times 1e18, earned since deployment.
        uint256 rewardPerStakeWad;
    }

    event AuditorRegistered(address indexed auditor, uint8 indexed tier, bytes32 encryptionKey, string metadataURI);
    event ProfileUpdated(address indexed auditor, bytes32 encryptionKey, string metadataURI);
    event Staked(address indexed auditor, uint256 amount, uint256 stake, uint256 totalStake);
    event UnstakeRequested(address indexed auditor, uint256 amount, uint256 stake, uint256 readyAt);
    event Unstaked(address indexed auditor, uint256 amount);
    event AvailabilityChanged(address indexed auditor, bool available);
    event CredentialGranted(address indexed auditor);
    event CredentialRevoked(address indexed auditor);
    event AuditContractChanged(address previous, address current);
    event ReputationUpdated(address indexed auditor, uint256 reputationWad);
    /// @notice `amount` of the auditor's stake went to `beneficiary` (a seat's lock, a deserter's
    ///         unbonding tokens, or a governance slash of free then unbonding stake); `stake` and
    ///         `unbonding` are the auditor's amounts after it, so that a reader never has to work
    ///         out which of the two the tokens came from.
    event StakeForfeited(
        address indexed auditor,
        uint256 amount,
        address indexed beneficiary,
        string reason,
        uint256 stake,
        uint256 unbonding
    );
    /// @notice The stakers' share of a fee arrived (`amountWei`): with the rest of the running
    ///         period and what was carried, `streamingWei` is now paid out at `rateWad` (wei per
    ///         second, times 1e18) until `periodFinish`; `rewardPerStakeWad` is the accumulator now.
    event StakerRewardNotified(
        uint256 amountWei, uint256 streamingWei, uint256 rateWad, uint256 periodFinish, uint256 rewardPerStakeWad
    );
    event StakerRewardClaimed(address indexed auditor, uint256 amountWei);
    event TokensClaimed(address indexed account, uint256 amount);
    /// @notice The auditor's draw weight (its stake while it may be drawn, else zero) changed.
    event DrawWeightChanged(address indexed auditor, uint256 weight);
    /// @notice A draw found fewer than `needed` members of `tier` it could seat (`seated` found);
    ///         nothing was locked.
    event CommitteeUnavailable(uint8 indexed tier, uint256 needed, uint256 seated);

    error RegistryAlreadyRegistered(address auditor);
    error RegistryNotRegistered(address auditor);
    error RegistryUnknownTier(uint256 tier);
    error RegistryCredentialRequired(address auditor, uint8 tier);
    error RegistryInsufficientStake(address auditor, uint256 stake, uint256 needed);
    error RegistryZeroAmount();
    error RegistryZeroEncryptionKey();
    error RegistryHasOpenSeats(address auditor, uint256 locked);
    error RegistryUnbondingPending(address auditor, uint256 amount, uint256 readyAt);
    error RegistryNothingUnbonding(address auditor);
    error RegistryUnbondingNotReady(address auditor, uint256 readyAt, uint256 nowSeconds);
    /// @notice A draw on a snapshot taken before the unstake request may still charge the unbonding
    ///         stake until block `reachBlock` has passed.
    error RegistryUnbondingInReach(address auditor, uint256 reachBlock, uint256 blockNumber);
    error RegistryExceedsStake(address auditor, uint256 amount, uint256 available);
    error RegistryNotAuditContract(address caller);
    error RegistryNothingToClaim(address account);
    error RegistryZeroAddress();
    error RegistryStakeOverflow(address auditor, uint256 stake);
    /// @notice A draw or a history read named a block that is not in the past yet.
    error RegistryRandomnessNotPast(uint256 blockNumber, uint256 currentBlock);

    // ---- auditors ----

    /// @notice Registers the caller as an auditor of `tier` and stakes `amount` staking tokens.
    /// @param tier 1 computational, 2 LLM, 3 human (tier 3 needs a credential granted by governance).
    /// @param encryptionKey The auditor's X25519 public key: segment keys are wrapped to it.
    /// @param metadataURI Where the auditor describes itself (model, expertise, contact).
    /// @param amount Staking tokens to pull from the caller (needs an ERC-20 allowance); at least the
    ///        tier's minimum stake.
    /// @dev Emits `AuditorRegistered` and `Staked`. Starts available, with the initial reputation.
    function register(uint8 tier, bytes32 encryptionKey, string calldata metadataURI, uint256 amount) external;

    /// @notice Replaces the caller's encryption key and metadata URI. Emits `ProfileUpdated`.
    function updateProfile(bytes32 encryptionKey, string calldata metadataURI) external;

    /// @notice Adds `amount` staking tokens to the caller's stake. Emits `Staked`.
    function stake(uint256 amount) external;

    /// @notice Starts unbonding `amount`: it stops counting as stake now and can be withdrawn after
    ///         the unbonding delay. Reverts while the caller holds open seats or already unbonds.
    /// @dev The rest must stay at or above the tier minimum, or be zero (leaving entirely).
    ///      Emits `UnstakeRequested`.
    function requestUnstake(uint256 amount) external;

    /// @notice Withdraws the unbonded amount once the delay has passed. Emits `Unstaked`.
    function executeUnstake() external;

    /// @notice The availability switch: an unavailable auditor is never drawn.
    function setAvailable(bool available) external;

    /// @notice Claims the caller's share of the stakers' fee share (ETH), as streamed up to now.
    function claimStakerReward() external;

    /// @notice Claims staking tokens credited to the caller (forfeits, for the insurance fund).
    function claimTokens() external;

    /// @notice Re-evaluates the draw weight of `accounts` under the current parameters. A change of
    ///         minimum stakes applies to an auditor at its next own action or when anyone calls this
    ///         (a governance proposal that raises a minimum should call it for the auditors below).
    function syncDrawWeights(address[] calldata accounts) external;

    // ---- governance ----

    /// @notice Grants the tier-3 credential. Owner (governance) only.
    function grantCredential(address auditor) external;

    /// @notice Revokes the tier-3 credential; the auditor is no longer drawn. Owner only.
    function revokeCredential(address auditor) external;

    /// @notice Points the registry at the audit contract, the only caller of the seat functions.
    function setAuditContract(address audit) external;

    // ---- audit contract only ----

    /// @notice Makes `request.size` stake-weighted draws of auditors of `request.tier` (eq. 3.2),
    ///         with replacement, never `request.excluded`, and locks `request.lockPerSeat` of the
    ///         member's stake for each draw it won.
    /// @param request The draw (see `DrawRequest`). Its seed is unknown until after the session
    ///        was created, and the whole draw reads the registry as it stood at the end of its
    ///        randomness block: the sortition tree, its size and total, and every member's weight
    ///        are recorded by block. Registering, staking, unstaking, switching availability or
    ///        losing a credential after that block changes neither the odds nor which committee
    ///        the seed yields; nobody who learns the seed can steer the draw.
    /// @return members The committee's distinct members, in the order of their first draw; empty
    ///         when fewer than `request.size` draws could be backed (then nothing is locked and
    ///         `CommitteeUnavailable` is emitted).
    /// @return weights How many draws each member won (its units): its voting weight this round.
    ///         They add up to `request.size`.
    /// @dev Draws with replacement (issue L2): every draw lands on a member with probability
    ///      stake / total at the randomness block, whatever it won before, so a member's expected
    ///      units are `size * stake / total` and the same stake split over many accounts expects
    ///      the same units in all, the same voting weight, rewards and penalties. Each unit locks
    ///      P and weighs one (issue H2: weight is exactly the stake locked for the seat, in units
    ///      of P, and cannot leave before the seat settles). With equal units, a round's verdict
    ///      follows eq. 3.4 exactly: k independent draws, each adversarial with the adversary's
    ///      share of the tier's stake.
    ///      Who may be drawn follows the registry's rules as of the randomness block (registered,
    ///      available, of the tier, credentialed for tier 3, stake at the tier minimum). Three
    ///      checks read the present instead, and a member that fails one leaves the rest of the
    ///      draw: the excluded account; a member that asked to unstake after the randomness block
    ///      (a deserter, which forfeits P of its unbonding stake, issue M2); and a member whose
    ///      unlocked stake does not back one more unit. At most 64 members may be passed over per
    ///      draw. The order of pending draws decides where a member sits when its unlocked stake
    ///      covers fewer units than it is drawn into (docs/protocol.md).
    ///      Each draw maps a uniform number over the weight left around the intervals of the
    ///      members passed over. O(size * log n) reads.
    function drawCommittee(DrawRequest calldata request)
        external
        returns (address[] memory members, uint96[] memory weights);

    /// @notice Settles finished seats: unlocks each seat's stake (`units` times the lock),
    ///         updates reputation (eq. 3.8), and forfeits the locked stake of silent seats and of misaligned seats whose roll falls under
    ///         p_slash(r) (eq. 3.9) to `terms.beneficiary`.
    /// @return forfeitedMask Bit i is set when seat i lost its locked stake.
    function settleSeats(SeatSettlement[] calldata seats, SettlementTerms calldata terms)
        external
        returns (uint256 forfeitedMask);

    /// @notice Takes up to `amount` of an auditor's unlocked or unbonding stake for `beneficiary`.
    /// @dev Locked stake is left alone so that every open seat stays backed.
    /// @return taken What was taken: `amount`, or all that was within reach if that is less.
    function slash(address auditor, uint256 amount, address beneficiary, string calldata reason)
        external
        returns (uint256 taken);

    /// @notice Adds the stakers' share of a fee to the stream: it and the rest of the running
    ///         period are paid out evenly over the next `ParamsLib.STAKER_REWARD_PERIOD_SECONDS`,
    ///         pro rata to stake and to the time it is staked (issue L1: stake that arrives just
    ///         before a notification earns only for the seconds it stays).
    /// @dev Only the audit contract. Emits `StakerRewardNotified`. What was streamed while nobody
    ///      staked (carried) joins the new period.
    function notifyStakerReward() external payable;

    // ---- views ----

    function auditor(address account) external view returns (AuditorInfo memory);
    function reputationOf(address account) external view returns (uint256);
    function stakeOf(address account) external view returns (uint256);
    function encryptionKeyOf(address account) external view returns (bytes32);
    function totalStake() external view returns (uint256);
    function eligibleCount(uint8 tier) external view returns (uint256);
    /// @notice The stake of the auditors of `tier` who may be drawn now (the sortition tree's total).
    function eligibleStake(uint8 tier) external view returns (uint256);
    /// @notice The same at the end of past block `blockNumber`, as a draw of that block reads it.
    function eligibleStakeAt(uint8 tier, uint256 blockNumber) external view returns (uint256);
    /// @notice An auditor's draw weight at the end of past block `blockNumber`: its odds and voting
    ///         weight in a draw whose randomness block it is.
    function drawWeightAt(address account, uint256 blockNumber) external view returns (uint256);
    /// @notice The stakers' share `account` can claim now: accrued up to this block's time.
    function pendingStakerReward(address account) external view returns (uint256);
    /// @notice The stakers' reward stream now: rate, period end, what is still streaming or carried,
    ///         and the accumulator.
    function stakerRewardStream() external view returns (StakerRewardStream memory);
    /// @notice The accumulator now (wei per token of stake, times 1e18): a staker's reward between
    ///         two moments is its stake times the accumulator's growth, over 1e18.
    function rewardPerStakeWad() external view returns (uint256);
    function claimableTokens(address account) external view returns (uint256);
    function stakingToken() external view returns (address);
    function auditContract() external view returns (address);
}
