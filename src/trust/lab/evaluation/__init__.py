"""Scoring the audit pipeline on public evaluation data (orchestration).

`whowhen`: Who&When failure attribution (agent and step) with the CIG pipeline and Algorithm 1.
`processbench`: ProcessBench earliest-error detection with the HDAG decomposition and tier-1 checks.
`arithmetic`: exact evaluation of decomposed operations. Both scorers take the network's auditors
(`trust.auditors`); the CLI builds them from the settings as a worker does, with the tier-2 auditor
when `Settings().auditor_llm` names an endpoint.
"""

from trust.core.maths.arithmetic import ExpressionCheck, check_expression
from trust.lab.evaluation.processbench import (
    ProcessBenchItem,
    ProcessBenchReport,
    ProcessBenchScore,
    evaluate_processbench,
    load_processbench,
    score_processbench,
)
from trust.lab.evaluation.whowhen import (
    WhoWhenItem,
    WhoWhenPrediction,
    WhoWhenReport,
    WhoWhenScore,
    evaluate_whowhen,
    log_files,
    score_whowhen,
)

__all__ = [
    "ExpressionCheck",
    "ProcessBenchItem",
    "ProcessBenchReport",
    "ProcessBenchScore",
    "WhoWhenItem",
    "WhoWhenPrediction",
    "WhoWhenReport",
    "WhoWhenScore",
    "check_expression",
    "evaluate_processbench",
    "evaluate_whowhen",
    "load_processbench",
    "log_files",
    "score_processbench",
    "score_whowhen",
]
