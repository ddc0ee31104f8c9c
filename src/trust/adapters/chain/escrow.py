"""Typed access to `ProviderEscrow` (contracts/src/billing): providers' prepaid deposits, the
operators they authorize, and the reservations and charges of each session's share of the fee.

Every write takes its signer explicitly: a provider signs `deposit`, `withdraw` and `authorize`;
the operator (a gateway's wallet) signs `reserve`, `charge` and `release`. Reverts come back as
`ContractReverted` with the contract's custom error decoded (`EscrowInsufficientBalance`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from trust.adapters.chain.client import ChainClient, SentTransaction
from trust.adapters.chain.deployment import ESCROW_CONTRACT

__all__ = ["EscrowAccount", "EscrowAuthorization", "EscrowContract", "EscrowReservation", "ReservationStatus"]


class ReservationStatus(IntEnum):
    NONE = 0
    PENDING = 1
    CHARGED = 2
    RELEASED = 3


@dataclass(frozen=True, slots=True)
class EscrowAccount:
    """A provider's deposit and what pending reservations hold of it, in wei."""

    balance_wei: int
    reserved_wei: int

    @property
    def available_wei(self) -> int:
        """What the provider could withdraw, and what an operator could still reserve."""
        return self.balance_wei - self.reserved_wei


@dataclass(frozen=True, slots=True)
class EscrowAuthorization:
    """What an operator may still reserve of a provider's deposit: per reservation and in all, in wei."""

    max_per_charge_wei: int
    allowance_wei: int


@dataclass(frozen=True, slots=True)
class EscrowReservation:
    operator: str
    expires_at: int
    """Unix seconds (the block timestamp after which it can no longer be charged)."""
    status: ReservationStatus
    amount_wei: int


class EscrowContract:
    """`ProviderEscrow` at `address`."""

    def __init__(self, chain: ChainClient, address: str) -> None:
        self.chain = chain
        self.address = to_checksum_address(address)
        self.contract = chain.contract(ESCROW_CONTRACT, address)

    # -- views
    async def account(self, provider: str) -> EscrowAccount:
        balance, reserved = await self.chain.call(self.contract.functions.account(to_checksum_address(provider)))
        return EscrowAccount(int(balance), int(reserved))

    async def authorization(self, provider: str, operator: str) -> EscrowAuthorization:
        fn = self.contract.functions.authorization(to_checksum_address(provider), to_checksum_address(operator))
        cap, allowance = await self.chain.call(fn)
        return EscrowAuthorization(int(cap), int(allowance))

    async def reservation(self, provider: str, reservation_id: bytes) -> EscrowReservation:
        raw = await self.chain.call(self.contract.functions.reservation(to_checksum_address(provider), reservation_id))
        operator, expires_at, status, amount = raw
        return EscrowReservation(to_checksum_address(operator), int(expires_at), ReservationStatus(status), int(amount))

    async def reservation_seconds(self) -> int:
        return int(await self.chain.call(self.contract.functions.RESERVATION_SECONDS()))

    # -- the provider
    async def deposit(self, provider: LocalAccount, amount_wei: int) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.deposit(), provider, value=amount_wei)

    async def withdraw(self, provider: LocalAccount, amount_wei: int) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.withdraw(amount_wei), provider)

    async def authorize(
        self, provider: LocalAccount, operator: str, max_per_charge_wei: int, allowance_wei: int
    ) -> SentTransaction:
        fn = self.contract.functions.authorize(to_checksum_address(operator), max_per_charge_wei, allowance_wei)
        return await self.chain.transact(fn, provider)

    # -- the operator
    async def reserve(
        self, operator: LocalAccount, provider: str, reservation_id: bytes, amount_wei: int
    ) -> SentTransaction:
        fn = self.contract.functions.reserve(to_checksum_address(provider), reservation_id, amount_wei)
        return await self.chain.transact(fn, operator)

    async def charge(
        self,
        operator: LocalAccount,
        provider: str,
        reservation_id: bytes,
        amount_wei: int,
        session_id: int,
        trace_root: bytes,
    ) -> SentTransaction:
        fn = self.contract.functions.charge(
            to_checksum_address(provider), reservation_id, amount_wei, session_id, trace_root
        )
        return await self.chain.transact(fn, operator)

    async def release(self, sender: LocalAccount, provider: str, reservation_id: bytes) -> SentTransaction:
        fn = self.contract.functions.release(to_checksum_address(provider), reservation_id)
        return await self.chain.transact(fn, sender)
