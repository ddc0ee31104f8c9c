"""Off-chain configuration: one `Settings` object, built by the entry point and passed down.

Protocol parameters have their on-chain home in the `ProtocolParams` contract, changed only through
governance. `ProtocolSettings` here holds the values a new deployment starts with: the TRUST
paper's numbers (tau = 0.66, gamma = 0.1, p_min = 0.35, p_max = 0.5, the 70/15/10/5 fee split)
in human units, converted exactly once, in `to_params()`, into the contract's fixed-point struct.

Every field can be set from the environment with the `TRUST_` prefix and `__` for nesting, for
example `TRUST_RPC_URL=http://127.0.0.1:8545` or `TRUST_PROTOCOL__TAU=0.7`.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "AuditSettings",
    "BeaconSettings",
    "DevnetSettings",
    "GatewaySettings",
    "GovernanceSettings",
    "IpfsSettings",
    "LlmSettings",
    "ProtocolSettings",
    "ProviderSettings",
    "RefinementSettings",
    "Settings",
]

BPS = 10_000
WAD = 10**18
TOKEN = 10**18  # the staking token has 18 decimals


def _bps(ratio: Decimal) -> int:
    value = ratio * BPS
    if value != int(value):
        raise ValueError(f"{ratio} is finer than one basis point (0.0001)")
    return int(value)


def _wad(ratio: Decimal) -> int:
    value = ratio * WAD
    if value != int(value):
        raise ValueError(f"{ratio} is finer than 1e-18")
    return int(value)


class ProtocolSettings(BaseModel):
    """The protocol parameters a deployment starts with (paper sections 3.2, 3.3, 4.7, 6.1).

    Ratios are decimals in [0, 1]; amounts are in wei (ETH) or whole staking tokens.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tau: Decimal = Field(Decimal("0.66"), gt=Decimal("0.5"), le=1, description="segment threshold (eq. 3.3)")
    beta: Decimal = Field(
        Decimal("0.65"),
        gt=0,
        lt=1,
        description="trace quorum (eq. 3.6); the paper gives [0.55, 0.75] for 99.99% accuracy, we take the middle",
    )
    gamma: Decimal = Field(Decimal("0.1"), gt=0, le=1, description="reputation EMA rate (eq. 3.8)")
    p_min: Decimal = Field(
        Decimal("0.35"), gt=0, lt=1, description="slash probability at r = 1 (eq. 3.9; 0.35 satisfies E2, sec. 4.7)"
    )
    p_max: Decimal = Field(Decimal("0.5"), gt=0, le=1, description="slash probability at r = 0 (eq. 3.9)")
    committee_size_tier1: int = Field(3, ge=1, le=127)
    committee_size_tier2: int = Field(5, ge=1, le=127)
    committee_size_tier3: int = Field(5, ge=1, le=127)
    max_rounds: int = Field(3, ge=1, le=4, description="rounds before an undecided segment fails")
    commit_window_seconds: int = Field(600, ge=1)
    reveal_window_seconds: int = Field(600, ge=1)
    randomness_delay_blocks: int = Field(2, ge=1, le=128)
    max_segments_per_session: int = Field(1024, ge=1, le=4096)
    reward_per_seat_wei: int = Field(6 * 10**14, ge=0, description="R (eq. 3.10): 0.0006 ETH per aligned seat")
    penalty_per_seat_tokens: Decimal = Field(Decimal(8), gt=0, description="P (eq. 3.10), locked per seat")
    unbonding_delay_seconds: int = Field(7 * 24 * 3600, ge=0)
    min_stake_tier1_tokens: Decimal = Field(Decimal(100), gt=0, description="Table 2: low")
    min_stake_tier2_tokens: Decimal = Field(Decimal(1_000), gt=0, description="Table 2: medium")
    min_stake_tier3_tokens: Decimal = Field(Decimal(10_000), gt=0, description="Table 2: high")
    initial_reputation: Decimal = Field(Decimal("0.5"), ge=0, le=1)
    auditor_share: Decimal = Field(Decimal("0.70"), gt=0, le=1)
    treasury_share: Decimal = Field(Decimal("0.15"), ge=0, le=1)
    staker_share: Decimal = Field(Decimal("0.10"), ge=0, le=1)
    insurance_share: Decimal = Field(Decimal("0.05"), ge=0, le=1)
    max_weight_ratio: int = Field(
        10,
        ge=1,
        lt=2**16,
        description="within a session, no segment may weigh more than this many times the lightest (eq. 3.6 "
        "weighs the trace: a bound keeps a failed step from being drowned by a heavier passing one)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> ProtocolSettings:
        if self.p_min >= self.p_max:
            raise ValueError(f"p_min ({self.p_min}) must be below p_max ({self.p_max})")
        shares = self.auditor_share + self.treasury_share + self.staker_share + self.insurance_share
        if shares != 1:
            raise ValueError(f"fee shares add up to {shares}, not 1")
        if not (self.min_stake_tier1_tokens <= self.min_stake_tier2_tokens <= self.min_stake_tier3_tokens):
            raise ValueError("minimum stakes must rise with the tier (Table 2: low <= medium <= high)")
        if self.min_stake_tier1_tokens < self.penalty_per_seat_tokens:
            raise ValueError("the tier-1 minimum stake must back at least one seat's penalty")
        return self

    def committee_size(self, tier: int) -> int:
        return {1: self.committee_size_tier1, 2: self.committee_size_tier2, 3: self.committee_size_tier3}[tier]

    def min_stake(self, tier: int) -> int:
        """The tier's minimum stake in token base units."""
        tokens = {1: self.min_stake_tier1_tokens, 2: self.min_stake_tier2_tokens, 3: self.min_stake_tier3_tokens}[tier]
        return int(tokens * TOKEN)

    def to_params(self) -> dict[str, Any]:
        """The `Params` struct of the contracts, field by field, in fixed point."""
        return {
            "tauBps": _bps(self.tau),
            "betaBps": _bps(self.beta),
            "gammaWad": _wad(self.gamma),
            "pMinBps": _bps(self.p_min),
            "pMaxBps": _bps(self.p_max),
            "committeeSizeTier1": self.committee_size_tier1,
            "committeeSizeTier2": self.committee_size_tier2,
            "committeeSizeTier3": self.committee_size_tier3,
            "maxRounds": self.max_rounds,
            "commitWindowSeconds": self.commit_window_seconds,
            "revealWindowSeconds": self.reveal_window_seconds,
            "randomnessDelayBlocks": self.randomness_delay_blocks,
            "maxSegmentsPerSession": self.max_segments_per_session,
            "rewardPerSeatWei": self.reward_per_seat_wei,
            "penaltyPerSeat": int(self.penalty_per_seat_tokens * TOKEN),
            "unbondingDelaySeconds": self.unbonding_delay_seconds,
            "minStakeTier1": self.min_stake(1),
            "minStakeTier2": self.min_stake(2),
            "initialReputationWad": _wad(self.initial_reputation),
            "minStakeTier3": self.min_stake(3),
            "auditorShareBps": _bps(self.auditor_share),
            "treasuryShareBps": _bps(self.treasury_share),
            "stakerShareBps": _bps(self.staker_share),
            "insuranceShareBps": _bps(self.insurance_share),
            "maxWeightRatio": self.max_weight_ratio,
        }


class GovernanceSettings(BaseModel):
    """The TimelockController that owns every protocol contract."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timelock_min_delay_seconds: int = Field(2 * 24 * 3600, ge=0, description="delay between scheduling and executing")
    token_supply_tokens: int = Field(1_000_000_000, gt=0, description="staking tokens minted at deployment")


class DevnetSettings(BaseModel):
    """The local development network started by `trust devnet up`, with a worker per auditor.

    Sized for the embedded tier-2 model on a small machine (two cores): it answers one request at a
    time, so committees are of one auditor per tier (three in an escalated round, 2k + 1) and eight
    auditors (two computational, three LLM, three human) seat every first and second round. The
    commit window lets a tier-2 queue drain or a person vote (a committee that has all committed
    closes it at once, so honest audits never wait it out); two rounds of both windows stay within
    `trust submit`'s default wait of 600 s, so a node nobody decides comes back undetermined. Set
    committees and windows before the first `up`: they are deployed with the protocol.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8545, ge=1, le=65535)
    chain_id: int = 31337
    auditors: int = Field(8, ge=3, le=256, description="auditor accounts created, across the three tiers")
    committee_size_tier1: int = Field(1, ge=1, le=127)
    committee_size_tier2: int = Field(1, ge=1, le=127)
    committee_size_tier3: int = Field(1, ge=1, le=127)
    max_rounds: int = Field(2, ge=1, le=4)
    # Anvil's well-known development mnemonic: its accounts hold only devnet ETH.
    mnemonic: str = "test test test test test test test test test test test junk"
    state_interval_seconds: int = Field(1, ge=1, description="how often anvil writes its state file")
    block_seconds: float = Field(
        1.0, gt=0, le=60, description="an empty block this often while idle; transactions are mined at once"
    )
    timelock_min_delay_seconds: int = Field(60, ge=0)
    commit_window_seconds: int = Field(180, ge=1)
    reveal_window_seconds: int = Field(60, ge=1)
    unbonding_delay_seconds: int = Field(3600, ge=0)
    # Keystores of devnet auditors hold only test funds: a lighter scrypt keeps `up` quick.
    keystore_scrypt_n: int = Field(2**14, ge=2**10)
    worker_start_timeout_seconds: float = Field(
        300.0, gt=0, description="how long `up` waits for its workers to follow the chain"
    )
    person_seconds: float = Field(
        60.0,
        gt=0,
        description="how long the devnet's tier-3 workers expect a person to take over a seat until one has voted "
        "(their worker.audit_seconds_tier3): well inside the commit window, so that they stay in the draw",
    )
    worker_stop_timeout_seconds: float = Field(
        20.0, gt=0, description="how long `down` waits for a worker to stop cleanly before SIGKILL"
    )

    @property
    def rpc_url(self) -> str:
        return f"http://{self.host}:{self.port}"


