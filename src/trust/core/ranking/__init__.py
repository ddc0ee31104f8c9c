"""Ratings, judging and peer-ranked consensus: the pure core the leaderboard, the judge pools and
peer-ranked consensus run on (numpy, scipy and the standard library; docs/ranking.md).

The main entry points are re-exported here; each module holds the rest of its names:

- `records`: `Match`, `Ranking`, `Judgment` and the readers of their files;
- `bradley_terry`, `plackett_luce`: maximum-likelihood fits (`identifiability` checks the MLE exists);
- `elo`: Elo replays (the judge document's, FiveThirtyEight's, the arena's dynamic K);
- `peer_rank`: judges weighted by their own answers' rank, agreement with a human majority;
- `selection`: the arena's intent classifier, UCB and the four-slot model selection;
- `credibility`, `anomalies`, `fingerprint`, `votes`: judge credibility, audits, honeypots, anomaly
  and plagiarism detection, and the replay of vote files;
- `reputation`, `assignment`, `collusion`, `template`: the swarm document's reputation, comparison
  assignment, collusion penalties and ranking-answer parser;
- `arena`, `proof`: the arena's claim-level cross-validation score and its proof hash chain.
"""

from trust.core.ranking.bradley_terry import BradleyTerryFit, fit_bradley_terry
from trust.core.ranking.credibility import CredibilityBook
from trust.core.ranking.elo import EloConfig, EloReplay, EloReset, replay_elo
from trust.core.ranking.peer_rank import PeerRank, peer_rank
from trust.core.ranking.plackett_luce import PlackettLuceFit, fit_plackett_luce
from trust.core.ranking.records import (
    Judgment,
    Match,
    Ranking,
    read_comparisons,
    read_judgments,
    read_matches,
    read_rankings,
)
from trust.core.ranking.selection import classify_intent, select_models, ucb_score
from trust.core.ranking.votes import ReplayResult, read_votes, replay

__all__ = [
    "BradleyTerryFit",
    "CredibilityBook",
    "EloConfig",
    "EloReplay",
    "EloReset",
    "Judgment",
    "Match",
    "PeerRank",
    "PlackettLuceFit",
    "Ranking",
    "ReplayResult",
    "classify_intent",
    "fit_bradley_terry",
    "fit_plackett_luce",
    "peer_rank",
    "read_comparisons",
    "read_judgments",
    "read_matches",
    "read_rankings",
    "read_votes",
    "replay",
    "replay_elo",
    "select_models",
    "ucb_score",
]
