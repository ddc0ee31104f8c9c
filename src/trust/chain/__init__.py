"""Chain adapter: compiling, deploying, typed contract calls and events, keystores, Anvil."""

__all__: list[str] = []
