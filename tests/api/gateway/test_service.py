"""The provider gateway (`/v1/audits`), over HTTP.

Without a network (httpx's ASGI transport): the error format and statuses of bad input (400, 413 for a
declared and for a chunked body, 422, 404), 503 when the chain is down, every documented form of a
trace, the OpenAPI document.

Against a whole local network (Anvil, the local IPFS node, the contracts and three tier-1 workers as
separate processes), the gateway served by uvicorn together with the explorer:

- two providers' traces in one epoch land in ONE session opened by the gateway's wallet, their
  segments interleaved on chain, each verdict judged on the trace's own segments and equal to the
  SDK's verdict for the trace audited alone (the sound one VALID inside an INVALID session, the
  flawed one INVALID at its two wrong additions); one followed over server-sent events (status,
  progress, then the result), the other polled; every segment's inclusion proof checks on chain;
- refused input, IPFS down, an audit past its latency budget, a gateway stopped with its epoch open,
  and a batch whose session cannot be opened leave no session, no pins and the wallet's nonce
  unchanged;
- billing (API keys bound to providers, `ProviderEscrow`): 402 for a key without a provider, a
  deposit short of the estimate (waiting traces included) and a missing authorization, each sending
  nothing; a provider who withdraws after admission fails alone at the reservation, before the
  session opens; the two funded traces share one session and each is charged its pro rata share,
  shown in its result with the charge's transaction and checked against the escrow's events.

The traces are running sums: every node, the goal included, is a calculation tier 1 decides, so the
tier-1 workers settle every segment in the first round (a clinical trace's goal and strategy are
out of tier 1's reach: its workers would not vote and the segments would wait for their windows).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from eth_account import Account
from eth_account.signers.local import LocalAccount

from tests.api.story import serve
from tests.core.graphs.cig_strategies import APPLES_LOG
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import compile_protocol
from trust.adapters.chain.escrow import EscrowContract
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import SegmentSpec
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.processes import free_port
from trust.adapters.local.toolchain import Toolchain
from trust.adapters.storage.kubo import KuboClient
from trust.api.app import LOCAL_GATEWAY_INDEX, create_app
from trust.api.gateway.access import AccessControl
from trust.api.gateway.keys import KeyStore
from trust.api.gateway.service import GatewayOptions, parse_trace
from trust.core.amounts import decimal_text
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import EdgeType, Hdag, HdagNode, Level, Tier
from trust.core.graphs.serialization import dumps
from trust.core.graphs.status import NodeStatus
from trust.core.privacy.merkle import SegmentLeaf
from trust.errors import GraphError
from trust.lab.localnet import LocalNetwork, WorkerSpec
from trust.services.sdk import AuditConfig, TrustClient, Verdict
from trust.services.sdk.client import segment_profiles
from trust.settings import DevnetSettings, Settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

WORKERS = [WorkerSpec(1)] * 3
ADDITIONS = 11
"""Steps of the running-sum traces: 12 segments each, so two shuffled traces that happen not to
interleave (all of one before all of the other) come up once in C(24, 12) / 2, about 1.4 million."""
WRONG_STEPS = (5, 9)
EPOCH_SECONDS = 600.0
"""Long: the module's epochs close by count (two traces), never by time."""
BODY_LIMIT = 64 * 1024
SMALL_LIMIT = 8 * 1024
TIER1 = {"auditor_tiers": [1], "max_latency_ms": 300_000}
POLL_SECONDS = 0.25
HTTP_TIMEOUT = httpx.Timeout(60.0)


