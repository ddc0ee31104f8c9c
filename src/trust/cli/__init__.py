"""The `trust` command, one module per command group.

Modules only parse input, call the library and render output; the work lives in the layers below
(`trust.lab.devnet`, `trust.adapters.chain`, `trust.services.worker`, `trust.services.sdk`,
`trust.lab.bench`, ...). Importing this package registers every group on `app`; `main` is the
installed entry point.
"""

from __future__ import annotations

from rich.markup import escape

from trust.cli import audit, demo, deploy, gateway  # noqa: F401  (register their root commands)
from trust.cli.app import app
from trust.cli.beacon import beacon_app
from trust.cli.bench import bench_app
from trust.cli.common import err_console
from trust.cli.devnet import devnet_app
from trust.cli.eval import eval_app
from trust.cli.graph import graph_app
from trust.cli.ipfs import ipfs_app
from trust.cli.llm import llm_app
from trust.cli.params import params_app
from trust.cli.ranking import judge_app, rank_app
from trust.cli.wallet import wallet_app
from trust.cli.worker import worker_app
from trust.errors import TrustError

__all__ = ["app", "main"]

app.add_typer(devnet_app, name="devnet")
app.add_typer(bench_app, name="bench")
app.add_typer(beacon_app, name="beacon")
app.add_typer(wallet_app, name="wallet")
app.add_typer(graph_app, name="graph")
app.add_typer(eval_app, name="eval")
app.add_typer(ipfs_app, name="ipfs")
app.add_typer(llm_app, name="llm")
app.add_typer(params_app, name="params")
app.add_typer(worker_app, name="worker")
app.add_typer(rank_app, name="rank", no_args_is_help=True)
app.add_typer(judge_app, name="judge", no_args_is_help=True)


def main() -> None:
    try:
        app()
    except TrustError as exc:
        # Escaped (messages quote values such as ['beta']) and unwrapped (paths stay whole for copying).
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise SystemExit(1) from None
