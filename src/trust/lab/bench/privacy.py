"""How much of a graph colluding auditors can read (`trust bench privacy`; paper 3.4.2 and 3.4.4).

Key distribution is need-to-know (`trust.core.privacy.access`): a seat on node v receives K_v and the
keys of v's immediate parents. A coalition of auditors pools every key its members received, so it
reads the union of `{v} + parents(v)` over the nodes its members sit on, more than the nodes it
sits on. This measures that union on real traces, as a function of the share of the trace's seats
the coalition holds, and checks the paper's claim that colluders holding fewer than a third of the
seats cannot reconstruct the whole graph.

Model (decisions where the paper is vague):

- Traces: ProcessBench solutions decomposed with `trust.core.decompose.rules.from_steps` (HDAGs, node
  tiers from `trust.core.graphs.routing`), and Who&When logs turned into CIGs with
  `trust.core.graphs.agent_log.build_cig` (every turn a tier-2 segment: turns are routed to LLM
  auditors, there is no per-turn tier in a CIG).
- Auditors: a pool of N, registered round-robin in the three tiers (as on chain, one tier each and
  one sortition pool per tier), stakes log-normal (sigma `stake_sigma`, default 0.5).
- Committees: for each node, k_t draws in the node's tier (3 / 5 / 5, the protocol defaults),
  stake-weighted with replacement, as `AuditorRegistry.drawCommittee` draws (issue 16, L2): a
  member drawn several times holds one seat, and gets the node's keys once. Every member is taken
  to back all the draws it wins (stakes far above the penalty P). First rounds only: escalation
  rounds would add seats, and reads.
- Seat share: the coalition's seats over all seats of the trace (a seat is a member on a node,
  whatever its units: keys go to seats).
- Random coalitions (the realistic adversary: who colludes is fixed before the draw): auditors in a
  random order, each joining when the coalition still holds at most the target share with it.
- Greedy coalitions (a worst case: colluders chosen after the committees are public): the same
  filling along the order that adds the most newly readable nodes per seat first.

Figures are means over traces x draws; "full" means every node of the trace was readable. The
randomness is the `numpy.random.Generator` passed in.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from trust.core.decompose.rules import from_steps
from trust.core.graphs.agent_log import build_cig
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag, Tier
from trust.core.privacy.access import parent_lists
from trust.errors import GraphError
from trust.lab.evaluation.processbench import load_processbench
from trust.lab.evaluation.whowhen import log_files
from trust.services.localize import read_agent_log

__all__ = [
    "CIG_TURN_TIER",
    "DEFAULT_AUDITORS",
    "DEFAULT_COMMITTEE_SIZES",
    "DEFAULT_FRACTIONS",
    "AuditorPool",
    "CoalitionRow",
    "PoolResult",
    "PrivacyBench",
    "PrivacyTrace",
    "draw_committees",
    "load_traces",
    "make_pool",
    "measure_trace",
    "render",
    "run_privacy_benchmark",
    "trace_from_graph",
]

CIG_TURN_TIER = int(Tier.LLM)
DEFAULT_AUDITORS = (30, 300)
DEFAULT_COMMITTEE_SIZES = (3, 5, 5)
DEFAULT_FRACTIONS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 1 / 3, 0.40, 0.50)
_TIERS = (1, 2, 3)


@dataclass(frozen=True, slots=True)
class PrivacyTrace:
    """A trace as the measurement needs it: per node its tier and its need-to-know set as a bit mask
    over node positions (bit i = node i)."""

    name: str
    kind: str
    tiers: tuple[int, ...]
    need_masks: tuple[int, ...]

    @property
    def nodes(self) -> int:
        return len(self.tiers)


def trace_from_graph(name: str, graph: Hdag | Cig) -> PrivacyTrace:
    """The measurement's view of an HDAG (node tiers as routed) or a CIG (turns at `CIG_TURN_TIER`)."""
    lists = parent_lists(graph)
    position = {node_id: i for i, node_id in enumerate(lists)}
    masks = tuple(sum(1 << position[member] for member in need) for need in lists.values())
    if isinstance(graph, Hdag):
        tiers = tuple(int(graph.node(node_id).tier) for node_id in lists)
        return PrivacyTrace(name, "hdag", tiers, masks)
    return PrivacyTrace(name, "cig", (CIG_TURN_TIER,) * len(lists), masks)