class AuditSettings(BaseModel):
    """Off-chain audit thresholds of the dual-layer CIG audit (paper 2.2.4-2.2.6)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tau_node: float = Field(0.8, gt=0, le=1, description="node validity threshold (Layer 1)")
    tau_edge: float = Field(0.8, gt=0, le=1, description="edge protocol and fidelity threshold (Layer 2)")
    tau_stat: float = Field(0.95, gt=0, le=1, description="similarity above which an agent is stuck in a loop")
    similarity: Literal["minilm", "lexical"] = Field(
        "minilm",
        description="how stationarity compares two outputs: 'minilm' (all-MiniLM-L6-v2 sentence embeddings, the "
        "embeddings extra; lexical with a warning when it is missing) or 'lexical' (character n-grams, no model)",
    )


class RefinementSettings(BaseModel):
    """The audit-prune-regenerate loop (paper 2.3)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_rounds: int = Field(5, ge=1, le=50, description="maximum refinement depth")
    initial_temperature: float = Field(0.7, ge=0, le=2, description="sampling temperature of the first repair")
    temperature_step: float = Field(0.1, ge=0, le=1, description="added per round, to explore when repairs fail")


class LlmSettings(BaseModel):
    """An OpenAI-compatible chat-completions endpoint (decomposition, regeneration). Unset: offline."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = Field(None, description="e.g. http://127.0.0.1:8000/v1; unset keeps everything offline")
    model: str = Field("gpt-4o-mini", min_length=1)
    api_key: str | None = Field(None, description="sent as a bearer token when set")
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    # The most likely structure, as repeatable as the endpoint allows; the paper's 0.7 + 0.1 per
    # round schedule (RefinementSettings) is for repairs, not for decomposition.
    decomposition_temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature of HDAG requests")
    structured_output: Literal["json_schema", "json_object", "prompt"] = Field(
        "json_schema",
        description="how a JSON schema is sent: json_schema (OpenAI, vLLM, Ollama), json_object "
        "(llama-cpp-python's server), prompt (not at all; the schema is only in the prompt)",
    )

    @property
    def configured(self) -> bool:
        return self.base_url is not None


class IpfsSettings(BaseModel):
    """IPFS: the Kubo RPC endpoint the storage client talks to, and the local node `trust ipfs up` runs.

    `api_url` defaults to the local node (`http://{host}:{port}`); point it at a Kubo daemon
    (`http://127.0.0.1:5001`) or a pinning service's Kubo-compatible endpoint to use that instead,
    with `api_token` sent as a bearer token. The local node listens on 5101, not Kubo's 5001, so the
    two can run side by side. `max_blob_bytes` caps one blob both ways: the client refuses to send or
    read more, and the local node refuses bigger uploads (HTTP 413).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_url: str = Field("", description="Kubo RPC API base URL (without /api/v0); the local node's when unset")
    api_token: SecretStr | None = Field(None, description="bearer token for a pinning service's endpoint")
    timeout_seconds: float = Field(60.0, gt=0, description="read, write and pool timeout of one request")
    connect_timeout_seconds: float = Field(5.0, gt=0)
    content_timeout_seconds: float = Field(
        30.0, gt=0, description="how long a node may search for content before it answers not found"
    )
    max_retries: int = Field(3, ge=0, le=10, description="retries of a refused, dropped or 502/503/504 request")
    backoff_seconds: float = Field(0.2, ge=0, description="first retry delay, doubled after each attempt")
    max_backoff_seconds: float = Field(5.0, ge=0)
    max_blob_bytes: int = Field(64 * 1024 * 1024, ge=1, description="largest blob sent, read or accepted")
    # The local node (`trust ipfs up`).
    host: str = Field("127.0.0.1", description="interface the local node listens on")
    port: int = Field(5101, ge=1, le=65535, description="port of the local node")
    repo: Path | None = Field(None, description="blocks and pins of the local node; <home>/ipfs when unset")
    node_binary: str = Field("node", min_length=1, description="the Node.js (20 or newer) that runs the local node")
    startup_timeout_seconds: float = Field(30.0, gt=0)
    stop_timeout_seconds: float = Field(15.0, gt=0, description="wait for a clean stop before SIGKILL")

    @model_validator(mode="before")
    @classmethod
    def _local_node_by_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("api_url"):
            host = data.get("host", "127.0.0.1")
            port = data.get("port", 5101)
            return {**data, "api_url": f"http://{host}:{port}"}
        return data

    @property
    def local_url(self) -> str:
        """Where the local node answers."""
        return f"http://{self.host}:{self.port}"

    def repo_path(self, home: Path) -> Path:
        """The local node's repo: `repo`, or `<home>/ipfs`."""
        return self.repo or home / "ipfs"


