"""`trust llm`: the home's embedded tier-2 model server (llama.cpp with SmolLM2-135M), like `trust ipfs`.

One server per `TRUST_HOME`, recorded in `<home>/llm/server.json`; every tier-2 worker of the home
uses it and none owns it (see `trust.adapters.local.llama`).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from trust.cli.common import HomeOption, console, settings_for

__all__ = ["llm_app"]

llm_app = typer.Typer(
    help="The embedded tier-2 model server of this home (llama.cpp, SmolLM2-135M), shared by its workers.",
    no_args_is_help=True,
)


def _say(text: str) -> None:
    # One line each, never wrapped: URLs and paths are copied from here.
    console.print(text, soft_wrap=True)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


@llm_app.command("up")
def llm_up_cmd(
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="port (default: a free one)")] = None,
    threads: Annotated[
        int | None, typer.Option("--threads", min=1, help="CPU threads (default: llama.cpp's, half the cores)")
    ] = None,
    home: HomeOption = None,
) -> None:
    """Start the model server detached (it outlives this command and every worker), after its
    self-test answer; a second `up` finds it running."""
    from trust.adapters.local.llama import ModelServerHome

    server = ModelServerHome.from_settings(settings_for(home)).up(port=port, threads=threads)
    what = "started" if server.started_here else "already running"
    _say(f"[bold]model server {what}[/bold] (pid {server.pid})")
    _say(f"URL:     {server.base_url}")
    _say(f"model:   {server.model_id} ({escape(str(server.model_path))})")
    _say(f"threads: {server.threads or 'default'}")
    _say(f"log:     {escape(str(server.log_file))}")


@llm_app.command("down")
def llm_down_cmd(home: HomeOption = None) -> None:
    """Stop this home's model server (never another home's); its workers stay out of the draw until `up`."""
    from trust.adapters.local.llama import ModelServerHome

    stopped = ModelServerHome.from_settings(settings_for(home)).down()
    if stopped is None:
        _say("no model server was running")
    else:
        _say(f"model server stopped (pid {stopped.pid}, {stopped.base_url})")


@llm_app.command("status")
def llm_status_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object instead of text")] = False,
    home: HomeOption = None,
) -> None:
    """Whether this home's model server runs and answers: URL, pid, model, uptime, log, or why it is down."""
    from trust.adapters.local.llama import LOG_FILE, ModelServerHome

    status = ModelServerHome.from_settings(settings_for(home)).status()
    server = status.server
    ended = status.last_exit
    if as_json:
        document = {
            "running": status.running,
            "answering": status.answering,
            "url": server.base_url if server else None,
            "pid": server.pid if server else None,
            "model": server.model_id if server else None,
            "model_path": str(server.model_path) if server else None,
            "threads": server.threads if server else None,
            "uptime_seconds": round(server.uptime_seconds, 1) if server and server.uptime_seconds is not None else None,
            "log": str(status.directory / LOG_FILE),
            "problem": status.problem,
            "last_exit": (
                {"pid": ended.pid, "returncode": ended.returncode, "at": ended.at, "description": ended.describe()}
                if ended
                else None
            ),
        }
        typer.echo(json.dumps(document, indent=2))
        return
    if server is None:
        _say("[bold]model server: not running[/bold]")
        _say(escape(status.problem or ""))
        return
    state = "running, answering" if status.answering else "[red]running, not answering[/red]"
    _say(f"[bold]model server: {state}[/bold] (pid {server.pid})")
    _say(f"URL:     {server.base_url}")
    _say(f"model:   {server.model_id} ({escape(str(server.model_path))})")
    _say(f"threads: {server.threads or 'default'}")
    _say(f"uptime:  {_duration(server.uptime_seconds)}")
    _say(f"log:     {escape(str(server.log_file))}")
    if status.problem:
        _say(escape(status.problem))