def running_sum(wrong: tuple[int, ...] = ()) -> Hdag:
    """ "Add 1 to ADDITIONS one at a time": the goal (the whole sum) and one operation per addition,
    each depending on the previous one; an addition in `wrong` is off by one, and the later ones
    carry the wrong total on correctly."""
    graph = Hdag()
    terms = " + ".join(str(i) for i in range(1, ADDITIONS + 1))
    expected = ADDITIONS * (ADDITIONS + 1) // 2
    graph.add_node(HdagNode("goal", Level.GOAL, f"Add the numbers one at a time: {terms} = {expected}.", domain="math"))
    total, previous = 0, "goal"
    for i in range(1, ADDITIONS + 1):
        new = total + i + (1 if i in wrong else 0)
        text = f"{total} + {i} = {new}"
        node_id = f"add{i}"
        graph.add_node(
            HdagNode(node_id, Level.OPERATION, text, domain="math", tier=Tier.COMPUTATIONAL, expression=text)
        )
        graph.add_edge(previous, node_id, EdgeType.DECOMPOSES_TO if previous == "goal" else EdgeType.DEPENDS_ON)
        total, previous = new, node_id
    return graph


def _document(graph: Hdag) -> dict[str, Any]:
    return {"kind": "trace", "trace": json.loads(dumps(graph)), "config": TIER1}


def _offline_app(**options: Any) -> Any:
    """The gateway alone, pointed at a chain and an IPFS node that are not there."""
    dead = f"http://127.0.0.1:{free_port()}"
    account = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX)
    return create_app(
        account, Settings(), rpc_url=dead, ipfs_url=dead, explorer=False, options=GatewayOptions(**options)
    )


