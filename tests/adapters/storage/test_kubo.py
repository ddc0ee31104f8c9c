"""The Kubo RPC client against the real local IPFS node (`trust ipfs up`), over HTTP.

Misbehaviour a healthy node never shows (a tampered or truncated body, a node with another layout, a
flaky gateway in front of the node) comes from `WireProxy`: a real HTTP server between the client and
the node that forwards every request and rewrites what the test asks it to, on the wire.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest
from pydantic import SecretStr

from tests.adapters.storage.blobs import blob
from trust.adapters.local.processes import free_port
from trust.adapters.storage.kubo import ADD_PARAMS, KuboClient
from trust.core.cid import CHUNK_SIZE_BYTES, DAG_PB_CODEC, RAW_CODEC, parse_cid, unixfs_cid
from trust.errors import ContentNotFound, IpfsError, VerificationError
from trust.settings import IpfsSettings, Settings

pytestmark = pytest.mark.slow

KB = 1000
UNKNOWN_CID = "bafkreibpdlpfk3f7zzgafakbsfslatabxbbzivxuzbok6cfghmdqkyh3ta"  # a blob no test adds


# --- the node ---------------------------------------------------------------------------------


@pytest.fixture
async def client(ipfs_api_url: str) -> AsyncIterator[KuboClient]:
    async with KuboClient(ipfs_api_url, content_timeout_seconds=2, backoff_seconds=0.01) as kubo:
        yield kubo


# --- a wire-level proxy ---------------------------------------------------------------------------


@dataclass
class Exchange:
    """What the proxy saw and answered."""

    path: str
    query: dict[str, str]
    status: int
    authorization: str | None = None


Rewrite = Callable[[str, int, bytes], tuple[int, bytes]]


@dataclass
class WireProxy:
    """Forwards `POST /api/v0/...` to the node; `rewrite_query`, `rewrite_response` and `canned`
    change what goes through. Every exchange is recorded."""

    upstream: str
    rewrite_query: Callable[[str, dict[str, str]], dict[str, str]] | None = None
    rewrite_response: Rewrite | None = None
    canned: list[tuple[int, bytes]] = field(default_factory=list)  # answered first, in order
    exchanges: list[Exchange] = field(default_factory=list)
    url: str = ""

    def serve(self) -> Iterator[WireProxy]:
        proxy = self
        upstream = urlsplit(self.upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                parts = urlsplit(self.path)
                query = dict(parse_qsl(parts.query, keep_blank_values=True))
                body = self._body()
                if proxy.canned:
                    status, answer = proxy.canned.pop(0)
                    return self._answer(parts.path, query, status, answer, "text/plain")
                authorization = self.headers.get("Authorization")
                if proxy.rewrite_query is not None:
                    query = proxy.rewrite_query(parts.path, query)
                connection = HTTPConnection(upstream.hostname or "127.0.0.1", upstream.port, timeout=60)
                try:
                    headers = {"Content-Type": self.headers.get("Content-Type", "application/octet-stream")}
                    connection.request("POST", f"{parts.path}?{urlencode(query)}", body=body, headers=headers)
                    response = connection.getresponse()
                    status, answer = response.status, response.read()
                    content_type = response.getheader("Content-Type", "application/octet-stream")
                finally:
                    connection.close()
                if proxy.rewrite_response is not None:
                    status, answer = proxy.rewrite_response(parts.path, status, answer)
                self._answer(parts.path, query, status, answer, content_type, authorization)

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length", 0)))

            def _answer(
                self,
                path: str,
                query: dict[str, str],
                status: int,
                body: bytes,
                content_type: str,
                authorization: str | None = None,
            ) -> None:
                proxy.exchanges.append(Exchange(path, query, status, authorization))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    def commands(self) -> list[str]:
        return [exchange.path.removeprefix("/api/v0/") for exchange in self.exchanges]


@pytest.fixture
def proxy(ipfs_api_url: str) -> Iterator[WireProxy]:
    yield from WireProxy(ipfs_api_url).serve()


async def _pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


# --- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1 * KB, 300 * KB, 5_000 * KB], ids=["1KB", "300KB", "5MB"])
async def test_blobs_round_trip_byte_identical_under_kubos_cid(client: KuboClient, size: int) -> None:
    data = blob(size, seed=b"round-trip")
    cid = await client.add(data)
    assert cid == unixfs_cid(data)
    assert await client.cat(cid, expected_digest=hashlib.sha256(data).digest()) == data
    assert (await client.pin_ls(cid)).get(cid) == "recursive"
    root = await client.block_stat(cid)
    parsed = parse_cid(cid)
    if size <= CHUNK_SIZE_BYTES:
        assert parsed.codec == RAW_CODEC and root.size_bytes == size  # the blob is its own raw leaf
    else:
        assert parsed.codec == DAG_PB_CODEC
        chunks = -(-size // CHUNK_SIZE_BYTES)
        first_leaf = unixfs_cid(data[:CHUNK_SIZE_BYTES])
        assert (await client.block_stat(first_leaf)).size_bytes == CHUNK_SIZE_BYTES
        assert root.size_bytes < 60 * chunks  # a dag-pb root of `chunks` links, not the data


async def test_small_blob_is_a_raw_leaf_cidv1(client: KuboClient) -> None:
    data = blob(1 * KB, seed=b"raw")
    cid = await client.add(data)
    parsed = parse_cid(cid)
    assert cid.startswith("bafkrei")
    assert (parsed.version, parsed.codec, parsed.hash_code) == (1, RAW_CODEC, 0x12)
    assert parsed.digest == hashlib.sha256(data).digest()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"hello world\n", "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4"),
        (b"", "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"),
    ],
)
async def test_published_vectors_through_the_node(client: KuboClient, data: bytes, expected: str) -> None:
    assert await client.add(data) == expected
    assert await client.cat(expected) == data


async def test_streamed_upload_equals_bytes_upload(client: KuboClient) -> None:
    data = blob(1_500 * KB, seed=b"stream")
    streamed = await client.add(_pieces(data, 77_777))
    assert streamed == await client.add(data) == unixfs_cid(data)
    assert await client.cat(streamed) == data


async def test_unpinned_add_is_not_pinned_until_pin_add(client: KuboClient) -> None:
    data = os.urandom(40 * KB)  # fresh, so no earlier run pinned it
    cid = await client.add(data, pin=False)
    assert await client.pin_ls(cid) == {}
    await client.pin_add(cid)
    assert await client.pin_ls(cid) == {cid: "recursive"}
    assert cid in await client.pin_ls(pin_type="recursive")


async def test_pin_rm_unpins_and_says_when_nothing_was_pinned(client: KuboClient) -> None:
    cid = await client.add(blob(3 * KB, seed=b"unpin"))
    assert await client.pin_ls(cid) == {cid: "recursive"}
    assert await client.pin_rm(cid) is True
    assert await client.pin_ls(cid) == {}
    assert await client.pin_rm(cid) is False
    assert await client.cat(cid) == blob(3 * KB, seed=b"unpin")  # unpinned, not deleted


async def test_version_names_the_node(client: KuboClient) -> None:
    version = await client.version()
    assert version.version


# Helia's importer (JavaScript) against cid.py (Python): deep trees from small chunks and few links.
LAYOUTS = [
    (0, 16, 3),
    (1, 16, 3),
    (16, 16, 3),
    (17, 16, 3),
    (48, 16, 3),
    (49, 16, 3),
    (144, 16, 3),
    (145, 16, 3),
    (433, 16, 3),
    (1000, 7, 2),
    (4096, 64, 174),
    (175 * 4, 4, 174),
]


@pytest.mark.parametrize(("size", "chunk_size", "max_links"), LAYOUTS)
async def test_cid_py_matches_an_independent_importer_on_deep_trees(
    ipfs_api_url: str, size: int, chunk_size: int, max_links: int
) -> None:
    data = blob(size, seed=f"{size}/{chunk_size}/{max_links}".encode())
    params = ADD_PARAMS | {"chunker": f"size-{chunk_size}", "max-file-links": str(max_links), "pin": "false"}
    async with httpx.AsyncClient(base_url=f"{ipfs_api_url}/api/v0/", trust_env=False) as http:
        response = await http.post("add", params=params, files={"file": ("blob", data, "application/octet-stream")})
    assert response.status_code == 200, response.text
    assert response.json()["Hash"] == unixfs_cid(data, chunk_size=chunk_size, max_links=max_links)


# --- what must be rejected ----------------------------------------------------------------------------


def _flip_one_byte(path: str, status: int, body: bytes) -> tuple[int, bytes]:
    if path.endswith("/cat") and body:
        tampered = bytearray(body)
        tampered[len(body) // 2] ^= 0x01
        return status, bytes(tampered)
    return status, body


@pytest.mark.parametrize("size", [1 * KB, 300 * KB], ids=["raw-leaf", "dag-pb"])
async def test_tampered_blob_is_rejected(client: KuboClient, proxy: WireProxy, size: int) -> None:
    data = blob(size, seed=b"tamper")
    cid = await client.add(data)
    proxy.rewrite_response = _flip_one_byte
    async with KuboClient(proxy.url, max_retries=0) as through_proxy:
        with pytest.raises(VerificationError, match="does not match its CID") as info:
            await through_proxy.cat(cid, expected_digest=hashlib.sha256(data).digest())
    assert cid in str(info.value)
    assert proxy.commands() == ["cat"]


async def test_truncated_blob_is_rejected(client: KuboClient, proxy: WireProxy) -> None:
    data = blob(300 * KB, seed=b"truncate")
    cid = await client.add(data)
    proxy.rewrite_response = lambda path, status, body: (status, body[:-1] if path.endswith("/cat") else body)
    async with KuboClient(proxy.url) as through_proxy:
        with pytest.raises(VerificationError, match="tampered or truncated"):
            await through_proxy.cat(cid)


async def test_other_content_under_the_right_cid_fails_the_ciphertext_digest(client: KuboClient) -> None:
    data = blob(2 * KB, seed=b"digest")
    cid = await client.add(data)
    other = hashlib.sha256(b"the committed ciphertext").digest()
    with pytest.raises(VerificationError, match="expected ciphertext digest") as info:
        await client.cat(cid, expected_digest=other)
    assert other.hex() in str(info.value) and hashlib.sha256(data).hexdigest() in str(info.value)


async def test_oversized_blobs_are_refused_both_ways(ipfs_api_url: str, client: KuboClient, proxy: WireProxy) -> None:
    data = blob(300 * KB, seed=b"big")
    cid = await client.add(data)
    with pytest.raises(VerificationError, match="larger than the limit of 100000 bytes"):
        await client.cat(cid, max_bytes=100_000)
    async with KuboClient(proxy.url, max_blob_bytes=100_000) as small:
        with pytest.raises(VerificationError, match="over the limit of 100000"):
            await small.add(data)
    assert proxy.exchanges == [], "refused before sending"
    async with KuboClient(ipfs_api_url, max_blob_bytes=100_000) as small:
        with pytest.raises(VerificationError, match="reaches 100001 bytes, over the limit of 100000"):
            await small.add(_pieces(data, 100_001))
        assert (await small.version()).version, "the node survives the aborted upload"


async def test_a_node_with_another_layout_is_an_error(proxy: WireProxy) -> None:
    # Helia's defaults: 1 MiB chunks and 1024 links per node
    proxy.rewrite_query = lambda path, query: (
        query | {"chunker": "size-1048576", "max-file-links": "1024"} if path.endswith("/add") else query
    )
    data = blob(1_300 * KB, seed=b"layout")
    async with KuboClient(proxy.url) as through_proxy:
        with pytest.raises(VerificationError, match="lays files out differently") as info:
            await through_proxy.add(data)
    assert unixfs_cid(data) in str(info.value)


async def test_malformed_cid_is_refused_before_any_request(client: KuboClient, proxy: WireProxy) -> None:
    async with KuboClient(proxy.url) as through_proxy:
        for call in (through_proxy.cat, through_proxy.block_stat, through_proxy.pin_add):
            with pytest.raises(VerificationError, match="not a valid CID"):
                await call("bafy-not-a-cid")
        with pytest.raises(VerificationError, match="cannot be verified"):
            await through_proxy.cat("QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn")  # CIDv0: not Kubo's v1 layout
    assert proxy.exchanges == []


# --- errors from the node ------------------------------------------------------------------------


async def test_unknown_cid_is_content_not_found(client: KuboClient, proxy: WireProxy) -> None:
    for call in (client.cat, client.block_stat, client.pin_add):
        with pytest.raises(ContentNotFound, match=UNKNOWN_CID):
            await call(UNKNOWN_CID)
    assert await client.pin_ls(UNKNOWN_CID) == {}
    async with KuboClient(proxy.url, content_timeout_seconds=2, max_retries=3) as through_proxy:
        with pytest.raises(ContentNotFound):
            await through_proxy.cat(UNKNOWN_CID)
    assert proxy.commands() == ["cat"], "a Kubo error body is an answer: never retried"
    assert proxy.exchanges[0].query["timeout"] == "2s", "the node is told how long to search"


async def test_node_down_is_an_ipfs_error_naming_the_url_and_the_fix() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with KuboClient(url, max_retries=2, backoff_seconds=0.01) as down:
        for call in (down.version, lambda: down.add(b"x"), lambda: down.cat(UNKNOWN_CID)):
            with pytest.raises(IpfsError, match="trust ipfs up") as info:
                await call()
            assert url in str(info.value) and "after 3 attempt(s)" in str(info.value)


async def test_gateway_errors_are_retried_with_backoff(client: KuboClient, proxy: WireProxy) -> None:
    data = blob(3 * KB, seed=b"retry")
    cid = await client.add(data)
    proxy.canned = [(503, b"upstream unavailable"), (502, b"bad gateway")]
    async with KuboClient(proxy.url, max_retries=2, backoff_seconds=0.01) as through_proxy:
        assert await through_proxy.cat(cid) == data
        assert [e.status for e in proxy.exchanges] == [503, 502, 200]
        proxy.canned = [(503, b"upstream unavailable")] * 3
        with pytest.raises(IpfsError, match="HTTP 503 after 3 attempt") as info:
            await through_proxy.add(data)
        assert "upstream unavailable" in str(info.value)


async def test_streamed_upload_is_not_replayed_after_a_gateway_error(client: KuboClient, proxy: WireProxy) -> None:
    proxy.canned = [(503, b"upstream unavailable")]
    async with KuboClient(proxy.url, max_retries=3, backoff_seconds=0.01) as through_proxy:
        with pytest.raises(IpfsError, match="HTTP 503 after 1 attempt"):
            await through_proxy.add(_pieces(blob(10 * KB), 1000))
    assert len(proxy.exchanges) == 1


async def test_a_gateway_url_is_named_as_the_likely_mistake(proxy: WireProxy) -> None:
    proxy.canned = [(404, b"404 page not found")]
    async with KuboClient(proxy.url, max_retries=0) as through_proxy:
        with pytest.raises(IpfsError, match="not a gateway"):
            await through_proxy.version()


async def test_a_closed_client_refuses_every_call(ipfs_api_url: str) -> None:
    kubo = KuboClient(ipfs_api_url)
    async with kubo:
        await kubo.version()
    assert kubo.closed
    with pytest.raises(IpfsError, match="closed"):
        await kubo.version()
    with pytest.raises(IpfsError, match="closed"):
        await kubo.cat(UNKNOWN_CID)
    with pytest.raises(IpfsError, match="closed"):
        async with kubo:
            pass


async def test_from_settings_reads_the_ipfs_section(ipfs_api_url: str, proxy: WireProxy) -> None:
    settings = Settings(ipfs=IpfsSettings(api_url=ipfs_api_url + "/api/v0/", timeout_seconds=7.0, max_retries=1))
    async with KuboClient.from_settings(settings) as kubo:
        assert kubo.api_url == ipfs_api_url
        assert kubo.max_retries == 1
        await kubo.version()
    local = IpfsSettings(port=5199)
    async with KuboClient.from_settings(local, max_retries=0) as default:
        assert default.api_url == "http://127.0.0.1:5199" and default.max_retries == 0
    with_token = IpfsSettings(api_url=proxy.url, api_token=SecretStr("s3cret"))
    async with KuboClient.from_settings(with_token) as kubo:
        await kubo.version()
    assert proxy.exchanges[0].authorization == "Bearer s3cret"


def test_bad_construction_is_refused() -> None:
    with pytest.raises(IpfsError, match="http://"):
        KuboClient("127.0.0.1:5001")
    with pytest.raises(IpfsError, match="timeout_seconds must be positive"):
        KuboClient(timeout_seconds=0)
