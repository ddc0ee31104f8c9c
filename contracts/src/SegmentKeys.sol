// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import {OwnableUpgradeable} from "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

import {ISegmentKeys} from "./interfaces/ISegmentKeys.sol";
import {ITRUSTAudit} from "./interfaces/ITRUSTAudit.sol";

/// @title SegmentKeys
/// @notice Key envelopes for seated auditors, segment inclusion proofs (paper sections 3.4.2 and
///         3.4.3) and the auditors' report announcements, kept out of `TRUSTAudit`, which is close
///         to the EIP-170 code size limit.
/// @dev Deployed behind an ERC-1967 proxy (UUPS); governance (a TimelockController) owns it, as it
///      owns the other protocol contracts, so a fix keeps the one address that workers watch.
///      Every check reads `TRUSTAudit`'s views; the only state is the audit contract's address.
///      Envelopes and reports live in events, not storage: a seated auditor finds its own
///      envelopes by filtering `KeyEnvelopePublished` on its address, a provider its session's
///      reports by filtering `ReportPublished` on the session, and nothing on chain ever needs to
///      read them back.
contract SegmentKeys is ISegmentKeys, Initializable, UUPSUpgradeable, OwnableUpgradeable {
    /// @notice The longest envelope or report CID accepted, in bytes. A CIDv1 of a SHA-256
    ///         multihash is 36 bytes in binary and 59 characters in base32; 128 leaves room for
    ///         longer hashes and refuses a caller that passes an envelope or a report itself
    ///         instead of its address.
    uint256 public constant MAX_ENVELOPE_CID_BYTES = 128;

    /// @notice The most envelopes one `publishEnvelopesBatch` call takes, over all of its sets.
    /// @dev Bounds the call's size and gas, which grow with envelopes and sets (a set has at least
    ///      one envelope, so this bounds sets too; a count of sets alone would bound nothing, as a
    ///      committee has up to 127 seats). The dearest batch at the bound, sets of one seat for
    ///      distinct segments with `MAX_ENVELOPE_CID_BYTES`-byte CIDs (352 calldata bytes a set),
    ///      has about 90 KB of calldata, under the 128 KiB that go-ethereum's transaction pool
    ///      accepts, and uses well under EIP-7825's cap of 2^24 gas per transaction (the forge test
    ///      `test_publishEnvelopesBatch_worstCaseFitsTheTransactionGasCap` measures both).
    uint256 public constant MAX_BATCH_ENVELOPES = 256;

    ITRUSTAudit private _audit;

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    /// @notice Sets the owner (governance) and the audit contract whose sessions this one serves.
    function initialize(address owner_, ITRUSTAudit audit_) external initializer {
        if (address(audit_) == address(0)) revert SegmentKeysZeroAddress();
        __Ownable_init(owner_);
        _audit = audit_;
    }

    // ------------------------------------------------------------------ delivery

    /// @inheritdoc ISegmentKeys
    function publishEnvelopes(uint256 sessionId, uint256 segmentId, uint8 round, bytes[] calldata envelopeCids)
        external
    {
        ITRUSTAudit audit_ = _audit;
        _checkProvider(audit_, sessionId);
        _publishSet(audit_, sessionId, segmentId, round, envelopeCids);
    }

    /// @inheritdoc ISegmentKeys
    function publishEnvelopesBatch(uint256 sessionId, EnvelopeSet[] calldata sets) external {
        uint256 setCount = sets.length;
        if (setCount == 0) revert SegmentKeysNoEnvelopeSets(sessionId);
        uint256 envelopeCount = 0;
        for (uint256 i; i < setCount; ++i) {
            envelopeCount += sets[i].envelopeCids.length;
        }
        if (envelopeCount > MAX_BATCH_ENVELOPES) {
            revert SegmentKeysBatchTooLarge(sessionId, envelopeCount, MAX_BATCH_ENVELOPES);
        }
        ITRUSTAudit audit_ = _audit;
        _checkProvider(audit_, sessionId);
        for (uint256 i; i < setCount; ++i) {
            EnvelopeSet calldata set = sets[i];
            _publishSet(audit_, sessionId, set.segmentId, set.round, set.envelopeCids);
        }
    }

    // ------------------------------------------------------------------ reports

    /// @inheritdoc ISegmentKeys
    function publishReports(uint256 sessionId, ReportRef[] calldata refs) external {
        if (refs.length == 0) revert SegmentKeysNoReports(sessionId);
        ITRUSTAudit audit_ = _audit;
        for (uint256 i; i < refs.length; ++i) {
            ReportRef calldata ref = refs[i];
            // The seat view answers an empty seat (auditor zero) for anything that is not a seat.
            ITRUSTAudit.SeatView memory st = audit_.seat(sessionId, ref.segmentId, ref.round, ref.seatIndex);
            if (st.auditor != msg.sender) {
                revert SegmentKeysNotSeatHolder(
                    sessionId, ref.segmentId, ref.round, ref.seatIndex, msg.sender, st.auditor
                );
            }
            // Revealed: the vote is public, so the report cannot tell it before the commit window closed.
            if (!st.revealed) revert SegmentKeysSeatNotRevealed(sessionId, ref.segmentId, ref.round, ref.seatIndex);
            uint256 length = ref.reportCid.length;
            if (length == 0) revert SegmentKeysEmptyReport(sessionId, ref.segmentId, ref.round, ref.seatIndex);
            if (length > MAX_ENVELOPE_CID_BYTES) {
                revert SegmentKeysReportTooLong(
                    sessionId, ref.segmentId, ref.round, ref.seatIndex, length, MAX_ENVELOPE_CID_BYTES
                );
            }
            emit ReportPublished(sessionId, ref.segmentId, ref.round, ref.seatIndex, msg.sender, ref.reportCid);
        }
    }

    // ------------------------------------------------------------------ inclusion proofs

    /// @inheritdoc ISegmentKeys
    function verifySegment(uint256 sessionId, SegmentLeaf calldata leaf, bytes32[] calldata proof)
        external
        view
        returns (bool)
    {
        ITRUSTAudit.SessionView memory s = _audit.session(sessionId);
        if (s.status == ITRUSTAudit.SessionStatus.None) revert SegmentKeysUnknownSession(sessionId);
        return MerkleProof.verifyCalldata(proof, s.traceRoot, _leafHash(leaf));
    }

    /// @inheritdoc ISegmentKeys
    function leafHash(SegmentLeaf calldata leaf) external pure returns (bytes32) {
        return _leafHash(leaf);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc ISegmentKeys
    function audit() external view returns (ITRUSTAudit) {
        return _audit;
    }

    // ------------------------------------------------------------------ internals

    /// @dev Reverts unless `sessionId` exists and the caller is its provider: the session-wide
    ///      checks of a publication, made once per call however many sets it carries.
    function _checkProvider(ITRUSTAudit audit_, uint256 sessionId) private view {
        ITRUSTAudit.SessionView memory s = audit_.session(sessionId);
        if (s.status == ITRUSTAudit.SessionStatus.None) revert SegmentKeysUnknownSession(sessionId);
        if (msg.sender != s.provider) revert SegmentKeysNotProvider(sessionId, msg.sender, s.provider);
    }

    /// @dev Checks one set of envelopes against its segment's round and committee and emits one
    ///      `KeyEnvelopePublished` per seat. The caller has made the session-wide checks
    ///      (`_checkProvider`).
    function _publishSet(
        ITRUSTAudit audit_,
        uint256 sessionId,
        uint256 segmentId,
        uint8 round,
        bytes[] calldata envelopeCids
    ) private {
        ITRUSTAudit.SegmentView memory g = audit_.segment(sessionId, segmentId);
        if (g.status == ITRUSTAudit.SegmentStatus.None) revert SegmentKeysUnknownSegment(sessionId, segmentId);
        if (round != g.round) revert SegmentKeysWrongRound(sessionId, segmentId, round, g.round);
        if (g.status != ITRUSTAudit.SegmentStatus.Voting) revert SegmentKeysNotVoting(sessionId, segmentId, g.status);
        // Voting implies the round's committee is seated: `committee` returns all of its members.
        address[] memory members = audit_.committee(sessionId, segmentId);
        if (envelopeCids.length != members.length) {
            revert SegmentKeysWrongEnvelopeCount(sessionId, segmentId, envelopeCids.length, members.length);
        }
        for (uint256 i; i < members.length; ++i) {
            uint256 length = envelopeCids[i].length;
            if (length == 0) revert SegmentKeysEmptyEnvelope(sessionId, segmentId, i);
            if (length > MAX_ENVELOPE_CID_BYTES) {
                revert SegmentKeysEnvelopeTooLong(sessionId, segmentId, i, length, MAX_ENVELOPE_CID_BYTES);
            }
            emit KeyEnvelopePublished(sessionId, segmentId, round, i, members[i], envelopeCids[i]);
        }
        // Delivered in time or not, on chain (issue M3): the seats' `claimUndelivered` is checked
        // against this record.
        audit_.recordDelivery(sessionId, segmentId, round);
    }

    function _leafHash(SegmentLeaf calldata leaf) private pure returns (bytes32) {
        return keccak256(
            bytes.concat(
                keccak256(
                    abi.encode(leaf.index, leaf.cid, leaf.ciphertextDigest, leaf.tier, leaf.weight, leaf.critical)
                )
            )
        );
    }

    function _authorizeUpgrade(address) internal override onlyOwner {}
}
