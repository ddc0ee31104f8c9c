"""`TrustClient`: a provider's audits on the network, the shape of the paper's Listing 3.

    async with-free use:
        client = TrustClient(rpc_url="http://127.0.0.1:8545", ipfs_url="http://127.0.0.1:5101",
                             keystore="provider.json", password="...")
        result = await client.audit_trace(trace_text, AuditConfig(auditor_tiers=["computational", "llm"]))
        if result.verdict == "VALID": ...
        else: log(result.failure_reasons)

Each audit runs the six phases of paper 1.10: decompose (HDAG or CIG), seal every node under its own
key and upload the blobs to IPFS, open the session with the trace's Merkle root and the fee, draw the
committees and deliver each seat its key envelope, wait for the verdict (progress events and the
latency budget), and read the outcome with the auditors' critiques. The `*_sync` twins run the same
coroutine on a private event loop (`asyncio.run`), for callers without one.

Every connection is opened for one call and closed after it, so a client is cheap to keep and safe to
share between calls (not between concurrent calls of the sync twins, which each need their own loop).

Nothing is submitted half-way on bad input: the trace is parsed and sized, the chain, the deployment
and the IPFS node are reached, each tier the trace needs is checked to seat a committee and the fee
against the contract's minimum and the provider's balance, all before the first upload. Blobs
uploaded for a session that then fails to open are unpinned again, and the session record is
removed. Once the session is open, the record in the journal (`trust.services.sdk.journal`) lets `resume`
finish it after a crash or a timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount

from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.protocol import Protocol, protocol_artifacts
from trust.adapters.chain.types import SegmentSpec
from trust.adapters.chain.wallets import load_keystore, read_password
from trust.adapters.storage.kubo import KuboClient
from trust.core.amounts import eth_text, tokens_text
from trust.core.decompose.rules import DecompositionLimits, Trace, decompose
from trust.core.graphs.agent_log import AgentLog, LogLimits, build_cig, parse_log
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag, Tier
from trust.core.graphs.serialization import FORMAT as HDAG_FORMAT
from trust.core.graphs.units import UnitKind
from trust.core.graphs.validation import validate
from trust.errors import (
    AuditError,
    ChainError,
    ConfigError,
    ContractReverted,
    FeeTooLow,
    GraphError,
    InsufficientAuditors,
    IpfsError,
    SessionInterrupted,
    TrustError,
    excerpt,
)
from trust.services.delivery import SegmentProfile, StoredTrace, default_profiles, store_trace, units_of
from trust.services.localize import build_similarity
from trust.services.refine import Regenerate
from trust.services.refine import refine as refine_loop
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.inputs import read_json, trace_from_text
from trust.services.sdk.journal import Journal, SessionRecord
from trust.services.sdk.keys import reply_key
from trust.services.sdk.outage import RPC, lost_service
from trust.services.sdk.outcome import judge, stationary_agents
from trust.services.sdk.progress import ProgressCallback, ProgressEvent
from trust.services.sdk.refinement import NetworkRefinement, ReauditRound, findings_of, rebuild_graph
from trust.services.sdk.result import AuditResult, Proof, StationaryResult
from trust.services.sdk.session import SessionDriver
from trust.services.sdk.timings import phase_timings
from trust.settings import RefinementSettings, Settings

__all__ = ["TraceInput", "TrustClient", "segment_profiles", "unpin"]

log = logging.getLogger("trust.services.sdk")

TraceInput = str | Trace | Hdag
"""What `audit_trace` takes: raw chain-of-thought text (or JSON text: a `trust.hdag` document or a
steps document, which must parse; `trust.services.sdk.inputs`), a `Trace` (text or steps, with its problem),
or an HDAG the provider decomposed itself."""

_PLACEHOLDER_DIGEST = b"\x01" * 32
"""Stands in for content digests when the minimum fee is asked before anything is uploaded (the fee
depends on the tiers and seats only)."""


class TrustClient:
    """A provider's connection to the TRUST network: its wallet, the chain and an IPFS node.

    `rpc_url` and `ipfs_url` default to the settings (the devnet and the local IPFS node). The wallet is
    `account`, or the keystore at `keystore` unlocked with `password` (or `TRUST_KEYSTORE_PASSWORD`).
    `progress` receives `ProgressEvent`s while an audit runs. Session records go under
    `<home>/provider` unless `journal_dir` says otherwise.
    """

    def __init__(
        self,
        rpc_url: str | None = None,
        ipfs_url: str | None = None,
        *,
        keystore: str | Path | None = None,
        password: str | None = None,
        account: LocalAccount | None = None,
        settings: Settings | None = None,
        progress: ProgressCallback | None = None,
        journal_dir: Path | None = None,
        poll_seconds: float = 0.1,
    ) -> None:
        self.settings = settings or Settings()
        self.rpc_url = rpc_url or self.settings.effective_rpc_url
        self.ipfs_url = ipfs_url or self.settings.ipfs.api_url
        if (account is None) == (keystore is None):
            raise ConfigError("TrustClient needs exactly one wallet: keystore= (with password=) or account=")
        if account is None:
            assert keystore is not None
            secret = password if password is not None else read_password(None)
            if secret is None:
                raise ConfigError(f"no password for keystore {keystore}: pass password= or set TRUST_KEYSTORE_PASSWORD")
            account = load_keystore(Path(keystore), secret)
        self.account: LocalAccount = account
        self.progress = progress
        self.journal = Journal(journal_dir or self.settings.home / "provider")
        if not poll_seconds > 0:
            raise ConfigError(f"poll_seconds must be positive, got {poll_seconds}")
        self.poll_seconds = poll_seconds
        self._artifacts: dict[str, Artifact] | None = None

    @property
    def address(self) -> str:
        return str(self.account.address)

    # ------------------------------------------------------------------ public API

    async def audit_trace(self, trace: TraceInput, config: AuditConfig | None = None) -> AuditResult:
        """Audits one model's chain of thought: decomposed into an HDAG, each node audited at its tier."""
        config = config or AuditConfig()
        return await self._decompose_and_audit(lambda: trace_graph(trace, config), "trace", "nodes", config)

    async def audit_agents(
        self, agent_log: AgentLog | Cig | Mapping[str, Any] | str, config: AuditConfig | None = None
    ) -> AuditResult:
        """Audits a multi-agent log: its causal interaction graph, one segment per turn."""
        config = config or AuditConfig()
        return await self._decompose_and_audit(lambda: agents_graph(agent_log, config), "agents", "turns", config)

    async def resume(
        self, session_id: int, config: AuditConfig | None = None, *, max_latency_ms: int | None = None
    ) -> AuditResult:
        """Finishes a session this provider opened earlier (after `AuditTimeout`, `SessionInterrupted`
        or a crash), with the config it was opened with unless `config` replaces it; `max_latency_ms`
        replaces only the wait, which counts from now.

        A record whose opening was cut off (its session id never confirmed) is found too: the
        session's trace root on chain names it."""
        async with self._connection() as (protocol, kubo):
            record = await self._record_of(protocol, session_id)
            config = config or AuditConfig.model_validate(record.config)
            if max_latency_ms is not None:
                config = config.model_copy(update={"max_latency_ms": max_latency_ms})
            driver = self._driver(protocol, kubo, record, config)
            driver.marks["start"] = record.started_at
            await driver.retrying(driver.attach)
            return await self._finish(driver, config, budget_from=time.time())

    async def _record_of(self, protocol: Protocol, session_id: int) -> SessionRecord:
        chain_id = protocol.chain.chain_id
        try:
            return self.journal.find(chain_id, session_id)
        except ConfigError as missing:
            pending = self.journal.pending(chain_id)
            if not pending:
                raise
            try:
                on_chain = await protocol.audit.session(session_id)
            except ContractReverted:
                raise missing from None  # no such session on chain either
            for record in pending:
                if record.stored.root == on_chain.trace_root:
                    if on_chain.provider.lower() != self.address.lower():
                        break
                    record.session_id = session_id
                    self.journal.save(record)
                    return record
            raise

    async def refine(
        self,
        result: AuditResult,
        regenerate: Regenerate,
        config: AuditConfig | None = None,
        *,
        settings: RefinementSettings | None = None,
    ) -> NetworkRefinement:
        """The prune-freeze-repair loop (paper 2.3) over the network, from a finished audit.

        Each round prunes the failed nodes and their descendants, re-runs them through `regenerate`
        (called from a worker thread; it may block on a model), and audits exactly those nodes in a
        new session whose other nodes travel as context only: frozen nodes are neither re-run nor
        re-audited (`trust.services.sdk.refinement`). Stops when every node is Valid, after
        `RefinementSettings.max_rounds` rounds, or on stationarity.
        """
        config = config or AuditConfig()
        loop_settings = settings or self.settings.refinement
        reaudit = ReauditRound(
            result.graph,
            lambda graph, nodes: self._audit(graph, result.kind, config, {"start": time.time()}, only=nodes),
            asyncio.get_running_loop(),
        )

        def report(message: str) -> None:
            self._say("refine", len(reaudit.audits), loop_settings.max_rounds, message)

        record = await asyncio.to_thread(
            refine_loop,
            result.graph.graph,
            reaudit,
            regenerate,
            loop_settings,
            tau_stat=self.settings.audit.tau_stat,
            findings=findings_of(result),
            progress=report,
        )
        return NetworkRefinement(record, rebuild_graph(result.graph, record.graph), tuple(reaudit.audits))

    def refine_sync(
        self,
        result: AuditResult,
        regenerate: Regenerate,
        config: AuditConfig | None = None,
        *,
        settings: RefinementSettings | None = None,
    ) -> NetworkRefinement:
        return asyncio.run(self.refine(result, regenerate, config, settings=settings))

    def audit_trace_sync(self, trace: TraceInput, config: AuditConfig | None = None) -> AuditResult:
        return asyncio.run(self.audit_trace(trace, config))

    def audit_agents_sync(
        self, agent_log: AgentLog | Cig | Mapping[str, Any] | str, config: AuditConfig | None = None
    ) -> AuditResult:
        return asyncio.run(self.audit_agents(agent_log, config))

    def resume_sync(
        self, session_id: int, config: AuditConfig | None = None, *, max_latency_ms: int | None = None
    ) -> AuditResult:
        return asyncio.run(self.resume(session_id, config, max_latency_ms=max_latency_ms))

    # ------------------------------------------------------------------ the audit

    def _say(self, stage: str, done: int, total: int, message: str = "") -> None:
        if self.progress is not None:
            self.progress(ProgressEvent(stage, done, total, message))

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[tuple[Protocol, KuboClient]]:
        if self._artifacts is None:
            self._artifacts = protocol_artifacts()
        async with Protocol.connect(self.settings, self.rpc_url, artifacts=self._artifacts) as protocol:
            async with KuboClient.from_settings(self.settings.ipfs, api_url=self.ipfs_url) as kubo:
                yield protocol, kubo

    def _driver(
        self,
        protocol: Protocol,
        kubo: KuboClient,
        record: SessionRecord,
        config: AuditConfig,
        *,
        journaled: bool = True,
    ) -> SessionDriver:
        reply = reply_key(
            self.account,
            chain_id=protocol.chain.chain_id,
            audit_contract=protocol.audit.address,
            trace_root=record.stored.root,
        )
        return SessionDriver(
            protocol,
            kubo,
            self.account,
            record,
            reply,
            progress=self.progress,
            poll_seconds=self.poll_seconds,
            finalize=config.finalize,
            distribute=config.distribute,
            retry=self.settings.provider,
            journaled=journaled,
            journal_path=str(self.journal.path(record)) if journaled else None,
        )

    async def _decompose_and_audit(
        self, decompose_input: Callable[[], Hdag | Cig], kind: str, unit: str, config: AuditConfig
    ) -> AuditResult:
        marks = {"start": time.time()}
        self._say("decompose", 0, 1)
        graph = decompose_input()
        marks["decomposed"] = time.time()
        self._say("decompose", 1, 1, f"{len(graph)} {unit}")
        return await self._audit(graph, kind, config, marks)

    async def _audit(
        self,
        graph: Hdag | Cig,
        kind: str,
        config: AuditConfig,
        marks: dict[str, float],
        *,
        only: Collection[str] | None = None,
    ) -> AuditResult:
        profiles = segment_profiles(graph, config, only=only)
        async with self._connection() as (protocol, kubo):
            fee = await self._preflight(protocol, kubo, profiles, config)
            self._say("upload", 0, len(profiles))
            stored = await store_trace(kubo, graph, profiles=profiles)
            marks["uploaded"] = time.time()
            self._say("upload", len(profiles), len(profiles))
            driver = await self._open(protocol, kubo, kind, graph, stored, fee, config, marks, journal=True)
            return await self._finish(driver, config)

    async def _open(
        self,
        protocol: Protocol,
        kubo: KuboClient,
        kind: str,
        graph: Hdag | Cig,
        stored: StoredTrace,
        fee: int,
        config: AuditConfig,
        marks: Mapping[str, float],
        *,
        journal: bool,
    ) -> SessionDriver:
        """Opens the session of uploaded blobs and returns its driver. With `journal` the record is
        written before `createSession` and again with the session id; if the session fails to open,
        the record is discarded and the blobs are unpinned, so nothing is left half-submitted."""
        record = SessionRecord(
            protocol.chain.chain_id,
            protocol.audit.address,
            kind,
            graph,
            stored,
            fee_wei=fee,
            started_at=marks["start"],
            config=config.model_dump(mode="json"),
        )
        driver = self._driver(protocol, kubo, record, config, journaled=journal)
        driver.marks.update(marks)
        try:
            if journal:
                self.journal.save(record)
            await driver.open(fee)
        except SessionInterrupted:
            raise  # the connection went while createSession was on its way: it may be mined, keep all
        except BaseException as exc:
            if record.session_id is not None:
                # The session exists (a large trace still registering its segments in runs): its fee
                # is paid, so the record and the blobs stay for `resume` to finish it.
                if journal:
                    self.journal.save(record)
                    exc.add_note(
                        f"session {record.session_id} is open on chain and still registering its segments: "
                        f"`trust submit --resume {record.session_id}` registers the rest and audits it"
                    )
                raise
            if journal:
                self.journal.discard(record)
            await unpin(kubo, [key.cid for key in stored.all_segments])
            raise
        if journal:
            self.journal.save(record)
        return driver

    async def _preflight(
        self, protocol: Protocol, kubo: KuboClient, profiles: Mapping[str, SegmentProfile], config: AuditConfig
    ) -> int:
        """Every check that can fail before anything is uploaded or sent; returns the fee to pay. The
        RPC going away meanwhile is a `ChainError` saying that nothing was sent."""
        try:
            return await self._checks(protocol, kubo, profiles, config)
        except Exception as exc:
            if lost_service(exc) != RPC:
                raise
            raise ChainError(
                f"lost the RPC at {self.rpc_url} while checking the trace against the network ({type(exc).__name__}: "
                f"{excerpt(str(exc) or 'no answer', 160)}); nothing was uploaded or paid: run the audit again when "
                "the RPC is back"
            ) from exc

    async def _checks(
        self, protocol: Protocol, kubo: KuboClient, profiles: Mapping[str, SegmentProfile], config: AuditConfig
    ) -> int:
        try:
            await kubo.version()
        except IpfsError as exc:
            raise IpfsError(
                f"the IPFS node at {self.ipfs_url} does not answer ({exc}); is it running (`trust ipfs up`)?"
            ) from exc
        params = await protocol.params.params()
        profiles = {node_id: p for node_id, p in profiles.items() if p.audited}  # context is not registered
        most = min(config.max_nodes, int(params["maxSegmentsPerSession"]))
        if len(profiles) > most:
            raise GraphError(
                f"the trace has {len(profiles)} nodes to audit; a session takes at most {most} "
                "(AuditConfig.max_nodes and the protocol's maxSegmentsPerSession): split the trace"
            )
        penalty = int(params["penaltyPerSeat"])
        for tier in sorted({profile.tier for profile in profiles.values()}):
            # A committee of k is k stake-weighted draws with replacement, each locking P of the
            # member it lands on: a tier seats it when its members' stake backs k units of P, however
            # few they are (one auditor backing 3P seats a committee of 3). Their stake now is an
            # upper bound of what is free at the draw (open seats lock part of it), so a tier below
            # it cannot seat the committee and one above it may.
            needed = int(params[f"committeeSizeTier{tier}"])
            eligible = await protocol.registry.eligible_count(tier)
            stake = await protocol.registry.eligible_stake(tier) if eligible else 0
            if stake < needed * penalty:
                name = Tier(tier).name.lower()
                raise InsufficientAuditors(
                    f"{sum(1 for p in profiles.values() if p.tier == tier)} segments need tier {tier} ({name}) "
                    f"committees of {needed} draws, each locking {tokens_text(penalty)} of the auditor it seats, "
                    f"but the {eligible} tier-{tier} auditors eligible now stake {tokens_text(stake)} in all, which "
                    f"backs only {stake // penalty}; nothing was submitted. Wait for auditors, or leave "
                    "the tier out (AuditConfig.auditor_tiers)"
                )
        specs = [SegmentSpec(p.tier, p.weight, _PLACEHOLDER_DIGEST, p.critical) for p in profiles.values()]
        minimum = await protocol.audit.minimum_fee(specs)
        fee = minimum if config.fee_wei is None else config.fee_wei
        if fee < minimum:
            raise FeeTooLow(
                f"a fee of {fee} wei is below the minimum of {minimum} wei for {len(specs)} segments "
                "(R per first-round seat from the auditors' 70% share); nothing was submitted"
            )
        balance = await protocol.chain.balance(self.address)
        if balance <= fee:
            raise AuditError(
                f"provider {self.address} holds {eth_text(balance)}; the session needs a fee of "
                f"{eth_text(fee)} plus gas. Nothing was submitted"
            )
        return fee

    async def _finish(
        self, driver: SessionDriver, config: AuditConfig, *, budget_from: float | None = None
    ) -> AuditResult:
        budget = config.max_latency_ms
        start = driver.marks["start"] if budget_from is None else budget_from
        deadline = None if budget is None else start + budget / 1000
        await driver.drive(deadline)
        reports = await driver.retrying(lambda: driver.reports(config.report_grace_ms / 1000))
        outcomes = await driver.retrying(lambda: driver.outcomes(reports))
        protocol = driver.protocol
        session = await driver.retrying(lambda: protocol.audit.session(driver.session_id))
        params = await driver.retrying(lambda: protocol.audit.session_params(driver.session_id))
        judgement = judge(
            driver.graph,
            outcomes,
            valid_on_chain=session.valid,
            beta_bps=int(params["betaBps"]),
            consensus_threshold=config.consensus_threshold,
        )
        proof = Proof(
            chain_id=protocol.chain.chain_id,
            audit_contract=protocol.audit.address,
            session_id=driver.session_id,
            trace_root="0x" + driver.record.stored.root.hex(),
            finalized_block=driver.finalized_block,
            finalize_tx=driver.finalize_tx,
            valid_on_chain=session.valid,
        )
        return AuditResult(
            verdict=judgement.verdict,
            kind=driver.record.kind,
            nodes=judgement.nodes,
            root_causes=judgement.root_causes,
            failure_reasons=judgement.failure_reasons,
            transactions={name: tuple(hashes) for name, hashes in driver.transactions.items()},
            proof=proof,
            phases=phase_timings(driver.marks, driver.rounds.values(), reports.values()),
            seats=sum(len(track.members) for track in driver.rounds.values()),
            graph=driver.graph,
            contradictions=judgement.contradictions,
            edges=judgement.edges,
            stationary=self._stationary(driver.graph),
        )

    def _stationary(self, graph: Hdag | Cig) -> tuple[StationaryResult, ...]:
        """`stationary_agents` of a multi-agent log, with the similarity and tau_stat of the settings."""
        if not isinstance(graph, Cig):
            return ()
        similarity = build_similarity(self.settings.audit, warn=log.warning)
        return stationary_agents(graph, similarity, tau_stat=self.settings.audit.tau_stat)


