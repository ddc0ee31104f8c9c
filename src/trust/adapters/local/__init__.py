"""Processes the project starts on this machine and the files they keep: Anvil, the IPFS node, auditor
workers, the beacon's signers, the pinned toolchain, owner-only files."""

__all__: list[str] = []