def load_traces(
    processbench: Path | None,
    who_when: Path | None,
    *,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[PrivacyTrace]:
    """Real traces: ProcessBench items decomposed into HDAGs, Who&When logs into CIGs.

    `limit` caps each source (the first items / logs in order). Raises `ConfigError` or `GraphError`
    naming the file for missing or malformed data.
    """
    traces: list[PrivacyTrace] = []
    if processbench is not None:
        items = load_processbench(processbench)[:limit]
        for item in items:
            try:
                hdag = from_steps(item.problem, list(item.steps))
            except GraphError as exc:
                raise GraphError(f"{processbench}: item {item.id!r}: {exc}") from None
            traces.append(trace_from_graph(item.id, hdag))
            if progress is not None:
                progress(item.id)
    if who_when is not None:
        for path in log_files(who_when)[:limit]:
            traces.append(trace_from_graph(f"who&when/{path.name}", build_cig(read_agent_log(path))))
            if progress is not None:
                progress(path.name)
    return traces


@dataclass(frozen=True, slots=True)
class AuditorPool:
    """Auditors 0..N-1: `tiers[a]` the tier auditor a registered in, `stakes[a]` its stake."""

    tiers: np.ndarray
    stakes: np.ndarray

    @property
    def size(self) -> int:
        return int(self.tiers.shape[0])

    def members(self, tier: int) -> np.ndarray:
        return np.flatnonzero(self.tiers == tier)


def make_pool(auditors: int, rng: np.random.Generator, *, stake_sigma: float = 0.5) -> AuditorPool:
    """N auditors round-robin over the tiers, log-normal stakes (see the module docstring)."""
    if auditors < len(_TIERS):
        raise ValueError(f"a pool needs at least one auditor per tier, got {auditors}")
    tiers = np.array([_TIERS[a % len(_TIERS)] for a in range(auditors)])
    return AuditorPool(tiers, rng.lognormal(0.0, stake_sigma, size=auditors))


def draw_committees(
    trace: PrivacyTrace, pool: AuditorPool, committee_sizes: Sequence[int], rng: np.random.Generator
) -> list[np.ndarray]:
    """The auditors seated on each node, in the order of their first draw: k_t draws of the node's
    tier, each landing on a member with probability proportional to its stake, with replacement
    (the registry's draw); a member drawn several times holds one seat, so a node has 1 to k_t."""
    tiers = np.asarray(trace.tiers)
    seats: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * trace.nodes
    for tier in _TIERS:
        nodes = np.flatnonzero(tiers == tier)
        if nodes.size == 0:
            continue
        members = pool.members(tier)
        if members.size == 0:
            raise ValueError(f"tier {tier} has no auditors to draw")
        stakes = pool.stakes[members]
        draws = rng.choice(members.size, size=(nodes.size, committee_sizes[tier - 1]), p=stakes / stakes.sum())
        for row, node in enumerate(nodes):
            _, first = np.unique(draws[row], return_index=True)
            seats[int(node)] = members[draws[row][np.sort(first)]]
    return seats


@dataclass(frozen=True, slots=True)
class _Outcome:
    seat_share: float
    seated: float
    readable: float
    full: bool
    seated_full: bool


def _fill(order: Iterable[int], seat_count: dict[int, int], budget: int) -> list[int]:
    """The coalition built along `order`: each auditor joins when the seats stay within `budget`."""
    coalition: list[int] = []
    held = 0
    for auditor in order:
        if held + seat_count[auditor] <= budget:
            coalition.append(auditor)
            held += seat_count[auditor]
    return coalition


def _greedy_order(read_mask: dict[int, int], seat_count: dict[int, int]) -> list[int]:
    """Auditors by most newly readable nodes per seat first (lazy greedy: gains only shrink)."""
    heap = [(-read_mask[a].bit_count() / seat_count[a], a) for a in read_mask]
    heapq.heapify(heap)
    order: list[int] = []
    covered = 0
    while heap:
        _, auditor = heapq.heappop(heap)
        gain = (read_mask[auditor] & ~covered).bit_count() / seat_count[auditor]
        if heap and gain < -heap[0][0]:
            heapq.heappush(heap, (-gain, auditor))
            continue
        order.append(auditor)
        covered |= read_mask[auditor]
    return order


def measure_trace(
    trace: PrivacyTrace,
    pool: AuditorPool,
    committee_sizes: Sequence[int],
    fractions: Sequence[float],
    rng: np.random.Generator,
) -> tuple[list[_Outcome], list[_Outcome]]:
    """One committee draw of `trace`: per fraction, what a random and a greedy coalition read."""
    seats = draw_committees(trace, pool, committee_sizes, rng)
    seat_count: dict[int, int] = {}
    read_mask: dict[int, int] = {}
    seat_mask: dict[int, int] = {}
    for node, members in enumerate(seats):
        for auditor in members.tolist():
            seat_count[auditor] = seat_count.get(auditor, 0) + 1
            read_mask[auditor] = read_mask.get(auditor, 0) | trace.need_masks[node]
            seat_mask[auditor] = seat_mask.get(auditor, 0) | (1 << node)
    total = sum(seat_count.values())
    seated_auditors = list(seat_count)
    random_order = [seated_auditors[i] for i in rng.permutation(len(seated_auditors))]
    greedy_order = _greedy_order(read_mask, seat_count)
    everything = (1 << trace.nodes) - 1

    def outcome(coalition: list[int]) -> _Outcome:
        readable = seated = 0
        for auditor in coalition:
            readable |= read_mask[auditor]
            seated |= seat_mask[auditor]
        return _Outcome(
            sum(seat_count[a] for a in coalition) / total,
            seated.bit_count() / trace.nodes,
            readable.bit_count() / trace.nodes,
            readable == everything,
            seated == everything,
        )

    randoms, greedies = [], []
    for fraction in fractions:
        budget = math.floor(fraction * total + 1e-9)
        randoms.append(outcome(_fill(random_order, seat_count, budget)))
        greedies.append(outcome(_fill(greedy_order, seat_count, budget)))
    return randoms, greedies


@dataclass(frozen=True, slots=True)
class CoalitionRow:
    """Figures for coalitions holding at most `fraction` of a trace's seats, over traces x draws."""

    fraction: float
    mean_seat_share: float
    mean_seated: float
    mean_readable: float
    max_readable: float
    full_rate: float
    traces_ever_full: int
    own_keys_full_rate: float
    hdag_full_rate: float
    cig_full_rate: float
    greedy_mean_readable: float
    greedy_full_rate: float
    greedy_traces_ever_full: int

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "seat_fraction": round(self.fraction, 4),
            "mean_seat_share": round(self.mean_seat_share, 4),
            "mean_seated": round(self.mean_seated, 4),
            "mean_readable": round(self.mean_readable, 4),
            "max_readable": round(self.max_readable, 4),
            "full_rate": round(self.full_rate, 4),
            "traces_ever_full": self.traces_ever_full,
            "own_keys_full_rate": round(self.own_keys_full_rate, 4),
            "hdag_full_rate": _json_rate(self.hdag_full_rate),
            "cig_full_rate": _json_rate(self.cig_full_rate),
            "greedy_mean_readable": round(self.greedy_mean_readable, 4),
            "greedy_full_rate": round(self.greedy_full_rate, 4),
            "greedy_traces_ever_full": self.greedy_traces_ever_full,
        }