async def unpin(kubo: KuboClient, cids: Sequence[str]) -> None:
    """Best effort: the blobs of a session (or a batch) that never opened are not kept pinned."""
    for cid in cids:
        try:
            await kubo.pin_rm(cid)
        except TrustError as exc:
            log.warning("could not unpin %s after the session failed to open: %s", cid, exc)


# ---------------------------------------------------------------------- inputs


def trace_graph(trace: TraceInput, config: AuditConfig, *, what: str = "the trace") -> Hdag:
    """The HDAG of a trace input (see `TraceInput`), within the config's size limits. Text is read
    as what it claims to be (`trust.services.sdk.inputs`): JSON that does not parse, or parses into something
    that is not a trace, is a `GraphError` naming `what` and the position, never audited as prose."""
    if isinstance(trace, Hdag):
        graph = trace
        validate(graph)
    elif isinstance(trace, Trace):
        graph = decompose(trace, limits=DecompositionLimits(max_chars=config.max_trace_chars))
    elif isinstance(trace, str):
        if len(trace) > config.max_trace_chars:
            raise GraphError(
                f"{what} is {len(trace):,} characters, over the limit of {config.max_trace_chars:,} "
                "(AuditConfig.max_trace_chars): split it"
            )
        read = trace_from_text(trace, what)
        if isinstance(read, Hdag):
            graph = read
        else:
            graph = decompose(read, limits=DecompositionLimits(max_chars=config.max_trace_chars))
    else:
        raise GraphError(f"audit_trace takes text, a Trace or an Hdag, not {type(trace).__name__}")
    if len(graph) > config.max_nodes:
        raise GraphError(f"{what} decomposes into {len(graph)} nodes, over AuditConfig.max_nodes = {config.max_nodes}")
    return graph


