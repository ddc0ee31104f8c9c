"""The threshold BLS randomness beacon's signer loop (`signer`): the curve code is `trust.core.beacon`,
the typed contract `trust.adapters.chain.beacon`, the key files and processes `trust.adapters.local.beacon`."""

__all__: list[str] = []
