"""`trust params`: the protocol parameters on chain and the checks of paper section 4."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from trust.cli.common import (
    HomeOption,
    RpcOption,
    console,
    err_console,
    settings_for,
)

__all__ = [
    "ParamFile",
    "params_app",
    "params_check_cmd",
    "params_paper_cmd",
    "params_pass_probability_cmd",
    "params_recommend_cmd",
    "params_show_cmd",
    "params_simulate_cmd",
]

params_app = typer.Typer(
    help="Protocol parameters: those in force on chain, and the Safety-Profitability checks of paper section 4.",
    no_args_is_help=True,
)


@params_app.command("show")
def params_show_cmd(rpc_url: RpcOption = None, home: HomeOption = None) -> None:
    """Print the protocol parameters in force on chain (they change only through the timelock)."""
    from trust.adapters.chain.beacon import identify_randomness_source
    from trust.adapters.chain.protocol import Protocol

    settings = settings_for(home)

    async def run() -> tuple[int, dict[str, int], str]:
        async with Protocol.connect(settings, rpc_url) as protocol:
            chain = protocol.chain
            # The source the audit contract reads now (governance may have replaced the deployed one).
            _, _, randomness = await chain.call(protocol.audit.contract.functions.dependencies())
            source = await identify_randomness_source(chain, randomness)
            return await protocol.params.version(), await protocol.params.params(), source.describe()

    version, values, randomness = asyncio.run(run())
    table = Table(title=f"protocol parameters, version {version}")
    table.add_column("parameter")
    table.add_column("value", justify="right")
    for name, value in values.items():
        table.add_row(name, f"{value:,}")
    console.print(table)
    console.print(f"randomness source: {randomness}")


ParamFile = Annotated[Path, typer.Argument(help="parameter file, YAML or JSON (format: docs/theory.md)")]


@params_app.command("check")
def params_check_cmd(
    file: ParamFile,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document instead of tables")] = False,
) -> None:
    """Check a parameter set against Theorem 4.1 (S1, E1, E2): margins, p_t, tail bounds, a verdict.

    Exits 1 when a condition fails.
    """
    from trust.core.theory.params import Parameters, check
    from trust.lab.theory_report import load_parameter_file, render_check

    report = check(Parameters.from_mapping(load_parameter_file(file)))
    if as_json:
        typer.echo(json.dumps(report.to_json()))
    else:
        render_check(report, console)
    raise typer.Exit(0 if report.verdict == "ok" else 1)


@params_app.command("pass-probability")
def params_pass_probability_cmd(
    k: Annotated[int, typer.Option("--k", help="seats per segment (k >= 1)")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="honest error rate, in [0, 1]")],
    rho: Annotated[float, typer.Option("--rho", help="adversarial fraction, in [0, 1]")] = 0.0,
    tau: Annotated[float, typer.Option("--tau", help="vote threshold, in (0, 1]; q = ceil(tau k)")] = 0.66,
) -> None:
    """Print the exact segment pass probability p_t of Lemma 4.1 (eq. 4.2)."""
    from trust.core.theory.consensus import pass_probability

    typer.echo(repr(pass_probability(k, epsilon, rho, tau)))


@params_app.command("recommend")
def params_recommend_cmd(
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", help="take classes (k as the floor), tau, horizon, P and delta from this parameter file"
        ),
    ] = None,
    epsilon_l: Annotated[float | None, typer.Option("--epsilon-l", help="LLM auditor error rate")] = None,
    epsilon_h: Annotated[float | None, typer.Option("--epsilon-h", help="human auditor error rate")] = None,
    rho_h: Annotated[float | None, typer.Option("--rho-h", help="adversarial fraction among human seats")] = None,
    epsilon_target: Annotated[
        float | None, typer.Option("--epsilon-target", help="allowed probability that a valid trace fails in T")
    ] = None,
    k_min: Annotated[int, typer.Option("--k-min", min=1, help="smallest committee (without --file)")] = 3,
    safety_factor: Annotated[float, typer.Option("--safety-factor", help="margin on S1, E1 and E2")] = 2.0,
    beta_min: Annotated[float, typer.Option("--beta-min", help="lowest trace quorum allowed")] = 0.55,
    out: Annotated[Path | None, typer.Option("--out", help="write the recommended parameter file here")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document instead of tables")] = False,
) -> None:
    """The smallest committees, then beta, R, p_min and p_max that satisfy S1, E1 and E2 with the margin."""
    from dataclasses import replace

    from trust.core.theory.consensus import human_class
    from trust.core.theory.params import DEFAULT_PARAMETERS, Parameters
    from trust.core.theory.recommend import recommend
    from trust.lab.theory_report import load_parameter_file, render_recommendation, write_parameter_file

    base = Parameters.from_mapping(load_parameter_file(file) if file else DEFAULT_PARAMETERS)
    overrides = {"L": {"epsilon": epsilon_l}, "H": {"epsilon": epsilon_h, "rho": rho_h}}
    classes = []
    for c in base.trace.classes:
        changes: dict[str, Any] = {k: v for k, v in overrides.get(c.name, {}).items() if v is not None}
        if file is None:
            changes["k"] = k_min
        classes.append(replace(c, **changes))
    result = recommend(
        classes,
        base.trace.tau,
        lam=base.lam,
        horizon=base.horizon,
        epsilon_target=epsilon_target if epsilon_target is not None else base.epsilon_target,
        delta=base.economics.delta,
        penalty=base.economics.penalty,
        # The H class's error rate (after --epsilon-h) when there is one, else the file's epsilon_H.
        epsilon_h=None if human_class(classes) is not None else base.economics.epsilon_h,
        safety_factor=safety_factor,
        beta_min=beta_min,
    )
    if out is not None:
        write_parameter_file(result.parameters, out)
    if as_json:
        document = {"parameters": result.parameters.to_mapping(), "seats_per_trace": result.seats_per_trace}
        typer.echo(json.dumps(document | result.report.to_json()))
    else:
        render_recommendation(result.report, result.seats_per_trace, console)
        if out is not None:
            console.print(f"written to {out}")


@params_app.command("simulate")
def params_simulate_cmd(
    file: Annotated[Path | None, typer.Argument(help="parameter file (default: the network's defaults)")] = None,
    traces: Annotated[
        int, typer.Option("--traces", min=1, help="simulated traces per (rho_H, epsilon_H) cell")
    ] = 20_000,
    paths: Annotated[int, typer.Option("--paths", min=2, help="simulated seats per payoff simulation")] = 2_000,
    gamma: Annotated[float, typer.Option("--gamma", help="reputation update rate (eq. 4.15)")] = 0.1,
    seed: Annotated[int, typer.Option(help="seed of the numpy generator")] = 0,
    plot: Annotated[Path | None, typer.Option("--plot", help="save the figures here (PNG)")] = None,
) -> None:
    """Monte Carlo over rho_H in [0, 0.30] and epsilon_H in [0.20, 0.40] (paper 4.8) against the exact
    values, and honest and malicious payoffs over the horizon; ends with one JSON line."""
    import numpy as np
    from rich.progress import Progress

    from trust.core.theory.consensus import human_class
    from trust.core.theory.montecarlo import EPSILON_GRID, RHO_GRID, expected_payoff, simulate_payoffs, sweep
    from trust.core.theory.params import DEFAULT_PARAMETERS, Parameters
    from trust.lab.theory_report import load_parameter_file, plot_simulation, render_simulation

    parameters = Parameters.from_mapping(load_parameter_file(file) if file else DEFAULT_PARAMETERS)
    human = human_class(parameters.trace.classes)
    if human is None:
        raise typer.BadParameter("the sweep varies the human class: name it 'H' in the parameter file")
    rng = np.random.default_rng(seed)
    cells = len(RHO_GRID) * len(EPSILON_GRID)
    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task(f"sweep: {cells} cells x {traces:,} traces", total=cells)
        grid = sweep(
            parameters.trace,
            RHO_GRID,
            EPSILON_GRID,
            traces,
            rng,
            cls=human.name,
            progress=lambda done: progress.update(task, completed=done),
        )
        payoffs, expected = {}, {}
        for kind in ("honest", "malicious"):
            progress.update(task, description=f"{kind} payoffs: {paths:,} seats")
            malicious = kind == "malicious"
            payoffs[kind] = simulate_payoffs(
                parameters.economics, parameters.lam_t, paths, rng, gamma=gamma, malicious=malicious
            )
            expected[kind] = expected_payoff(parameters.economics, parameters.lam_t, gamma=gamma, malicious=malicious)
    if plot is not None:
        plot_simulation(plot, grid, parameters)
        err_console.print(f"figures saved to {plot}")
    render_simulation(grid, payoffs, expected, console)


@params_app.command("paper")
def params_paper_cmd() -> None:
    """The paper's published figures next to what its own formulas give (docs/theory.md has the reasons)."""
    from trust.core.theory.paper import paper_figures
    from trust.lab.theory_report import render_paper

    render_paper(paper_figures(), console)