def _asgi(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway")


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    message: str = body["error"]["message"]
    return message


# ---------------------------------------------------------------------------------------- no network


async def test_bad_input_gets_a_json_error_naming_the_problem() -> None:
    async with _asgi(_offline_app(max_body_bytes=SMALL_LIMIT)) as http:
        message = _error(
            await http.post("/v1/audits", json={"kind": "agents", "trace": "{not json"}), 400, "invalid_trace"
        )
        assert "not valid JSON" in message and "line 1, column 2 (character 1)" in message
        cyclic = json.loads(dumps(running_sum()))
        cyclic["edges"].append({"source": "add3", "target": "add2", "type": "depends_on"})
        assert "cycle" in _error(await http.post("/v1/audits", json={"trace": cyclic}), 400, "invalid_trace")
        steps = {"trace": {"problem": "2 + 2?", "steps": ["2 + 2 = 4", 4]}}
        assert "trace: steps[1] must be a string" in _error(
            await http.post("/v1/audits", json=steps), 400, "invalid_trace"
        )
        # A trust.hdag document cut short is refused with its position, never audited as prose.
        truncated = {"trace": '{"format": "trust.hdag", "version": 1, "nodes": ['}
        message = _error(await http.post("/v1/audits", json=truncated), 400, "invalid_trace")
        assert "trace is not valid JSON" in message and "line 1, column 50 (character 49)" in message
        agent_log = {"trace": APPLES_LOG}
        assert "--agents" in _error(await http.post("/v1/audits", json=agent_log), 400, "invalid_trace")

        message = _error(await http.post("/v1/audits", json={"trace": "x" * 2 * SMALL_LIMIT}), 413, "body_too_large")
        assert "declares" in message and f"{SMALL_LIMIT:,} bytes" in message

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(4):
                yield b" " * (SMALL_LIMIT // 2)

        chunked = await http.post("/v1/audits", content=chunks(), headers={"content-type": "application/json"})
        assert chunked.request.headers["transfer-encoding"] == "chunked"
        assert "while streaming" in _error(chunked, 413, "body_too_large")

        schema = await http.post("/v1/audits", json={"trace": "2 + 2 = 4", "config": {"fee_wei": 1}})
        assert "body.config.fee_wei" in _error(schema, 422, "invalid_request")
        assert schema.json()["error"]["details"][0]["type"] == "extra_forbidden"
        tiers = await http.post("/v1/audits", json={"trace": "2 + 2 = 4", "config": {"auditor_tiers": ["gpu"]}})
        assert "unknown auditor tier 'gpu'" in _error(tiers, 422, "invalid_request")
        assert "kind" in _error(
            await http.post("/v1/audits", json={"kind": "essay", "trace": "a"}), 422, "invalid_request"
        )
        garbled = await http.post("/v1/audits", content=b"{nope", headers={"content-type": "application/json"})
        assert "not JSON" in _error(garbled, 422, "invalid_json")

        for path in ("/v1/audits/unknown", "/v1/audits/unknown/events", "/v1/audits/unknown/proof"):
            assert "no audit 'unknown'" in _error(await http.get(path), 404, "not_found")
        assert "Not Found" in _error(await http.get("/v1/other"), 404, "not_found")


async def test_every_documented_form_of_a_trace_parses() -> None:
    config = AuditConfig()
    document = dumps(running_sum())
    steps = ["4 * 6 = 24 eggs in packs.", "24 + 2 = 26", "So the shop sells 26 eggs."]
    forms: list[str | dict[str, Any] | list[Any]] = [
        "Step 1: 4 * 6 = 24 eggs in packs.\nStep 2: 24 + 2 = 26.",
        document,
        json.loads(document),
        steps,
        {"problem": "How many eggs?", "steps": steps},
    ]
    for form in forms:
        graph = parse_trace("trace", form, config)
        assert isinstance(graph, Hdag) and len(graph) > 1
    assert set(parse_trace("trace", document, config).graph.nodes) == set(running_sum().graph.nodes)
    for log in (APPLES_LOG, json.dumps(APPLES_LOG)):
        agents = parse_trace("agents", log, config)
        assert isinstance(agents, Cig) and len(agents) == len(APPLES_LOG["turns"])
    with pytest.raises(GraphError, match='no "steps" field and is not a trust.hdag document'):
        parse_trace("trace", {"text": "2 + 2 = 4"}, config)
    with pytest.raises(GraphError, match="max_trace_chars|over the limit"):
        parse_trace("trace", ["x" * 600, "y" * 600], AuditConfig(max_trace_chars=1000))


@pytest.mark.slow  # the chain adapter retries the connection for a few seconds before it gives up
async def test_the_chain_down_is_503_with_the_sdks_message() -> None:
    async with _asgi(_offline_app()) as http:
        response = await http.post("/v1/audits", json={"trace": "Step 1: 2 + 2 = 4.\nStep 2: 4 * 3 = 12."})
        assert "cannot reach the chain" in _error(response, 503, "chain_error")


async def test_the_openapi_document_describes_every_route_and_error() -> None:
    spec = _offline_app().openapi()
    post = spec["paths"]["/v1/audits"]["post"]
    assert post["tags"] == ["audits"] and "202" in post["responses"]
    error = {"$ref": "#/components/schemas/ErrorResponse"}
    for status in ("400", "413", "422", "503"):
        assert post["responses"][status]["content"]["application/json"]["schema"] == error
    assert spec["components"]["schemas"]["SubmitRequest"]["examples"]
    events = spec["paths"]["/v1/audits/{audit_id}/events"]["get"]["responses"]
    assert "text/event-stream" in events["200"]["content"] and events["404"]["content"]["application/json"]
    proof = spec["paths"]["/v1/audits/{audit_id}/proof"]["get"]["responses"]
    assert proof["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ProofView"}
    assert proof["409"]["content"]["application/json"]["schema"] == error


# ---------------------------------------------------------------------------------------- a network


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def network(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalNetwork]:
    async with LocalNetwork(tmp_path_factory.mktemp("network"), WORKERS) as net:
        yield net


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chain(network: LocalNetwork) -> AsyncIterator[Protocol]:
    async with ChainClient(network.rpc_url, compile_protocol(Toolchain.discover())) as client:
        yield Protocol.bind(client, network.deployment)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(network: LocalNetwork) -> AsyncIterator[str]:
    """The gateway and the explorer in one app, served by uvicorn; epochs close at two traces."""
    app = create_app(
        dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX),
        network.settings,
        rpc_url=network.rpc_url,
        ipfs_url=network.ipfs_url,
        options=GatewayOptions(epoch_seconds=EPOCH_SECONDS, max_traces_per_epoch=2, max_body_bytes=BODY_LIMIT),
    )
    async with serve(app) as url:
        yield url


async def _footprint(network: LocalNetwork, chain: Protocol, address: str) -> tuple[int, int, frozenset[str]]:
    """What a submission could leave behind: the wallet's nonce, the sessions on chain, the pins."""
    nonce = int(await chain.chain.w3.eth.get_transaction_count(address))  # type: ignore[arg-type]
    sessions = int(await chain.chain.call(chain.audit.contract.functions.sessionCount()))
    async with KuboClient(network.ipfs_url) as kubo:
        pins = frozenset(await kubo.pin_ls())
    return nonce, sessions, pins


async def _poll(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    """The audit's view once it ended (the audit's own max_latency_ms bounds the wait)."""
    while True:
        view: dict[str, Any] = (await http.get(url)).json()
        if view["status"] in ("done", "failed"):
            return view
        await asyncio.sleep(POLL_SECONDS)


Event = tuple[str, dict[str, Any], int]


async def _follow(http: httpx.AsyncClient, url: str, last_event_id: int | None = None) -> list[Event]:
    """Every server-sent event of an audit, (event, data, id), until its final one."""
    events: list[Event] = []
    fields: dict[str, str] = {}
    headers = {} if last_event_id is None else {"last-event-id": str(last_event_id)}
    async with http.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith(":"):
                continue  # keep-alive comment
            if line:
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
                continue
            if "event" in fields:
                events.append((fields["event"], json.loads(fields["data"]), int(fields["id"])))
                if fields["event"] in ("done", "failed"):
                    return events
            fields = {}
    return events


@pytest.mark.slow
async def test_refused_input_and_ipfs_down_leave_nothing_behind(
    network: LocalNetwork, chain: Protocol, gateway: str
) -> None:
    address = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX).address
    before = await _footprint(network, chain, address)
    async with httpx.AsyncClient(base_url=gateway, timeout=HTTP_TIMEOUT) as http:
        _error(await http.post("/v1/audits", json={"kind": "agents", "trace": "{not json"}), 400, "invalid_trace")
        _error(await http.post("/v1/audits", content=b"{" + b" " * BODY_LIMIT + b"}"), 413, "body_too_large")
        _error(await http.post("/v1/audits", json={**_document(running_sum()), "fee_wei": 1}), 422, "invalid_request")
        assert (await http.get("/explorer/api/status")).status_code == 200  # the explorer shares the app
    offline = create_app(
        dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX),
        network.settings,
        rpc_url=network.rpc_url,
        ipfs_url=f"http://127.0.0.1:{free_port()}",
        explorer=False,
    )
    async with _asgi(offline) as http:
        response = await http.post("/v1/audits", json=_document(running_sum()))
        assert "does not answer" in _error(response, 503, "ipfs_error")
    assert await _footprint(network, chain, address) == before


