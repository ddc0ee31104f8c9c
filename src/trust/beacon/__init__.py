"""The threshold BLS randomness beacon: the curve code (`bls`, pure), the dealer's key files (`keys`),
the typed contract (`contract`), the signer loop (`signer`) and its processes (`processes`)."""

__all__: list[str] = []
