"""Does the maximum-likelihood rating exist? The check Bradley-Terry and Plackett-Luce share.

Both models rate items by strengths pi_i = exp(theta_i) and explain each observed choice by a
ratio of strengths (swarm document eq. 6 and 9; the arena document's Part IV). Their
log-likelihood is concave in theta and invariant under adding a constant to every theta, so the
ratings exist only up to that constant (the fitters pin a reference item at 0) and only when the
data rule out every direction in which the likelihood keeps growing. Zermelo (1929) and Ford
(1957) for Bradley-Terry, Hunter (2004, Assumption 1) for Plackett-Luce: the maximum-likelihood
estimate exists and is unique if and only if, in every split of the items into two nonempty
groups, some item of each group beat some item of the other. Equivalently: the directed graph with
an edge loser -> winner for every observed win (a tie counts as a win both ways) is strongly
connected. If it is not, some group never lost to the items outside it, and the likelihood keeps
growing as that group's strengths go to infinity: the "estimate" an optimizer returns is an
artefact of its stopping rule.

`require_mle` runs that check on integer edge lists (scipy's strongly connected components, O(items
+ edges)) and raises `RankingError` naming what went wrong, in the words a data owner can act on:
the items never compared, those that never lost, those that never won, and for larger groups the
group that never lost (or never won) against the rest. The remedy offered is the same for both
models: add comparisons that cross the split, rate each group on its own, or fit with a prior
(`prior > 0`), which makes every data set fit by shrinking the ratings towards each other.

Where the documents are vague: neither says what happens when the MLE does not exist (eq. 9 is
simply "maximized"); we refuse to fit rather than return ratings that depend on the optimizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components

from trust.errors import RankingError

__all__ = ["BeatGraphSplit", "StrengthFit", "beat_graph_split", "require_mle"]

# How many item names one group lists in an error message before it says "and N more".
NAMES_SHOWN = 12


@dataclass(frozen=True, slots=True)
class StrengthFit:
    """What a Bradley-Terry and a Plackett-Luce fit share.

    `log_strengths[k]` is theta = log pi of `items[k]`, with `reference` at 0. `log_likelihood` is
    the weighted log-likelihood at the estimate, without the prior; `iterations` the optimizer's
    iterations; `converged` whether it met its tolerance.
    """

    items: tuple[str, ...]
    log_strengths: tuple[float, ...]
    reference: str
    prior: float
    log_likelihood: float
    iterations: int
    converged: bool

    def ratings(self) -> dict[str, float]:
        """Item -> log-strength theta (reference at 0), in `items` order."""
        return dict(zip(self.items, self.log_strengths, strict=True))

    def thetas(self, names: Sequence[str]) -> NDArray[np.float64]:
        """The log-strengths of `names`; `RankingError` naming any item the fit does not rate."""
        index = {item: k for k, item in enumerate(self.items)}
        unknown = [item for item in names if item not in index]
        if unknown:
            raise RankingError(f"unknown item(s): {', '.join(unknown)} (the fit rates {len(self.items)} items)")
        return np.array([self.log_strengths[index[item]] for item in names], dtype=np.float64)


@dataclass(frozen=True, slots=True)
class BeatGraphSplit:
    """The strongly connected components of the beat graph, by what keeps their ratings apart.

    `never_compared`: items with no comparison at all. `never_lost` / `never_won`: single items
    with wins only / losses only. `groups_never_lost` / `groups_never_won`: larger groups that
    never lost (won) against an item outside them. `components`: every component (sorted names).
    """

    components: tuple[tuple[str, ...], ...]
    never_compared: tuple[str, ...]
    never_lost: tuple[str, ...]
    never_won: tuple[str, ...]
    groups_never_lost: tuple[tuple[str, ...], ...]
    groups_never_won: tuple[tuple[str, ...], ...]

    @property
    def connected(self) -> bool:
        return len(self.components) <= 1


def beat_graph_split(items: Sequence[str], losers: NDArray[np.intp], winners: NDArray[np.intp]) -> BeatGraphSplit:
    """The components of the directed graph with an edge `losers[k] -> winners[k]` per win.

    `losers` and `winners` are equal-length integer arrays of indexes into `items` (a tie is
    passed as two edges, one each way). Edges with loser == winner are ignored.
    """
    n = len(items)
    losers = np.asarray(losers, dtype=np.intp)
    winners = np.asarray(winners, dtype=np.intp)
    graph = coo_array((np.ones(losers.size, dtype=np.int8), (losers, winners)), shape=(n, n)).tocsr()
    count, labels = connected_components(graph, directed=True, connection="strong")
    if count <= 1:
        names = tuple(sorted(items))
        return BeatGraphSplit((names,) if names else (), (), (), (), (), ())
    crossing = labels[losers] != labels[winners]
    # A component "loses outside" when one of its items lost to an item of another component.
    loses_outside = np.zeros(count, dtype=bool)
    wins_outside = np.zeros(count, dtype=bool)
    loses_outside[labels[losers[crossing]]] = True
    wins_outside[labels[winners[crossing]]] = True
    lost = np.zeros(n, dtype=bool)
    won = np.zeros(n, dtype=bool)
    distinct = losers != winners
    lost[losers[distinct]] = True
    won[winners[distinct]] = True

    member_indexes: list[list[int]] = [[] for _ in range(count)]
    for index, label in enumerate(labels):
        member_indexes[label].append(index)
    members = [[items[index] for index in indexes] for indexes in member_indexes]
    components = tuple(sorted(tuple(sorted(group)) for group in members))
    never_compared: list[str] = []
    never_lost: list[str] = []
    never_won: list[str] = []
    groups_never_lost: list[tuple[str, ...]] = []
    groups_never_won: list[tuple[str, ...]] = []
    for label, group in enumerate(members):
        if len(group) == 1:
            index = member_indexes[label][0]
            if not lost[index] and not won[index]:
                never_compared.append(group[0])
            elif not lost[index]:
                never_lost.append(group[0])
            elif not won[index]:
                never_won.append(group[0])
            continue
        if not loses_outside[label]:
            groups_never_lost.append(tuple(sorted(group)))
        if not wins_outside[label]:
            groups_never_won.append(tuple(sorted(group)))
    return BeatGraphSplit(
        components,
        tuple(sorted(never_compared)),
        tuple(sorted(never_lost)),
        tuple(sorted(never_won)),
        tuple(sorted(groups_never_lost)),
        tuple(sorted(groups_never_won)),
    )


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown if len(names) <= NAMES_SHOWN else f"{shown} and {len(names) - NAMES_SHOWN} more"


def require_mle(
    items: Sequence[str], losers: NDArray[np.intp], winners: NDArray[np.intp], *, model: str, remedy: str
) -> None:
    """Raises `RankingError` unless the beat graph is strongly connected (the MLE exists).

    `model` names the model in the message ("Bradley-Terry"); `remedy` says what to do next.
    """
    split = beat_graph_split(items, losers, winners)
    if split.connected:
        return
    # The condensation of a split graph is a DAG with at least one sink (a group that never lost
    # outside) and one source (never won outside), so `reasons` is never empty.
    reasons = []
    if split.never_compared:
        reasons.append(f"never compared: {_names(split.never_compared)}")
    if split.never_lost:
        reasons.append(f"never lost: {_names(split.never_lost)}")
    if split.never_won:
        reasons.append(f"never won: {_names(split.never_won)}")
    for group in split.groups_never_lost:
        reasons.append(f"the group {{{_names(group)}}} never lost to an item outside it")
    for group in split.groups_never_won:
        reasons.append(f"the group {{{_names(group)}}} never beat an item outside it")
    raise RankingError(
        f"{model}: the maximum-likelihood ratings of these {len(items)} items do not exist "
        f"(the comparisons split them into {len(split.components)} groups that are not compared "
        f"in both directions); {'; '.join(reasons)}. {remedy}"
    )
