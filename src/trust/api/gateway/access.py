"""Who may use the gateway and how much: API keys (`trust.api.gateway.keys`), a submission rate and a quota of
accepted traces per key.

- Authentication: every `/v1` request carries `Authorization: Bearer <key>`. No header, a header of
  another scheme, a key this gateway never issued: 401 `unauthenticated`; a revoked key: 401
  `key_revoked`. Both with `WWW-Authenticate: Bearer` (RFC 6750).
- Rate: submissions of one key in a moving window ("10/minute"), counted on arrival, refused or not
  (parsing and checking a trace is the work a flood would make the gateway do), through the `limits`
  package's moving-window limiter, in memory. Over: 429 `rate_limited` with `Retry-After` (whole
  seconds until the oldest counted submission leaves the window).
- Quota: traces one key may have ACCEPTED (202) in a moving window ("1000/day"), or in total ("5000"),
  counted in the key database so that a restart does not reset it. A slot is claimed before the
  trace is checked and given back if it is refused, so two concurrent submissions cannot both take
  the last one. Over: 429 `quota_exceeded`, with `Retry-After` for a windowed quota (none for a total:
  waiting does not help; the operator raises it by creating a new key).

Reads (polling an audit, its events, its proof) need the key but count against neither limit: an
audit followed to its end must never be cut off by its own polling.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from trust.api.gateway.keys import ApiKey, KeyStore, key_id_of
from trust.errors import ConfigError
from trust.settings import Settings

__all__ = ["AccessControl", "AccessDenied", "Quota", "parse_quota", "parse_rate"]

_BEARER = "bearer"
_LIMITS_NOTATION = 'N/second, N/minute, N/hour or N/day (for example "10/minute"), or "N per 10 minutes"'


class AccessDenied(Exception):
    """A request refused before any work: its HTTP status (401 or 429), stable code, message, and the
    seconds after which retrying can succeed (`Retry-After`), when there are such."""

    def __init__(self, status: int, code: str, message: str, retry_after_seconds: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        if self.status == 401:
            return {"WWW-Authenticate": 'Bearer realm="trust-gateway"'}
        if self.retry_after_seconds is not None:
            return {"Retry-After": str(self.retry_after_seconds)}
        return {}


@dataclass(frozen=True, slots=True)
class Quota:
    """At most `amount` accepted traces per `window_seconds` (a moving window), or in total when
    `window_seconds` is None. `text` is how it was written."""

    amount: int
    window_seconds: int | None
    text: str


def parse_rate(text: str, what: str = "rate") -> RateLimitItem:
    """A rate in the `limits` notation; `ConfigError` naming `what` otherwise."""
    try:
        item = parse(text)
    except ValueError as exc:
        raise ConfigError(f"{what} {text!r} is not a rate: write {_LIMITS_NOTATION}") from exc
    if item.amount < 1:
        raise ConfigError(f"{what} {text!r} allows nothing: the amount must be at least 1")
    return item


def parse_quota(text: str, what: str = "quota") -> Quota:
    """A quota: a rate in the `limits` notation (a moving window) or a bare count (in total)."""
    stripped = text.strip()
    if stripped.isdigit():
        amount = int(stripped)
        if amount < 1:
            raise ConfigError(f"{what} {text!r} allows nothing: the amount must be at least 1")
        return Quota(amount, None, stripped)
    item = parse_rate(stripped, what)
    return Quota(item.amount, item.get_expiry(), stripped)


def _retry_after(at: float, now: float) -> int:
    """Whole seconds from `now` to `at`, at least 1 (a client told 0 would retry at once and fail)."""
    return max(1, math.ceil(at - now))


class AccessControl:
    """The keys, rates and quotas of one gateway (see the module docstring).

    `default_rate` and `default_quota` apply to keys created without their own (read per request,
    so they are the gateway's settings of the day, not those of the key's creation). The rate
    limiter's memory is this object's: build one per gateway process. `clock` gives Unix seconds.
    """

    def __init__(
        self, store: KeyStore, *, default_rate: str, default_quota: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.default_rate = parse_rate(default_rate, "the default rate (TRUST_GATEWAY__DEFAULT_RATE)")
        self.default_quota = parse_quota(default_quota, "the default quota (TRUST_GATEWAY__DEFAULT_QUOTA)")
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._clock = clock

    @classmethod
    def from_settings(cls, settings: Settings) -> AccessControl:
        return cls(
            KeyStore(settings.gateway_dir),
            default_rate=settings.gateway.default_rate,
            default_quota=settings.gateway.default_quota,
        )

    def authenticate(self, authorization: str | None) -> ApiKey:
        """The active key of an `Authorization` header; `AccessDenied` (401) otherwise."""
        how = "send `Authorization: Bearer <key>`; the gateway's operator creates keys (`trust gateway keys create`)"
        if authorization is None or not authorization.strip():
            raise AccessDenied(401, "unauthenticated", f"this request needs an API key: {how}")
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != _BEARER or not token:
            raise AccessDenied(
                401, "unauthenticated", f"the Authorization header is not of the form `Bearer <key>`: {how}"
            )
        key = self.store.authenticate(token)
        if key is None:
            shape = "" if key_id_of(token) is not None else " (keys look like trust_<id>_<secret>)"
            raise AccessDenied(
                401, "unauthenticated", f"the API key is not one of this gateway's keys{shape}: check it, or {how}"
            )
        if key.revoked_at is not None:
            revoked = datetime.fromtimestamp(key.revoked_at, UTC).isoformat(timespec="seconds")
            raise AccessDenied(
                401,
                "key_revoked",
                f"API key {key.key_id} ({key.name}) was revoked at {revoked}; ask the gateway's operator for a new one",
            )
        return key

    def rate_of(self, key: ApiKey) -> RateLimitItem:
        return self.default_rate if key.rate is None else parse_rate(key.rate, f"key {key.key_id}'s rate")

    def quota_of(self, key: ApiKey) -> Quota:
        return self.default_quota if key.quota is None else parse_quota(key.quota, f"key {key.key_id}'s quota")

    def hit_rate(self, key: ApiKey) -> None:
        """Counts one submission of `key`; `AccessDenied` (429 `rate_limited`) when it is over its rate."""
        rate = self.rate_of(key)
        if self._limiter.hit(rate, key.key_id):
            return
        reset = self._limiter.get_window_stats(rate, key.key_id).reset_time
        retry = _retry_after(reset, time.time())  # the limiter's own clock is the wall clock
        raise AccessDenied(
            429,
            "rate_limited",
            f"key {key.key_id} made more than {rate.amount} submissions per {rate.get_expiry()} s "
            f"(its rate, {rate}); retry in {retry} s",
            retry,
        )

    def claim_quota(self, key: ApiKey) -> int:
        """Takes one slot of `key`'s quota (give it back with `release` if the submission is refused,
        keep it with `confirm`); `AccessDenied` (429 `quota_exceeded`) when none is left."""
        quota = self.quota_of(key)
        now = self._clock()
        since = None if quota.window_seconds is None else now - quota.window_seconds
        claim, oldest = self.store.claim_submission(key.key_id, since, quota.amount, now)
        if claim is not None:
            return claim
        if quota.window_seconds is None or oldest is None:
            raise AccessDenied(
                429,
                "quota_exceeded",
                f"key {key.key_id} has used its quota of {quota.amount} traces in total; ask the gateway's "
                "operator for a key with a larger quota",
            )
        retry = _retry_after(oldest + quota.window_seconds, now)
        raise AccessDenied(
            429,
            "quota_exceeded",
            f"key {key.key_id} has had {quota.amount} traces accepted in the last {quota.window_seconds} s "
            f"(its quota, {quota.text}); the next slot frees in {retry} s",
            retry,
        )

    def confirm(self, claim: int, audit_id: str) -> None:
        self.store.confirm_submission(claim, audit_id)

    def release(self, claim: int) -> None:
        self.store.release_submission(claim)
