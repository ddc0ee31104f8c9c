"""Who&When's published judging methods, over any chat model (`trust eval whowhen --method ...`).

Zhang et al. (ICML 2025, "Which Agent Causes Task Failures and When?") attribute a failed
multi-agent log to one (agent, step) with an LLM judge in three ways; the prompts and the control
flow below are theirs (mingyin1/Agents_Failure_Attribution, `Automated_FA`), run with the ground
truth answer in the prompt when the log carries one (`ground_truth`), which is the setting of their
published GPT-4o table:

- `all-at-once`: the whole log in one prompt; the answer names the agent and the step, read as
  their evaluation script reads it (`parse_attribution`).
- `step-by-step`: the log grows one turn at a time (`Step i - agent: content`); after each turn the
  judge says whether that turn is an error ("1. Yes" / "1. No"); the first "Yes" is the prediction,
  and when none comes the last turn is.
- `binary-search`: the judge says whether the decisive error is in the upper or the lower half of
  the segment (steps `start..mid` or `mid+1..end`, `mid = start + (end - start) // 2`), down to one
  step; that step and its speaker are the prediction. An answer naming neither half picks one at
  random, as theirs does, with a generator seeded by the log and the segment so a rerun is the same.

Differences, each for a reason: the step-by-step prompt says "(Step 3)" where their template
printed the literal placeholder "(Step {idx})" (a missing f-string prefix); a "Yes"/"No" is read
with or without the "1." numbering (a reply is read, not graded for form); greedy decoding
(`JUDGE_TEMPERATURE`) so that cached answers are the answers; an endpoint failure gives the log no
prediction (theirs printed "Failed to get prediction" and moved on) and is reported, not hidden.

`combined` (this project's method): the deterministic layer first, the judge where it is silent.
When tier 1 and the CIG find an Invalid_Root, or the turn that first stated a value of the final
answer (`trust.core.graphs.attribution`: checker evidence, not an opinion), that is the prediction;
the deterministic method's last resort, the first reasoning turn, is only a prior, and the judge
replaces it. Otherwise the judge answers all-at-once, over
the log cut after the first repeated turn that stationarity finds: an agent that repeats itself is
already derailed, so the decisive mistake lies at or before that turn, and the shorter prompt also
fits a small model's context.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trust.auditors.base import Auditor
from trust.core.graphs.agent_log import AgentLog, MistakeLabel
from trust.core.graphs.attribution import Basis, attribute
from trust.errors import GraphError, LlmError
from trust.lab.evaluation.judges.chat import JudgeChat
from trust.lab.evaluation.whowhen import WhoWhenItem, WhoWhenPrediction, WhoWhenReport, score_whowhen
from trust.services.localize import LogAudit, audit_agent_log, read_agent_log
from trust.settings import AuditSettings

__all__ = [
    "ALL_AT_ONCE",
    "BINARY_SEARCH",
    "COMBINED",
    "JUDGE_METHODS",
    "STEP_BY_STEP",
    "Attribution",
    "JudgedLog",
    "WhoWhenCase",
    "all_at_once",
    "all_at_once_prompt",
    "binary_search",
    "binary_search_prompt",
    "combined",
    "judge_whowhen",
    "load_case",
    "parse_attribution",
    "parse_half",
    "parse_verdict",
    "step_by_step",
    "step_prompt",
]

ALL_AT_ONCE = "all-at-once"
STEP_BY_STEP = "step-by-step"
BINARY_SEARCH = "binary-search"
COMBINED = "combined"
JUDGE_METHODS = (ALL_AT_ONCE, STEP_BY_STEP, BINARY_SEARCH, COMBINED)

ALL_AT_ONCE_SYSTEM = "You are a helpful assistant skilled in analyzing conversations."
STEP_SYSTEM = "You are a precise step-by-step conversation evaluator."
BINARY_SEARCH_SYSTEM = "You are an AI assistant specializing in localizing errors in conversation segments."


@dataclass(frozen=True, slots=True)
class WhoWhenCase:
    """One log as the judges see it: the question, the known answer (or None), and who said what."""

    id: str
    question: str
    ground_truth: str | None
    agents: tuple[str, ...]
    contents: tuple[str, ...]
    label: MistakeLabel | None = None
    log: AgentLog | None = field(default=None, compare=False, repr=False)
    """The parsed log, when the case was read from one (`combined` audits it)."""

    def __post_init__(self) -> None:
        if not self.agents or len(self.agents) != len(self.contents):
            raise GraphError(f"{self.id}: a case needs one agent per turn and at least one turn")


@dataclass(frozen=True, slots=True)
class Attribution:
    """A method's answer for one log: agent and step (None when there is none), where it came from
    ("judge" or "deterministic"), the endpoint error that left it empty, and how many questions it took."""

    agent: str | None
    step: int | None
    source: str = "judge"
    error: str | None = None
    questions: int = 0


@dataclass(frozen=True, slots=True)
class JudgedLog:
    item: WhoWhenItem
    attribution: Attribution

    def as_dict(self) -> dict[str, object]:
        """The `--predictions` line: the prediction, where it came from, and any endpoint error."""
        row = self.item.prediction.as_dict() | {"source": self.attribution.source}
        if self.attribution.error is not None:
            row["error"] = self.attribution.error
        return row


def load_case(path: Path) -> WhoWhenCase:
    """A Who&When log read with the project's reader (either shape), plus its `ground_truth`."""
    log = read_agent_log(path)
    ground_truth: str | None = None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # read_agent_log read it a moment ago; say so if it changed
        raise GraphError(f"{path}: cannot read it again ({exc})") from None
    raw = document.get("ground_truth") if isinstance(document, dict) else None
    if raw is not None:
        if not isinstance(raw, str | int | float) or isinstance(raw, bool):
            raise GraphError(f"{path}: ground_truth: expected a string or a number, got {type(raw).__name__}")
        ground_truth = str(raw)
    return WhoWhenCase(
        path.name,
        log.task,
        ground_truth,
        tuple(turn.agent for turn in log.turns),
        tuple(turn.content for turn in log.turns),
        log.label,
        log,
    )