class SandboxSettings(BaseModel):
    """The tier-1 code sandbox (docs/auditors.md "The sandbox"): a separate process per run, in
    Linux namespaces made by bubblewrap (no network, a read-only filesystem but for the run's fresh
    temporary directory, its own PID and user namespace, an empty environment), under these limits.
    Without bubblewrap, or where it cannot create namespaces, a run fails closed ("sandbox
    unavailable") unless `allow_unconfined` is set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    python: str | None = Field(None, description="the interpreter that runs audited code; this one when unset")
    bwrap: str = Field("bwrap", description="the bubblewrap executable: a name looked up on PATH, or a path")
    allow_unconfined: bool = Field(
        False,
        description="development only: run without namespaces (resource limits and the audit hook only) when "
        "bubblewrap is missing or refused, instead of failing closed",
    )
    audit_hook: bool = Field(
        True, description="the audit hook inside the child, a second layer that names refused operations"
    )
    timeout_seconds: float = Field(10.0, gt=0, le=600, description="wall-clock limit of one run (then killed)")
    test_timeout_seconds: float = Field(
        5.0, ge=0, le=600, description="time limit of one unit test (pytest-timeout; 0: only the run's limits)"
    )
    cpu_seconds: int = Field(10, ge=1, le=600, description="CPU-time limit of one run (RLIMIT_CPU)")
    memory_bytes: int = Field(512 * 1024 * 1024, ge=16 * 1024 * 1024, description="address-space limit (RLIMIT_AS)")
    output_bytes: int = Field(64 * 1024, ge=1024, description="stdout and stderr kept, each; the rest is cut")
    file_bytes: int = Field(16 * 1024 * 1024, ge=0, description="largest file the code may write (RLIMIT_FSIZE)")
    processes: int = Field(
        32, ge=8, le=4096, description="processes and threads the child may have at once (RLIMIT_NPROC)"
    )
    open_files: int = Field(256, ge=32, le=65536, description="open file descriptors of the child (RLIMIT_NOFILE)")


class ReviewSettings(BaseModel):
    """The tier-3 review page the worker serves to its human expert (paper 3.1.1, Tier 3)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = Field("127.0.0.1", description="interface of the review page; keep it on loopback or behind TLS")
    port: int = Field(8700, ge=0, le=65535, description="port of the review page (0: any free port)")
    password: SecretStr | None = Field(
        None, description="the expert's sign-in password; a fresh one is generated and printed when unset"
    )
    session_hours: float = Field(12.0, gt=0, description="how long a sign-in lasts")


