"""TRUST: a decentralized network that audits AI reasoning.

Packages follow the rooms of the design: a pure core (graphs, theory, privacy), adapters
(`trust.adapters.chain` for the contracts, `trust.adapters.storage` for IPFS), orchestration (worker, SDK) and the
`trust` command line.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