@pytest.mark.slow
async def test_an_expired_or_stopped_audit_fails_and_its_epoch_sends_nothing(
    network: LocalNetwork, chain: Protocol
) -> None:
    account = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX)
    before = await _footprint(network, chain, account.address)
    app = create_app(
        account,
        network.settings,
        rpc_url=network.rpc_url,
        ipfs_url=network.ipfs_url,
        explorer=False,
        options=GatewayOptions(epoch_seconds=EPOCH_SECONDS, max_traces_per_epoch=3),
    )
    hurried = {**_document(running_sum()), "config": {**TIER1, "max_latency_ms": 1}}
    async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as http:
        expired = await _poll(http, (await http.post("/v1/audits", json=hurried)).json()["links"]["audit"])
        waiting = (await http.post("/v1/audits", json=_document(running_sum()))).json()
        assert waiting["status"] == "queued" and expired["batch"] is None
    assert expired["status"] == "failed" and expired["error"]["code"] == "timeout"
    assert "max_latency_ms = 1" in expired["error"]["message"]
    # The server stopped with the epoch still open: its trace fails, and was never sent.
    stopped = app.state.gateway.get(waiting["id"])
    assert stopped.status == "failed" and stopped.error.code == "gateway_stopped"
    assert await _footprint(network, chain, account.address) == before


