"""Adapters: everything that reaches outside the process. The chain (`chain`, web3.py), IPFS (`storage`,
the Kubo RPC API over httpx), chat models and embeddings (`llm`), the processes the project starts on
this machine (`local`: Anvil, the IPFS node, workers, beacon signers, the toolchain) and what every
served HTML page sends (`web`). They import the core and the settings, never anything above."""

__all__: list[str] = []