class ProviderSettings(BaseModel):
    """The provider's side of an open session (the SDK, `trust submit`, the gateway): how a lost
    chain RPC or IPFS node is waited for. Each failed step is retried after `backoff_seconds`,
    doubled per try up to `max_backoff_seconds`, until the connection comes back or it has been lost
    for `outage_seconds`; then the audit stops with one error naming the session (which goes on on
    chain and can be resumed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outage_seconds: float = Field(
        120.0, ge=0, description="how long a lost RPC or IPFS node is retried during a session (0: never)"
    )
    backoff_seconds: float = Field(0.5, gt=0, description="first retry delay, doubled per try")
    max_backoff_seconds: float = Field(10.0, gt=0, description="longest retry delay")


class GatewaySettings(BaseModel):
    """The provider gateway's accounts (`trust gateway`, docs/gateway.md "Accounts"): where its API
    keys live, the limits a key gets unless it was created with its own, and whether providers pay
    their share of each epoch's fee from their escrow. Limits use the `limits` package's notation:
    "N/second", "N/minute", "N/hour" or "N/day" (also "N per 10 minutes")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path | None = Field(
        None, description="the gateway's key database (keys.sqlite3); <home>/gateway when unset"
    )
    default_rate: str = Field("10/minute", description="submissions one key may make in a moving window")
    default_quota: str = Field(
        "1000/day", description="traces one key may have accepted: N/<window> (moving window) or N (in total)"
    )
    billing: bool = Field(
        True,
        description="charge each provider's escrow its pro rata share of the epoch's fee (402 when unfunded); "
        "off: the gateway's wallet pays for every key holder",
    )


