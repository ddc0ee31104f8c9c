// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ITRUSTAudit} from "./ITRUSTAudit.sol";

/// @title ISegmentKeys
/// @notice Key delivery and segment inclusion proofs for TRUST sessions (paper sections 3.4.2 and
///         3.4.3), next to `ITRUSTAudit` and reading only its views.
///         - Delivery: once a committee is seated, the session's provider publishes one envelope
///           CID per seat: the IPFS address of the segment keys wrapped to that seat's registered
///           X25519 key (the segment's own key and its immediate parents' keys, section 3.4.2).
///           The contract names the auditor of each seat from the committee on chain, so the
///           provider cannot address a key to anyone who is not seated.
///         - Inclusion: `verifySegment` checks an OpenZeppelin `MerkleProof` (sorted pairs) of a
///           segment leaf against the session's trace root.
///         - Reports: a seated auditor announces the CID of its audit report (its critique, sealed
///           to the provider's per-session reply key), once its vote is revealed, so the chain's
///           boolean votes come with their reasons for the provider.
interface ISegmentKeys {
    // ------------------------------------------------------------------ types

    /// @notice One leaf of a trace's Merkle tree: a segment stored on IPFS.
    /// @param index The segment's position in the trace (its leaf index, from 0).
    /// @param cid The binary CID of the segment's ciphertext on IPFS (version, multicodec and
    ///        multihash, without a multibase prefix: 36 bytes for a CIDv1 of sha2-256).
    /// @param ciphertextDigest SHA-256 of the segment's AES-256-GCM ciphertext.
    /// @param tier Auditor tier the segment is routed to (1 computational, 2 LLM, 3 human).
    /// @param weight w_t(s) of eq. 3.5.
    /// @param critical On the critical path.
    /// @dev The leaf hash is `keccak256(bytes.concat(keccak256(abi.encode(index, cid,
    ///      ciphertextDigest, tier, weight, critical))))`: the fields encoded one by one (not as a
    ///      tuple) and hashed twice, the layout of OpenZeppelin's StandardMerkleTree, so that a leaf
    ///      (65+ bytes before hashing) can never be read as an inner node (64 bytes).
    struct SegmentLeaf {
        uint256 index;
        bytes cid;
        bytes32 ciphertextDigest;
        uint8 tier;
        uint32 weight;
        bool critical;
    }

    /// @notice One audit report to announce: the seat (segment, round, index in that round's
    ///         committee) and the binary CID of the sealed report on IPFS (as `SegmentLeaf.cid`).
    struct ReportRef {
        uint256 segmentId;
        uint8 round;
        uint8 seatIndex;
        bytes reportCid;
    }

    /// @notice The key envelopes of one drawn round of one segment, for `publishEnvelopesBatch`:
    ///         the arguments of one `publishEnvelopes` call after its session.
    /// @param segmentId The segment.
    /// @param round The segment's current round.
    /// @param envelopeCids One binary CID per seat, in committee order (as `SegmentLeaf.cid`).
    struct EnvelopeSet {
        uint256 segmentId;
        uint8 round;
        bytes[] envelopeCids;
    }

    // ------------------------------------------------------------------ events

    /// @notice The provider published the key envelope of one seat of a drawn round. A later event
    ///         for the same seat (session, segment, round, seat) supersedes an earlier one.
    /// @param auditor The seat's auditor, read from the committee on chain (indexed: a worker
    ///        filters its own envelopes).
    /// @param envelopeCid The envelope's binary CID (as `SegmentLeaf.cid`).
    event KeyEnvelopePublished(
        uint256 indexed sessionId,
        uint256 indexed segmentId,
        uint8 round,
        uint256 seatIndex,
        address indexed auditor,
        bytes envelopeCid
    );

    /// @notice A seated auditor announced its audit report for a revealed seat. A later event for
    ///         the same seat (session, segment, round, seat) supersedes an earlier one.
    /// @param auditor The seat's auditor, the caller (indexed, as `sessionId` and `segmentId`: the
    ///        provider filters its session's reports).
    /// @param reportCid The report's binary CID.
    event ReportPublished(
        uint256 indexed sessionId,
        uint256 indexed segmentId,
        uint8 round,
        uint8 seatIndex,
        address indexed auditor,
        bytes reportCid
    );

    // ------------------------------------------------------------------ errors

