"""`trust params` from the command line: the exact commands the acceptance checks call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from trust.core.theory.params import DEFAULT_PARAMETERS


def trust(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trust", *args], capture_output=True, text=True, timeout=120, check=False
    )


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data) if path.suffix == ".json" else yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_check_json_passes_the_defaults_and_fails_the_papers_first_p_min(tmp_path: Path, suffix: str) -> None:
    run = trust("params", "check", str(write(tmp_path / f"ok{suffix}", DEFAULT_PARAMETERS)), "--json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert document["verdict"] == "ok"
    assert set(document["conditions"]) == {"S1", "E1", "E2"}
    assert all(set(c) >= {"holds", "margin"} for c in document["conditions"].values())
    assert document["p_t"]["H"] == pytest.approx(0.3906734328)

    failing = json.loads(json.dumps(DEFAULT_PARAMETERS))
    failing["economics"]["p_min"] = 0.2
    run = trust("params", "check", str(write(tmp_path / f"fails{suffix}", failing)), "--json")
    assert run.returncode == 1
    document = json.loads(run.stdout)
    assert document["verdict"] == "fails"
    assert document["conditions"]["E2"] == pytest.approx(
        {"holds": False, "margin": 0.2 - 1 / 3, "value": 0.2, "bound": 1 / 3, "factor": 0.6}
    )


def test_check_without_json_prints_tables_and_the_verdict(tmp_path: Path) -> None:
    run = trust("params", "check", str(write(tmp_path / "p.yaml", DEFAULT_PARAMETERS)))
    assert run.returncode == 0, run.stderr
    assert "verdict ok" in run.stdout and "E2" in run.stdout and "0.390673" in run.stdout


def test_bad_files_and_values_are_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("tau: [1, 2\n", encoding="utf-8")
    run = trust("params", "check", str(broken), "--json")
    assert run.returncode == 1 and "not valid YAML" in run.stderr
    bad = json.loads(json.dumps(DEFAULT_PARAMETERS))
    bad["classes"]["H"]["rho"] = 1.5
    run = trust("params", "check", str(write(tmp_path / "bad.json", bad)), "--json")
    assert run.returncode == 1 and "classes.H.rho = 1.5" in run.stderr
    run = trust("params", "check", str(tmp_path / "missing.yaml"))
    assert run.returncode == 1 and "cannot be read" in run.stderr


def test_pass_probability_prints_the_exact_value() -> None:
    run = trust("params", "pass-probability", "--k", "5", "--epsilon", "0.3", "--rho", "0.1", "--tau", "0.66")
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) == pytest.approx(0.3906734328, abs=1e-12)
    for args, name in (
        (("--k", "0", "--epsilon", "0.3"), "k = 0"),
        (("--k", "5", "--epsilon", "1.3"), "epsilon = 1.3"),
        (("--k", "5", "--epsilon", "0.3", "--tau", "0"), "tau = 0"),
        (("--k", "5", "--epsilon", "nan"), "epsilon = nan"),
    ):
        run = trust("params", "pass-probability", *args)
        assert run.returncode == 1 and name in run.stderr, run.stderr


def test_recommend_writes_a_file_that_checks_with_the_margin(tmp_path: Path) -> None:
    out = tmp_path / "recommended.yaml"
    base = json.loads(json.dumps(DEFAULT_PARAMETERS))
    for name, count in (("C", 160), ("L", 200), ("H", 40)):
        base["classes"][name]["count"] = count
        base["classes"][name]["k"] = 3
    base["horizon"]["epsilon_target"] = 1e-4
    run = trust("params", "recommend", "--file", str(write(tmp_path / "base.yaml", base)), "--out", str(out), "--json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert document["verdict"] == "ok" and document["seats_per_trace"] >= 3 * 400
    assert all(c["factor"] >= 2 for c in document["conditions"].values())
    checked = trust("params", "check", str(out), "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["verdict"] == "ok"
    run = trust("params", "recommend", "--epsilon-target", "1e-12")
    assert run.returncode == 1 and "would be needed" in run.stderr


def test_paper_lists_the_figures_that_do_not_follow() -> None:
    run = trust("params", "paper")
    assert run.returncode == 0, run.stderr
    assert "0.847" in run.stdout and "0.3907" in run.stdout and "10^-88" in run.stdout


def test_simulate_draws_the_plot_and_ends_with_the_json_line(tmp_path: Path) -> None:
    plot = tmp_path / "simulation.png"
    run = trust("params", "simulate", "--traces", "2000", "--paths", "50", "--plot", str(plot))
    assert run.returncode == 0, run.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["cells"] == 35 and summary["traces_per_cell"] == 2000
    assert summary["cells_agree"] >= 33  # 99% intervals: a miss or two in 35 cells is chance
    assert summary["honest_mean_payoff"] > 0 > summary["malicious_mean_payoff"]