@dataclass(frozen=True, slots=True)
class PoolResult:
    auditors: int
    rows: tuple[CoalitionRow, ...]

    def below_third(self) -> tuple[CoalitionRow, ...]:
        """Rows of coalitions holding fewer than a third of the seats (the paper's t < n/3)."""
        return tuple(row for row in self.rows if row.fraction < 1 / 3 - 1e-9)


@dataclass(frozen=True, slots=True)
class PrivacyBench:
    traces: int
    hdag_traces: int
    cig_traces: int
    nodes_min: int
    nodes_median: float
    nodes_max: int
    committee_sizes: tuple[int, ...]
    draws: int
    pools: tuple[PoolResult, ...]

    def claim_holds(self) -> bool:
        """Paper 3.4.4: no coalition below a third of the seats ever read a whole graph (random
        coalitions, every pool size measured)."""
        return all(row.traces_ever_full == 0 for pool in self.pools for row in pool.below_third())

    def summary(self) -> dict[str, object]:
        below = [row for pool in self.pools for row in pool.below_third()]
        return {
            "traces": self.traces,
            "hdag_traces": self.hdag_traces,
            "cig_traces": self.cig_traces,
            "nodes_median": self.nodes_median,
            "committee_sizes": list(self.committee_sizes),
            "draws": self.draws,
            "pools": {str(pool.auditors): [row.as_dict() for row in pool.rows] for pool in self.pools},
            "below_third_max_full_rate": round(max((row.full_rate for row in below), default=0.0), 4),
            "below_third_max_greedy_full_rate": round(max((row.greedy_full_rate for row in below), default=0.0), 4),
            "no_full_reconstruction_below_third": self.claim_holds(),
        }