def _answer_line(case: WhoWhenCase) -> str:
    return f"The Answer for the problem is: {case.ground_truth}\n" if case.ground_truth is not None else ""


def _transcript(case: WhoWhenCase, start: int, end: int) -> str:
    return "\n".join(f"{case.agents[i]}: {case.contents[i]}" for i in range(start, end + 1))


def all_at_once_prompt(case: WhoWhenCase, end: int | None = None) -> str:
    """The all-at-once question over turns 0..`end` (all when None)."""
    last = len(case.agents) - 1 if end is None else end
    return (
        "You are an AI assistant tasked with analyzing a multi-agent conversation history when solving a real "
        f"world problem. The problem is:  {case.question}\n"
        f"{_answer_line(case)}"
        "Identify which agent made an error, at which step, and explain the reason for the error. "
        "Here's the conversation:\n\n" + _transcript(case, 0, last) + "\n\nBased on this conversation, please "
        "predict the following:\n"
        "1. The name of the agent who made a mistake that should be directly responsible for the wrong solution "
        "to the real world problem. If there are no agents that make obvious mistakes, decide one single agent in "
        "your mind. Directly output the name of the Expert.\n"
        "2. In which step the mistake agent first made mistake. For example, in a conversation structured as "
        'follows: \n            {\n                "agent a": "xx",\n                "agent b": "xxxx",\n'
        '                "agent c": "xxxxx",\n                "agent a": "xxxxxxx"\n            },\n'
        "            each entry represents a 'step' where an agent provides input. The 'x' symbolizes the speech "
        "of each agent. If the mistake is in agent c's speech, the step number is 2. If the second speech by "
        "'agent a' contains the mistake, the step number is 3, and so on. Please determine the step number where "
        "the first mistake occurred.\n"
        "3. The reason for your prediction."
        "Please answer in the format: Agent Name: (Your prediction)\n Step Number: (Your prediction)\n Reason for "
        "Mistake: \n"
    )