@pytest.mark.slow
async def test_a_batch_whose_session_cannot_open_unpins_and_sends_nothing(
    network: LocalNetwork, chain: Protocol
) -> None:
    # A wallet holding the batch's fee and one wei: the checks pass, createSession cannot pay its gas.
    poor = Account.create()
    graph = running_sum()
    profiles = segment_profiles(graph, AuditConfig(auditor_tiers=[1]))
    fee = await chain.audit.minimum_fee(
        [SegmentSpec(p.tier, p.weight, b"\x01" * 32, p.critical) for p in profiles.values()]
    )
    funder = dev_account(DevnetSettings().mnemonic, 0)
    await chain.chain.send_value(funder, poor.address, fee + 1)
    before = await _footprint(network, chain, poor.address)
    app = create_app(
        poor,
        network.settings,
        rpc_url=network.rpc_url,
        ipfs_url=network.ipfs_url,
        explorer=False,
        options=GatewayOptions(max_traces_per_epoch=1),
    )
    async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as http:
        accepted = await http.post("/v1/audits", json=_document(graph))
        assert accepted.status_code == 202, accepted.text
        view = await _poll(http, accepted.json()["links"]["audit"])
        _error(await http.get(view["links"]["proof"]), 409, "no_proof")
    assert view["status"] == "failed" and view["error"]["code"] == "chain_error", view
    assert "createSession" in view["error"]["message"]
    assert await _footprint(network, chain, poor.address) == before


