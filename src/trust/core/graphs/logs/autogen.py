"""AutoGen and AG2 group-chat messages.

Two generations of the same idea, a list of messages in the order they were sent:

- AutoGen 0.2 / AG2 (`GroupChat.messages`, `ChatResult.chat_history`): `{"name", "role",
  "content"}`, where `name` is the speaker and `role` the chat role; an assistant asks for tools in
  `tool_calls` (`[{"id", "type": "function", "function": {"name", "arguments"}}]`, or the legacy
  `function_call`), and the executing agent answers with `role: "tool"` (its `tool_responses` carry
  each `tool_call_id`).
- AutoGen 0.4 AgentChat (`TaskResult.messages`, dumped with `model_dump()`): `{"source",
  "content", "type"}` with `type` `TextMessage`, `ToolCallRequestEvent` (content: `[{"id", "name",
  "arguments"}]`), `ToolCallExecutionEvent` (content: `[{"content", "name", "call_id",
  "is_error"}]`), `ToolCallSummaryMessage`, `HandoffMessage` (with `target`), `ThoughtEvent`,
  `StopMessage`, ...

Accepted as a bare list, as `{"messages": [...]}` (TaskResult) or as `{"chat_history": [...]}`
(ChatResult). One turn per message, in order, except that a tool's output is the tool's own turn:
a 0.4 execution event gives one turn per result (agent = the tool's name, role tool), and a 0.2
tool reply is spoken by the tool whose call it answers. Streaming chunks
(`ModelClientStreamingChunkEvent`) are skipped: the full message follows them. The task is the
first message when a user sent it (the user's turn stays in the log, as its first step).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trust.core.graphs.agent_log import AgentLog, LogLimits, infer_role
from trust.core.graphs.cig import Role
from trust.core.graphs.logs.common import LogBuilder, expect_list, expect_object, message_text, type_name
from trust.errors import GraphError

__all__ = ["AUTOGEN", "autogen_messages", "parse_autogen"]

AUTOGEN = "autogen"

_SKIPPED_TYPES = frozenset({"ModelClientStreamingChunkEvent"})
_TOOL_ROLES = frozenset({"tool", "function"})


def autogen_messages(data: object) -> tuple[Sequence[Any], str] | None:
    """The message list and its path when `data` has the shape of AutoGen messages, else None."""
    if isinstance(data, Mapping):
        for key in ("messages", "chat_history"):
            if isinstance(data.get(key), list) and _looks_like_messages(data[key]):
                return data[key], key
        return None
    if isinstance(data, list) and _looks_like_messages(data):
        return data, "messages"
    return None


def _looks_like_messages(items: Sequence[Any]) -> bool:
    first = next((item for item in items if isinstance(item, Mapping)), None)
    return first is not None and "content" in first and any(key in first for key in ("name", "source", "role"))


def parse_autogen(data: object, limits: LogLimits | None = None) -> AgentLog:
    found = autogen_messages(data)
    if found is None:
        raise GraphError("not AutoGen messages: expected a list of {name|source, content} messages")
    messages, root = found
    builder = LogBuilder(AUTOGEN, limits)
    call_names: dict[str, str] = {}
    task = ""
    for index, raw in enumerate(messages):
        path = f"{root}[{index}]"
        message = expect_object(raw, path)
        kind = message.get("type")
        if kind in _SKIPPED_TYPES:
            continue
        speaker = _speaker(message, path)
        content = message.get("content")
        if kind == "ToolCallRequestEvent":
            calls = [
                expect_object(call, f"{path}.content[{position}]")
                for position, call in enumerate(expect_list(content, f"{path}.content"))
            ]
            for call in calls:
                if isinstance(call.get("id"), str) and isinstance(call.get("name"), str):
                    call_names[call["id"]] = call["name"]
            builder.turn(speaker, message_text([_as_call(call) for call in calls]), path=path)
        elif kind == "ToolCallExecutionEvent":
            for position, result in enumerate(expect_list(content, f"{path}.content")):
                where = f"{path}.content[{position}]"
                result = expect_object(result, where)
                tool = result.get("name") or call_names.get(str(result.get("call_id")), "") or "tool"
                text = message_text(result.get("content"))
                if result.get("is_error") is True:
                    text = f"error: {text}"
                builder.turn(_expect_name(tool, f"{where}.name"), text, path=where, role=Role.TOOL)
        elif message.get("role") in _TOOL_ROLES and "source" not in message:
            tool, text = _tool_reply(message, speaker, call_names)
            builder.turn(tool, text, path=path, role=Role.TOOL)
        else:
            for call in message.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                    name = call["function"].get("name")
                    if isinstance(call.get("id"), str) and isinstance(name, str):
                        call_names[call["id"]] = name
            if content is not None and not isinstance(content, str | list):
                raise GraphError(f"{path}.content: expected a string or a list of parts, got {type_name(content)}")
            target = message.get("target") if kind == "HandoffMessage" else None
            recipient = target if isinstance(target, str) and target else None
            # A 0.4 message's `tool_calls` (on a ToolCallSummaryMessage) repeat the calls that its own
            # request event already logged; a 0.2 message's are the calls it makes.
            text = message_text(content) if "source" in message else message_text(message)
            builder.turn(speaker, text, path=path, recipient=recipient)
            if index == 0 and infer_role(speaker) is Role.USER:
                task = message_text(content)
    return builder.build(task, what=f"the {root} list")


def _speaker(message: Mapping[str, Any], path: str) -> str:
    for key in ("source", "name"):
        value = message.get(key)
        if value is not None:
            return _expect_name(value, f"{path}.{key}")
    if message.get("role") == "user":
        return "user"
    raise GraphError(f"{path}: missing field 'name' (AG2) or 'source' (AutoGen 0.4): the message names no speaker")


def _expect_name(value: object, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GraphError(f"{path}: expected the speaker's name, got {value!r}")
    return value.strip()


def _as_call(call: Any) -> Mapping[str, Any]:
    return {"type": "tool_call", "name": call.get("name"), "arguments": call.get("arguments")}


def _tool_reply(message: Mapping[str, Any], speaker: str, call_names: Mapping[str, str]) -> tuple[str, str]:
    """A 0.2 tool reply is the tool's turn: the tool is the one its `tool_call_id` names (or the
    legacy `name` of a function reply), else the executing agent."""
    ids = [message.get("tool_call_id")]
    responses = message.get("tool_responses") or ()
    ids += [response.get("tool_call_id") for response in responses if isinstance(response, Mapping)]
    tools = {call_names[str(ident)] for ident in ids if ident is not None and str(ident) in call_names}
    tool = tools.pop() if len(tools) == 1 else speaker
    return tool, message_text(message.get("content"))