class WorkerSettings(BaseModel):
    """The auditor daemon (`trust worker run`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path | None = Field(None, description="state of the worker (SQLite); <home>/worker/<address> when unset")
    poll_seconds: float = Field(1.0, gt=0, le=60, description="how often the chain is read for new events")
    block_poll_seconds: float | None = Field(
        None,
        gt=0,
        le=60,
        description=(
            "between two reads, look this often for a new block and read at once when one came (one "
            "eth_blockNumber each time): a key envelope or a closed commit window is acted on within this "
            "long instead of poll_seconds; unset: only every poll_seconds"
        ),
    )
    commit_margin_seconds: float = Field(
        5.0, ge=0, description="aim to commit at least this long before the commit window closes"
    )
    audits_in_parallel: int = Field(
        4, ge=1, le=256, description="seats audited at once (a tier-3 seat waits on a person)"
    )
    max_attempts: int = Field(6, ge=1, le=100, description="tries of one step before the seat is reported failed")
    backoff_seconds: float = Field(1.0, gt=0, description="first retry delay of a failed step, doubled per try")
    max_backoff_seconds: float = Field(30.0, gt=0)
    log_blocks: int = Field(2_000, ge=1, description="most blocks read in one eth_getLogs request")
    start_block: int | None = Field(
        None, ge=0, description="first block a new worker reads; the current block minus log_blocks when unset"
    )
    # Capacity and backpressure (docs/worker.md, "Capacity and backpressure").
    backpressure: bool = Field(
        True,
        description="leave the draw (setAvailable(false)) while a seat drawn now could not be audited before its "
        "commit deadline, or while the auditor says it cannot work, and come back once it can",
    )
    audit_seconds_tier1: float = Field(2.0, gt=0, description="seconds one tier-1 audit takes, until one is measured")
    audit_seconds_tier2: float = Field(30.0, gt=0, description="seconds one tier-2 audit takes, until one is measured")
    audit_seconds_tier3: float = Field(
        300.0, gt=0, description="seconds one tier-3 audit (a person) takes, until one is measured"
    )
    audit_samples: int = Field(
        20, ge=1, le=1000, description="recent audit durations kept in the state file for the estimate"
    )
    audit_quantile: float = Field(
        0.9, gt=0, le=1, description="the estimate of one audit's seconds is this quantile of the recent durations"
    )
    backpressure_out_load: float = Field(
        0.9,
        gt=0,
        le=1,
        description="leave the draw when a seat drawn now would be ready after this share of its commit window "
        "(less the commit margin)",
    )
    backpressure_in_load: float = Field(
        0.5, gt=0, le=1, description="come back into the draw once that share is this low again (hysteresis)"
    )
    pipeline_blocks: int = Field(
        64,
        ge=0,
        description="a segment waiting for its draw counts toward the expected seats until its randomness block "
        "is this many blocks old",
    )
    health_check_seconds: float = Field(
        5.0, gt=0, description="how often the auditor's own health and the on-chain availability are read"
    )
    tier2_checks: bool = Field(
        False,
        description="a tier-2 worker audits with the tier-1 deterministic checks instead of a model: for benchmarks "
        "of the protocol's economics on claims the checks decide exactly (`trust bench byzantine --adversary veto`), "
        "where tier 2 must never err; not an audit of reasoning",
    )
    sandbox: SandboxSettings = SandboxSettings()
    review: ReviewSettings = ReviewSettings()

    @model_validator(mode="after")
    def _hysteresis(self) -> WorkerSettings:
        if self.backpressure_in_load >= self.backpressure_out_load:
            raise ValueError(
                f"backpressure_in_load ({self.backpressure_in_load}) must be below backpressure_out_load "
                f"({self.backpressure_out_load}), or the worker would switch in and out every tick"
            )
        return self

    def audit_seconds_prior(self, tier: int) -> float:
        """The seconds one audit of `tier` is assumed to take before the worker has measured one."""
        return {1: self.audit_seconds_tier1, 2: self.audit_seconds_tier2, 3: self.audit_seconds_tier3}[tier]


class BeaconSettings(BaseModel):
    """The threshold BLS randomness beacon (`trust beacon`, `trust.services.beacon`): how many signers a home
    runs, how many of them make a signature, and how they follow the chain."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    randomness: Literal["beacon", "blockhash"] = Field(
        "beacon",
        description="the source a devnet or demo deploys; blockhash is INSECURE (a block producer picks it)",
    )
    signers: int = Field(3, ge=1, le=255, description="n: signer processes, one Shamir share each")
    threshold: int = Field(2, ge=1, le=255, description="t: partial signatures that make the group signature")
    poll_seconds: float = Field(0.5, gt=0, le=60, description="how often a signer reads the chain for requests")
    backup_delay_blocks: int = Field(
        2,
        ge=0,
        le=200,
        description="blocks a signer waits before publishing a block that another signer was due to publish",
    )
    log_blocks: int = Field(2_000, ge=1, description="most blocks read in one eth_getLogs request")
    extra_requesters: list[str] = Field(
        default_factory=list,
        description="accounts besides the audit contract whose requests the signers answer (tests, other consumers)",
    )
    operator_funding_wei: int = Field(10 * 10**18, ge=0, description="gas money a devnet gives each signer's account")
    start_timeout_seconds: float = Field(60.0, gt=0, description="wait for each signer to follow the chain")
    stop_timeout_seconds: float = Field(10.0, gt=0, description="wait for a clean stop before SIGKILL")

    @model_validator(mode="after")
    def _threshold_within_signers(self) -> BeaconSettings:
        if self.threshold > self.signers:
            raise ValueError(
                f"beacon threshold t = {self.threshold} is above the number of signers n = {self.signers}; "
                "set TRUST_BEACON__THRESHOLD to at most TRUST_BEACON__SIGNERS"
            )
        return self


