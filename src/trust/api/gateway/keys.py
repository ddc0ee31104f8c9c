"""The gateway's API keys: one SQLite file under the gateway's home (`Settings.gateway_dir`).

A key is `trust_<key id>_<secret>`: the prefix makes a leaked key recognisable (secret scanners, logs),
the key id (12 hex characters, public: `trust gateway keys list` shows it) finds the row, and the
secret is `secrets.token_urlsafe(32)`, 256 random bits. Only the SHA-256 of the whole key is stored:
a key is random, not a password, so a fast hash is enough (nobody can enumerate 2^256 secrets) and a
stolen database gives no usable key. The comparison is constant-time (`hmac.compare_digest`).

What a key carries: a name (the provider's, for the operator), the provider address whose escrow
pays for its traces (`--provider`; none: the key cannot submit while billing is on), its own rate
and quota (none: the settings' defaults at the time of the request), and when it was created and
revoked. Revocation is immediate: the gateway reads the row on every request, so a key revoked by
`trust gateway keys revoke` while the gateway runs is refused at its next request.

The file also holds the accepted submissions of each key (`submissions`), the gateway's record of
quotas: a quota counts accepted traces in its window, and survives a restart of the gateway.

The database is opened per use (WAL journal): the gateway and the command line write it from two
processes, and sqlite's locking serializes them. Schema version 1 (`PRAGMA user_version`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from eth_utils import is_address, to_checksum_address

from trust.errors import ConfigError

__all__ = ["KEY_PREFIX", "ApiKey", "KeyStore", "key_id_of"]

KEY_PREFIX = "trust_"
"""What every key starts with."""
KEY_ID_BYTES = 6
"""Random bytes of a key id (12 hex characters): public, only unique."""
SECRET_BYTES = 32
"""Random bytes of a key's secret (256 bits)."""
SCHEMA_VERSION = 1
DATABASE_NAME = "keys.sqlite3"
_BUSY_TIMEOUT_SECONDS = 10.0
"""How long a writer waits for the other process's lock before sqlite gives up."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    key_id      TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    key_sha256  BLOB NOT NULL,
    provider    TEXT,
    rate        TEXT,
    quota       TEXT,
    created_at  REAL NOT NULL,
    revoked_at  REAL
);
CREATE TABLE IF NOT EXISTS submissions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id      TEXT NOT NULL REFERENCES keys(key_id),
    at          REAL NOT NULL,
    audit_id    TEXT
);
CREATE INDEX IF NOT EXISTS submissions_by_key ON submissions (key_id, at);
"""


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One key's row (never its secret). `rate` and `quota` are `None` when the key takes the
    settings' defaults. Times are Unix seconds."""

    key_id: str
    name: str
    provider: str | None
    rate: str | None
    quota: str | None
    created_at: float
    revoked_at: float | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.key_id,
            "name": self.name,
            "provider": self.provider,
            "rate": self.rate,
            "quota": self.quota,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def key_id_of(token: str) -> str | None:
    """The key id a presented key names, or None when it is not of the form `trust_<id>_<secret>`."""
    if not token.startswith(KEY_PREFIX):
        return None
    key_id, separator, secret = token[len(KEY_PREFIX) :].partition("_")
    if not separator or not secret or len(key_id) != 2 * KEY_ID_BYTES:
        return None
    return key_id


