"""The pure core: graphs, decomposition, the one maths engine, theory, ranking, privacy, the beacon's
curve code and the CID codec.

No I/O anywhere below this folder: no sockets, files, environment, clock, processes or logging.
Callers pass text, bytes, numbers and models in; everything above (`trust.adapters` and up) may
import it, and it imports nothing of theirs (see docs/architecture.md)."""

__all__: list[str] = []