def agents_graph(
    agent_log: AgentLog | Cig | Mapping[str, Any] | Sequence[Any] | str,
    config: AuditConfig,
    *,
    what: str = "the agent log",
) -> Cig:
    """The CIG of a multi-agent log: an `AgentLog`, a `Cig`, parsed JSON or JSON text (which must
    parse: the error names the line, column and character where it stops)."""
    if isinstance(agent_log, Cig):
        graph = agent_log
    else:
        if isinstance(agent_log, str):
            if len(agent_log) > config.max_trace_chars:
                raise GraphError(
                    f"{what} is {len(agent_log):,} characters, over AuditConfig.max_trace_chars = "
                    f"{config.max_trace_chars:,}"
                )
            agent_log = read_json(agent_log, what)
        if isinstance(agent_log, Mapping) and agent_log.get("format") == HDAG_FORMAT:
            raise GraphError(
                f"{what} is a trust.hdag document, not an agent log: audit it as a trace (`trust submit` without "
                '--agents, `TrustClient.audit_trace`, or "kind": "trace" at the gateway)'
            )
        parsed = agent_log if isinstance(agent_log, AgentLog) else parse_log(agent_log, LogLimits())
        graph = build_cig(parsed)
    if len(graph) > config.max_nodes:
        raise GraphError(f"{what} has {len(graph)} turns, over AuditConfig.max_nodes = {config.max_nodes}")
    if len(graph) == 0:
        raise GraphError(f"{what} has no turns")
    return graph


def segment_profiles(
    graph: Hdag | Cig, config: AuditConfig, *, only: Collection[str] | None = None
) -> dict[str, SegmentProfile]:
    """Each node's tier (routed, then fitted to `auditor_tiers`), weight, critical flag, and whether it
    is audited: a CIG's user and tool turns travel as context only (`trust.services.delivery.default_profiles`),
    and with `only` (a re-audit) so does every node outside it."""
    profiles = default_profiles(graph)
    units = {unit.id: unit for unit in units_of(graph) if unit.kind is not UnitKind.NODE}

    def wanted(node_id: str) -> bool:
        # A re-audit seats the units of the nodes it re-audits too (their claims or messages changed).
        unit = units.get(node_id)
        return only is None or node_id in only or (unit is not None and bool({unit.source, unit.target} & set(only)))

    return {
        node_id: SegmentProfile(
            int(config.tier_for(Tier(p.tier))),
            p.weight,
            p.critical,
            p.audited and wanted(node_id),
            p.contradiction,
        )
        for node_id, p in profiles.items()
    }