def _row(row: sqlite3.Row) -> ApiKey:
    return ApiKey(
        key_id=row["key_id"],
        name=row["name"],
        provider=row["provider"],
        rate=row["rate"],
        quota=row["quota"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )


class KeyStore:
    """The keys and submissions of one gateway, in `<directory>/keys.sqlite3` (created on first use)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / DATABASE_NAME

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_SECONDS, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the gateway's key database {self.path}: {exc}") from exc
        connection.row_factory = sqlite3.Row
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise ConfigError(
                    f"{self.path} has schema version {version}, newer than this gateway's {SCHEMA_VERSION}: "
                    "upgrade the trust package"
                )
            if version < SCHEMA_VERSION:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.executescript(_SCHEMA)
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            yield connection
        except sqlite3.Error as exc:
            raise ConfigError(f"the gateway's key database {self.path} failed: {exc}") from exc
        finally:
            connection.close()

    def create(
        self, name: str, *, provider: str | None = None, rate: str | None = None, quota: str | None = None
    ) -> tuple[ApiKey, str]:
        """A new key: its row and the key itself, which exists nowhere else (show it once).

        `provider` must be an Ethereum address (stored checksummed); `rate` and `quota` are stored as
        given: the caller validates them (`trust.api.gateway.access.parse_rate` / `parse_quota`)."""
        name = name.strip()
        if not name:
            raise ConfigError("a key needs a name (--name): the provider it is for, so keys can be told apart")
        if provider is not None:
            if not is_address(provider):
                raise ConfigError(f"--provider {provider!r} is not an Ethereum address (0x and 40 hex digits)")
            provider = to_checksum_address(provider)
        key_id = secrets.token_hex(KEY_ID_BYTES)
        token = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(SECRET_BYTES)}"
        key = ApiKey(key_id, name, provider, rate, quota, time.time(), None)
        with self._connect() as db:
            db.execute(
                "INSERT INTO keys (key_id, name, key_sha256, provider, rate, quota, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key.key_id, name, _digest(token), provider, rate, quota, key.created_at),
            )
        return key, token

    def list(self) -> list[ApiKey]:
        """Every key, revoked ones included, oldest first."""
        with self._connect() as db:
            return [_row(row) for row in db.execute("SELECT * FROM keys ORDER BY created_at, key_id")]

    def get(self, key_id: str) -> ApiKey:
        with self._connect() as db:
            row = db.execute("SELECT * FROM keys WHERE key_id = ?", (key_id,)).fetchone()
        if row is None:
            raise ConfigError(f"no gateway key {key_id!r} in {self.path}; `trust gateway keys list` shows the ids")
        return _row(row)

    def revoke(self, key_id: str) -> ApiKey:
        """Revokes a key (at once, for a running gateway too); revoking a revoked key is an error, so a
        typo in the id is never silently "done"."""
        key = self.get(key_id)
        if not key.active:
            raise ConfigError(f"gateway key {key_id} ({key.name}) was already revoked")
        with self._connect() as db:
            db.execute("UPDATE keys SET revoked_at = ? WHERE key_id = ?", (time.time(), key_id))
        return self.get(key_id)

    def authenticate(self, token: str) -> ApiKey | None:
        """The key `token` is, if it is a key of this gateway (revoked or not: the caller says which);
        None otherwise. The digest comparison is constant-time."""
        key_id = key_id_of(token)
        if key_id is None:
            return None
        with self._connect() as db:
            row = db.execute("SELECT * FROM keys WHERE key_id = ?", (key_id,)).fetchone()
        if row is None or not hmac.compare_digest(bytes(row["key_sha256"]), _digest(token)):
            return None
        return _row(row)

    # -- quotas

    def claim_submission(
        self, key_id: str, since: float | None, limit: int, now: float
    ) -> tuple[int | None, float | None]:
        """Takes one slot of a key's quota if fewer than `limit` submissions were accepted since
        `since` (None: ever); returns (the claim's id, None when the quota is used up; the time of
        the oldest submission counted). The count
        and the insert are one transaction: two gateways, or two requests, cannot both take the
        last slot. A claimed slot is the row `(key_id, now)` until `confirm_submission` or
        `release_submission`."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                lower = float("-inf") if since is None else since
                count, oldest = db.execute(
                    "SELECT COUNT(*), MIN(at) FROM submissions WHERE key_id = ? AND at > ?", (key_id, lower)
                ).fetchone()
                if count >= limit:
                    db.execute("COMMIT")
                    return None, oldest
                cursor = db.execute("INSERT INTO submissions (key_id, at) VALUES (?, ?)", (key_id, now))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return cursor.lastrowid, oldest

    def confirm_submission(self, claim: int, audit_id: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE submissions SET audit_id = ? WHERE id = ?", (audit_id, claim))

    def release_submission(self, claim: int) -> None:
        """Gives a claimed slot back: the submission was refused, so it does not count."""
        with self._connect() as db:
            db.execute("DELETE FROM submissions WHERE id = ? AND audit_id IS NULL", (claim,))

    def submissions(self, key_id: str, since: float | None = None) -> int:
        """Accepted (or claimed) submissions of a key since `since` (None: ever)."""
        lower = float("-inf") if since is None else since
        with self._connect() as db:
            count: int = db.execute(
                "SELECT COUNT(*) FROM submissions WHERE key_id = ? AND at > ?", (key_id, lower)
            ).fetchone()[0]
        return count
