"""The exceptions of the `trust` package, in one hierarchy.

    TrustError
     +-- ConfigError            settings, tools or files are missing or invalid
     |    +-- SandboxUnavailable  the code sandbox cannot confine a run (bubblewrap missing or refused)
     +-- ToolchainError         a pinned tool (anvil, forge, solc wrapper) is missing or failed
     +-- CompileError           the Solidity compiler reported errors
     +-- ChainError             the chain could not be reached or did not do what was asked
     |    +-- ContractReverted  a call reverted; carries the decoded custom error when known
     |    +-- DeploymentNotFound  no deployment file for this chain
     +-- DevnetError            the local development chain could not be started or stopped
     +-- BeaconError            the randomness beacon's keys, shares or signers are missing or invalid
     +-- WalletError            a keystore could not be read, written or unlocked
     +-- GraphError             a reasoning graph (HDAG or CIG) or its input is malformed
     |    +-- GraphValidationError  an HDAG breaks one or more structural rules; lists them all
     +-- LlmError               an OpenAI-compatible endpoint failed or answered unusably
     |    +-- JudgmentError     the model answered, but never with a well-formed judgment
     +-- IpfsError              the IPFS node could not be reached or refused a request
     |    +-- ContentNotFound   no node could provide the CID
     +-- ParameterError         a model or protocol parameter is out of its domain (also a ValueError)
 +-- RankingError           comparisons, rankings or votes cannot be rated as given
 |    +-- RecordError       one input record is malformed; names the source, the record and the field
 +-- VerificationError      content failed a check (CID, digest, GCM tag, associated data, proof)

Every message says what failed, the values involved and what to do next.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuditError",
    "AuditTimeout",
    "BeaconError",
    "ChainError",
    "CompileError",
    "ConfigError",
    "ContentNotFound",
    "ContractReverted",
    "DeploymentNotFound",
    "DevnetError",
    "FeeTooLow",
    "GraphError",
    "GraphValidationError",
    "InsufficientAuditors",
    "IpfsError",
    "JudgmentError",
    "LlmError",
    "ParameterError",
    "RankingError",
    "RecordError",
    "SandboxUnavailable",
    "SessionInterrupted",
    "ToolchainError",
    "TrustError",
    "VerificationError",
    "WalletError",
    "excerpt",
]


class TrustError(Exception):
    """Base class of every error raised on purpose by this package."""


class ConfigError(TrustError):
    """Settings, tools or files are missing or invalid."""


class SandboxUnavailable(ConfigError):
    """The tier-1 sandbox cannot confine a run: bubblewrap is missing or cannot create namespaces
    here. The sandbox fails closed: it never runs audited code unconfined unless told to."""


class ToolchainError(TrustError):
    """A pinned tool is missing or failed."""


class CompileError(TrustError):
    """The Solidity compiler reported errors."""


class ChainError(TrustError):
    """The chain could not be reached, or a transaction did not do what was asked."""


class DeploymentNotFound(ChainError):
    """No deployment file exists for the chain."""


class ContractReverted(ChainError):
    """A contract call reverted.

    `error_name` and `args` hold the decoded custom error (for example
    `AuditOutsideCommitWindow` and its values) when the selector is one of ours.
    """

    def __init__(self, message: str, error_name: str | None = None, args: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.error_name = error_name
        self.error_args = args or {}


class DevnetError(TrustError):
    """The local development chain could not be started or stopped."""


class BeaconError(TrustError):
    """The randomness beacon's keys, shares, signatures or signer processes are missing or invalid."""


class WalletError(TrustError):
    """A keystore could not be read, written or unlocked."""


class GraphError(TrustError):
    """A reasoning graph (HDAG or CIG), a trace or an agent log is malformed."""


class GraphValidationError(GraphError):
    """An HDAG breaks structural rules; `violations` lists every one, each naming the node or edge."""

    def __init__(self, violations: list[str]) -> None:
        self.violations = list(violations)
        listed = "\n  - ".join(self.violations)
        super().__init__(f"the HDAG is invalid ({len(self.violations)} violation(s)):\n  - {listed}")


class LlmError(TrustError):
    """An OpenAI-compatible chat endpoint could not be reached or answered unusably."""


class JudgmentError(LlmError):
    """The model answered every attempt, but none was a well-formed judgment of the segment.

    Unlike a transport failure this does not heal by asking again later: the worker abstains from
    the seat at once (with this message as its reason) instead of spending its retries on it."""


class IpfsError(TrustError):
    """The IPFS node (Kubo RPC API) could not be reached, timed out or refused a request."""


class ContentNotFound(IpfsError):
    """The node has no block for the CID and could not find one."""


class ParameterError(TrustError, ValueError):
    """A protocol or model parameter is out of its domain (a probability outside [0, 1], k < 1, ...);
    the message names the parameter, its value and the allowed range."""


class RankingError(TrustError):
    """Comparisons, rankings, matches or judge votes cannot be rated as given: an unknown item, a
    self-comparison, data whose maximum-likelihood ratings do not exist (an item that never won or
    never lost), or no data at all. The message names the items involved."""


class RecordError(RankingError, ValueError):
    """One input record is malformed (a missing or mistyped field, a non-finite score, a
    self-comparison). `source` is the file (or a description of the input), `record` its 1-based
    record number (the line of a JSON Lines file), `field` the field at fault."""

    def __init__(self, source: str, record: int, field: str, problem: str) -> None:
        self.source, self.record, self.field, self.problem = source, record, field, problem
        super().__init__(f"{source}: record {record}, field {field!r}: {problem}")


class VerificationError(TrustError):
    """Content failed a check: CID, ciphertext digest, AES-GCM tag, associated data or Merkle proof.

    Nothing that raised this was decrypted or used.
    """


class AuditError(TrustError):
    """A provider's audit could not be submitted or did not finish (the SDK, `trust submit`, the gateway)."""


class InsufficientAuditors(AuditError):
    """A tier the trace needs has fewer eligible auditors than one committee; nothing was submitted."""


class FeeTooLow(AuditError):
    """The fee offered is below the contract's minimum for the trace's seats; nothing was submitted."""


class SessionInterrupted(AuditError):
    """The chain's RPC or the IPFS node stayed unreachable during an open session for longer than
    the provider's outage budget (`Settings.provider.outage_seconds`). The session goes on on chain
    and nothing the provider knows is lost: resume it with `TrustClient.resume(session_id)` (`trust
    submit --resume`) once the service is back. `service` is "rpc" or "ipfs"."""

    def __init__(self, message: str, session_id: int | None, service: str) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.service = service


class AuditTimeout(AuditError):
    """The verdict did not come within the latency budget. The session goes on on chain: resume it
    with `TrustClient.resume(session_id)` (`trust submit --resume`)."""

    def __init__(self, message: str, session_id: int) -> None:
        super().__init__(message)
        self.session_id = session_id


EXCERPT_CHARS = 300
"""How much of a peer's answer an error message quotes."""


def excerpt(text: str | bytes, limit: int = EXCERPT_CHARS) -> str:
    """`text` (bytes are read as UTF-8, bad bytes replaced) on one line, whitespace runs folded, cut
    to `limit` characters with "..." after it: what a message quotes of a body or a model's answer."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[:limit]}..."
