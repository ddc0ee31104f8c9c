"""A Layer-1 node oracle backed by an OpenAI-compatible model (paper section 2.2.4, tier 2).

`LlmNodeOracle` implements `trust.graphs.oracles.NodeOracle`: it shows the model one turn (its
agent, role, outside input, the outputs of its parents, and the tool observations that answer it)
and asks for a JSON verdict {"score": 0..1, "critique": "...", "rejects_input": bool} on the three
dimensions of the node validity audit: correctness, completeness and role adherence. It is what
`trust eval whowhen` and `trust eval processbench` add to the deterministic oracles when
`Settings().llm` names an endpoint (TRUST_LLM__BASE_URL).

The temperature is 0: an audit should be repeatable. A reply that is not such a JSON object is an
`LlmError` naming the turn, never a silent pass. Texts are cut to `max_chars` characters each so
that one long log cannot blow the model's context.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from trust.errors import LlmError
from trust.graphs.cig import AgentTurn
from trust.graphs.oracles import NodeVerdict
from trust.refine import BlockingChat
from trust.settings import LlmSettings

__all__ = ["NODE_AUDIT_SYSTEM_PROMPT", "LlmNodeOracle"]

NODE_AUDIT_SYSTEM_PROMPT = (
    "You are an independent auditor of one step of a multi-agent or step-by-step solution. Judge only "
    "this step, given what it received: correctness (facts and calculations are right, nothing is "
    "hallucinated), completeness (it does what its input asks) and role adherence (it does its agent's "
    "job). Reply with a JSON object only: "
    '{"score": <number from 0 to 1, 1 = fully valid>, "critique": "<the specific error, or empty>", '
    '"rejects_input": <true if this step itself points out that its input is wrong>}'
)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


class LlmNodeOracle:
    """See the module docstring. Use as a context manager, or call `close()` when done."""

    def __init__(self, settings: LlmSettings, *, name: str = "llm", max_chars: int = 6_000) -> None:
        self.name = name
        self._chat = BlockingChat(settings)
        self._max_chars = max_chars

    def __enter__(self) -> LlmNodeOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._chat.close()

    def prompt(self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]) -> str:
        limit = self._max_chars
        parts = [f"Agent: {node.agent} (role: {node.role.value}), step {node.step}"]
        if node.input:
            parts.append(f"Outside input:\n{_cut(node.input, limit)}")
        for parent in parents:
            parts.append(f"Received from {parent.agent} (step {parent.step}):\n{_cut(parent.output, limit)}")
        parts.append(f"Output of this step:\n{_cut(node.output, limit)}")
        for seen in observations:
            parts.append(f"Observed when it ran ({seen.agent}, step {seen.step}):\n{_cut(seen.output, limit)}")
        return "\n\n".join(parts)

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None:
        reply = self._chat.complete(
            NODE_AUDIT_SYSTEM_PROMPT, self.prompt(node, parents, observations), temperature=0.0, json_mode=True
        )
        try:
            verdict = json.loads(reply)
        except json.JSONDecodeError:
            raise LlmError(f"turn {node.id!r}: the auditor model answered no JSON: {reply[:200]!r}") from None
        if not isinstance(verdict, dict):
            raise LlmError(f"turn {node.id!r}: the auditor model answered {type(verdict).__name__}, not an object")
        score = verdict.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
            raise LlmError(f"turn {node.id!r}: the verdict's 'score' is {score!r}, not a number in [0, 1]")
        critique = verdict.get("critique", "")
        rejects = verdict.get("rejects_input", False)
        if not isinstance(critique, str) or not isinstance(rejects, bool):
            raise LlmError(f"turn {node.id!r}: 'critique' must be a string and 'rejects_input' a boolean")
        return NodeVerdict(float(score), critique.strip(), rejects)
