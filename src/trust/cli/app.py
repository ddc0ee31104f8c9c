"""The root `trust` command; each command group lives in a module of its own (`trust.cli.*`)."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(help="TRUST: a decentralized network that audits AI reasoning.", no_args_is_help=True)
