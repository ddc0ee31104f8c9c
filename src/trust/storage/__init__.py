"""The IPFS adapter: Kubo's CID computed locally, and a verifying client for the Kubo RPC API.

`trust.storage.cid` is pure (no I/O): the CID Kubo gives a blob, CID parsing and the bytes32 the
contracts store. `trust.storage.kubo.KuboClient` talks to the local node (`trust ipfs up`), a Kubo
daemon or a pinning service's Kubo-compatible endpoint, and checks every byte it reads.
"""

from trust.storage.cid import (
    CHUNK_SIZE_BYTES,
    MAX_LINKS,
    Cid,
    UnixfsHasher,
    cid_from_digest32,
    digest32,
    parse_cid,
    unixfs_cid,
)
from trust.storage.kubo import DEFAULT_API_URL, BlockStat, KuboClient, NodeVersion

__all__ = [
    "CHUNK_SIZE_BYTES",
    "DEFAULT_API_URL",
    "MAX_LINKS",
    "BlockStat",
    "Cid",
    "KuboClient",
    "NodeVersion",
    "UnixfsHasher",
    "cid_from_digest32",
    "digest32",
    "parse_cid",
    "unixfs_cid",
]
