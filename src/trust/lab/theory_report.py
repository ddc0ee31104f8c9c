"""What `trust params` prints and draws: parameter files in, rich tables and PNG plots out.

The math is `trust.core.theory` (pure); this module only reads the YAML or JSON parameter file, renders
the results and plots them with matplotlib (Agg backend, no display needed).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from trust.core.theory.consensus import quorum
from trust.core.theory.montecarlo import PayoffEstimate, Sweep
from trust.core.theory.paper import PaperFigure
from trust.core.theory.params import CheckReport, Parameters
from trust.errors import ParameterError

__all__ = [
    "load_parameter_file",
    "plot_simulation",
    "render_check",
    "render_paper",
    "render_recommendation",
    "render_simulation",
    "simulation_summary",
    "write_parameter_file",
]


def load_parameter_file(path: Path) -> dict[str, Any]:
    """The mapping in a YAML or JSON parameter file (JSON is read as JSON, anything else as YAML)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParameterError(f"parameter file {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"parameter file {path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ParameterError(f"parameter file {path}: not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise ParameterError(f"parameter file {path}: expected a mapping at the top, got {type(data).__name__}")
    return data


def write_parameter_file(parameters: Parameters, path: Path) -> None:
    """Writes `parameters` as YAML (or JSON for a .json path), in the format `load_parameter_file` reads."""
    mapping = parameters.to_mapping()
    text = json.dumps(mapping, indent=2) if path.suffix.lower() == ".json" else yaml.safe_dump(mapping, sort_keys=False)
    path.write_text(text, encoding="utf-8")


def _number(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return str(value)
    return f"{value:.4g}" if 1e-3 <= abs(value) < 1e6 else f"{value:.3e}"


def render_check(report: CheckReport, console: Console) -> None:
    conditions = Table(title=f"Theorem 4.1 conditions: verdict [bold]{report.verdict}[/bold]")
    for column in ("condition", "left side", "right side", "margin", "factor", "holds"):
        conditions.add_column(column, justify="left" if column == "condition" else "right")
    labels = {
        "S1": "S1  mu_vote - W_beta >= sqrt(sigma_max^2/2 ln(lambda T/eps))",
        "E1": "E1  R > eps_H/(1-eps_H) P p_max",
        "E2": "E2  p_min >= delta/(1-alpha)",
    }
    for name, condition in (("S1", report.s1), ("E1", report.e1), ("E2", report.e2)):
        conditions.add_row(
            labels[name],
            _number(condition.value),
            _number(condition.bound),
            _number(condition.margin),
            _number(condition.factor),
            "[green]yes[/green]" if condition.holds else "[red]no[/red]",
        )
    console.print(conditions)
    classes = Table(title="segment classes (Lemma 4.1)")
    for column in ("class", "k", "q", "epsilon", "rho", "weight", "count", "p_t"):
        classes.add_column(column, justify="right")
    trace = report.parameters.trace
    for c in trace.classes:
        classes.add_row(
            c.name,
            str(c.k),
            str(quorum(c.k, trace.tau)),
            _number(c.epsilon),
            _number(c.rho),
            _number(c.weight),
            str(c.count),
            f"{report.pass_probabilities[c.name]:.6f}",
        )
    console.print(classes)
    figures = Table(title="trace and payoffs")
    figures.add_column("figure")
    figures.add_column("value", justify="right")
    for name, value in report.trace.items():
        figures.add_row(name, _number(value))
    for name, value in report.tails.items():
        figures.add_row(f"log10 {name}", f"{value:.2f}")
    console.print(figures)


def render_recommendation(report: CheckReport, seats: int, console: Console) -> None:
    parameters = report.parameters
    e = parameters.economics
    table = Table(title=f"recommended parameters ({seats} seats per trace)")
    table.add_column("parameter")
    table.add_column("value", justify="right")
    for c in parameters.trace.classes:
        table.add_row(f"k_{c.name}", str(c.k))
    table.add_row("tau", _number(parameters.trace.tau))
    table.add_row("beta", _number(parameters.trace.beta))
    for name, value in (("R", e.reward), ("P", e.penalty), ("p_min", e.p_min), ("p_max", e.p_max)):
        table.add_row(name, _number(value))
    console.print(table)
    render_check(report, console)


def render_paper(figures: list[PaperFigure], console: Console) -> None:
    table = Table(title="the paper's figures, recomputed from its own formulas and parameters", show_lines=True)
    for column in ("where", "quantity", "published", "recomputed", "follows", "note"):
        table.add_column(column, overflow="fold")
    for f in figures:
        table.add_row(
            f.where,
            f.quantity,
            f.published,
            _number(f.recomputed),
            "[green]yes[/green]" if f.follows else "[red]no[/red]",
            f.note,
        )
    console.print(table)


def simulation_summary(sweep: Sweep, payoffs: dict[str, PayoffEstimate], expected: dict[str, float]) -> dict[str, Any]:
    """The final JSON line of `trust params simulate`."""
    summary: dict[str, Any] = {
        "cells": len(sweep.cells),
        "cells_agree": sum(cell.agrees for cell in sweep.cells),
        "traces_per_cell": sweep.n,
    }
    for kind, estimate in payoffs.items():
        summary[f"{kind}_mean_payoff"] = estimate.mean
        summary[f"{kind}_expected_payoff"] = expected[kind]
        summary[f"{kind}_adverse_rate"] = estimate.adverse.rate
    return summary


def render_simulation(
    sweep: Sweep, payoffs: dict[str, PayoffEstimate], expected: dict[str, float], console: Console
) -> None:
    cells = Table(title=f"class {sweep.cls}: exact against {sweep.n:,} simulated traces per cell (99% intervals)")
    for column in ("rho", "epsilon", "exact p_t", "simulated p_t", "exact trace failure", "simulated", "agrees"):
        cells.add_column(column, justify="right")
    for cell in sweep.cells:
        cells.add_row(
            f"{cell.rho:.2f}",
            f"{cell.epsilon:.2f}",
            f"{cell.exact_pass:.4f}",
            f"[{cell.simulated_pass.low:.4f}, {cell.simulated_pass.high:.4f}]",
            _number(cell.exact_failure),
            f"[{_number(cell.simulated_failure.low)}, {_number(cell.simulated_failure.high)}]",
            "[green]yes[/green]" if cell.agrees else "[red]no[/red]",
        )
    console.print(cells)
    table = Table(title="payoffs over the horizon (reputation moving by eq. 4.15)")
    for column in ("seat", "paths", "mean U(T)", "expected U(T)", "adverse share", "mean final reputation"):
        table.add_column(column, justify="right")
    for kind, estimate in payoffs.items():
        table.add_row(
            kind,
            f"{estimate.n_paths:,}",
            f"{estimate.mean:.1f} ± {estimate.stderr:.1f}",
            f"{expected[kind]:.1f}",
            f"{estimate.adverse.rate:.3g} [{estimate.adverse.low:.2g}, {estimate.adverse.high:.2g}]",
            f"{estimate.mean_reputation:.3f}",
        )
    console.print(table)
    console.print(
        json.dumps(simulation_summary(sweep, payoffs, expected)), soft_wrap=True, markup=False, highlight=False
    )


def plot_simulation(path: Path, sweep: Sweep, parameters: Parameters) -> None:
    """Two panels: p_t against rho for each epsilon (exact lines, simulated intervals), and the
    payoff tail bounds against the horizon (the paper's, a valid Chernoff bound, the exact values)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    exact = sweep.grid("exact_pass")
    for j, epsilon in enumerate(sweep.epsilon_values):
        line = left.plot(sweep.rho_values, exact[:, j], label=f"epsilon_H = {epsilon:.2f}")[0]
        cells = [sweep.cell(rho, epsilon) for rho in sweep.rho_values]
        rates = np.array([c.simulated_pass.rate for c in cells])
        spans = [[r - c.simulated_pass.low, c.simulated_pass.high - r] for r, c in zip(rates, cells, strict=True)]
        errors = np.array(spans).T
        left.errorbar(sweep.rho_values, rates, yerr=errors, fmt="o", color=line.get_color(), markersize=3)
    left.set_xlabel("rho_H (adversarial share of seats)")
    left.set_ylabel(f"pass probability p_{sweep.cls}")
    left.set_title("Lemma 4.1 (lines) and Monte Carlo (points, 99% intervals)")
    left.legend()
    left.grid(alpha=0.3)

    economics = parameters.economics
    hours = np.linspace(parameters.horizon / 24, 2 * parameters.horizon, 60)
    ln10 = math.log(10)
    curves = {
        "honest loss, printed (4.41)": economics.honest_loss_log_bound,
        "honest loss, valid Chernoff": economics.honest_loss_chernoff_log,
        "honest loss, exact at r = 0": economics.honest_loss_exact_log,
        "malicious profit, printed (4.42)": economics.malicious_profit_log_bound,
        "malicious profit, exact bound": economics.malicious_profit_exact_log,
    }
    for label, curve in curves.items():
        values = [curve(parameters.lam * t) / ln10 for t in hours]
        right.plot(hours, values, label=label, linestyle="--" if "printed" in label else "-")
    right.set_xlabel("horizon T")
    right.set_ylabel("log10 probability")
    right.set_title(f"payoff tail bounds at lambda = {parameters.lam:g} per unit of T")
    right.legend()
    right.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