def step_prompt(case: WhoWhenCase, index: int) -> str:
    """The step-by-step question about turn `index`, with the log up to it."""
    history = "".join(f"Step {i} - {case.agents[i]}: {case.contents[i]}\n" for i in range(index + 1))
    return (
        "You are an AI assistant tasked with evaluating the correctness of each step in an ongoing multi-agent "
        f"conversation aimed at solving a real-world problem. The problem being addressed is: {case.question}. "
        f"{_answer_line(case)}"
        f"Here is the conversation history up to the current step:\n{history}\n"
        f"The most recent step ({index}) was by '{case.agents[index]}'.\n"
        f"Your task is to determine whether this most recent agent's action (Step {index}) contains an error that "
        "could hinder the problem-solving process or lead to an incorrect solution. "
        "Please respond with 'Yes' or 'No' and provide a clear explanation for your judgment. "
        "Note: Please avoid being overly critical in your evaluation. Focus on errors that clearly derail the "
        "process."
        "Respond ONLY in the format: 1. Yes/No.\n2. Reason: [Your explanation here]"
    )


def binary_search_prompt(case: WhoWhenCase, start: int, end: int) -> str:
    """The binary-search question about the segment `start..end` (both included)."""
    mid = start + (end - start) // 2
    return (
        "You are an AI assistant tasked with analyzing a segment of a multi-agent conversation. Multiple agents "
        "are collaborating to address a user query, with the goal of resolving the query through their collective "
        "dialogue.\n"
        "Your primary task is to identify the location of the most critical mistake within the provided segment. "
        "Determine which half of the segment contains the single step where this crucial error occurs, ultimately "
        "leading to the failure in resolving the user\u2019s query.\n"
        f"The problem to address is as follows: {case.question}\n"
        f"{_answer_line(case)}"
        f"Review the following conversation segment from step {start} to step {end}:\n\n"
        f"{_transcript(case, start, end)}\n\n"
        "Based on your analysis, predict whether the most critical error is more likely to be located in the upper "
        f"half (from step {start} to step {mid}) or the lower half (from step {mid + 1} to step {end}) of this "
        "segment.\n"
        "Please provide your prediction by responding with ONLY 'upper half' or 'lower half'. Remember, your "
        "answer should be based on identifying the mistake that directly contributes to the failure in resolving "
        "the user's query. If no single clear error is evident, consider the step you believe is most responsible "
        "for the failure, allowing for subjective judgment, and base your answer on that."
    )


_AGENT = re.compile(r"Agent Name:\s*\**\s*([\w_]+)", re.IGNORECASE)
_AGENT_FALLBACK = re.compile(r"^\s*\**\s*([\w_]+)\s*\**\s*:", re.MULTILINE)
_STEP = re.compile(r"Step Number:\s*\**\s*(\d+)", re.IGNORECASE)
_STEP_FALLBACK = re.compile(r"Step\s*(?:Number)?\s*[:=]\s*\**\s*(\d+)", re.IGNORECASE)
_VERDICT = re.compile(r"^\W*(?:1\s*[.)]\s*)?\W*(yes|no)\b", re.IGNORECASE)


def parse_attribution(answer: str) -> tuple[str | None, int | None]:
    """(agent, step) from an all-at-once answer, read as the published evaluation script reads it:
    "Agent Name: X" (else the first "X:" at a line start) and "Step Number: N" (else "Step: N").
    Both are None unless both are found (the script counts a half answer as unparsed)."""
    agent = _AGENT.search(answer) or _AGENT_FALLBACK.search(answer)
    step = _STEP.search(answer) or _STEP_FALLBACK.search(answer)
    if agent is None or step is None:
        return None, None
    return agent.group(1), int(step.group(1))


def parse_verdict(answer: str) -> bool | None:
    """A step-by-step answer: True for "1. Yes" (an error), False for "1. No", None for anything else."""
    match = _VERDICT.match(answer.strip())
    return None if match is None else match.group(1).lower() == "yes"


def parse_half(answer: str) -> str | None:
    """ "upper" or "lower" when the answer names that half (upper first, as theirs reads), else None."""
    text = answer.lower()
    if "upper half" in text:
        return "upper"
    if "lower half" in text:
        return "lower"
    return None


async def all_at_once(case: WhoWhenCase, chat: JudgeChat, *, end: int | None = None) -> Attribution:
    """One question over the whole log (or turns 0..`end`)."""
    answer = await chat.ask(ALL_AT_ONCE, ALL_AT_ONCE_SYSTEM, all_at_once_prompt(case, end))
    agent, step = parse_attribution(answer)
    return Attribution(agent, step, questions=1)


