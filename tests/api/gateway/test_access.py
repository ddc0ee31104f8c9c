"""The gateway's accounts without a network: API keys (created and revoked through the `trust` command,
in a real key database), 401 for every way of not holding an active key, 429 over a key's rate and
over its quota (with `Retry-After`), and the public pages that need no key.

The gateway is served through httpx's ASGI transport and pointed at a chain and an IPFS node that are
not there: every submission here is refused before the network is asked (bad input, no key, a limit),
which is the point (refusals come first and cost nothing). The funded, audited path is in
`test_gateway_billing.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.processes import free_port
from trust.api.app import LOCAL_GATEWAY_INDEX, create_app
from trust.api.gateway.access import AccessControl, parse_quota, parse_rate
from trust.api.gateway.keys import KeyStore
from trust.errors import ConfigError
from trust.settings import DevnetSettings, Settings

BAD_TRACE = {"kind": "agents", "trace": "{not json"}
"""Refused with 400 by the parser, before the chain or IPFS is asked."""
DAY_SECONDS = 86_400


def _app(home: Path, *, default_rate: str = "100/minute", default_quota: str = "1000/day") -> Any:
    dead = f"http://127.0.0.1:{free_port()}"
    settings = Settings(home=home)
    access = AccessControl(KeyStore(settings.gateway_dir), default_rate=default_rate, default_quota=default_quota)
    account = dev_account(DevnetSettings().mnemonic, LOCAL_GATEWAY_INDEX)
    return create_app(account, settings, rpc_url=dead, ipfs_url=dead, explorer=False, access=access)


def _client(app: Any, token: str | None = None) -> httpx.AsyncClient:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway", headers=headers)


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    message: str = body["error"]["message"]
    return message


def _trust(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "trust", "gateway", "keys", *args, "--home", str(home)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_keys_are_created_and_revoked_through_the_command_line(tmp_path: Path) -> None:
    created = _trust(tmp_path, "create", "--name", "acme labs", "--rate", "5/minute", "--quota", "20", "--json")
    assert created.returncode == 0, created.stderr
    record = json.loads(created.stdout)
    token = record["key"]
    assert token.startswith(f"trust_{record['id']}_") and len(token) > 50
    assert record["rate"] == "5/minute" and record["quota"] == "20" and record["provider"] is None

    listed = _trust(tmp_path, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [row["id"] for row in rows] == [record["id"]] and rows[0]["revoked_at"] is None
    assert token not in listed.stdout and token.split("_", 2)[2] not in (
        tmp_path / "gateway" / "keys.sqlite3"
    ).read_bytes().decode("latin-1"), "the key is stored only hashed"

    refused = _trust(tmp_path, "create", "--name", "x", "--provider", "0x1234")
    assert refused.returncode == 1 and "--provider '0x1234' is not an Ethereum address" in refused.stderr
    assert "Traceback" not in refused.stderr

    app = _app(tmp_path)
    async with _client(app, token) as http:
        # Past authentication: the trace itself is what is refused.
        _error(await http.post("/v1/audits", json=BAD_TRACE), 400, "invalid_trace")
        revoked = _trust(tmp_path, "revoke", record["id"])
        assert revoked.returncode == 0 and f"revoked key {record['id']}" in revoked.stderr, revoked.stderr
        # The running gateway refuses it at the next request, reads included.
        message = _error(await http.post("/v1/audits", json=BAD_TRACE), 401, "key_revoked")
        assert record["id"] in message and "acme labs" in message
        _error(await http.get("/v1/audits/anything"), 401, "key_revoked")
    again = _trust(tmp_path, "revoke", record["id"])
    assert again.returncode == 1 and "already revoked" in again.stderr
    unknown = _trust(tmp_path, "revoke", "0123456789ab")
    assert unknown.returncode == 1 and "no gateway key '0123456789ab'" in unknown.stderr


async def test_no_key_is_401_and_the_public_pages_stay_public(tmp_path: Path) -> None:
    store = KeyStore(Settings(home=tmp_path).gateway_dir)
    _, token = store.create("acme")
    app = _app(tmp_path)
    key_id = token.split("_")[1]
    attempts = {
        "no header": {},
        "another scheme": {"authorization": f"Basic {token}"},
        "no key after Bearer": {"authorization": "Bearer "},
        "not a key": {"authorization": "Bearer hunter2"},
        "a wrong secret": {"authorization": f"Bearer trust_{key_id}_{'A' * 43}"},
        "an unknown id": {"authorization": f"Bearer trust_ffffffffffff_{token.split('_', 2)[2]}"},
    }
    async with _client(app) as http:
        for what, headers in attempts.items():
            for method, path in (("POST", "/v1/audits"), ("GET", "/v1/audits/x"), ("GET", "/v1/audits/x/events")):
                # A body over any limit: a 401 must come before the body is read.
                response = await http.request(method, path, headers=headers, content=b"{" * 10_000_000)
                message = _error(response, 401, "unauthenticated")
                assert response.headers["www-authenticate"].startswith("Bearer"), what
                assert "Authorization: Bearer" in message, (what, message)
        for public in ("/health", "/openapi.json", "/docs", "/redoc"):
            assert (await http.get(public)).status_code == 200, public
    spec = app.openapi()
    assert spec["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "a gateway API key: `trust gateway keys create`",
    }
    post = spec["paths"]["/v1/audits"]["post"]["responses"]
    assert {"401", "429"} <= set(post)


async def test_over_its_rate_a_key_gets_429_with_retry_after(tmp_path: Path) -> None:
    store = KeyStore(Settings(home=tmp_path).gateway_dir)
    _, limited = store.create("busy", rate="2/minute")
    _, other = store.create("quiet")
    app = _app(tmp_path, default_rate="3/hour")
    async with _client(app, limited) as http:
        for _ in range(2):  # refused submissions count: they are the work a flood makes the gateway do
            _error(await http.post("/v1/audits", json=BAD_TRACE), 400, "invalid_trace")
        response = await http.post("/v1/audits", json=BAD_TRACE)
        message = _error(response, 429, "rate_limited")
        assert 1 <= int(response.headers["retry-after"]) <= 60 and "2 per 1 minute" in message
        for _ in range(5):  # reads never count
            _error(await http.get("/v1/audits/x"), 404, "not_found")
    async with _client(app, other) as http:  # one key's rate is its own; this one has the default
        for _ in range(3):
            _error(await http.post("/v1/audits", json=BAD_TRACE), 400, "invalid_trace")
        response = await http.post("/v1/audits", json=BAD_TRACE)
        assert 3540 < int(response.headers["retry-after"]) <= 3600 and "rate_limited" in response.text


async def test_over_its_quota_a_key_gets_429_and_refusals_do_not_count(tmp_path: Path) -> None:
    store = KeyStore(Settings(home=tmp_path).gateway_dir)
    daily, daily_token = store.create("daily", quota="1/day")
    total, total_token = store.create("total", quota="2")
    app = _app(tmp_path)
    async with _client(app, daily_token) as http:
        # A refused submission gives its slot back.
        _error(await http.post("/v1/audits", json=BAD_TRACE), 400, "invalid_trace")
        assert store.submissions(daily.key_id) == 0
        # One accepted an hour ago (as the gateway records it) uses the day's quota.
        claim, _ = store.claim_submission(daily.key_id, None, 1, time.time() - 3600)
        assert claim is not None
        store.confirm_submission(claim, "earlier-audit")
        response = await http.post("/v1/audits", json=BAD_TRACE)
        message = _error(response, 429, "quota_exceeded")
        assert DAY_SECONDS - 3600 - 60 < int(response.headers["retry-after"]) <= DAY_SECONDS - 3600
        assert "1/day" in message
    for at in (time.time() - 10 * DAY_SECONDS, time.time()):
        claim, _ = store.claim_submission(total.key_id, None, 2, at)
        assert claim is not None
        store.confirm_submission(claim, f"audit-{at}")
    async with _client(app, total_token) as http:
        response = await http.post("/v1/audits", json=BAD_TRACE)
        assert "quota of 2 traces in total" in _error(response, 429, "quota_exceeded")
        assert "retry-after" not in response.headers  # waiting does not help


def test_limits_are_parsed_or_refused_by_name() -> None:
    assert parse_rate("10/minute").get_expiry() == 60
    assert parse_quota("5 per 10 minutes").window_seconds == 600 and parse_quota(" 7 ").window_seconds is None
    for bad in ("ten a minute", "0/minute", "0", "-1"):
        with pytest.raises(ConfigError, match="quota"):
            parse_quota(bad)
    with pytest.raises(ConfigError, match="TRUST_GATEWAY__DEFAULT_RATE"):
        AccessControl(KeyStore(Path("/nonexistent")), default_rate="often", default_quota="1/day")
