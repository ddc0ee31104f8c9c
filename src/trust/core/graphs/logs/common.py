"""What every reader of `trust.core.graphs.logs` shares: a builder that turns what a reader finds
into an `AgentLog` under `LogLimits`, and the few ways frameworks write a message's text.

Readers walk already-decoded JSON (reading files is the caller's business) and report bad input as
`GraphError` naming the path of the field (`messages[3].content: expected a string, got integer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from trust.core.graphs.agent_log import (
    AgentLog,
    AgentSpec,
    LogLimits,
    LogTurn,
    MistakeLabel,
    _Budget,
    _expect_list,
    _expect_object,
    _type_name,
    infer_role,
)
from trust.core.graphs.cig import Role
from trust.errors import GraphError

__all__ = ["LogBuilder", "expect_list", "expect_object", "message_text", "render_call", "type_name"]

# The readers report bad input exactly as the project's own format does: one set of field checks.
type_name = _type_name
expect_object = _expect_object
expect_list = _expect_list


def render_call(name: object, arguments: object) -> str:
    """A tool call as one line, `call name(arguments)`: arguments as the framework wrote them (a
    JSON string in OpenAI-style calls), objects as compact JSON."""
    if not isinstance(arguments, str):
        arguments = "" if arguments is None else json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return f"call {name}({arguments})"


def message_text(value: object, *, depth: int = 0) -> str:
    """The text a message or a message part carries, whichever of the common shapes it has.

    A string is itself; a list is its items' texts joined by newlines; an object is read by the
    first of its keys that holds text: `content` (OpenAI, AutoGen, OpenTelemetry parts), `parts`
    (OpenTelemetry messages), `text`
    (OpenAI/Anthropic parts), `kwargs.content` (LangChain's serialized messages), `output`,
    `message`, `response`, `result`. Tool calls an object carries (`tool_calls`, OpenAI and LangChain; `function_call`,
    the legacy OpenAI field; OpenTelemetry `tool_call` parts) are appended as `call name(args)`
    lines, because a call is what the turn did. Other values (numbers, images) give "". `depth`
    bounds the recursion: JSON from a file can nest arbitrarily.
    """
    if depth > 16 or value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text for item in value if (text := message_text(item, depth=depth + 1)))
    if not isinstance(value, Mapping):
        return ""
    if value.get("type") in ("tool_call", "function_call") and "name" in value:
        return render_call(value["name"], value.get("arguments"))
    if value.get("type") == "constructor" and isinstance(value.get("kwargs"), Mapping):
        return message_text(value["kwargs"], depth=depth + 1)
    text = ""
    for key in ("content", "parts", "text", "output", "message", "response", "result"):
        if key in value and value[key] is not None:
            text = message_text(value[key], depth=depth + 1)
            break
    calls: list[str] = []
    for call in value.get("tool_calls") or ():
        if isinstance(call, Mapping):
            function = call.get("function")
            if isinstance(function, Mapping):
                calls.append(render_call(function.get("name"), function.get("arguments")))
            elif "name" in call:
                calls.append(render_call(call["name"], call.get("args", call.get("arguments"))))
    function_call = value.get("function_call")
    if isinstance(function_call, Mapping) and "name" in function_call:
        calls.append(render_call(function_call["name"], function_call.get("arguments")))
    return "\n".join(part for part in (text, *calls) if part)


class LogBuilder:
    """Collects turns and agents in order and builds the `AgentLog`, counting every text against
    `LogLimits` as it arrives (so a hostile log fails at the bound, not after filling memory)."""

    def __init__(self, source: str, limits: LogLimits | None = None) -> None:
        self.source = source
        self._budget = _Budget(limits or LogLimits())
        self._agents: dict[str, AgentSpec] = {}
        self._turns: list[LogTurn] = []

    @property
    def turns(self) -> list[LogTurn]:
        return self._turns

    def agent(self, name: str, role: Role | None = None, path: str = "") -> str:
        """Declares `name` (first declaration wins); the role is `infer_role(name)` unless given."""
        if name not in self._agents:
            self._agents[name] = AgentSpec(name, role if role is not None else infer_role(name))
            self._budget.agents(len(self._agents), path or "agents")
        return name

    def turn(
        self,
        agent: str,
        content: str,
        *,
        path: str,
        role: Role | None = None,
        input: str = "",
        recipient: str | None = None,
    ) -> None:
        if not agent.strip():
            raise GraphError(f"{path}: the speaker's name is empty")
        self.agent(agent, role, path)
        self._turns.append(
            LogTurn(
                agent=agent,
                content=self._budget.text(content, f"{path} (content)"),
                input=self._budget.text(input, f"{path} (input)"),
                recipient=recipient,
            )
        )
        self._budget.turns(len(self._turns), path)

    def address_last(self, agent: str, recipient: str) -> bool:
        """Marks `agent`'s latest turn as addressed to `recipient`; False when it has none."""
        for index in range(len(self._turns) - 1, -1, -1):
            turn = self._turns[index]
            if turn.agent == agent:
                self._turns[index] = LogTurn(
                    turn.agent, turn.content, turn.input, turn.references, turn.timestamp, turn.contract, recipient
                )
                return True
        return False

    def build(
        self, task: str, *, what: str, label: MistakeLabel | None = None, is_correct: bool | None = None
    ) -> AgentLog:
        """The log; `what` names what held no turn in the error ("the run tree", "the spans")."""
        if not self._turns:
            raise GraphError(f"{what} holds no turn that an agent or a tool produced; a CIG needs at least one")
        return AgentLog(
            task=self._budget.text(task, "task"),
            agents=tuple(self._agents.values()),
            turns=tuple(self._turns),
            source=self.source,
            label=label,
            is_correct=is_correct,
        )
