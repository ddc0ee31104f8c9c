"""The randomness beacon's curve code: BN254 threshold BLS signatures, pure (`bls`)."""

__all__: list[str] = []
