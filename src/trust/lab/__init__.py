"""The lab: the devnet and the throw-away local network, the demo, the benchmarks and the evaluations
on public data. Everything may be imported here; nothing imports the lab but the command line."""

__all__: list[str] = []