def run_privacy_benchmark(
    traces: Sequence[PrivacyTrace],
    rng: np.random.Generator,
    *,
    auditors: Sequence[int] = DEFAULT_AUDITORS,
    committee_sizes: Sequence[int] = DEFAULT_COMMITTEE_SIZES,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    draws: int = 10,
    stake_sigma: float = 0.5,
    progress: Callable[[str], None] | None = None,
) -> PrivacyBench:
    """`draws` committee draws per trace and pool size, each with one random and one greedy
    coalition per fraction; see the module docstring for the model."""
    if not traces:
        raise ValueError("no traces to measure: pass ProcessBench items and/or Who&When logs")
    if len(committee_sizes) != len(_TIERS) or min(committee_sizes) < 1:
        raise ValueError(f"committee sizes are k_1, k_2, k_3 >= 1, got {list(committee_sizes)}")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    if not fractions or not all(0 < f <= 1 for f in fractions):
        raise ValueError(f"seat fractions must lie in (0, 1], got {list(fractions)}")
    for size in auditors:
        if size < len(_TIERS):
            raise ValueError(f"{size} auditors: a pool needs at least one auditor per tier ({len(_TIERS)})")
    fractions = sorted(fractions)
    kinds = [trace.kind for trace in traces for _ in range(draws)]
    pools: list[PoolResult] = []
    for size in auditors:
        pool = make_pool(size, rng, stake_sigma=stake_sigma)
        random_outcomes: list[list[_Outcome]] = [[] for _ in fractions]
        greedy_outcomes: list[list[_Outcome]] = [[] for _ in fractions]
        ever_full = [set[int]() for _ in fractions]
        greedy_ever_full = [set[int]() for _ in fractions]
        for index, trace in enumerate(traces):
            for _ in range(draws):
                randoms, greedies = measure_trace(trace, pool, committee_sizes, fractions, rng)
                for f, (r, g) in enumerate(zip(randoms, greedies, strict=True)):
                    random_outcomes[f].append(r)
                    greedy_outcomes[f].append(g)
                    if r.full:
                        ever_full[f].add(index)
                    if g.full:
                        greedy_ever_full[f].add(index)
            if progress is not None:
                progress(f"{size} auditors: {trace.name}")
        rows = tuple(
            CoalitionRow(
                fraction=fraction,
                mean_seat_share=float(np.mean([o.seat_share for o in random_outcomes[f]])),
                mean_seated=float(np.mean([o.seated for o in random_outcomes[f]])),
                mean_readable=float(np.mean([o.readable for o in random_outcomes[f]])),
                max_readable=float(max(o.readable for o in random_outcomes[f])),
                full_rate=float(np.mean([o.full for o in random_outcomes[f]])),
                traces_ever_full=len(ever_full[f]),
                own_keys_full_rate=float(np.mean([o.seated_full for o in random_outcomes[f]])),
                hdag_full_rate=_rate(
                    [o.full for o, kind in zip(random_outcomes[f], kinds, strict=True) if kind == "hdag"]
                ),
                cig_full_rate=_rate(
                    [o.full for o, kind in zip(random_outcomes[f], kinds, strict=True) if kind == "cig"]
                ),
                greedy_mean_readable=float(np.mean([o.readable for o in greedy_outcomes[f]])),
                greedy_full_rate=float(np.mean([o.full for o in greedy_outcomes[f]])),
                greedy_traces_ever_full=len(greedy_ever_full[f]),
            )
            for f, fraction in enumerate(fractions)
        )
        pools.append(PoolResult(size, rows))
    sizes = [trace.nodes for trace in traces]
    return PrivacyBench(
        traces=len(traces),
        hdag_traces=sum(trace.kind == "hdag" for trace in traces),
        cig_traces=sum(trace.kind == "cig" for trace in traces),
        nodes_min=min(sizes),
        nodes_median=float(np.median(sizes)),
        nodes_max=max(sizes),
        committee_sizes=tuple(committee_sizes),
        draws=draws,
        pools=tuple(pools),
    )


