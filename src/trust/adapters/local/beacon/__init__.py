"""The beacon's local side: the dealer's key files (`keys`) and the signer processes (`processes`)."""

__all__: list[str] = []
