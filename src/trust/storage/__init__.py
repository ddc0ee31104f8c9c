"""The IPFS adapter: Kubo's CID computed locally, and a client for the Kubo RPC API."""

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

__all__ = [
    "CHUNK_SIZE_BYTES",
    "MAX_LINKS",
    "Cid",
    "UnixfsHasher",
    "cid_from_digest32",
    "digest32",
    "parse_cid",
    "unixfs_cid",
]
