"""An async client for the Kubo RPC API (`POST {api_url}/api/v0/...`), verifying everything it reads.

It speaks the subset TRUST needs, exactly as Kubo does, so the same client works against the local
Helia node (`trust ipfs up`), a real Kubo daemon, or a pinning service's Kubo-compatible endpoint:

- `add` streams a multipart upload (`cid-version=1&raw-leaves=true&chunker=size-262144`, balanced
  layout, 174 links, sha2-256, pinned) while computing the CID locally (`trust.core.cid`); a node
  that answers another CID lays files out differently, and that is an error (`VerificationError`);
- `cat` ALWAYS recomputes the CID of the bytes it read and, when given, their sha256 (the ciphertext
  digest committed on chain); any mismatch raises `VerificationError` and nothing is returned, so
  nothing unverified reaches a decryption; a blob larger than `max_bytes` is refused while reading;
- `pin_add`, `pin_ls`, `block_stat`, `version`.

Errors: the node unreachable (after retries) is `IpfsError` naming the URL and `trust ipfs up`; Kubo's
error bodies (`{"Message", "Code", "Type": "error"}`) become `ContentNotFound` when they say the
content is missing ("block was not found locally (offline)", "merkledag: not found", "ipld: could
not find", a deadline exceeded while searching) and `IpfsError` otherwise. Content lookups pass
Kubo's `timeout` option (`content_timeout_seconds`), so an unknown CID is reported as not found
instead of waiting on the network.

Retries: a refused or timed-out connection, a dropped connection and a 5xx answer that is not a
Kubo error body (a proxy's 502/503/504) are retried up to `max_retries` times with exponential
backoff (`backoff_seconds * 2**attempt`, capped). A Kubo error body is an answer, not a glitch: it is
never retried. A streamed upload is retried only if nothing of it was sent (its iterator is read once).

Use it as an async context manager; once closed it refuses calls (httpx's client state rule). It
reads no environment (`trust_env=False`); `from_settings` takes `Settings.ipfs` (`IpfsSettings`:
`TRUST_IPFS__API_URL`, `TRUST_IPFS__API_TOKEN` sent as a bearer token, timeouts, retries, limit).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trust.adapters.http import OwnedHttpClient
from trust.core.backoff import backoff_delay
from trust.core.cid import CHUNK_SIZE_BYTES, MAX_LINKS, Cid, UnixfsHasher, parse_cid
from trust.errors import ContentNotFound, IpfsError, VerificationError, excerpt
from trust.settings import IpfsSettings, Settings

__all__ = [
    "ADD_PARAMS",
    "DEFAULT_API_URL",
    "DEFAULT_MAX_BLOB_BYTES",
    "BlockStat",
    "KuboClient",
    "NodeVersion",
]

DEFAULT_API_URL = "http://127.0.0.1:5101"
"""The local node (`trust ipfs up`); a Kubo daemon listens on 5001 by default."""
DEFAULT_MAX_BLOB_BYTES = 64 * 1024 * 1024
"""The largest blob `add` sends and `cat` reads unless told otherwise (a segment is far smaller)."""

# Every option that decides the DAG is explicit, so a node's own defaults (Kubo's Import.* config,
# Helia's 1 MiB chunks) cannot change the CID; `max-file-links` is ignored by Kubo before 0.39.
ADD_PARAMS: dict[str, str] = {
    "cid-version": "1",
    "raw-leaves": "true",
    "chunker": f"size-{CHUNK_SIZE_BYTES}",
    "hash": "sha2-256",
    "trickle": "false",
    "max-file-links": str(MAX_LINKS),
    "inline": "false",
    "wrap-with-directory": "false",
    "progress": "false",
}

# Phrases with which Kubo (and the local node, which copies them) says the content is not there.
_NOT_FOUND_PHRASES = (
    "not found locally",
    "merkledag: not found",
    "could not find",
    "not found",
    "context deadline exceeded",
    "no link named",
)
_NOT_FOUND_CODE = 3  # go-ipfs-cmds ErrNotFound
_READ_PIECE_BYTES = 65_536


class _KuboError(BaseModel):
    model_config = ConfigDict(extra="ignore")
    Message: str
    Code: int = 0
    Type: str


class _AddEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")
    Name: str = ""
    Hash: str | None = None
    Size: str | None = None


class _PinAdd(BaseModel):
    model_config = ConfigDict(extra="ignore")
    Pins: list[str] = Field(default_factory=list)


class _PinInfo(BaseModel):
    model_config = ConfigDict(extra="ignore")
    Type: str


class _PinLs(BaseModel):
    model_config = ConfigDict(extra="ignore")
    Keys: dict[str, _PinInfo] = Field(default_factory=dict)


class _BlockStat(BaseModel):
    model_config = ConfigDict(extra="ignore")
    Key: str
    Size: int


class _Version(BaseModel):
    model_config = ConfigDict(extra="ignore")
    Version: str
    Commit: str = ""
    System: str = ""


_Model = TypeVar("_Model", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class BlockStat:
    """One block as the node holds it: its CID and its encoded size."""

    cid: str
    size_bytes: int


@dataclass(frozen=True, slots=True)
class NodeVersion:
    """What the node says it is (`/api/v0/version`)."""

    version: str
    commit: str
    system: str


class _Upload:
    """The multipart body of one `add`: hashes and counts the blob as it goes out."""

    def __init__(self, data: bytes | bytearray | memoryview | AsyncIterable[bytes], max_bytes: int) -> None:
        self.boundary = secrets.token_hex(16)
        self.hasher = UnixfsHasher()
        self._max_bytes = max_bytes
        self._head = (
            f"--{self.boundary}\r\n"
            'Content-Disposition: form-data; name="file"; filename="blob"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        self._tail = f"\r\n--{self.boundary}--\r\n".encode()
        self._stream: AsyncIterable[bytes] | None = None
        self._body: bytes | None = None
        self.started = False
        if isinstance(data, bytes | bytearray | memoryview):
            self._check_size(len(data))
            self.hasher.update(data)
            self._body = self._head + bytes(data) + self._tail
        else:
            self._stream = data

    @property
    def replayable(self) -> bool:
        return self._body is not None or not self.started

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"

    def content(self) -> bytes | AsyncIterator[bytes]:
        return self._body if self._body is not None else self._pieces()

    async def _pieces(self) -> AsyncIterator[bytes]:
        assert self._stream is not None
        self.started = True
        yield self._head
        async for piece in self._stream:
            if not isinstance(piece, bytes | bytearray | memoryview):
                raise VerificationError(f"an upload stream must yield bytes, got {type(piece).__name__}")
            if not piece:
                continue
            self._check_size(self.hasher.size_bytes + len(piece))
            self.hasher.update(piece)
            yield bytes(piece)
        yield self._tail

    def _check_size(self, size: int) -> None:
        if size > self._max_bytes:
            raise VerificationError(
                f"the blob reaches {size} bytes, over the limit of {self._max_bytes}: "
                "split the segment or raise max_blob_bytes"
            )


class KuboClient(OwnedHttpClient):
    """An async Kubo RPC API client for one node (see the module docstring)."""

    def __init__(
        self,
        api_url: str = DEFAULT_API_URL,
        *,
        timeout_seconds: float = 60.0,
        connect_timeout_seconds: float = 5.0,
        content_timeout_seconds: float = 30.0,
        max_retries: int = 3,
        backoff_seconds: float = 0.2,
        max_backoff_seconds: float = 5.0,
        max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        api_url = api_url.strip().rstrip("/")
        if api_url.endswith("/api/v0"):
            api_url = api_url[: -len("/api/v0")]
        if not api_url.startswith(("http://", "https://")):
            raise IpfsError(f"IPFS API URL {api_url!r} must start with http:// or https://, e.g. {DEFAULT_API_URL}")
        for name, value in (
            ("timeout_seconds", timeout_seconds),
            ("connect_timeout_seconds", connect_timeout_seconds),
            ("content_timeout_seconds", content_timeout_seconds),
        ):
            if value <= 0:
                raise IpfsError(f"{name} must be positive, got {value}")
        if max_retries < 0 or backoff_seconds < 0 or max_backoff_seconds < 0 or max_blob_bytes < 1:
            raise IpfsError(
                f"invalid retry or size limits: max_retries={max_retries}, backoff_seconds={backoff_seconds}, "
                f"max_backoff_seconds={max_backoff_seconds}, max_blob_bytes={max_blob_bytes}"
            )
        self.api_url = api_url
        self.content_timeout_seconds = content_timeout_seconds
        self.max_retries = max_retries
        self.max_blob_bytes = max_blob_bytes
        self._backoff = backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._http = httpx.AsyncClient(
            base_url=f"{api_url}/api/v0/",
            headers=dict(headers or {}),
            timeout=httpx.Timeout(timeout_seconds, connect=connect_timeout_seconds),
            trust_env=False,
        )
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings | IpfsSettings, **overrides: Any) -> KuboClient:
        """Build from `settings.ipfs`: the endpoint, its bearer token, timeouts, retries and the blob limit."""
        ipfs = settings.ipfs if isinstance(settings, Settings) else settings
        options: dict[str, Any] = {
            "timeout_seconds": ipfs.timeout_seconds,
            "connect_timeout_seconds": ipfs.connect_timeout_seconds,
            "content_timeout_seconds": ipfs.content_timeout_seconds,
            "max_retries": ipfs.max_retries,
            "backoff_seconds": ipfs.backoff_seconds,
            "max_backoff_seconds": ipfs.max_backoff_seconds,
            "max_blob_bytes": ipfs.max_blob_bytes,
        }
        if ipfs.api_token is not None:
            options["headers"] = {"Authorization": f"Bearer {ipfs.api_token.get_secret_value()}"}
        url = overrides.pop("api_url", None) or ipfs.api_url or ipfs.local_url
        return cls(url, **(options | overrides))

    async def __aenter__(self) -> KuboClient:
        self._check_open("open")
        # httpx's connection pool creates an anyio event the first time requests wait for a
        # connection, and anyio imports its asyncio backend then: a worker's first burst of
        # fetches paid for that import (13% of its first seats' time on a busy machine). Made here,
        # the import happens when the client opens.
        anyio.Event()
        return self

    # --- commands ---------------------------------------------------------------------------

    async def add(self, data: bytes | bytearray | memoryview | AsyncIterable[bytes], *, pin: bool = True) -> str:
        """Upload a blob (bytes, or an async iterator of pieces, streamed) and return its CID.

        The CID is the one computed locally while sending; the node's answer must equal it.
        """
        self._check_open("add")
        upload = _Upload(data, self.max_blob_bytes)
        params = ADD_PARAMS | {"pin": _flag(pin)}
        async with self._post("add", params, upload=upload) as response:
            body = await response.aread()
        expected = upload.hasher.finish()
        answered = self._added_cid(body)
        if not _same_cid(answered, expected):
            raise VerificationError(
                f"the IPFS node at {self.api_url} stored the {upload.hasher.size_bytes}-byte blob as {answered}, but "
                f"Kubo's layout (CIDv1, raw leaves, {CHUNK_SIZE_BYTES}-byte chunks, balanced, {MAX_LINKS} links, "
                f"sha2-256) gives {expected}: the node lays files out differently; use Kubo or `trust ipfs up`, "
                "and leave Import.UnixFSChunker / UnixFSFileMaxLinks at their defaults"
            )
        return expected

    async def cat(self, cid: str, *, expected_digest: bytes | None = None, max_bytes: int | None = None) -> bytes:
        """The blob under `cid`, verified against the CID and, when given, its sha256 digest.

        Raises `VerificationError` on any mismatch (nothing is returned), `ContentNotFound` when no
        node can provide it within `content_timeout_seconds`.
        """
        self._check_open("cat")
        parsed = parse_cid(cid)
        self._check_verifiable(parsed)
        if expected_digest is not None and len(expected_digest) != 32:
            raise VerificationError(
                f"expected_digest must be a 32-byte sha256 digest, got {len(expected_digest)} bytes"
            )
        limit = self.max_blob_bytes if max_bytes is None else max_bytes
        hasher = UnixfsHasher()
        sha = hashlib.sha256()
        data = bytearray()
        params = {"arg": parsed.text, "timeout": self._content_timeout()}
        async with self._post("cat", params, cid=parsed.text) as response:
            try:
                async for piece in response.aiter_bytes(_READ_PIECE_BYTES):
                    if len(data) + len(piece) > limit:
                        raise VerificationError(
                            f"{parsed.text} is larger than the limit of {limit} bytes; refused while reading "
                            "(an oversized segment): nothing was returned"
                        )
                    data += piece
                    hasher.update(piece)
                    sha.update(piece)
            except httpx.HTTPError as exc:
                # Kubo reports a block lost mid-stream in a trailer (X-Stream-Error) and the local node
                # cuts the connection; either way the body is incomplete and is never returned.
                raise IpfsError(
                    f"reading {parsed.text} from the IPFS node at {self.api_url} failed after {len(data)} bytes "
                    f"({type(exc).__name__}: {exc or 'connection cut'}): a block is missing on the node or the node "
                    "failed; nothing was returned"
                ) from exc
        computed = hasher.finish()
        if not _same_cid(computed, parsed):
            raise VerificationError(
                f"the IPFS node at {self.api_url} answered {len(data)} bytes for {parsed.text} whose CID is "
                f"{computed}: the content does not match its CID (tampered or truncated); nothing was returned"
            )
        if expected_digest is not None and sha.digest() != expected_digest:
            raise VerificationError(
                f"{parsed.text} holds {len(data)} bytes with sha256 {sha.hexdigest()}, but the expected ciphertext "
                f"digest is {expected_digest.hex()}: this is not the committed segment; nothing was returned"
            )
        return bytes(data)

    async def pin_add(self, cid: str) -> None:
        """Pin `cid` recursively (its whole DAG stays on the node)."""
        self._check_open("pin_add")
        parsed = parse_cid(cid)
        params = {"arg": parsed.text, "recursive": "true", "timeout": self._content_timeout()}
        answer = await self._json("pin/add", params, _PinAdd, cid=parsed.text)
        if not any(_same_cid(pinned, parsed) for pinned in answer.Pins):
            raise IpfsError(
                f"the IPFS node at {self.api_url} answered pin/add for {parsed.text} with pins {answer.Pins}"
            )

    async def pin_rm(self, cid: str) -> bool:
        """Unpin `cid` (its blocks stay until the node collects garbage). False when it was not pinned."""
        self._check_open("pin_rm")
        parsed = parse_cid(cid)
        try:
            await self._json("pin/rm", {"arg": parsed.text, "recursive": "true"}, _PinAdd, cid=None)
        except IpfsError as exc:
            if "not pinned" in str(exc):
                return False
            raise
        return True

    async def pin_ls(self, cid: str | None = None, *, pin_type: str = "all") -> dict[str, str]:
        """Pinned CIDs and their pin type (`recursive`, `direct`, `indirect`); only `cid` when given.

        An unpinned `cid` gives an empty mapping.
        """
        self._check_open("pin_ls")
        if pin_type not in ("all", "recursive", "direct", "indirect"):
            raise IpfsError(f"pin type {pin_type!r} is not one of all, recursive, direct, indirect")
        params = {"type": pin_type}
        parsed = None
        if cid is not None:
            parsed = parse_cid(cid)
            params["arg"] = parsed.text
        try:
            answer = await self._json("pin/ls", params, _PinLs, cid=None)
        except IpfsError as exc:
            if parsed is not None and "not pinned" in str(exc):
                return {}
            raise
        return {key: info.Type for key, info in answer.Keys.items()}

    async def block_stat(self, cid: str) -> BlockStat:
        """The block `cid` as the node holds it (ContentNotFound when it has none)."""
        self._check_open("block_stat")
        parsed = parse_cid(cid)
        params = {"arg": parsed.text, "timeout": self._content_timeout()}
        answer = await self._json("block/stat", params, _BlockStat, cid=parsed.text)
        if not _same_cid(answer.Key, parsed):
            raise IpfsError(f"the IPFS node at {self.api_url} answered block/stat {parsed.text} for {answer.Key}")
        return BlockStat(cid=parsed.text, size_bytes=answer.Size)

    async def version(self) -> NodeVersion:
        """The node's version; also a cheap liveness check."""
        self._check_open("version")
        answer = await self._json("version", {}, _Version, cid=None)
        return NodeVersion(version=answer.Version, commit=answer.Commit, system=answer.System)

    # --- plumbing ----------------------------------------------------------------------------

    def _check_open(self, command: str) -> None:
        if self._closed:
            raise IpfsError(f"KuboClient for {self.api_url} is closed: create a new client to call {command}")

    def _check_verifiable(self, parsed: Cid) -> None:
        if parsed.version != 1 or not parsed.is_sha2_256 or parsed.codec_name not in ("raw", "dag-pb"):
            raise VerificationError(
                f"{parsed.text} (CIDv{parsed.version}, {parsed.codec_name}, multihash 0x{parsed.hash_code:x}) cannot "
                "be verified here: only sha2-256 CIDv1 raw or dag-pb CIDs made with Kubo's layout can; "
                "re-add the blob with this client"
            )

    def _content_timeout(self) -> str:
        return f"{self.content_timeout_seconds:g}s"

    async def _json(self, command: str, params: dict[str, str], model: type[_Model], *, cid: str | None) -> _Model:
        async with self._post(command, params, cid=cid) as response:
            body = await response.aread()
        return self._parse(command, body, model)

    def _parse(self, command: str, body: bytes, model: type[_Model]) -> _Model:
        try:
            return model.model_validate_json(body)
        except ValidationError as exc:
            raise IpfsError(
                f"the IPFS node at {self.api_url} answered {command} with an unexpected body: {excerpt(body)} "
                f"({exc.error_count()} problem(s), first: {exc.errors()[0]['msg']}); is it a Kubo RPC API?"
            ) from exc

    def _added_cid(self, body: bytes) -> str:
        answered: str | None = None
        for line in body.splitlines():
            if not line.strip():
                continue
            try:
                document = json.loads(line)
            except json.JSONDecodeError as exc:
                raise IpfsError(
                    f"the IPFS node at {self.api_url} answered add with a line that is not JSON: {excerpt(line)}"
                ) from exc
            if isinstance(document, dict) and document.get("Type") == "error":
                raise IpfsError(f"the IPFS node at {self.api_url} failed to add the blob: {document.get('Message')}")
            event = self._parse("add", line, _AddEvent)
            if event.Hash:
                answered = event.Hash
        if answered is None:
            raise IpfsError(f"the IPFS node at {self.api_url} answered add without a Hash: {excerpt(body)}")
        return answered

    @asynccontextmanager
    async def _post(
        self, command: str, params: Mapping[str, str], *, cid: str | None = None, upload: _Upload | None = None
    ) -> AsyncIterator[httpx.Response]:
        """One RPC call whose answer is a success (2xx), opened as a stream, after retries."""
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            headers = {"Content-Type": upload.content_type} if upload is not None else None
            request = self._http.build_request(
                "POST", command, params=params, headers=headers, content=upload.content() if upload else None
            )
            try:
                response = await self._http.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                if last or (upload is not None and not upload.replayable):
                    raise self._unreachable(command, attempt + 1, exc) from exc
                await asyncio.sleep(self._delay(attempt))
                continue
            except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as exc:
                if last or (upload is not None and not upload.replayable):
                    raise IpfsError(
                        f"the IPFS node at {self.api_url} dropped the connection during {command} after "
                        f"{attempt + 1} attempt(s): {type(exc).__name__} {exc}"
                    ) from exc
                await asyncio.sleep(self._delay(attempt))
                continue
            except httpx.TimeoutException as exc:
                raise IpfsError(
                    f"the IPFS node at {self.api_url} did not answer {command} in time ({type(exc).__name__}); "
                    "raise timeout_seconds or check the node's load"
                ) from exc
            except httpx.HTTPError as exc:
                raise IpfsError(f"{command} on the IPFS node at {self.api_url}: {type(exc).__name__} {exc}") from exc
            try:
                if response.status_code < 400:
                    yield response
                    return
                body = await response.aread()
            finally:
                await response.aclose()
            kubo_error = _kubo_error(body)
            retryable = response.status_code >= 500 and kubo_error is None
            if retryable and not last and (upload is None or upload.replayable):
                await asyncio.sleep(self._delay(attempt))
                continue
            raise self._failure(command, cid, response.status_code, body, kubo_error, attempt + 1)
        raise AssertionError("unreachable: the last attempt yields or raises")

    def _delay(self, attempt: int) -> float:
        return backoff_delay(self._backoff, attempt, self._max_backoff)

    def _unreachable(self, command: str, attempts: int, exc: Exception) -> IpfsError:
        return IpfsError(
            f"cannot reach the IPFS node at {self.api_url} ({type(exc).__name__}: {exc or 'no answer'}) after "
            f"{attempts} attempt(s) of {command}: start the local node with `trust ipfs up`, or point "
            "TRUST_IPFS__API_URL at a running Kubo RPC API"
        )

    def _failure(
        self,
        command: str,
        cid: str | None,
        status: int,
        body: bytes,
        kubo_error: _KuboError | None,
        attempts: int,
    ) -> IpfsError:
        subject = f"{command} {cid}" if cid else command
        if kubo_error is not None:
            message = kubo_error.Message
            lowered = message.lower()
            if cid is not None and (
                kubo_error.Code == _NOT_FOUND_CODE or any(phrase in lowered for phrase in _NOT_FOUND_PHRASES)
            ):
                return ContentNotFound(
                    f"the IPFS node at {self.api_url} could not provide {cid} within "
                    f"{self.content_timeout_seconds:g}s ({message}): check the CID, and that the provider added "
                    "and pinned it on a node this one can reach"
                )
            return IpfsError(f"the IPFS node at {self.api_url} refused {subject}: HTTP {status}: {message}")
        if status in (401, 403):
            hint = "check the API credentials (headers / api token) and the node's API.Authorizations"
        elif status in (404, 405):
            hint = f"is {self.api_url} a Kubo RPC API (POST /api/v0/...), not a gateway?"
        else:
            hint = "check the node's logs"
        tried = f" after {attempts} attempt(s)" if status >= 500 else ""
        return IpfsError(
            f"the IPFS node at {self.api_url} answered {subject} with HTTP {status}{tried}: {excerpt(body)}; {hint}"
        )


def _kubo_error(body: bytes) -> _KuboError | None:
    try:
        error = _KuboError.model_validate_json(body)
    except ValidationError:
        return None
    return error if error.Type == "error" else None


def _same_cid(answered: str | Cid, expected: str | Cid) -> bool:
    """Equal as content addresses: same version, codec and multihash, whatever the multibase."""
    try:
        a = answered if isinstance(answered, Cid) else parse_cid(answered)
        b = expected if isinstance(expected, Cid) else parse_cid(expected)
    except VerificationError:
        return False
    return (a.version, a.codec, a.hash_code, a.digest) == (b.version, b.codec, b.hash_code, b.digest)


def _flag(value: bool) -> str:
    return "true" if value else "false"
