"""The IPFS adapter: a verifying client for the Kubo RPC API (`kubo`).

`KuboClient` talks to the local node (`trust ipfs up`), a Kubo daemon or a pinning service's
Kubo-compatible endpoint, and checks every byte it reads against the CID it asked for. The CID
codec itself is pure and lives in the core (`trust.core.cid`); the local node's process is
`trust.adapters.local.ipfs`.
"""

from trust.adapters.storage.kubo import DEFAULT_API_URL, BlockStat, KuboClient, NodeVersion

__all__ = ["DEFAULT_API_URL", "BlockStat", "KuboClient", "NodeVersion"]
