"""One connection to an EVM chain: sending signed transactions, deploying, decoding reverts.

Everything that talks JSON-RPC goes through `ChainClient`, so that swapping Anvil for a public RPC
is a matter of the URL. Transactions are signed locally with eth-account (`LocalAccount`); no key
ever reaches the node. A revert is raised as `ContractReverted` carrying the decoded custom error
of our contracts (name and arguments), never as a raw hex blob.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast

from aiohttp import ClientSession, ClientTimeout, TCPConnector
from eth_abi import decode as abi_decode
from eth_account.signers.local import LocalAccount
from eth_utils import function_signature_to_4byte_selector, to_checksum_address
from web3 import AsyncHTTPProvider, AsyncWeb3
from web3._utils.http_session_manager import HTTPSessionManager
from web3.contract.async_contract import AsyncContract, AsyncContractEvent, AsyncContractFunction
from web3.exceptions import ContractLogicError, TimeExhausted, Web3RPCError
from web3.types import BlockIdentifier, RPCEndpoint, TxParams, TxReceipt

from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.logs import EventPlan
from trust.adapters.chain.views import ViewPlan, abi_type
from trust.errors import ChainError, ContractReverted

__all__ = ["ChainClient", "ErrorDecoder", "SentTransaction"]

_PANIC_SELECTOR = bytes.fromhex("4e487b71")
_ERROR_STRING_SELECTOR = bytes.fromhex("08c379a0")
_GAS_HEADROOM = 1.25
_GAS_MARGIN = 20_000


class ErrorDecoder:
    """Maps 4-byte selectors of the custom errors in a set of ABIs to their names and arguments."""

    def __init__(self, abis: Iterable[Sequence[dict[str, Any]]]) -> None:
        self._errors: dict[bytes, tuple[str, list[str], list[str]]] = {}
        for abi in abis:
            for item in abi:
                if item.get("type") != "error":
                    continue
                types = [abi_type(p) for p in item["inputs"]]
                names = [p["name"] or f"arg{i}" for i, p in enumerate(item["inputs"])]
                selector = function_signature_to_4byte_selector(f"{item['name']}({','.join(types)})")
                self._errors[selector] = (item["name"], names, types)

    def decode(self, data: bytes) -> tuple[str, dict[str, Any]] | None:
        """The error name and arguments encoded in revert `data`, or None when unknown."""
        if len(data) < 4:
            return None
        selector, body = data[:4], data[4:]
        if selector == _ERROR_STRING_SELECTOR:
            (reason,) = abi_decode(["string"], body)
            return "Error", {"reason": reason}
        if selector == _PANIC_SELECTOR:
            (code,) = abi_decode(["uint256"], body)
            return "Panic", {"code": hex(code)}
        known = self._errors.get(selector)
        if known is None:
            return None
        name, names, types = known
        values = abi_decode(types, body)
        return name, {n: (v.hex() if isinstance(v, bytes) else v) for n, v in zip(names, values, strict=True)}


def _revert_data(exc: ContractLogicError) -> bytes:
    data = exc.data
    if isinstance(data, dict):
        data = data.get("data")
    if isinstance(data, str) and data.startswith("0x"):
        try:
            return bytes.fromhex(data[2:])
        except ValueError:
            return b""
    return b""


@dataclass(frozen=True, slots=True)
class SentTransaction:
    """A mined transaction: its hash, receipt and the gas it used."""

    tx_hash: str
    receipt: TxReceipt

    @property
    def gas_used(self) -> int:
        return int(self.receipt["gasUsed"])

    @property
    def block_number(self) -> int:
        return int(self.receipt["blockNumber"])


# One nonce lock per (event loop, node, sender), shared by every ChainClient on that loop: two
# connections sending from one wallet (two audits run side by side) would otherwise both read the
# same pending nonce. Clients on different loops or processes still race; give each its own wallet.
_NONCE_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


CALLS_PER_BATCH: Final = 100
"""View calls per JSON-RPC batch in `ChainClient.call_many` (public nodes cap batches, at 100 to
1,000 requests)."""
_BATCH_TIMEOUT: Final = ClientTimeout(total=60)
_UNANSWERED: Final = object()


def _encoded(plan: ViewPlan, codec: Any, fn: AsyncContractFunction) -> str | None:
    """The call data of `fn` by its plan, or None where the strict codec refuses an argument (web3
    normalizes it, or says what is wrong)."""
    try:
        return plan.encode(codec, fn.args or ())
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def _decoded(plan: ViewPlan, codec: Any, result: Any) -> Any:
    """The decoded result of an `eth_call`, or `_UNANSWERED` when there is none to decode (an
    error, an empty result, data that does not decode): web3 is then asked, and says why."""
    if not isinstance(result, str) or len(result) <= 2:
        return _UNANSWERED
    try:
        return plan.decode(codec, bytes.fromhex(result[2:]))
    except Exception:  # noqa: BLE001 - see the docstring
        return _UNANSWERED


_Plan = TypeVar("_Plan", ViewPlan, EventPlan)


def _cached_plan(
    cache: dict[tuple[str, str], _Plan | None],
    kind: type[_Plan],
    address: str,
    item_type: str,
    name: str,
    contract_abi: Iterable[Any],
    item_abi: Any,
) -> _Plan | None:
    """The plan of the function or event `name` of the contract at `address`, made once: None
    (web3 then serves it) when the contract has several of that name, or `kind.fits` says no."""
    key = (address, name)
    if key not in cache:
        named = [i for i in contract_abi if i.get("type") == item_type and i.get("name") == name]
        fits = len(named) == 1 and kind.fits(dict(item_abi))
        cache[key] = kind.of(dict(item_abi)) if fits else None
    return cache[key]


def _block_param(block: BlockIdentifier) -> Any:
    """A block identifier as JSON-RPC takes it: a number in hex, a tag or hash as it is."""
    if isinstance(block, int):
        return hex(block)
    if isinstance(block, bytes):
        return "0x" + block.hex()
    return block


def _nonce_lock(rpc_url: str, address: str) -> asyncio.Lock:
    locks = _NONCE_LOCKS.setdefault(asyncio.get_running_loop(), {})
    return locks.setdefault((rpc_url, address), asyncio.Lock())


_BUILD_GAS_PLACEHOLDER = 1
"""A gas limit given to `build_transaction` only so that it skips its own estimate (see
`_prepare_and_send`); it is replaced before anything is signed."""


_UNUSED_MIDDLEWARE: Final = ("validation", "ens_name_to_address")
_KEEPALIVE_SECONDS: Final = 5.0


class _OwnSession(HTTPSessionManager):
    """web3's HTTP session manager, handing out the one session the client owns.

    web3's own looks its cached session up under a process-wide thread lock that it takes in an
    executor thread, on every request: a thread hop per request (2.5 ms of a transaction's 9 ms of
    CPU in a profile), and a request cancelled while it waits for the lock leaves the lock held, so
    every later request of the process waits forever. web3's retries and everything else of the
    provider stay as they are."""

    def __init__(self, session: ClientSession) -> None:
        super().__init__()
        self._session = session

    async def async_cache_and_return_session(
        self, endpoint_uri: Any, session: ClientSession | None = None, request_timeout: Any = None
    ) -> ClientSession:
        return self._session


class ChainClient:
    """An async JSON-RPC connection with local signing. Use as an async context manager."""

    def __init__(self, rpc_url: str, artifacts: dict[str, Artifact], *, tx_timeout_seconds: float = 120.0) -> None:
        self.rpc_url = rpc_url
        self.artifacts = artifacts
        self.w3 = AsyncWeb3(AsyncHTTPProvider(rpc_url, request_kwargs={"timeout": 60}))
        # Two of web3's default middlewares cost a round trip or a name lookup on every request and
        # do nothing for this client: "validation" asks the node for its chain id on every call and
        # transaction (3.1 ms an eth_call on a local node instead of 10.9 ms without it), and every
        # transaction this client signs already carries the chain id read once at `connect`;
        # "ens_name_to_address" resolves ENS names, and every address here is a checksummed hex one.
        for name in _UNUSED_MIDDLEWARE:
            self.w3.middleware_onion.remove(name)
        self.errors = ErrorDecoder(a.abi for a in artifacts.values())
        self._timeout = tx_timeout_seconds
        self._chain_id: int | None = None
        self._closed = False
        self._session: ClientSession | None = None
        self._views: dict[tuple[str, str], ViewPlan | None] = {}
        self._events: dict[tuple[str, str], EventPlan | None] = {}
        #: External libraries this client deployed, by name: linked into every contract it deploys
        #: later (libraries hold no state, so one copy per client serves every deployment).
        self.libraries: dict[str, str] = {}

    async def __aenter__(self) -> ChainClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        # web3's own session opens a new TCP connection for every request (`force_close`); this one
        # keeps them open (an eth_call 1.15 ms instead of 1.49 on an idle local node, and far less
        # under load), closing an idle one after a few seconds, before a node would drop it.
        self._session = ClientSession(
            raise_for_status=True, connector=TCPConnector(keepalive_timeout=_KEEPALIVE_SECONDS)
        )
        cast(AsyncHTTPProvider, self.w3.provider)._request_session_manager = _OwnSession(self._session)
        try:
            self._chain_id = int(await self.w3.eth.chain_id)
        except Exception as exc:  # the provider raises transport-specific errors
            await self.close()
            raise ChainError(
                f"cannot reach the chain at {self.rpc_url}: {exc}. Is the node running (`trust devnet up`)?"
            ) from exc

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.w3.provider.disconnect()
            if self._session is not None:
                await self._session.close()

    @property
    def chain_id(self) -> int:
        if self._chain_id is None:
            raise ChainError("ChainClient is not connected; use `async with ChainClient(...)`")
        return self._chain_id

    def contract(self, name: str, address: str) -> AsyncContract:
        """A contract handle whose struct results decode as named tuples."""
        if self._closed:
            raise ChainError("ChainClient is closed")
        return self.w3.eth.contract(
            address=to_checksum_address(address), abi=self.artifacts[name].abi, decode_tuples=True
        )

    def revert_error(self, exc: ContractLogicError, what: str) -> ContractReverted:
        """A ContractReverted for `exc`, naming the decoded custom error when it is one of ours."""
        decoded = self.errors.decode(_revert_data(exc))
        if decoded is None:
            return ContractReverted(f"{what} reverted: {exc.message or exc}")
        name, args = decoded
        rendered = ", ".join(f"{k}={v}" for k, v in args.items())
        return ContractReverted(f"{what} reverted with {name}({rendered})", name, args)

    async def call(self, fn: AsyncContractFunction, *, block: BlockIdentifier = "latest") -> Any:
        """Calls a view function, translating reverts.

        A function of a contract made by `contract` is called through its `ViewPlan` (see
        `trust.adapters.chain.views`); whatever that path does not answer (an argument the codec
        refuses, a revert, an empty result) is asked again through web3, which raises as usual."""
        plan = self._view_plan(fn)
        data = _encoded(plan, self.w3.codec, fn) if plan is not None else None
        if plan is not None and data is not None:
            response = await self.w3.provider.make_request(
                RPCEndpoint("eth_call"), [{"to": fn.address, "data": data}, _block_param(block)]
            )
            decoded = _decoded(plan, self.w3.codec, response.get("result"))
            if decoded is not _UNANSWERED:
                return decoded
        try:
            return await fn.call(block_identifier=block)
        except ContractLogicError as exc:
            raise self.revert_error(exc, f"{fn.fn_name}()") from exc
        except Web3RPCError as exc:
            raise ChainError(f"{fn.fn_name}() failed at {self.rpc_url}: {exc}") from exc

    async def call_many(self, fns: Sequence[AsyncContractFunction], *, block: BlockIdentifier = "latest") -> list[Any]:
        """`call` of each of `fns`, in order, sent as JSON-RPC batches of `CALLS_PER_BATCH`: one
        HTTP request for a whole tick's reads instead of one per read. A call the batch does not
        answer (a plan-less function, a revert, an empty result) is made again alone with `call`,
        which raises as usual."""
        results: list[Any] = [None] * len(fns)
        alone: list[int] = []
        batch: list[tuple[int, ViewPlan, dict[str, Any]]] = []
        for index, fn in enumerate(fns):
            plan = self._view_plan(fn)
            data = _encoded(plan, self.w3.codec, fn) if plan is not None else None
            if plan is None or data is None:
                alone.append(index)
            else:
                batch.append((index, plan, {"to": fn.address, "data": data}))
        for start in range(0, len(batch), CALLS_PER_BATCH):
            part = batch[start : start + CALLS_PER_BATCH]
            payload = [
                {"jsonrpc": "2.0", "id": n, "method": "eth_call", "params": [call, _block_param(block)]}
                for n, (_, _, call) in enumerate(part)
            ]
            assert self._session is not None, "ChainClient is not connected"
            async with self._session.post(self.rpc_url, json=payload, timeout=_BATCH_TIMEOUT) as response:
                answers = await response.json(content_type=None)
            by_id = {a.get("id"): a for a in answers} if isinstance(answers, list) else {}
            for n, (index, plan, _) in enumerate(part):
                result = by_id.get(n, {}).get("result")
                decoded = _decoded(plan, self.w3.codec, result)
                if decoded is _UNANSWERED:
                    alone.append(index)
                else:
                    results[index] = decoded
        for index, value in zip(
            alone, await asyncio.gather(*(self.call(fns[i], block=block) for i in alone)), strict=True
        ):
            results[index] = value
        return results

    def _view_plan(self, fn: AsyncContractFunction) -> ViewPlan | None:
        """The cached plan of `fn`'s function, or None (web3 then calls it): a contract not made
        with `decode_tuples`, keyword arguments, a name the contract overloads, or outputs a plan
        does not fit (`ViewPlan.fits`)."""
        if not fn.decode_tuples or fn.kwargs or not fn.address:
            return None
        return _cached_plan(self._views, ViewPlan, fn.address, "function", fn.fn_name, fn.contract_abi, fn.abi)

    async def get_logs(
        self,
        events: AsyncContractEvent | Sequence[AsyncContractEvent],
        *,
        from_block: int,
        to_block: BlockIdentifier = "latest",
        argument_filters: dict[str, Any] | None = None,
    ) -> list[Any]:
        """The logs of `events` (of one contract) in blocks `from_block`..`to_block`, in chain
        order, as web3's `get_logs` gives them; several events are read in one request.

        Each event goes through its `EventPlan` (see `trust.adapters.chain.logs`); an event or a
        filter a plan does not take is read through web3. `argument_filters` (indexed arguments,
        one value each) are for one event only."""
        many = list(events) if isinstance(events, Sequence) else [events]
        if len(many) > 1 and argument_filters:
            raise ValueError("argument_filters apply to one event at a time")
        plans = [self._event_plan(event) for event in many]
        topics = None
        if all(plans) and len({event.address for event in many}) == 1:
            found = [p for p in plans if p is not None]
            if len(found) == 1:
                topics = found[0].topics(self.w3.codec, argument_filters)
            else:
                topics = [["0x" + p.topic.hex() for p in found]]
        if topics is None:
            read = [
                e.get_logs(from_block=from_block, to_block=to_block, argument_filters=argument_filters) for e in many
            ]
            logs = [log for part in await asyncio.gather(*read) for log in part]
            return sorted(logs, key=lambda log: (int(log["blockNumber"]), int(log["logIndex"])))
        query = {
            "address": many[0].address,
            "fromBlock": hex(from_block),
            "toBlock": _block_param(to_block),
            "topics": topics,
        }
        response = await self.w3.provider.make_request(RPCEndpoint("eth_getLogs"), [query])
        if "error" in response or not isinstance(response.get("result"), list):
            raise ChainError(f"eth_getLogs at {self.rpc_url} failed: {response.get('error', response)}")
        decoders = {p.topic: p for p in plans if p is not None}
        decoded = []
        for log in response["result"]:
            plan = decoders.get(bytes.fromhex(log["topics"][0][2:])) if log.get("topics") else None
            if plan is not None:  # a node that ignores the topic filter would hand others
                decoded.append(plan.decode(self.w3.codec, log))
        return decoded

    def _event_plan(self, event: AsyncContractEvent) -> EventPlan | None:
        """The cached plan of `event`, or None (web3 then reads it): see `_cached_plan`."""
        return _cached_plan(
            self._events, EventPlan, event.address, "event", event.event_name, event.contract_abi, event.abi
        )

    async def transact(self, fn: AsyncContractFunction, sender: LocalAccount, *, value: int = 0) -> SentTransaction:
        """Signs and sends a contract call from `sender`, waits for it to be mined, and checks it.

        Reverts are detected while estimating gas (nothing is sent) and raised as ContractReverted.
        """
        what = f"{fn.fn_name}() from {sender.address}"
        return await self._prepare_and_send(sender, what, {"value": value}, fn.build_transaction)

    async def deploy(self, name: str, sender: LocalAccount, *args: Any) -> str:
        """Deploys a compiled contract and returns its address.

        The external libraries its bytecode calls are deployed first, once per client, and linked in.
        """
        artifact = self.artifacts[name]
        for library in artifact.libraries:
            if library not in self.libraries:
                self.libraries[library] = await self.deploy(library, sender)
        factory = self.w3.eth.contract(abi=artifact.abi, bytecode=artifact.link(self.libraries))
        what = f"deploying {name}"
        sent = await self._prepare_and_send(sender, what, {}, factory.constructor(*args).build_transaction)
        address = sent.receipt["contractAddress"]
        if not address:
            raise ChainError(f"{what}: the receipt of {sent.tx_hash} has no contract address")
        return to_checksum_address(address)

    async def send_value(self, sender: LocalAccount, to: str, value_wei: int) -> SentTransaction:
        """Sends plain ETH."""
        fields = {"to": to_checksum_address(to), "value": value_wei, "gas": 21_000}
        return await self._prepare_and_send(sender, f"sending {value_wei} wei to {to}", fields)

    async def _prepare_and_send(
        self,
        sender: LocalAccount,
        what: str,
        fields: dict[str, Any],
        build: Callable[[TxParams], Awaitable[TxParams]] | None = None,
    ) -> SentTransaction:
        """Under the sender's nonce lock: fills in sender, chain id and nonce, lets `build` add the
        call data and estimate gas (a revert there raises ContractReverted and nothing is sent),
        then signs, sends and waits."""
        async with _nonce_lock(self.rpc_url, sender.address):
            # The nonce and the fee fields are independent reads: one round trip's wait, not three.
            nonce, fees = await asyncio.gather(
                self.w3.eth.get_transaction_count(sender.address, "pending"), self._fee_fields(fields)
            )
            tx: dict[str, Any] = {"from": sender.address, "chainId": self.chain_id, "nonce": nonce, **fees, **fields}
            if build is not None:
                try:
                    # The call data without web3's own estimate, which runs against the latest block:
                    # a contract that keeps per-block history (the registry's sortition tree) then
                    # looks cheaper than it is when the latest block already wrote that history and
                    # the transaction lands in the next one, and runs out of gas. Estimated against
                    # the pending block instead, the transaction is priced where it will run.
                    built = dict(await build(cast(TxParams, {**tx, "gas": _BUILD_GAS_PLACEHOLDER})))
                    del built["gas"]
                    built["gas"] = await self.w3.eth.estimate_gas(cast(TxParams, built), "pending")
                    tx = built
                except ContractLogicError as exc:
                    raise self.revert_error(exc, what) from exc
                except Web3RPCError as exc:
                    raise ChainError(f"{what} could not be prepared: {exc}") from exc
            return await self._send(tx, sender, what)

    async def _fee_fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """EIP-1559 fee fields unless `fields` sets a fee: a tip the node suggests and a cap of twice
        the latest base fee plus the tip (room for the base fee to double before it is mined). Given
        to `build_transaction`, which would otherwise read the same two values one after the other."""
        if "maxFeePerGas" in fields or "gasPrice" in fields:
            return {}
        block, tip = await asyncio.gather(self.w3.eth.get_block("latest"), self.w3.eth.max_priority_fee)
        return {"maxPriorityFeePerGas": tip, "maxFeePerGas": 2 * int(block["baseFeePerGas"]) + tip}

    async def _send(self, tx: dict[str, Any], sender: LocalAccount, what: str) -> SentTransaction:
        if "gas" in tx and tx.get("gas", 0) > 21_000:
            # The estimate is taken against the pending state; other transactions mined first can
            # make ours costlier (a sortition tree that grew, a slot that became non-zero).
            tx["gas"] = int(tx["gas"] * _GAS_HEADROOM) + _GAS_MARGIN
        signed = sender.sign_transaction(tx)
        try:
            tx_hash = await self.w3.eth.send_raw_transaction(signed.raw_transaction)
            receipt = await self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=self._timeout)
        except TimeExhausted as exc:
            raise ChainError(f"{what}: not mined within {self._timeout} s; check the node") from exc
        except Web3RPCError as exc:
            raise ChainError(f"{what} was refused by the node: {exc}") from exc
        sent = SentTransaction(tx_hash="0x" + bytes(tx_hash).hex(), receipt=receipt)
        if receipt["status"] != 1:
            raise ContractReverted(f"{what} reverted on chain in transaction {sent.tx_hash}")
        return sent

    async def block_number(self) -> int:
        return int(await self.w3.eth.block_number)

    async def balance(self, address: str) -> int:
        return int(await self.w3.eth.get_balance(to_checksum_address(address)))

    async def code_at(self, address: str) -> bytes:
        return bytes(await self.w3.eth.get_code(to_checksum_address(address)))

    async def rpc(self, method: str, params: list[Any]) -> Any:
        """A raw JSON-RPC request (for node-specific methods such as `evm_increaseTime`)."""
        response = await self.w3.provider.make_request(method, params)
        if "error" in response:
            raise ChainError(f"{method} failed: {response['error']}")
        return response.get("result")
