"""Chain adapter: compiling, deploying, typed contract calls and events, keystores."""

__all__: list[str] = []