async def step_by_step(case: WhoWhenCase, chat: JudgeChat) -> Attribution:
    """One question per turn until the judge calls one an error; the last turn when none is."""
    for index, agent in enumerate(case.agents):
        verdict = parse_verdict(await chat.ask(STEP_BY_STEP, STEP_SYSTEM, step_prompt(case, index)))
        if verdict is True:
            return Attribution(agent, index, questions=index + 1)
    last = len(case.agents) - 1
    return Attribution(case.agents[last], last, questions=len(case.agents))


async def binary_search(case: WhoWhenCase, chat: JudgeChat) -> Attribution:
    """Halves the log on the judge's word until one step is left."""
    start, end, questions = 0, len(case.agents) - 1, 0
    while start < end:
        mid = start + (end - start) // 2
        half = parse_half(await chat.ask(BINARY_SEARCH, BINARY_SEARCH_SYSTEM, binary_search_prompt(case, start, end)))
        questions += 1
        if half is None:
            # Theirs flips a coin; ours is seeded by the log and the segment, so a rerun (or a
            # resumed run, whose answers come from the cache) takes the same path.
            half = random.Random(f"{case.id}:{start}:{end}").choice(("upper", "lower"))
        if half == "upper":
            end = mid
        else:
            start = min(mid + 1, end)
    return Attribution(case.agents[start], start, questions=questions)


def _stationary_bound(audit: LogAudit) -> int | None:
    """The step of the first turn that repeats its agent's previous turn, or None."""
    steps = [audit.cig.turn(pair.later).step for pair in audit.stationary]
    return min(steps) if steps else None


async def combined(case: WhoWhenCase, chat: JudgeChat, audit: LogAudit) -> Attribution:
    """What the deterministic method finds (`trust.core.graphs.attribution`: the earliest root cause,
    or the turn that first stated the final answer) when it finds something, else the judge over
    the log up to the first loop (see the module docstring). The deterministic method's last resort,
    the first reasoning turn, is a prior and not a finding: the judge's opinion replaces it."""
    task = case.log.task if case.log is not None else case.question
    try:
        found = attribute(audit.cig, audit.localization, task)
    except GraphError:  # no turn reasons: nothing for the checks to name
        found = None
    if found is not None and found.basis is not Basis.FIRST_REASONING:
        return Attribution(found.agent, found.step, source="deterministic")
    return await all_at_once(case, chat, end=_stationary_bound(audit))


_PLAIN = {ALL_AT_ONCE: all_at_once, STEP_BY_STEP: step_by_step, BINARY_SEARCH: binary_search}


async def judge_whowhen(
    files: Sequence[Path],
    method: str,
    chat: JudgeChat,
    *,
    settings: AuditSettings,
    auditors: Sequence[Auditor] = (),
    progress: Callable[[str], None] | None = None,
) -> tuple[WhoWhenReport, tuple[JudgedLog, ...]]:
    """Attributes every log with `method` and scores it; `combined` also audits each log with
    `auditors` (tier 1 in `trust eval whowhen`). A log whose question fails at the endpoint gets no
    prediction and keeps the error (`Attribution.error`); a malformed log raises `GraphError`."""
    if method not in JUDGE_METHODS:
        raise GraphError(f"method {method!r}: expected one of {', '.join(JUDGE_METHODS)}")
    judged: list[JudgedLog] = []
    for path in files:
        case = load_case(path)
        if case.label is None:
            raise GraphError(f"{path}: missing field 'mistake_agent' and 'mistake_step': the log has no label to score")
        try:
            if method == COMBINED:
                log = case.log if case.log is not None else read_agent_log(path)
                attribution = await combined(case, chat, await audit_agent_log(log, settings, auditors))
            else:
                attribution = await _PLAIN[method](case, chat)
        except LlmError as exc:
            attribution = Attribution(None, None, error=str(exc))
        prediction = WhoWhenPrediction(case.id, attribution.agent, attribution.step)
        item = WhoWhenItem(case.id, case.label.agent, case.label.step, prediction)
        judged.append(JudgedLog(item, attribution))
        if progress is not None:
            progress(case.id)
    items = tuple(entry.item for entry in judged)
    return WhoWhenReport(items, score_whowhen(items)), tuple(judged)
