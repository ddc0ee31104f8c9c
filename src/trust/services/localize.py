"""Audit an agent log end to end: file -> parsed log -> CIG -> dual-layer audit -> Algorithm 1.

Orchestration for `trust graph localize`: reads the file (bounded in size, clear errors for
missing files and bad JSON), detects its format (`trust.agent-log`, Who&When or another tool's log:
`trust.core.graphs.logs`), builds the CIG,
has the network's auditors judge every turn and every message (`trust.auditors.graph.audit_cig`,
with the auditors `trust.auditors.tiers.offline_auditors` builds from the settings as a worker
builds its own: tier 1 always, tier 2 when `Settings().auditor_llm` names an endpoint), localizes
faults with the thresholds of `Settings().audit`, and flags stationary agents with the similarity
that `Settings().audit.similarity` names (`build_similarity`). The result renders to the JSON the
CLI prints, or to a table.

Similarity: "minilm" (the default) is the all-MiniLM-L6-v2 sentence-embedding adapter of
`trust.adapters.llm.embeddings`, loaded once per command (a few seconds, mostly importing torch) and passed to
every audit; when its optional extra is not installed the audit falls back to the core's lexical
similarity and says so on stderr, rather than failing a command whose main output (the fault
localization) does not depend on it. "lexical" uses the core fallback and loads nothing. The JSON
says which one ran (`similarity`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trust.auditors.base import Auditor
from trust.auditors.graph import audit_cig
from trust.auditors.tiers import offline_auditors
from trust.core.graphs.agent_log import AgentLog, LogLimits, OverlapRule, build_cig, parse_log
from trust.core.graphs.audit import CigAudit
from trust.core.graphs.cig import Cig
from trust.core.graphs.localize import Localization, localize_audit
from trust.core.graphs.stationarity import LexicalSimilarity, Similarity, StationaryPair, detect_stationarity
from trust.errors import ConfigError, GraphError
from trust.settings import AuditSettings, Settings

__all__ = [
    "MAX_LOG_BYTES",
    "LogAudit",
    "audit_agent_log",
    "build_similarity",
    "localize_log_file",
    "read_agent_log",
    "render",
    "similarity_name",
]

MAX_LOG_BYTES = 256 * 1024 * 1024


def read_agent_log(path: Path, limits: LogLimits | None = None, *, max_bytes: int = MAX_LOG_BYTES) -> AgentLog:
    """Reads and parses a log file of either format; `GraphError` naming the file on any problem."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise GraphError(f"{path}: no such file") from None
    except OSError as exc:
        raise GraphError(f"{path}: cannot read ({exc.strerror})") from None
    if size > max_bytes:
        raise GraphError(f"{path}: {size:,} bytes, above the limit of {max_bytes:,}; audit the log in parts")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise GraphError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise GraphError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise GraphError(f"{path}: JSON nested too deeply") from None
    try:
        return parse_log(data, limits)
    except GraphError as exc:
        raise GraphError(f"{path}: {exc}") from None


@dataclass(frozen=True, slots=True)
class LogAudit:
    """Everything one audit produced; `to_json` is the CLI's JSON."""

    log: AgentLog
    cig: Cig
    audit: CigAudit
    localization: Localization
    stationary: tuple[StationaryPair, ...]
    settings: AuditSettings
    auditors: tuple[str, ...] = ()
    similarity: str = "lexical"

    def to_json(self) -> dict[str, Any]:
        """`nodes` and `root_causes` hold exactly the keys `trust graph localize --json` promises
        ({id, agent, step, status} and {agent, step}); everything else is in extra top-level keys:
        `turns` (per node id: role, score, critique, parents), `root_cause_details` (aligned with
        `root_causes`: id, status, reason, parents), `failed_edges`, `stationary`, `label`, ..."""
        statuses = self.localization.statuses
        nodes = [
            {"id": turn.id, "agent": turn.agent, "step": turn.step, "status": statuses[turn.id].value}
            for turn in self.cig.turns()
        ]
        turns = {
            turn.id: {
                "role": turn.role.value,
                "score": self.audit.nodes[turn.id].score,
                "critique": list(self.audit.nodes[turn.id].critique),
                "parents": self.cig.parents(turn.id),
            }
            for turn in self.cig.turns()
        }
        causes = self.localization.root_causes
        failed_edges = [
            {"source": key[0], "target": key[1], "protocol": edge.score.protocol, "fidelity": edge.score.fidelity}
            | {"findings": list(edge.findings)}
            for key, edge in self.audit.edges.items()
            if edge.score.fails(self.settings.tau_edge)
        ]
        result: dict[str, Any] = {
            "nodes": nodes,
            "root_causes": [{"agent": cause.agent, "step": cause.step} for cause in causes],
            "root_cause_details": [
                {
                    "id": cause.node_id,
                    "status": cause.status.value,
                    "reason": cause.reason.value,
                    "parents": list(cause.parents),
                }
                for cause in causes
            ],
            "turns": turns,
            "format": self.log.source,
            "auditors": list(self.auditors),
            "similarity": self.similarity,
            "thresholds": {"tau_node": self.settings.tau_node, "tau_edge": self.settings.tau_edge},
            "failed_edges": failed_edges,
            "stationary": [
                {"agent": pair.agent, "earlier": pair.earlier, "later": pair.later, "similarity": pair.similarity}
                for pair in self.stationary
            ],
        }
        if self.log.label is not None:
            result["label"] = {"agent": self.log.label.agent, "step": self.log.label.step}
        return result


