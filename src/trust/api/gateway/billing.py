"""Billing: each provider pays its share of its epoch's session fee from its deposit in `ProviderEscrow`.

The gateway's wallet opens every batch session and pays its fee (the audit contract takes it from the
session's opener); the escrow pays the gateway back, provider by provider:

1. Admission (`Billing.admit`, before 202): the trace's estimate is the minimum fee of a session of
   its segments alone (`TRUSTAudit.minimumFee`). The key's provider must have, in the escrow, an
   available deposit and an authorization of the gateway (per charge and in total) covering this
   estimate plus the estimates of its traces still waiting for their epoch. Otherwise 402, with the
   amount missing and the commands that fix it. Nothing is reserved yet: a trace may still expire.
2. The epoch closes (`Billing.reserve`): each trace's estimate is reserved in the escrow, one
   transaction per trace, BEFORE anything is uploaded or the session opened. A reservation that
   fails (the provider withdrew or cut the authorization since admission) fails that trace alone,
   with `payment_failed`; the batch goes on without it, and the gateway has paid nothing for it.
3. The batch's fee F is the minimum fee of the surviving traces' segments, split pro rata to each
   trace's estimate (`pro_rata`), exactly: the shares add up to F. The estimate is proportional to
   the trace's first-round seats (the fee is R per first-round seat over the auditors' share), so
   this is the split by first-round seats, not by segments: a tier-3 segment seats more auditors than
   a tier-1 one and costs its provider more. A share is never above its estimate (the ceiling of a
   sum is at most the sum of the ceilings), so it fits the reservation.
4. The session opens (`Billing.charge`): each reservation is charged its share, naming the session
   and its trace root; the rest of the reservation (a few wei of rounding) goes back to the provider.
   If the session never opens, every reservation is released (`Billing.release`).

Gas is not billed: the gateway's operator pays the gas of the batch sessions and of these
reservations and charges.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.escrow import EscrowContract
from trust.adapters.chain.protocol import Protocol, protocol_artifacts
from trust.adapters.chain.types import SegmentSpec
from trust.adapters.local.toolchain import Toolchain
from trust.core.amounts import eth_text
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag
from trust.errors import ChainError, ContractReverted
from trust.services.sdk.client import segment_profiles
from trust.services.sdk.config import AuditConfig
from trust.settings import Settings

__all__ = [
    "Billing",
    "BillingRefused",
    "BillingUnavailable",
    "ChargeRecord",
    "open_escrow",
    "pro_rata",
    "reservation_id",
]

log = logging.getLogger("trust.api.gateway.service")

_PLACEHOLDER_DIGEST = b"\x01" * 32
"""`minimumFee` reads only the tiers; the digest must merely be non-zero."""

ChargeStatus = Literal["estimated", "reserved", "charged", "released", "failed"]


class BillingUnavailable(ChainError):
    """The deployment has no escrow: a billing gateway cannot take submissions (503)."""


class BillingRefused(Exception):
    """A submission the escrow cannot pay for (HTTP 402): its code and a message naming the amounts
    and the command that fixes it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class ChargeRecord:
    """What one audit costs its provider, from the estimate at admission to the charge on chain.
    Mutated by the gateway only, on the event loop. Amounts in wei."""

    provider: str
    escrow: str
    estimate_wei: int
    reservation_id: bytes
    status: ChargeStatus = "estimated"
    amount_wei: int | None = None
    """The trace's pro rata share of the batch's fee, once the epoch closed."""
    reserve_tx: str | None = None
    charge_tx: str | None = None
    release_tx: str | None = None
    session_id: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "provider": self.provider,
            "escrow": self.escrow,
            "status": self.status,
            "estimate_wei": str(self.estimate_wei),
            "amount_wei": None if self.amount_wei is None else str(self.amount_wei),
            "reservation_id": "0x" + self.reservation_id.hex(),
            "reserve_tx": self.reserve_tx,
            "charge_tx": self.charge_tx,
            "release_tx": self.release_tx,
            "session_id": self.session_id,
            "error": self.error,
        }


