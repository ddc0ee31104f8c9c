"""`trust demo`: the main job."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from trust.cli.app import app
from trust.cli.common import (
    HomeOption,
    console,
    settings_for,
)

__all__ = ["demo_cmd"]


@app.command("demo")
def demo_cmd(
    explorer: Annotated[bool, typer.Option("--explorer/--no-explorer", help="serve the explorer until Ctrl-C")] = True,
    home: HomeOption = None,
) -> None:
    """The paper's clinical example audited end to end on a local network; ends with one JSON line."""
    from trust.lab.demo.run import run_demo

    asyncio.run(run_demo(settings_for(home), console, explorer=explorer))
