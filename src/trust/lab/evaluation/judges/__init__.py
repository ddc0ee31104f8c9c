"""The published judging methods, over any OpenAI-compatible model, for `trust eval`.

`whowhen`: Who&When's all-at-once, step-by-step and binary-search attribution (Zhang et al., ICML
2025) and `combined` (the deterministic root cause first, the judge where it is silent).
`processbench`: ProcessBench's critic prompt (Zheng et al., 2024) and `combined`.
`chat`: the endpoint the settings name and the cached way of asking it; `cache`: the answers on
disk (`<home>/eval/judge-answers.jsonl`), so an interrupted run resumes.
"""

from trust.lab.evaluation.judges.cache import AnswerCache, default_cache_path, prompt_key
from trust.lab.evaluation.judges.chat import JudgeChat, JudgeEndpoint, judge_model
from trust.lab.evaluation.judges.processbench import Critique, judge_processbench, parse_critique
from trust.lab.evaluation.judges.whowhen import (
    Attribution,
    JudgedLog,
    judge_whowhen,
    parse_attribution,
    parse_half,
    parse_verdict,
)

__all__ = [
    "AnswerCache",
    "Attribution",
    "Critique",
    "JudgeChat",
    "JudgeEndpoint",
    "JudgedLog",
    "default_cache_path",
    "judge_model",
    "judge_processbench",
    "judge_whowhen",
    "parse_attribution",
    "parse_critique",
    "parse_half",
    "parse_verdict",
    "prompt_key",
]