def reservation_id(audit_id: str) -> bytes:
    """The escrow reservation of an audit: SHA-256 of its id, so that the chain never shows the id
    (which reads the result) and each audit's reservation is its own."""
    return hashlib.sha256(f"trust-gateway-reservation:{audit_id}".encode()).digest()


def pro_rata(total_wei: int, weights: Sequence[int]) -> list[int]:
    """`total_wei` split in proportion to `weights`, in whole wei that add up to `total_wei` exactly:
    each gets the floor of its exact share, and the wei left over (fewer than there are weights)
    go one each to the largest remainders, the earlier entry first on a tie."""
    whole = sum(weights)
    if whole <= 0 or total_wei < 0 or any(w < 0 for w in weights):
        raise ValueError(f"cannot split {total_wei} wei by weights {list(weights)}")
    shares = [total_wei * w // whole for w in weights]
    left = total_wei - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: (-(total_wei * weights[i] % whole), i))
    for i in order[:left]:
        shares[i] += 1
    return shares


@asynccontextmanager
async def open_escrow(
    settings: Settings, rpc_url: str, artifacts: dict[str, Artifact] | None = None
) -> AsyncIterator[tuple[Protocol, EscrowContract]]:
    """The protocol and the escrow of the deployment at `rpc_url` (what `trust gateway deposit` and
    the gateway both use); `BillingUnavailable` when the deployment has no escrow."""
    async with Protocol.connect(settings, rpc_url, artifacts=artifacts) as protocol:
        deployment = protocol.deployment
        if deployment.escrow is None:
            path = settings.deployments_path(Toolchain.discover().root)
            raise BillingUnavailable(
                f"the deployment at {path} has no ProviderEscrow (it predates billing): redeploy with "
                "`trust deploy` (a devnet: `trust devnet up`), or run the gateway with --no-billing"
            )
        yield protocol, EscrowContract(protocol.chain, deployment.escrow)


def _specs(graph: Hdag | Cig, config: AuditConfig) -> list[SegmentSpec]:
    profiles = segment_profiles(graph, config)
    return [SegmentSpec(p.tier, p.weight, _PLACEHOLDER_DIGEST, p.critical) for p in profiles.values() if p.audited]


