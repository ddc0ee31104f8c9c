"""The provider's record of each session it opened, on disk, so that nothing is lost on a crash.

A session outlives the process that opened it: an escalated segment needs its node's key delivered to
the new committee, and the verdict is read later. Everything the provider alone knows is written here
before the transaction that depends on it is sent: the graph, the trace id, every node's key and where
its segment lies, the profiles registered on chain. The record is written with `os.replace` from a
temporary file (a crash leaves the old record or the new one, never half of one) and with mode 0600:
it holds the segment keys, i.e. the plaintext of the whole trace.

Layout: `<home>/provider/chain-<chain id>/<trace root hex>.json`; the session id is filled in once
`createSession` is mined. A record whose session id is still null after a crash names a trace whose
session may or may not exist: `TrustClient.resume` looks the root up on chain.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.serialization import dumps, loads
from trust.core.privacy import merkle
from trust.core.privacy.envelopes import SegmentKey
from trust.core.privacy.segments import loads_turn, turn_to_dict
from trust.errors import ConfigError
from trust.services.delivery import StoredTrace

__all__ = ["JOURNAL_FORMAT", "Journal", "SessionRecord", "graph_from_json", "graph_to_json"]

JOURNAL_FORMAT = "trust.provider-session"
JOURNAL_VERSION = 1


def graph_to_json(graph: Hdag | Cig) -> dict[str, Any]:
    """An HDAG as its `trust.hdag` document; a CIG as its turns (the segment JSON) and edges."""
    if isinstance(graph, Hdag):
        return {"kind": "hdag", "hdag": json.loads(dumps(graph))}
    return {
        "kind": "cig",
        "turns": [turn_to_dict(turn) for turn in graph.turns()],
        "edges": [[edge.source, edge.target, str(edge.origin)] for edge in graph.edges()],
    }


def graph_from_json(data: dict[str, Any]) -> Hdag | Cig:
    if data.get("kind") == "hdag":
        return loads(json.dumps(data["hdag"]))
    cig = Cig()
    for turn in data["turns"]:
        cig.add_turn(_turn(turn))
    for source, target, origin in data["edges"]:
        cig.add_edge(source, target, EdgeOrigin(origin))
    return cig


def _turn(data: dict[str, Any]) -> AgentTurn:
    return loads_turn(json.dumps(data))


@dataclass
class SessionRecord:
    """One session as the provider knows it."""

    chain_id: int
    audit_contract: str
    kind: str
    graph: Hdag | Cig = field(repr=False)
    stored: StoredTrace = field(repr=False)
    session_id: int | None = None
    fee_wei: int = 0
    created_tx: str | None = None
    started_at: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def root_hex(self) -> str:
        return self.stored.root.hex()

    def to_json(self) -> dict[str, Any]:
        return {
            "format": JOURNAL_FORMAT,
            "version": JOURNAL_VERSION,
            "chain_id": self.chain_id,
            "audit_contract": self.audit_contract,
            "kind": self.kind,
            "session_id": self.session_id,
            "fee_wei": str(self.fee_wei),
            "created_tx": self.created_tx,
            "started_at": self.started_at,
            "config": self.config,
            "trace_id": self.stored.trace_id.hex(),
            "segments": [key.entry() for key in self.stored.segments],
            "context": [key.entry() for key in self.stored.context],
            "leaves": [[leaf.tier, leaf.weight, leaf.critical] for leaf in self.stored.leaves],
            "contradictions": sorted(self.stored.contradictions),
            "graph": graph_to_json(self.graph),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionRecord:
        if data.get("format") != JOURNAL_FORMAT or data.get("version") != JOURNAL_VERSION:
            raise ConfigError(f"not a {JOURNAL_FORMAT} v{JOURNAL_VERSION} record")
        keys = tuple(SegmentKey.from_entry(e, allow_proof=False) for e in data["segments"])
        context = tuple(SegmentKey.from_entry(e) for e in data.get("context", []))
        leaves = tuple(
            merkle.SegmentLeaf(key.segment_index, merkle.cid_bytes(key.cid), key.ciphertext_digest, tier, weight, crit)
            for key, (tier, weight, crit) in zip(keys, data["leaves"], strict=True)
        )
        flagged = frozenset(int(i) for i in data.get("contradictions", []))
        stored = StoredTrace.build(bytes.fromhex(data["trace_id"]), keys, leaves, context, flagged)
        return cls(
            chain_id=data["chain_id"],
            audit_contract=data["audit_contract"],
            kind=data["kind"],
            graph=graph_from_json(data["graph"]),
            stored=stored,
            session_id=data["session_id"],
            fee_wei=int(data["fee_wei"]),
            created_tx=data["created_tx"],
            started_at=float(data["started_at"]),
            config=data.get("config", {}),
        )


class Journal:
    """The session records of one provider on one chain, under `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, record: SessionRecord) -> Path:
        return self.directory / f"chain-{record.chain_id}" / f"{record.root_hex}.json"

    def save(self, record: SessionRecord) -> Path:
        path = self.path(record)
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            text = json.dumps(record.to_json(), indent=1, sort_keys=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".session-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                    out.flush()
                    os.fsync(out.fileno())
                os.chmod(temporary, 0o600)
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise ConfigError(f"cannot write the session record {path}: {exc.strerror or exc}") from exc
        return path

    def discard(self, record: SessionRecord) -> None:
        self.path(record).unlink(missing_ok=True)

    def _records(self, chain_id: int) -> tuple[list[tuple[Path, dict[str, Any]]], list[str]]:
        """Every record of `chain_id` as JSON, and a note on each file that could not be read (a
        record cut short by a full disk, say): those are named in errors, never skipped silently."""
        folder = self.directory / f"chain-{chain_id}"
        records: list[tuple[Path, dict[str, Any]]] = []
        unreadable: list[str] = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except OSError as exc:
                unreadable.append(f"{path} ({exc.strerror or exc})")
                continue
            except json.JSONDecodeError as exc:
                unreadable.append(f"{path} (not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno})")
                continue
            if not isinstance(data, dict):
                unreadable.append(f"{path} (not a session record)")
                continue
            records.append((path, data))
        return records, unreadable

    def find(self, chain_id: int, session_id: int) -> SessionRecord:
        """The record of `session_id` (ConfigError when this provider has none)."""
        folder = self.directory / f"chain-{chain_id}"
        records, unreadable = self._records(chain_id)
        for path, data in records:
            if data.get("session_id") == session_id:
                try:
                    return SessionRecord.from_json(data)
                except (ConfigError, KeyError, TypeError, ValueError) as exc:
                    raise ConfigError(f"the record of session {session_id} ({path}) is unreadable: {exc}") from None
        damaged = f"; these records could not be read: {', '.join(unreadable)}" if unreadable else ""
        raise ConfigError(
            f"no record of session {session_id} on chain {chain_id} under {folder}: only the provider that opened "
            f"a session (with the same TRUST home) can resume it{damaged}"
        )

    def pending(self, chain_id: int) -> list[SessionRecord]:
        """Records whose `createSession` was never confirmed (the connection or the process was lost
        between writing the record and reading the session id back)."""
        records, _unreadable = self._records(chain_id)
        found = []
        for _path, data in records:
            if data.get("session_id") is None:
                try:
                    found.append(SessionRecord.from_json(data))
                except (ConfigError, KeyError, TypeError, ValueError):
                    continue  # `find` names unreadable records when the one asked for is missing
        return found