async def audit_agent_log(
    log: AgentLog,
    settings: AuditSettings,
    auditors: Sequence[Auditor],
    *,
    similarity: Similarity | None = None,
    rule: OverlapRule | None = None,
    cig: Cig | None = None,
) -> LogAudit:
    """Builds the CIG (unless given), has `auditors` judge every turn and message, localizes faults
    and looks for stationary agents (lexical similarity unless one is given)."""
    if not auditors:
        raise ConfigError("nothing audits the log: pass at least one auditor (trust.auditors.tiers.offline_auditors)")
    cig = cig if cig is not None else build_cig(log, rule)
    similarity = similarity or LexicalSimilarity()
    audit = await audit_cig(cig, auditors)
    localization = localize_audit(cig, audit, tau_node=settings.tau_node, tau_edge=settings.tau_edge)
    stationary = detect_stationarity(cig, similarity, tau_stat=settings.tau_stat)
    names = tuple(auditor.name for auditor in auditors)
    return LogAudit(log, cig, audit, localization, stationary, settings, names, similarity_name(similarity))


def similarity_name(similarity: Similarity) -> str:
    """What the JSON calls a similarity: "lexical", "minilm", or the class name of another one."""
    if isinstance(similarity, LexicalSimilarity):
        return "lexical"
    from trust.adapters.llm.embeddings import MiniLmSimilarity  # cheap: torch loads only when one is built

    if isinstance(similarity, MiniLmSimilarity):
        return "minilm"
    return type(similarity).__name__


def _warn_on_stderr(message: str) -> None:
    Console(stderr=True).print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False)


def build_similarity(settings: AuditSettings, *, warn: Callable[[str], None] = _warn_on_stderr) -> Similarity:
    """The stationarity similarity `settings.similarity` names; build it once per command.

    "minilm" loads all-MiniLM-L6-v2 (`trust.adapters.llm.embeddings.MiniLmSimilarity`); when that fails (the
    optional extra is not installed, or the model cannot be read) `warn` is told why and the
    lexical similarity is returned instead. "lexical" returns `LexicalSimilarity()`.
    """
    if settings.similarity == "lexical":
        return LexicalSimilarity()
    from trust.adapters.llm.embeddings import MiniLmSimilarity

    try:
        return MiniLmSimilarity()
    except ConfigError as exc:
        warn(
            f"TRUST_AUDIT__SIMILARITY=minilm, but the sentence-embedding model cannot be loaded: {exc}. "
            "Stationarity uses the lexical similarity instead (set TRUST_AUDIT__SIMILARITY=lexical to choose it)."
        )
        return LexicalSimilarity()


def localize_log_file(path: Path, settings: Settings, *, warn: Callable[[str], None] = _warn_on_stderr) -> LogAudit:
    """What `trust graph localize` runs: the auditors `offline_auditors` builds from `settings` (tier
    1, and tier 2 when `settings.auditor_llm` names an endpoint), and the similarity of
    `settings.audit` (loaded after the log is read, so that a bad file fails before the model loads)."""
    log = read_agent_log(path)
    similarity = build_similarity(settings.audit, warn=warn)

    async def run() -> LogAudit:
        async with AsyncExitStack() as stack:
            auditors = await offline_auditors(settings, stack)
            return await audit_agent_log(log, settings.audit, auditors, similarity=similarity)

    return asyncio.run(run())


_STATUS_STYLE = {
    "Valid": "green",
    "Invalid_Root": "bold red",
    "Invalid_Cascade": "yellow",
    "Negligent": "magenta",
}


def render(report: LogAudit, console: Console) -> None:
    """A readable table of the audit: one row per turn, then the root causes."""
    data = report.to_json()
    title = f"{len(report.cig)} turns, {report.cig.number_of_edges()} edges ({report.log.source})"
    table = Table(title=title)
    table.add_column("step", justify="right")
    table.add_column("agent")
    table.add_column("role")
    table.add_column("parents")
    table.add_column("score", justify="right")
    table.add_column("status")
    table.add_column("finding", overflow="fold")
    for node in data["nodes"]:
        style = _STATUS_STYLE.get(node["status"], "")
        turn = data["turns"][node["id"]]
        parents = ", ".join(str(report.cig.turn(p).step) for p in turn["parents"])
        table.add_row(
            str(node["step"]),
            node["agent"],
            turn["role"],
            parents,
            f"{turn['score']:.2f}",
            f"[{style}]{node['status']}[/{style}]" if style else node["status"],
            "; ".join(turn["critique"]),
        )
    console.print(table)
    console.print(f"auditors: {', '.join(data['auditors'])}; stationarity similarity: {data['similarity']}")
    for edge in data["failed_edges"]:
        console.print(f"edge {edge['source']} -> {edge['target']} failed: {'; '.join(edge['findings'])}")
    if not data["root_causes"]:
        console.print("no root cause found: every turn is Valid")
    for cause, detail in zip(data["root_causes"], data["root_cause_details"], strict=True):
        console.print(f"root cause: step {cause['step']} ({cause['agent']}), {detail['status']}, {detail['reason']}")
    for pair in data["stationary"]:
        console.print(
            f"stationary: {pair['agent']} repeated itself ({pair['earlier']} -> {pair['later']}, "
            f"similarity {pair['similarity']:.3f})"
        )
