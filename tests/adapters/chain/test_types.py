"""`from_struct`: the one reader of the contracts' structs. Its input is what web3 decodes a struct
into (`decode_tuples=True`: a named tuple with the Solidity member names), built here by web3's own
factory; the round trip through a real chain runs in test_session_e2e.py and the other chain tests."""

from __future__ import annotations

from typing import Any

import pytest
from web3._utils.abi import recursive_dict_to_namedtuple

from trust.adapters.chain.types import AuditorInfo, SessionInfo, SessionStatus, StakerRewardStream, from_struct
from trust.errors import ChainError

_SESSION = {
    "provider": "0x" + "ab" * 20,
    "status": 3,
    "valid": True,
    "traceRoot": b"\x01" * 32,
    "feeWei": 10**18,
    "segmentCount": 4,
    "registeredCount": 4,
    "finalizedCount": 4,
    "randomnessBlock": 12,
    "totalWeight": 9,
    "passWeight": 7,
    "criticalFailed": 0,
    "contradictionsConfirmed": 1,
    "alignedSeats": 11,
    "segmentsPassed": 3,
    "segmentsFailed": 1,
    "segmentsUndetermined": 0,
}


def _struct(members: dict[str, Any]) -> Any:
    return recursive_dict_to_namedtuple(members)


def test_every_field_is_read_from_its_camel_case_member_and_typed() -> None:
    info = from_struct(SessionInfo, _struct(_SESSION), session_id=5)
    assert info == SessionInfo(
        session_id=5,
        provider=_SESSION["provider"],
        status=SessionStatus.FINALIZED,
        valid=True,
        trace_root=b"\x01" * 32,
        fee_wei=10**18,
        segment_count=4,
        registered_count=4,
        finalized_count=4,
        randomness_block=12,
        total_weight=9,
        pass_weight=7,
        critical_failed=0,
        contradictions_confirmed=1,
        aligned_seats=11,
        segments_passed=3,
        segments_failed=1,
        segments_undetermined=0,
    )
    assert type(info.status) is SessionStatus


def test_an_acronym_member_and_bytes_like_values() -> None:
    raw = _struct(
        {
            "registered": True,
            "tier": 2,
            "available": True,
            "credentialed": False,
            "stake": 5,
            "locked": 1,
            "unbonding": 0,
            "unbondingReadyAt": 0,
            "unbondingReachBlock": 0,
            "reputationWad": 10**18,
            "encryptionKey": bytearray(b"\x02" * 32),
            "metadataURI": "ipfs://meta",
        },
    )
    info = from_struct(AuditorInfo, raw, address="0x" + "cd" * 20)
    assert info.metadata_uri == "ipfs://meta" and info.encryption_key == b"\x02" * 32
    assert type(info.encryption_key) is bytes and info.reputation == 1.0


def test_a_struct_this_package_does_not_know_is_named_not_guessed() -> None:
    missing = {k: v for k, v in _SESSION.items() if k != "feeWei"}
    with pytest.raises(ChainError, match="SessionInfo.fee_wei: the contract's struct has no member 'feeWei'"):
        from_struct(SessionInfo, _struct(missing), session_id=1)
    with pytest.raises(ChainError, match=r"SessionInfo.status: the contract returned 9 as 'status', .*SessionStatus"):
        from_struct(SessionInfo, _struct(_SESSION | {"status": 9}), session_id=1)
    with pytest.raises(ChainError, match="StakerRewardStream.rate_wad: .*'rateWad'"):
        from_struct(StakerRewardStream, _struct({"rateWad": "x" * 3}))