    error SegmentKeysZeroAddress();
    error SegmentKeysUnknownSession(uint256 sessionId);
    error SegmentKeysUnknownSegment(uint256 sessionId, uint256 segmentId);
    error SegmentKeysNotProvider(uint256 sessionId, address caller, address provider);
    /// @notice `round` is not the segment's current round (`currentRound`): an earlier round is over,
    ///         a later one is not drawn yet.
    error SegmentKeysWrongRound(uint256 sessionId, uint256 segmentId, uint8 round, uint8 currentRound);
    /// @notice The segment is not voting: its committee is not drawn yet (AwaitingDraw) or its
    ///         verdict is final.
    error SegmentKeysNotVoting(uint256 sessionId, uint256 segmentId, ITRUSTAudit.SegmentStatus status);
    /// @notice The set holds `count` envelopes, not one per seat of the round (`seatCount`: a member
    ///         drawn several times holds one seat and takes one envelope).
    error SegmentKeysWrongEnvelopeCount(uint256 sessionId, uint256 segmentId, uint256 count, uint256 seatCount);
    error SegmentKeysEmptyEnvelope(uint256 sessionId, uint256 segmentId, uint256 seatIndex);
    error SegmentKeysEnvelopeTooLong(
        uint256 sessionId, uint256 segmentId, uint256 seatIndex, uint256 length, uint256 maximum
    );
    /// @notice `publishEnvelopesBatch` was called with no set.
    error SegmentKeysNoEnvelopeSets(uint256 sessionId);
    /// @notice A `publishEnvelopesBatch` call carries more envelopes, over all of its sets, than
    ///         `MAX_BATCH_ENVELOPES`: split it into several calls.
    error SegmentKeysBatchTooLarge(uint256 sessionId, uint256 envelopeCount, uint256 maximum);
    /// @notice `publishReports` was called with no report.
    error SegmentKeysNoReports(uint256 sessionId);
    /// @notice The seat is not the caller's: `holder` is the seat's auditor (zero when there is no
    ///         such seat: an unknown session or segment, a round not drawn, an index past the
    ///         committee).
    error SegmentKeysNotSeatHolder(
        uint256 sessionId, uint256 segmentId, uint8 round, uint8 seatIndex, address caller, address holder
    );
    /// @notice The seat has not revealed its vote (it may still be in the commit window).
    error SegmentKeysSeatNotRevealed(uint256 sessionId, uint256 segmentId, uint8 round, uint8 seatIndex);
    error SegmentKeysEmptyReport(uint256 sessionId, uint256 segmentId, uint8 round, uint8 seatIndex);
    error SegmentKeysReportTooLong(
        uint256 sessionId, uint256 segmentId, uint8 round, uint8 seatIndex, uint256 length, uint256 maximum
    );

    // ------------------------------------------------------------------ delivery

    /// @notice Publishes the key envelope CID of every seat of a drawn round of a segment.
    /// @param sessionId The session.
    /// @param segmentId The segment.
    /// @param round The segment's current round (0 for the first committee, then one per escalation).
    /// @param envelopeCids One binary CID per seat, in committee order (`ITRUSTAudit.committee`).
    /// @dev The session's provider only, only while the segment is Voting in `round` (commit or
    ///      reveal window, or finalizable but not yet finalized). May be called again in the same
    ///      round to correct envelopes: every call publishes a full set, and per seat the latest
    ///      event wins. Each CID is 1 to `MAX_ENVELOPE_CID_BYTES` bytes. Stores nothing.
    ///      O(committee size). Emits `KeyEnvelopePublished` per seat.
    function publishEnvelopes(uint256 sessionId, uint256 segmentId, uint8 round, bytes[] calldata envelopeCids) external;

    /// @notice Publishes the key envelopes of several drawn rounds of the session at once: per set,
    ///         exactly what `publishEnvelopes(sessionId, set.segmentId, set.round,
    ///         set.envelopeCids)` would, in one transaction.
    /// @param sessionId The session.
    /// @param sets The rounds and their envelope CIDs, in any order; a segment may appear more than
    ///        once (per seat, the later set wins, as with two `publishEnvelopes` calls).
    /// @dev The session's provider only. Rejects an empty batch (`SegmentKeysNoEnvelopeSets`) and
    ///      one of more than `MAX_BATCH_ENVELOPES` envelopes over all sets
    ///      (`SegmentKeysBatchTooLarge`) before reading the session, which it reads once; then checks
    ///      each set as `publishEnvelopes` does, with the same errors, and emits its events in
    ///      order. All or nothing. Stores nothing. O(total envelopes): per set one `segment` and one
    ///      `committee` read of `TRUSTAudit`, per seat one `KeyEnvelopePublished`.
    function publishEnvelopesBatch(uint256 sessionId, EnvelopeSet[] calldata sets) external;

    // ------------------------------------------------------------------ reports

    /// @notice Announces the caller's audit reports: per ref, the CID of the report of one of its
    ///         seats in `sessionId`.
    /// @param refs The seats and report CIDs, in any order, of any segments and rounds.
    /// @dev Each seat must be held by the caller (`ITRUSTAudit.seat`) and revealed: a report tells
    ///      the vote and its reasons, so it may only appear once the vote is public, never while the
    ///      commit window is open. Any time after the reveal is fine, also once the segment or the
    ///      session is final. Each CID is 1 to `MAX_ENVELOPE_CID_BYTES` bytes. Republishing a seat's
    ///      report is allowed; per seat the latest event wins. All or nothing. Stores nothing.
    ///      O(refs): one `TRUSTAudit.seat` read each. Emits `ReportPublished` per ref.
    function publishReports(uint256 sessionId, ReportRef[] calldata refs) external;

    // ------------------------------------------------------------------ inclusion proofs

    /// @notice Whether `leaf` is in the Merkle tree whose root is the session's trace root.
    /// @param proof The sibling hashes from the leaf up to the root (OpenZeppelin `MerkleProof`,
    ///        sorted pairs).
    /// @return True when the proof leads from `leafHash(leaf)` to the trace root.
    /// @dev Reverts with `SegmentKeysUnknownSession` for a session that does not exist. Only the
    ///      tree is checked: that a leaf's tier, weight and flags match the registered segment of
    ///      the same index is for the caller to compare (`ITRUSTAudit.segment`). O(proof length).
    function verifySegment(uint256 sessionId, SegmentLeaf calldata leaf, bytes32[] calldata proof)
        external
        view
        returns (bool);

    /// @notice The Merkle leaf hash of a segment (see `SegmentLeaf`).
    function leafHash(SegmentLeaf calldata leaf) external pure returns (bytes32);

    // ------------------------------------------------------------------ views

    /// @notice The audit contract whose sessions this contract serves.
    function audit() external view returns (ITRUSTAudit);
}
