"""ProcessBench's critic, over any chat model (`trust eval processbench --method critic|combined`).

`critic` is the published prompt-based critic (Zheng et al., 2024; QwenLM/ProcessBench, `code/`):
the problem and the steps, each wrapped in `<paragraph_i>` tags, in one user message
(`critique_prompt`); the model reviews them and puts the index of the earliest wrong paragraph, or
-1, in `\\boxed{}`. The answer is read as their script reads it (`parse_critique`): the content of
the last `\\boxed{...}`, as an integer; anything else is no prediction, which matches no label.
Their runs decode greedily, as `JudgeChat` does.

`combined` (this project's method): the deterministic layer first, the critic where it is silent.
When tier 1 finds a step whose arithmetic does not hold (`trust.lab.evaluation.processbench.predict`
with the operation check: a checked fact, not an opinion), that step is the prediction; otherwise
the critic's answer is, when it names -1 or a step of the solution. A critique that names no step
(no box, a number outside the solution such as the problem's final answer, or no answer from the
endpoint) says nothing about the solution, so tier 1's "no error found" (-1) stands.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trust.errors import ConfigError, GraphError, LlmError
from trust.lab.evaluation.judges.chat import JudgeChat
from trust.lab.evaluation.processbench import ProcessBenchItem, ProcessBenchScore, predict, score_processbench

__all__ = [
    "COMBINED",
    "CRITIC",
    "CRITIQUE_TEMPLATE",
    "CRITIC_METHODS",
    "Critique",
    "critic",
    "critique_prompt",
    "judge_processbench",
    "parse_critique",
]

CRITIC = "critic"
COMBINED = "combined"
CRITIC_METHODS = (CRITIC, COMBINED)

CRITIQUE_TEMPLATE = (
    "The following is a math problem and a solution (split into paragraphs, enclosed with tags and indexed from 0):"
    "\n\n[Math Problem]\n\n{problem}\n\n[Solution]\n\n{tagged_response}\n\n"
    "Your task is to review and critique the solution paragraph by paragraph. Once you identify an error in a "
    "paragraph, return the index of the paragraph where the earliest error occurs. Otherwise, return the index of "
    '-1 (which typically denotes "not found").\n\n'
    "Please put your final answer (i.e., the index) in \\boxed{{}}."
)
"""ProcessBench's `critique_template.txt` (a `str.format` template: `{{}}` is a literal `{}`)."""

_BOXED = re.compile(r"\\boxed\{([^}]*)\}")


@dataclass(frozen=True, slots=True)
class Critique:
    """One item's prediction (None: no usable answer), where it came from, and any endpoint error."""

    id: str
    label: int | None
    source: str = "judge"
    error: str | None = None

    def as_dict(self) -> dict[str, object]:
        row: dict[str, object] = {"id": self.id, "label": self.label, "source": self.source}
        if self.error is not None:
            row["error"] = self.error
        return row


def critique_prompt(item: ProcessBenchItem) -> str:
    tagged = "\n\n".join(f"<paragraph_{i}>\n{step}\n</paragraph_{i}>" for i, step in enumerate(item.steps))
    return CRITIQUE_TEMPLATE.format(problem=item.problem, tagged_response=tagged)


def parse_critique(answer: str) -> int | None:
    """The integer in the last `\\boxed{...}`, or None (no box, or not an integer)."""
    found = _BOXED.findall(answer)
    if not found:
        return None
    text = found[-1].strip()
    try:
        return int(text)
    except ValueError:
        return None


def _names_a_step(label: int | None, item: ProcessBenchItem) -> bool:
    return label is not None and -1 <= label < len(item.steps)


async def critic(item: ProcessBenchItem, chat: JudgeChat) -> Critique:
    answer = await chat.ask(CRITIC, None, critique_prompt(item))
    return Critique(item.id, parse_critique(answer))


async def judge_processbench(
    items: Sequence[ProcessBenchItem],
    method: str,
    chat: JudgeChat,
    *,
    tau_node: float,
    progress: Callable[[str], None] | None = None,
) -> tuple[ProcessBenchScore, tuple[Critique, ...]]:
    """Predicts every item with `method` and scores the predictions (no prediction matches no
    label). An item whose question fails at the endpoint keeps the error (`Critique.error`)."""
    if method not in CRITIC_METHODS:
        raise ConfigError(f"method {method!r}: expected one of {', '.join(CRITIC_METHODS)}")
    critiques: list[Critique] = []
    for item in items:
        checked: int | None = None
        if method == COMBINED:
            try:
                checked = predict(item, tau_node=tau_node, check_operations=True)
            except GraphError as exc:
                raise GraphError(f"item {item.id!r}: {exc}") from None
        if checked is not None and checked != -1:
            found = Critique(item.id, checked, source="deterministic")
        else:
            try:
                found = await critic(item, chat)
            except LlmError as exc:
                found = Critique(item.id, None, error=str(exc))
            if checked is not None and not _names_a_step(found.label, item):
                # No usable critique (no index, one outside the solution, or no answer at all) says
                # nothing about this solution: the combination keeps tier 1's "no error found".
                found = Critique(item.id, checked, source="deterministic", error=found.error)
        critiques.append(found)
        if progress is not None:
            progress(item.id)
    gold = {item.id: item.label for item in items}
    return score_processbench((c.label, gold[c.id]) for c in critiques), tuple(critiques)