def _rate(flags: list[bool]) -> float:
    """The share of true flags; NaN when there are none (no trace of that kind)."""
    return float(np.mean(flags)) if flags else math.nan


def _json_rate(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def _percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.1f}%"


def render(bench: PrivacyBench, console: Console) -> None:
    """One table per pool size, the verdict on the paper's claim, then one JSON line."""
    console.print(
        f"{bench.traces} traces ({bench.hdag_traces} ProcessBench HDAGs, {bench.cig_traces} Who&When CIGs), "
        f"{bench.nodes_min}-{bench.nodes_max} nodes (median {bench.nodes_median:g}); committees "
        f"k = {'/'.join(map(str, bench.committee_sizes))} by tier; {bench.draws} draws per trace. A seat on v "
        "receives the keys of v and of v's immediate parents; coalitions pool their keys."
    )
    for pool in bench.pools:
        table = Table(title=f"{pool.auditors} auditors ({pool.auditors // 3} per tier)")
        for column in (
            "seats held <=",
            "held (mean)",
            "nodes seated",
            "readable mean",
            "readable max",
            "full graph",
            "traces ever full",
            "full, own keys only",
            "greedy readable",
            "greedy full",
            "greedy traces full",
        ):
            table.add_column(column, justify="right")
        for row in pool.rows:
            table.add_row(
                _percent(row.fraction),
                _percent(row.mean_seat_share),
                _percent(row.mean_seated),
                _percent(row.mean_readable),
                _percent(row.max_readable),
                _percent(row.full_rate),
                f"{row.traces_ever_full}/{bench.traces}",
                _percent(row.own_keys_full_rate),
                _percent(row.greedy_mean_readable),
                _percent(row.greedy_full_rate),
                f"{row.greedy_traces_ever_full}/{bench.traces}",
            )
        console.print(table)
        below = pool.below_third()
        worst = max(below, key=lambda row: row.full_rate, default=None)
        if worst is None or worst.traces_ever_full == 0:
            console.print(
                f"{pool.auditors} auditors: no random coalition below a third of the seats read a whole graph."
            )
        else:
            console.print(
                f"{pool.auditors} auditors: paper 3.4.4 does not hold here: random coalitions holding at most "
                f"{_percent(worst.fraction)} of the seats read the whole graph in {_percent(worst.full_rate)} of the "
                f"draws ({worst.traces_ever_full} of {bench.traces} traces at least once; HDAGs "
                f"{_percent(worst.hdag_full_rate)}, CIGs {_percent(worst.cig_full_rate)}; with each seat given only "
                f"its own node's key, {_percent(worst.own_keys_full_rate)})."
            )
    console.print(json.dumps(bench.summary()), soft_wrap=True, markup=False, highlight=False)
