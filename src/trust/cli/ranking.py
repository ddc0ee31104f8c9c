"""`trust rank` and `trust judge`: the ranking core (`trust.core.ranking`) on the command line.

- `trust rank fit FILE --model {bt,pl}`: Bradley-Terry or Plackett-Luce maximum likelihood;
- `trust rank peer FILE`: Peer Rank over a Vicuna80-format judgment file;
- `trust rank elo FILE --k K ...`: an Elo replay, one JSON line per match, then the final ratings;
- `trust judge replay FILE`: judge votes through the credibility system.

docs/ranking.md describes the file formats, the options and what each output field means.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from trust.errors import RankingError, RecordError

__all__ = ["judge_app", "rank_app"]

rank_app = typer.Typer(
    help="Ratings from matches, rankings and judgments (Bradley-Terry, Plackett-Luce, Elo, Peer Rank)."
)
judge_app = typer.Typer(help="Judge credibility: replay votes through audits, honeypots and anomaly checks.")

_console = Console()
_errors = Console(stderr=True)

FileArgument = Annotated[Path, typer.Argument(help="the input file (docs/ranking.md lists the formats)")]
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RankingError(f"cannot read the {what} file {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RankingError(f"the {what} file {path} is not JSON: {exc}") from exc


def _ratings_file(path: Path, what: str) -> dict[str, float]:
    """A JSON object {item: number}; every value finite."""
    data = _read_json(path, what)
    if not isinstance(data, dict):
        raise RankingError(
            f"the {what} file {path} must hold a JSON object {{item: number}}, got {type(data).__name__}"
        )
    values = {}
    for item, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise RecordError(str(path), 1, str(item), f"expected a finite number, got {value!r}")
        values[str(item)] = float(value)
    return values


def _table(title: str, rows: list[tuple[str, float]], column: str) -> Table:
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("item")
    table.add_column(column, justify="right")
    for place, (item, value) in enumerate(rows, start=1):
        table.add_row(str(place), item, f"{value:.4f}")
    return table


# ------------------------------------------------------------------------------------------ fit


@rank_app.command("fit")
def fit_cmd(
    file: FileArgument,
    model: Annotated[str, typer.Option("--model", help="'bt' (Bradley-Terry) or 'pl' (Plackett-Luce)")] = "bt",
    ties: Annotated[
        str, typer.Option("--ties", help="Bradley-Terry ties: 'davidson' (a fitted tie parameter) or 'half'")
    ] = "davidson",
    home: Annotated[bool, typer.Option("--home", help="Bradley-Terry: also fit a home advantage")] = False,
    reference: Annotated[
        str | None, typer.Option("--reference", help="the item pinned at 0 (default: the first in sorted order)")
    ] = None,
    weights: Annotated[
        Path | None,
        typer.Option("--weights", help="JSON object {judge: weight}: each match counts with its judge's weight"),
    ] = None,
    prior: Annotated[
        float, typer.Option("--prior", min=0.0, help="a symmetric prior that makes any data fit (0: the MLE)")
    ] = 0.0,
    as_json: JsonOption = False,
) -> None:
    """Maximum-likelihood log-strengths: Bradley-Terry from matches, win-count tables or judgments;
    Plackett-Luce from rankings (or won matches). With --json one line {"ratings": {item: value}, ...}."""
    from trust.core.ranking.records import Judgment, Match, Ranking, read_comparisons

    if model not in ("bt", "pl"):
        raise typer.BadParameter(f"expected 'bt' or 'pl', got {model!r}", param_hint="--model")
    if ties not in ("davidson", "half"):
        raise typer.BadParameter(f"expected 'davidson' or 'half', got {ties!r}", param_hint="--ties")
    records = read_comparisons(file)
    judge_weights = _ratings_file(weights, "judge weights") if weights is not None else None
    matches = [r.as_match() if isinstance(r, Judgment) else r for r in records]
    summary: dict[str, Any]
    if model == "bt":
        from trust.core.ranking.bradley_terry import fit_bradley_terry

        if any(isinstance(r, Ranking) for r in matches):
            raise RankingError(f"{file} holds rankings: fit them with --model pl")
        bt = fit_bradley_terry(
            [m for m in matches if isinstance(m, Match)],
            ties=ties,  # type: ignore[arg-type]
            home_advantage=home,
            weights=judge_weights,
            reference=reference,
            prior=prior,
        )
        ratings = bt.ratings()
        summary = {"home_advantage": bt.home_advantage, "tie_parameter": bt.tie_parameter, "ties": bt.ties}
        fit_reference, log_likelihood, iterations, converged = (
            bt.reference,
            bt.log_likelihood,
            bt.iterations,
            bt.converged,
        )
    else:
        from trust.core.ranking.plackett_luce import fit_plackett_luce

        if home or judge_weights is not None:
            raise RankingError(
                "--home and --weights are Bradley-Terry options; Plackett-Luce reads each ranking's weight"
            )
        pl = fit_plackett_luce(matches, reference=reference, prior=prior)
        ratings = pl.ratings()
        summary = {}
        fit_reference, log_likelihood, iterations, converged = (
            pl.reference,
            pl.log_likelihood,
            pl.iterations,
            pl.converged,
        )
    ordered = dict(sorted(ratings.items(), key=lambda kv: (-kv[1], kv[0])))
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "ratings": ordered,
                    "model": model,
                    "reference": fit_reference,
                    **summary,
                    "log_likelihood": log_likelihood,
                    "iterations": iterations,
                    "converged": converged,
                }
            )
        )
        return
    name = "Bradley-Terry" if model == "bt" else "Plackett-Luce"
    _console.print(_table(f"{name} log-strengths ({fit_reference} = 0)", list(ordered.items()), "log-strength"))
    for key, value in summary.items():
        if isinstance(value, float):
            _console.print(f"{key.replace('_', ' ')}: {value:.4f}")


# ------------------------------------------------------------------------------------------ elo


def _resets(path: Path) -> list[Any]:
    from trust.core.ranking.elo import EloReset

    data = _read_json(path, "resets")
    if not isinstance(data, list):
        raise RankingError(f"the resets file {path} must hold a JSON list of {{team, season, rating}}")
    resets = []
    for number, entry in enumerate(data, start=1):
        if not isinstance(entry, dict):
            raise RecordError(
                str(path), number, "(entry)", f"expected an object {{team, season, rating}}, got {entry!r}"
            )
        for field in ("team", "season", "rating"):
            if field not in entry:
                raise RecordError(str(path), number, field, "missing")
        rating = entry["rating"]
        if isinstance(rating, bool) or not isinstance(rating, (int, float)) or not math.isfinite(rating):
            raise RecordError(str(path), number, "rating", f"expected a finite number, got {rating!r}")
        try:
            resets.append(EloReset(str(entry["team"]), str(entry["season"]), float(rating)))
        except (RankingError, ValueError) as exc:
            raise RecordError(str(path), number, "(entry)", str(exc)) from exc
    return resets


@rank_app.command("elo")
def elo_cmd(
    file: FileArgument,
    k: Annotated[float, typer.Option("--k", help="K: rating points per unit of surprise")],
    home_advantage: Annotated[
        float, typer.Option("--home-advantage", help="Elo points added to the home side's rating")
    ] = 0.0,
    mov: Annotated[
        bool, typer.Option("--mov", help="margin-of-victory multiplier from the scores (FiveThirtyEight)")
    ] = False,
    season_revert: Annotated[
        float | None,
        typer.Option("--season-revert", help="F: at a team's first match of a new season, R <- R(1-F) + M F"),
    ] = None,
    revert_to: Annotated[float | None, typer.Option("--revert-to", help="M: the rating reverted toward")] = None,
    initial: Annotated[
        Path | None, typer.Option("--initial", help="JSON object {item: rating}; others start at --initial-rating")
    ] = None,
    resets: Annotated[
        Path | None, typer.Option("--resets", help="JSON list of {team, season, rating}, applied instead of reversion")
    ] = None,
    initial_rating: Annotated[float, typer.Option("--initial-rating", help="every other item's start")] = 1000.0,
    k_established: Annotated[
        float | None, typer.Option("--k-established", help="K once an item has played --established-after matches")
    ] = None,
    established_after: Annotated[int, typer.Option("--established-after", help="matches before K drops")] = 30,
    consensus_k: Annotated[
        bool, typer.Option("--consensus-k", help="K x D-Factor of the vote consensus rate (scores as vote counts)")
    ] = False,
    weighted: Annotated[bool, typer.Option("--weighted", help="multiply K by each match's weight")] = False,
    as_json: JsonOption = False,
) -> None:
    """Elo over matches in file order: with --json one line per match (the pre-match ratings and
    p_a, the probability that a wins) and a last line with the final ratings."""
    from trust.core.ranking.elo import EloConfig, replay_elo
    from trust.core.ranking.records import read_matches

    config = EloConfig(
        k=k,
        initial_rating=initial_rating,
        initial=_ratings_file(initial, "initial ratings") if initial is not None else {},
        k_established=k_established,
        established_after=established_after,
        home_advantage=home_advantage,
        mov=mov,
        season_revert=season_revert,
        revert_to=revert_to,
        resets=_resets(resets) if resets is not None else (),
        consensus_k=consensus_k,
        weighted=weighted,
    )
    matches = read_matches(file)
    replay = replay_elo(matches, config)
    played = {(side, m.season) for m in matches if m.season is not None for side in (m.a, m.b)}
    for reset in config.resets:
        if (reset.team, reset.season) not in played:
            _errors.print(
                f"warning: the reset of {reset.team!r} in season {reset.season!r} was never applied: "
                f"{reset.team!r} plays no match of that season in {file}"
            )
    final = dict(replay.ranking())
    if not as_json:
        _console.print(_table(f"Elo after {len(matches)} matches", list(final.items()), "rating"))
        return
    lines = []
    for t, match in enumerate(matches):
        lines.append(
            json.dumps(
                {
                    "match": t,
                    "time": match.time,
                    "a": match.a,
                    "b": match.b,
                    "p_a": float(replay.p_a[t]),
                    "rating_a": float(replay.rating_a[t]),
                    "rating_b": float(replay.rating_b[t]),
                    "result": match.result,
                    "shift_a": float(replay.shift_a[t]),
                    "shift_b": float(replay.shift_b[t]),
                }
            )
        )
    lines.append(json.dumps({"ratings": final, "played": dict(replay.played)}))
    typer.echo("\n".join(lines))


# ------------------------------------------------------------------------------------------ peer


@rank_app.command("peer")
def peer_cmd(
    file: FileArgument,
    iterations: Annotated[
        int, typer.Option("--iterations", min=1, help="reweighting rounds (the PRD notebook: 5)")
    ] = 5,
    tolerance: Annotated[
        float | None, typer.Option("--tolerance", help="instead: iterate until no weight moves by more than this")
    ] = None,
    basis: Annotated[
        str, typer.Option("--basis", help="weigh judges by their 'answers' (Peer Rank) or their 'judgments'")
    ] = "answers",
    as_json: JsonOption = False,
) -> None:
    """Peer Rank: judges weighted by how their own answers rank; with human votes in the file, each
    judge's and the weighted vote's agreement with the human majority."""
    from trust.core.ranking.peer_rank import peer_rank
    from trust.core.ranking.records import read_judgments

    if basis not in ("answers", "judgments"):
        raise typer.BadParameter(f"expected 'answers' or 'judgments', got {basis!r}", param_hint="--basis")
    result = peer_rank(read_judgments(file), iterations=iterations, tolerance=tolerance, basis=basis)  # type: ignore[arg-type]
    if as_json:
        typer.echo(json.dumps(result.to_json()))
        return
    table = Table(title=f"Peer Rank ({result.iterations} rounds, judges weighted by their {result.basis})")
    for column in ("answer model", "win rate", "unweighted", "human majority", "judge weight", "agreement"):
        table.add_column(column, justify="left" if column == "answer model" else "right")
    for item, rate in sorted(result.win_rates.items(), key=lambda kv: -kv[1]):
        human = result.reference_win_rates.get(item)
        weight = result.judge_weights.get(item)
        agreed = result.agreement_with_reference.get(item)
        table.add_row(
            item,
            f"{rate:.5f}",
            f"{result.unweighted_win_rates[item]:.5f}",
            "-" if human is None else f"{human:.5f}",
            "-" if weight is None else f"{weight:.4f}",
            "-" if agreed is None else f"{agreed:.4f}",
        )
    _console.print(table)
    if "weighted_vote" in result.agreement_with_reference:
        _console.print(
            f"weighted vote agrees with the human majority: {result.agreement_with_reference['weighted_vote']:.4f}"
        )


# ------------------------------------------------------------------------------------------ judge


@judge_app.command("replay")
def judge_replay_cmd(
    file: FileArgument,
    seed: Annotated[
        int, typer.Option("--seed", help="seeds the audit draw (10% of the matches with an audit verdict)")
    ] = 0,
    as_json: JsonOption = False,
) -> None:
    """Replays multi-judge votes (generic vote lines or Vicuna80 judgments) through the credibility
    system: majority consensus (+1/-1), audits (-10 for a consensus overturned), honeypots (-20),
    the floor of 30 and the threshold of 50; then each judge's credibility, agreement and anomaly flags."""
    from trust.core.ranking.votes import read_votes, replay

    result = replay(read_votes(file), seed)
    if as_json:
        typer.echo(json.dumps(result.to_json()))
        return
    table = Table(
        title=(
            f"{result.matches} matches: {result.audited} audited ({result.overturned} overturned), "
            f"{result.honeypots} honeypots, {result.no_consensus} without a majority, {result.skipped} skipped"
        )
    )
    for column in (
        "judge",
        "credibility",
        "active",
        "votes",
        "agreement",
        "audit agreement",
        "honeypots failed",
        "flags",
    ):
        table.add_column(column, justify="left" if column in ("judge", "flags") else "right")
    for name, report in sorted(result.judges.items(), key=lambda kv: -kv[1].credibility):
        row = report.to_json()
        flags = row["anomalies"]
        audit = row["audit_agreement"]
        table.add_row(
            name,
            f"{row['credibility']:g}",
            "yes" if row["active"] else "no",
            str(row["votes"]),
            "-" if row["agreement"] is None else f"{row['agreement']:.3f}",
            "-" if audit is None else f"{audit:.3f}",
            f"{row['honeypot_failures']}/{row['honeypots']}",
            ", ".join(sorted(k for k, v in flags.items() if v)) or "-",
        )
    _console.print(table)