@pytest.mark.slow
async def test_two_providers_share_one_session_and_are_judged_apart(
    network: LocalNetwork, chain: Protocol, gateway: str, tmp_path: Path
) -> None:
    sound, flawed = running_sum(), running_sum(WRONG_STEPS)
    async with httpx.AsyncClient(base_url=gateway, timeout=HTTP_TIMEOUT) as http:
        first = await http.post("/v1/audits", json=_document(sound))
        assert first.status_code == 202, first.text
        accepted = first.json()
        assert accepted["status"] == "queued" and first.headers["location"] == accepted["links"]["audit"]
        assert (await http.get(accepted["links"]["proof"])).json()["error"]["code"] == "proof_not_ready"
        following = asyncio.create_task(_follow(http, accepted["links"]["events"]))
        second = await http.post("/v1/audits", json=_document(flawed))
        assert second.status_code == 202 and second.json()["epoch"] == accepted["epoch"]
        flawed_view = await _poll(http, second.json()["links"]["audit"])
        events = await following
        sound_view = (await http.get(accepted["links"]["audit"])).json()
        proofs = [(await http.get(view["links"]["proof"])).json() for view in (sound_view, flawed_view)]

    # The stream: status queued, batched, auditing, progress of the session, then the result.
    names = [name for name, _, _ in events]
    statuses = [data["status"] for name, data, _ in events if name == "status"]
    assert statuses == ["queued", "batched", "auditing"], events
    assert names[-1] == "done" and events[-1][1] == sound_view
    auditing = next(i for i, (name, data, _) in enumerate(events) if data.get("status") == "auditing")
    assert "progress" in names[auditing:], "no progress event while auditing"
    assert [number for _, _, number in events] == sorted({number for _, _, number in events})
    # A stream that reconnects gets what it missed, and after the end the result again.
    async with httpx.AsyncClient(base_url=gateway, timeout=HTTP_TIMEOUT) as http:
        replay = await _follow(http, accepted["links"]["events"], last_event_id=events[-3][2])
        again = await _follow(http, accepted["links"]["events"], last_event_id=events[-1][2])
    assert replay == events[-2:] and again == events[-1:]

    # One session for both, from the gateway's wallet; each trace judged on its own segments.
    assert sound_view["status"] == flawed_view["status"] == "done", (sound_view, flawed_view)
    batch = sound_view["batch"]
    assert batch == {**flawed_view["batch"]} and batch["traces"] == 2 and batch["segments"] == 2 * len(sound)
    session = await chain.audit.session(batch["session_id"])
    gateway_address = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX).address
    assert session.provider.lower() == gateway_address.lower() and session.segment_count == 2 * len(sound)
    sound_result, flawed_result = sound_view["result"], flawed_view["result"]
    assert sound_result["verdict"] == "VALID" and flawed_result["verdict"] == "INVALID"
    assert set(sound_result["nodes"]) == set(sound.graph.nodes), "node ids come back as the provider gave them"
    assert {c["node"] for c in flawed_result["root_causes"]} == {f"add{i}" for i in WRONG_STEPS}
    for cause in flawed_result["root_causes"]:
        assert cause["critiques"] and all(c["vote"] == "fail" and "/" not in c["critique"] for c in cause["critiques"])
    # The session's verdict covers the batch: the flawed trace's critical failures make it INVALID.
    assert session.valid is False and proofs[0]["session_valid_on_chain"] is False and proofs[0]["verdict"] == "VALID"

    # The segments of the two traces are interleaved in the session, and each is provably in it.
    owned = [{s["segment"] for s in proof["segments"]} for proof in proofs]
    assert owned[0] | owned[1] == set(range(2 * len(sound))) and not owned[0] & owned[1]
    assert not all(max(seg) - min(seg) + 1 == len(seg) for seg in owned), "one trace's segments are contiguous"
    for proof in proofs:
        assert proof["trace_root"] == "0x" + session.trace_root.hex() and proof["session_id"] == batch["session_id"]
        for segment in proof["segments"]:
            leaf = SegmentLeaf(
                segment["segment"],
                bytes.fromhex(segment["cid"][2:]),
                bytes.fromhex(segment["ciphertext_digest"][2:]),
                segment["tier"],
                segment["weight"],
                segment["critical"],
            )
            assert await chain.segment_keys.verify_segment(
                batch["session_id"], leaf, [bytes.fromhex(p[2:]) for p in segment["proof"]]
            )

    # The same verdicts as the SDK gives each trace audited alone.
    client = TrustClient(
        network.rpc_url, network.ipfs_url, account=network.provider, settings=network.settings, journal_dir=tmp_path
    )
    config = AuditConfig(auditor_tiers=[1])
    alone = await asyncio.gather(client.audit_trace(sound, config), client.audit_trace(flawed, config))
    for batched, solo in zip((sound_result, flawed_result), alone, strict=True):
        assert batched["verdict"] == str(solo.verdict)
        assert {n: node["status"] for n, node in batched["nodes"].items()} == {
            n: str(status) for n, status in solo.statuses().items()
        }
        assert {c["node"] for c in batched["root_causes"]} == {c.node_id for c in solo.root_causes}
    assert alone[0].verdict is Verdict.VALID and alone[1].statuses()["add6"] is NodeStatus.INVALID_CASCADE


# ---------------------------------------------------------------------------------------- billing


