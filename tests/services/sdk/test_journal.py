"""Session records (`trust.services.sdk.journal`), the reply key (`trust.services.sdk.keys`) and the Table-3 arithmetic
(`trust.services.sdk.timings`): pure, on real sealed segments and real wallet signatures."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from eth_account import Account

from tests.core.graphs.cig_strategies import APPLES_LOG
from trust.core.cid import unixfs_cid
from trust.core.graphs.agent_log import build_cig, parse_log
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.serialization import dumps
from trust.core.privacy import merkle
from trust.core.privacy.access import segment_keys
from trust.core.privacy.segments import dumps_turn, new_trace_id, seal_graph
from trust.errors import ConfigError
from trust.lab.demo.clinical import flawed_trace
from trust.services.delivery import StoredTrace, default_profiles
from trust.services.sdk.journal import Journal, SessionRecord
from trust.services.sdk.keys import reply_key
from trust.services.sdk.timings import RoundTrack, phase_timings

AUDIT = "0x5FbDB2315678afecb367f032d93F642f64180aa3"


def stored(graph: Hdag | Cig) -> StoredTrace:
    trace_id = new_trace_id(os.urandom)
    sealed = seal_graph(graph, trace_id, os.urandom)
    keys = tuple(segment_keys(sealed, [str(unixfs_cid(s.blob)) for s in sealed]))
    profiles = default_profiles(graph)
    leaves = tuple(
        merkle.SegmentLeaf(
            k.segment_index,
            merkle.cid_bytes(k.cid),
            k.ciphertext_digest,
            profiles[k.node_id].tier,
            1,
            profiles[k.node_id].critical,
        )
        for k in keys
    )
    return StoredTrace(trace_id, keys, leaves, merkle.build(leaves))


@pytest.mark.parametrize("graph", [flawed_trace(), build_cig(parse_log(APPLES_LOG))], ids=["hdag", "cig"])
def test_a_record_round_trips_with_its_keys_and_graph(tmp_path: Path, graph: Hdag | Cig) -> None:
    journal = Journal(tmp_path / "provider")
    record = SessionRecord(31337, AUDIT, "trace", graph, stored(graph), fee_wei=10**15, started_at=1.5)
    path = journal.save(record)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert journal.pending(31337)[0].root_hex == record.root_hex
    record.session_id, record.created_tx = 7, "0x" + "ab" * 32
    journal.save(record)
    back = journal.find(31337, 7)
    assert back.stored.root == record.stored.root and back.stored.segments == record.stored.segments
    assert back.fee_wei == 10**15 and back.created_tx == record.created_tx and journal.pending(31337) == []
    if isinstance(graph, Hdag):
        assert isinstance(back.graph, Hdag) and dumps(back.graph) == dumps(graph)
    else:
        assert isinstance(back.graph, Cig)
        assert [dumps_turn(t) for t in back.graph.turns()] == [dumps_turn(t) for t in graph.turns()]
        assert [(e.source, e.target, e.origin) for e in back.graph.edges()] == [
            (e.source, e.target, e.origin) for e in graph.edges()
        ]
    journal.discard(back)
    with pytest.raises(ConfigError, match="no record of session 7 on chain 31337"):
        journal.find(31337, 7)


def test_the_reply_key_is_the_wallets_own_per_trace() -> None:
    wallet, other = Account.create(), Account.create()
    root, another_root = b"\x11" * 32, b"\x22" * 32

    def public(account: object, trace_root: bytes) -> bytes:
        key = reply_key(account, chain_id=31337, audit_contract=AUDIT, trace_root=trace_root)  # type: ignore[arg-type]
        return key.public_key().public_bytes_raw()

    assert public(wallet, root) == public(wallet, root)
    assert len({public(wallet, root), public(wallet, another_root), public(other, root)}) == 3


def test_table_3_separates_evaluation_from_protocol_time() -> None:
    class Report:
        def __init__(self, tier: int, started: float, finished: float) -> None:
            self.tier, self.started_at, self.finished_at = tier, started, finished

    marks = {"start": 0.0, "decomposed": 1.0, "uploaded": 2.0, "create_sent": 2.0, "verdict": 20.0}
    rounds = [
        RoundTrack(0, 0, 1, ("a",), 2.0, 3.0, delivered_at=4.0, revealed_at=10.0, final_at=11.0),
        RoundTrack(1, 0, 2, ("b",), 2.0, 3.5, delivered_at=4.0, revealed_at=15.0, final_at=16.0),
    ]
    reports = [Report(1, 4.5, 5.0), Report(2, 5.0, 12.0), Report(2, 6.0, 8.0)]
    timings = phase_timings(marks, rounds, reports)
    seconds = timings.seconds
    assert seconds["decomposition"] == 1.0 and seconds["assignment"] == 1.5
    assert seconds["distribution"] == 1.0 + 1.0  # the uploads, then keys from 3.0 to 4.0 (overlapping)
    assert seconds["tier1_verification"] == 0.5 and seconds["tier2_verification"] == 7.0
    assert seconds["tier3_verification"] is None
    assert seconds["vote_aggregation"] == pytest.approx(11.0 - 7.5)  # 4..15 minus evaluations 4.5..12
    assert seconds["finalization"] == 5.0
    assert timings.total_s == 20.0 and timings.overhead_s == pytest.approx(20.0 - 7.5)


def test_a_contradiction_flag_survives_the_journal(tmp_path: Path) -> None:
    from tests.core.graphs.test_units import corrected
    from trust.services.delivery import seal_units

    graph = corrected()
    trace_id = new_trace_id(os.urandom)
    sealed = seal_units(graph, trace_id, os.urandom)
    keys = segment_keys(sealed, [str(unixfs_cid(s.blob)) for s in sealed])
    trace = StoredTrace.from_keys(trace_id, keys, default_profiles(graph))
    assert [spec.contradiction for spec in trace.specs()] == [False, False, False, False, True]
    journal = Journal(tmp_path / "provider")
    record = SessionRecord(31337, AUDIT, "trace", graph, trace, session_id=9)
    journal.save(record)
    assert journal.find(31337, 9).stored.specs() == trace.specs()