class Settings(BaseSettings):
    """Everything the `trust` command and the library read from the outside world."""

    model_config = SettingsConfigDict(env_prefix="TRUST_", env_nested_delimiter="__", extra="ignore", frozen=True)

    rpc_url: str | None = Field(None, description="JSON-RPC endpoint; the devnet's when unset")
    home: Path = Field(default_factory=lambda: Path.home() / ".trust", description="state of the devnet and wallets")
    deployments_dir: Path | None = Field(
        None,
        description="where per-chain address files live; deploy/deployments in a checkout, <home>/deployments "
        "for an installed package",
    )
    tx_timeout_seconds: float = Field(120.0, gt=0)
    protocol: ProtocolSettings = ProtocolSettings()
    governance: GovernanceSettings = GovernanceSettings()
    devnet: DevnetSettings = DevnetSettings()
    audit: AuditSettings = AuditSettings()
    refinement: RefinementSettings = RefinementSettings()
    llm: LlmSettings = LlmSettings()
    # Tier-2 auditors may judge with another model than the one that decomposes traces.
    auditor_llm: LlmSettings = LlmSettings()
    ipfs: IpfsSettings = IpfsSettings()
    worker: WorkerSettings = WorkerSettings()
    provider: ProviderSettings = ProviderSettings()
    gateway: GatewaySettings = GatewaySettings()
    beacon: BeaconSettings = BeaconSettings()

    @property
    def effective_rpc_url(self) -> str:
        return self.rpc_url or self.devnet.rpc_url

    @property
    def devnet_dir(self) -> Path:
        return self.home / "devnet"

    @property
    def beacon_dir(self) -> Path:
        """The beacon's keys (the dealer's files) and its signers' records and logs."""
        return self.home / "beacon"

    @property
    def gateway_dir(self) -> Path:
        return self.gateway.data_dir or self.home / "gateway"

    def deployments_path(self, root: Path | None) -> Path:
        """`deployments_dir`, else the checkout's `deploy/deployments`, else (`root` None: a package
        installed from a wheel, which has no checkout to write into) `<home>/deployments`."""
        if self.deployments_dir is not None:
            return self.deployments_dir
        return root / "deploy" / "deployments" if root is not None else self.home / "deployments"

    def devnet_protocol(self) -> ProtocolSettings:
        """The protocol settings of the devnet: the same numbers with windows short enough to watch
        and committees small enough for a handful of auditors."""
        d = self.devnet
        return ProtocolSettings.model_validate(
            self.protocol.model_dump()
            | {
                "commit_window_seconds": d.commit_window_seconds,
                "reveal_window_seconds": d.reveal_window_seconds,
                "unbonding_delay_seconds": d.unbonding_delay_seconds,
                "committee_size_tier1": d.committee_size_tier1,
                "committee_size_tier2": d.committee_size_tier2,
                "committee_size_tier3": d.committee_size_tier3,
                "max_rounds": d.max_rounds,
            }
        )