class Billing:
    """The escrow side of one gateway: `operator` is the gateway's wallet (it opens the sessions and
    is the operator providers authorize). A chain connection is opened per use, as the SDK does."""

    def __init__(
        self,
        operator: LocalAccount,
        settings: Settings,
        rpc_url: str,
        *,
        artifacts: dict[str, Artifact] | None = None,
    ) -> None:
        self.operator = operator
        self.settings = settings
        self.rpc_url = rpc_url
        self._artifacts = artifacts

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[tuple[Protocol, EscrowContract]]:
        if self._artifacts is None:
            self._artifacts = protocol_artifacts()
        async with open_escrow(self.settings, self.rpc_url, self._artifacts) as opened:
            yield opened

    async def admit(
        self, provider: str | None, graph: Hdag | Cig, config: AuditConfig, waiting_wei: int, audit_id: str
    ) -> ChargeRecord:
        """The charge record of a new submission of `provider`, whose traces not yet reserved hold
        `waiting_wei` of estimates; `BillingRefused` (402) when its escrow cannot cover it."""
        if provider is None:
            raise BillingRefused(
                "no_provider",
                "this API key is bound to no provider address, so no escrow can pay for its traces: ask the "
                "gateway's operator for a key created with --provider <your address>",
            )
        gateway = self.operator.address
        async with self._connection() as (protocol, escrow):
            estimate = await protocol.audit.minimum_fee(_specs(graph, config))
            account = await escrow.account(provider)
            authorization = await escrow.authorization(provider, gateway)
        needed = waiting_wei + estimate
        waiting = f" (and {eth_text(waiting_wei)} for its traces waiting for their epoch)" if waiting_wei else ""
        how = (
            f"the escrow is {escrow.address}; `trust gateway deposit --amount <ETH> --keystore <your wallet>` "
            "deposits, `trust gateway authorize --operator "
            f"{gateway} --max-per-charge <ETH> --allowance <ETH> --keystore <your wallet>` authorizes"
        )
        if account.available_wei < needed:
            raise BillingRefused(
                "insufficient_deposit",
                f"provider {provider} has {eth_text(account.available_wei)} available in the escrow; this trace "
                f"needs up to {eth_text(estimate)}{waiting}: deposit at least "
                f"{eth_text(needed - account.available_wei)} more ({needed - account.available_wei} wei). {how}",
            )
        if authorization.max_per_charge_wei < estimate:
            raise BillingRefused(
                "insufficient_authorization",
                f"provider {provider} lets the gateway {gateway} charge at most "
                f"{eth_text(authorization.max_per_charge_wei)} per trace; this one needs up to "
                f"{eth_text(estimate)} ({estimate} wei): raise the cap per charge. {how}",
            )
        if authorization.allowance_wei < needed:
            raise BillingRefused(
                "insufficient_authorization",
                f"provider {provider} has {eth_text(authorization.allowance_wei)} left of the allowance it gave "
                f"the gateway {gateway}; this trace needs up to {eth_text(estimate)}{waiting}: authorize at least "
                f"{eth_text(needed)} ({needed} wei). {how}",
            )
        return ChargeRecord(to_checksum_address(provider), escrow.address, estimate, reservation_id(audit_id))

    async def reserve(self, records: Sequence[ChargeRecord]) -> list[str | None]:
        """Reserves each record's estimate, in order (one transaction each); returns, per record, None
        or why its reservation failed (the record is then `failed`)."""
        errors: list[str | None] = []
        async with self._connection() as (_protocol, escrow):
            for record in records:
                try:
                    sent = await escrow.reserve(
                        self.operator, record.provider, record.reservation_id, record.estimate_wei
                    )
                except ContractReverted as exc:
                    record.status, record.error = "failed", f"the escrow refused the reservation: {exc}"
                    errors.append(record.error)
                    continue
                record.status, record.reserve_tx = "reserved", sent.tx_hash
                errors.append(None)
        return errors

    async def batch_fee(self, entries: Sequence[tuple[Hdag | Cig, AuditConfig]]) -> int:
        """The minimum fee of one session of all these traces' segments."""
        specs = [spec for graph, config in entries for spec in _specs(graph, config)]
        async with self._connection() as (protocol, _escrow):
            return await protocol.audit.minimum_fee(specs)

    async def charge(self, records: Sequence[ChargeRecord], session_id: int) -> None:
        """Charges each reserved record its `amount_wei` for `session_id` (read for its trace root).
        A charge that fails is logged and left `failed` on its record: the session is already paid."""
        async with self._connection() as (protocol, escrow):
            root = (await protocol.audit.session(session_id)).trace_root
            for record in records:
                if record.status != "reserved" or record.amount_wei is None:
                    continue
                record.session_id = session_id
                try:
                    sent = await escrow.charge(
                        self.operator, record.provider, record.reservation_id, record.amount_wei, session_id, root
                    )
                except ChainError as exc:
                    record.status, record.error = "failed", f"the charge for session {session_id} failed: {exc}"
                    log.warning("billing: %s", record.error)
                    continue
                record.status, record.charge_tx = "charged", sent.tx_hash

    async def release(self, records: Sequence[ChargeRecord]) -> None:
        """Gives back every reserved record (its session never opened). A release that fails is
        logged: the reservation lapses on its own after the escrow's RESERVATION_SECONDS."""
        reserved = [record for record in records if record.status == "reserved"]
        if not reserved:
            return
        try:
            async with self._connection() as (_protocol, escrow):
                for record in reserved:
                    sent = await escrow.release(self.operator, record.provider, record.reservation_id)
                    record.status, record.release_tx = "released", sent.tx_hash
        except ChainError as exc:
            log.warning("billing: releasing reservations failed (they lapse on their own): %s", exc)