async def _provider_wallet(chain: Protocol, escrow: EscrowContract, deposit_wei: int, cap_wei: int) -> LocalAccount:
    """A fresh provider with gas money, `deposit_wei` in the escrow and, when `cap_wei`, the gateway
    authorized for `cap_wei` per trace and ten times that in all."""
    wallet: LocalAccount = Account.create()
    await chain.chain.send_value(dev_account(DevnetSettings().mnemonic, 0), wallet.address, 10**18)
    if deposit_wei:
        await escrow.deposit(wallet, deposit_wei)
    if cap_wei:
        gateway = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX).address
        await escrow.authorize(wallet, gateway, cap_wei, 10 * cap_wei)
    return wallet


def _gateway_cli(network: LocalNetwork, *args: str) -> str:
    """`trust gateway ARGS` against the network, as a provider runs it; its standard output."""
    env = dict(
        os.environ,
        TRUST_RPC_URL=network.rpc_url,
        TRUST_DEPLOYMENTS_DIR=str(network.settings.deployments_dir),
        TRUST_HOME=str(network.settings.home),
        COLUMNS="400",
    )
    done = subprocess.run(
        [sys.executable, "-m", "trust", "gateway", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
async def test_providers_pay_their_share_from_the_escrow(
    network: LocalNetwork, chain: Protocol, tmp_path: Path
) -> None:
    """402 for each way of being unfunded (nothing sent for it); a provider who withdraws after its
    submission was admitted fails at the reservation, before the session opens, alone; the two
    funded traces are audited in one session and each is charged its pro rata share, which the
    audit's result shows with the charge's transaction."""
    assert network.deployment.escrow is not None
    escrow = EscrowContract(chain.chain, network.deployment.escrow)
    gateway_account = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX)
    sound, flawed = running_sum(), running_sum(WRONG_STEPS)
    profiles = segment_profiles(sound, AuditConfig(auditor_tiers=[1]))
    estimate = await chain.audit.minimum_fee(
        [SegmentSpec(p.tier, p.weight, b"\x01" * 32, p.critical) for p in profiles.values()]
    )
    alice = await _provider_wallet(chain, escrow, 0, 0)
    alice_deposit = estimate + estimate // 2  # one trace, not two
    bob = await _provider_wallet(chain, escrow, 3 * estimate, estimate)
    # Carol is the network's provider (Anvil's account 3, the command line's default on a local
    # chain) and manages her escrow with `trust gateway deposit / authorize / withdraw / balance`.
    carol = network.provider
    ether = decimal_text(estimate)
    await asyncio.to_thread(_gateway_cli, network, "deposit", "--amount", ether)
    authorized = await asyncio.to_thread(
        _gateway_cli,
        network,
        "authorize",
        "--operator",
        gateway_account.address,
        "--max-per-charge",
        ether,
        "--allowance",
        ether,
    )
    assert f"up to {ether} ETH per trace" in authorized
    store = KeyStore(tmp_path / "gateway")
    tokens = {
        name: store.create(name, provider=wallet.address)[1]
        for name, wallet in (("alice", alice), ("bob", bob), ("carol", carol))
    }
    _, unbound = store.create("unbound")
    access = AccessControl(store, default_rate="100/minute", default_quota="100/day")
    app = create_app(
        gateway_account,
        network.settings,
        rpc_url=network.rpc_url,
        ipfs_url=network.ipfs_url,
        explorer=False,
        options=GatewayOptions(epoch_seconds=EPOCH_SECONDS, max_traces_per_epoch=3),
        access=access,
        billing=True,
    )

    def client(url: str, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT, headers={"authorization": f"Bearer {token}"})

    before = await _footprint(network, chain, gateway_account.address)
    async with serve(app) as url:
        async with client(url, unbound) as http:
            assert "--provider" in _error(await http.post("/v1/audits", json=_document(sound)), 402, "no_provider")
        async with client(url, tokens["alice"]) as http:
            message = _error(await http.post("/v1/audits", json=_document(sound)), 402, "insufficient_deposit")
            assert "deposit at least" in message and f"({estimate} wei)" in message and escrow.address in message
            assert "trust gateway deposit" in message
            await escrow.deposit(alice, alice_deposit)
            message = _error(await http.post("/v1/audits", json=_document(sound)), 402, "insufficient_authorization")
            assert gateway_account.address in message and "trust gateway authorize" in message
            assert await _footprint(network, chain, gateway_account.address) == before, "a 402 sent nothing"
            await escrow.authorize(alice, gateway_account.address, estimate, 10 * estimate)
            first = await http.post("/v1/audits", json=_document(sound))
            assert first.status_code == 202, first.text
            # Admitted traces count against the deposit until they are reserved.
            queued = _error(await http.post("/v1/audits", json=_document(sound)), 402, "insufficient_deposit")
            assert "waiting for their epoch" in queued
        async with client(url, tokens["carol"]) as http:
            racing = await http.post("/v1/audits", json=_document(sound))
            assert racing.status_code == 202, racing.text
        withdrawn = await asyncio.to_thread(_gateway_cli, network, "withdraw", "--amount", ether)
        assert f"withdrew {ether} ETH" in withdrawn  # after admission, before the epoch closes
        async with client(url, tokens["bob"]) as http:
            second = await http.post("/v1/audits", json=_document(flawed))
            assert second.status_code == 202 and second.json()["epoch"] == first.json()["epoch"], second.text
            _error(await http.get(first.json()["links"]["audit"]), 404, "not_found")  # alice's, not bob's
            bob_view = await _poll(http, second.json()["links"]["audit"])
        async with client(url, tokens["alice"]) as http:
            alice_view = await _poll(http, first.json()["links"]["audit"])
        async with client(url, tokens["carol"]) as http:
            carol_view = await _poll(http, racing.json()["links"]["audit"])

    assert carol_view["status"] == "failed" and carol_view["error"]["code"] == "payment_failed", carol_view
    assert "EscrowInsufficientBalance" in carol_view["error"]["message"]
    assert carol_view["batch"] is None, "it never joined the batch"
    assert carol_view["billing"]["status"] == "failed" and carol_view["billing"]["charge_tx"] is None
    assert alice_view["status"] == bob_view["status"] == "done", (alice_view, bob_view)
    session_id = alice_view["result"]["session_id"]
    session = await chain.audit.session(session_id)
    assert session.segment_count == 2 * len(sound), "carol's trace never reached the session"
    assert bob_view["result"]["session_id"] == session_id and alice_view["result"]["verdict"] == "VALID"
    assert alice_view["batch"]["traces"] == bob_view["batch"]["traces"] == 2
    charged = {}
    for name, view, wallet, deposit in (
        ("alice", alice_view, alice, alice_deposit),
        ("bob", bob_view, bob, 3 * estimate),
    ):
        bill = view["billing"]
        assert bill["status"] == "charged" and bill["session_id"] == session_id, bill
        assert bill["provider"] == wallet.address and bill["escrow"] == escrow.address
        amount = int(bill["amount_wei"])
        assert 0 < amount <= int(bill["estimate_wei"]) == estimate
        receipt = await chain.chain.w3.eth.get_transaction_receipt(bill["charge_tx"])
        (event,) = escrow.contract.events.Charged().process_receipt(receipt)
        assert event["args"]["provider"] == wallet.address and event["args"]["sessionId"] == session_id
        assert event["args"]["amountWei"] == amount and event["args"]["traceRoot"] == session.trace_root
        account = await escrow.account(wallet.address)
        assert account.balance_wei == deposit - amount and account.reserved_wei == 0, name
        charged[name] = amount
    # Pro rata by first-round seats: the two traces seat alike, so they share the fee exactly.
    assert sum(charged.values()) == session.fee_wei and abs(charged["alice"] - charged["bob"]) <= 1
    balance = json.loads(
        await asyncio.to_thread(_gateway_cli, network, "balance", "--provider", carol.address, "--json")
    )
    assert balance["balance_wei"] == balance["available_wei"] == "0", balance
