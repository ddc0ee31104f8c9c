"""The readers of real agent-log formats: each fixture under logs/ is shaped like what its tool
exports; every one is detected, read into turns (speaker, addressee, content, tool steps, order)
and built into an acyclic CIG, and what none of them can read gets one error naming them all."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from trust.core.graphs.agent_log import (
    WHO_WHEN,
    AgentLog,
    LogLimits,
    build_cig,
    detect_format,
    log_to_json,
    parse_agent_log,
    parse_log,
    who_when_speaker,
)
from trust.core.graphs.cig import Role
from trust.core.graphs.logs import AUTOGEN, CREWAI, LANGSMITH, LOG_FORMATS, OPENAI_AGENTS, OTEL_GENAI
from trust.errors import GraphError

LOGS = Path(__file__).parent / "logs"


def _load(name: str) -> Any:
    return json.loads((LOGS / name).read_text())


def _turns(log: AgentLog) -> list[tuple[str, str]]:
    return [(turn.agent, turn.content) for turn in log.turns]


def _role(log: AgentLog, agent: str) -> Role:
    return log.role_of(agent)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("who_when_hand_crafted.json", WHO_WHEN),
        ("autogen_task_result.json", AUTOGEN),
        ("ag2_group_chat.json", AUTOGEN),
        ("langsmith_run_tree.json", LANGSMITH),
        ("openai_agents_trace.json", OPENAI_AGENTS),
        ("crewai_output.json", CREWAI),
        ("otel_otlp.json", OTEL_GENAI),
        ("otel_sdk_spans.json", OTEL_GENAI),
    ],
)
def test_every_fixture_is_detected_and_builds_an_acyclic_cig(name: str, source: str) -> None:
    data = _load(name)
    assert detect_format(data) == source
    log = parse_log(data)
    assert log.source == source
    cig = build_cig(log)
    assert len(cig) == len(log.turns) >= 2
    assert nx.is_directed_acyclic_graph(cig.graph)
    # The project's own format carries everything a reader found, the addressees included.
    again = parse_agent_log(log_to_json(log))
    assert [(t.agent, t.content, t.recipient) for t in again.turns] == [
        (t.agent, t.content, t.recipient) for t in log.turns
    ]


# ---------------------------------------------------------------------------------------------- Who&When


def test_role_only_who_when_names_the_speaker_and_its_addressee() -> None:
    raw = _load("who_when_hand_crafted.json")
    log = parse_log(raw)
    assert [turn.agent for turn in log.turns] == [
        "human",
        "Orchestrator",
        "Orchestrator",
        "Orchestrator",
        "WebSurfer",
        "Orchestrator",
        "Orchestrator",
        "Assistant",
        "Orchestrator",
    ]
    assert [turn.content for turn in log.turns] == [entry["content"] for entry in raw["history"]]
    assert [turn.recipient for turn in log.turns][3] == "WebSurfer"
    assert [turn.recipient for turn in log.turns][6] == "Assistant"
    assert {turn.recipient for index, turn in enumerate(log.turns) if index not in (3, 6)} == {None}
    # Steps stay indices into history: the label names the Assistant's turn directly.
    assert log.label is not None and log.label.step == 7 and log.turns[7].agent == log.label.agent
    assert log.is_correct is False  # read from the hand-crafted spelling `is_corrected`
    assert _role(log, "human") is Role.USER and _role(log, "Orchestrator") is Role.PLANNER
    assert log.turns[0].input == raw["question"]


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("Orchestrator (thought)", ("Orchestrator", None)),
        ("Orchestrator (-> WebSurfer)", ("Orchestrator", "WebSurfer")),
        ("Orchestrator (termination condition)", ("Orchestrator", None)),
        ("WebSurfer", ("WebSurfer", None)),
        ("human", ("human", None)),
        ("(thought)", ("(thought)", None)),
    ],
)
def test_who_when_roles_split_into_speaker_and_addressee(role: str, expected: tuple[str, str | None]) -> None:
    assert who_when_speaker(role) == expected


def test_a_null_name_is_the_role_only_shape() -> None:
    raw = {"question": "q", "history": [{"content": "hi", "name": None, "role": "WebSurfer"}]}
    assert [turn.agent for turn in parse_log(raw).turns] == ["WebSurfer"]


def test_a_log_that_names_some_speakers_must_name_all() -> None:
    raw = {
        "question": "q",
        "history": [{"content": "a", "role": "user", "name": "Planner"}, {"content": "b", "role": "assistant"}],
    }
    with pytest.raises(GraphError, match=r"history\[1\]: missing field 'name' \(other entries name their speaker"):
        parse_log(raw)


def test_a_role_only_entry_without_role_names_the_field() -> None:
    with pytest.raises(GraphError, match=r"history\[0\]: missing field 'role'"):
        parse_log({"question": "q", "history": [{"content": "a"}]})


# ---------------------------------------------------------------------------------------------- AutoGen


def test_autogen_task_result_gives_tool_results_their_own_turns_and_keeps_handoffs() -> None:
    log = parse_log(_load("autogen_task_result.json"))
    assert [turn.agent for turn in log.turns] == [
        "user",
        "planner",
        "planner",
        "calculator",
        "evaluate",
        "calculator",
        "calculator",
    ]
    assert log.turns[2].recipient == "calculator"
    assert log.turns[3].content == 'call evaluate({"expression": "12 * 1.25"})'
    assert log.turns[4].content == "15.0" and _role(log, "evaluate") is Role.TOOL
    assert log.turns[5].content == "15.0"  # the summary, without repeating the call it summarises
    assert log.task.startswith("A shop sells pens") and _role(log, "user") is Role.USER


def test_ag2_tool_replies_are_spoken_by_the_tool_they_answer() -> None:
    log = parse_log(_load("ag2_group_chat.json"))
    assert [turn.agent for turn in log.turns] == ["User_proxy", "Planner", "Coder", "days_in_month", "Coder", "Critic"]
    assert log.turns[2].content == 'call days_in_month({"year": 2024, "month": 2})'
    assert log.turns[3].content == "29" and _role(log, "days_in_month") is Role.TOOL
    assert _role(log, "Critic") is Role.REVIEWER


def test_autogen_messages_in_a_chat_result_and_with_errors() -> None:
    messages = _load("ag2_group_chat.json")
    assert _turns(parse_log({"chat_history": messages, "summary": "", "cost": {}})) == _turns(parse_log(messages))
    failing = [
        {"source": "a", "content": [{"id": "c1", "name": "run", "arguments": "{}"}], "type": "ToolCallRequestEvent"},
        {
            "source": "a",
            "content": [{"content": "boom", "call_id": "c1", "is_error": True}],
            "type": "ToolCallExecutionEvent",
        },
    ]
    log = parse_log(failing)
    assert _turns(log)[1] == ("run", "error: boom")  # the tool is named by its call id
    with pytest.raises(GraphError, match=r"messages\[1\]\.content: expected an array, got string"):
        parse_log([failing[0], {**failing[1], "content": "x"}])
    with pytest.raises(GraphError, match=r"messages\[0\]: missing field 'name' \(AG2\) or 'source'"):
        parse_log([{"role": "assistant", "content": "x"}])


# ---------------------------------------------------------------------------------------------- LangSmith


def _flatten(run: dict[str, Any]) -> list[dict[str, Any]]:
    children = run.pop("child_runs", [])
    runs = [run]
    for child in children:
        runs.extend(_flatten(child))
    return runs


def test_langsmith_run_tree_speaks_by_langgraph_node_in_start_order() -> None:
    log = parse_log(_load("langsmith_run_tree.json"))
    assert [turn.agent for turn in log.turns] == [
        "supervisor",
        "researcher",  # its inner node is "agent": the top-level node names the sub-agent
        "tavily_search",  # listed first in the file, started after the call that asked for it
        "researcher",
        "math_expert",
    ]
    assert log.turns[0].content == "call transfer_to_researcher({})"
    assert log.turns[2].content.endswith("545,796.") and _role(log, "tavily_search") is Role.TOOL
    assert log.turns[2].input == "{'query': 'Lisbon population 2021 census'}"
    assert log.task == "What was the population of Lisbon in 2021, and what is 10% of it?"


def test_a_flat_langsmith_export_reads_like_the_tree() -> None:
    tree = _load("langsmith_run_tree.json")
    flat = _flatten(copy.deepcopy(tree))
    flat.reverse()  # the order of a flat export is not the order of the run
    assert detect_format(flat) == LANGSMITH
    assert _turns(parse_log(flat)) == _turns(parse_log(tree))
    assert _turns(parse_log({"runs": flat})) == _turns(parse_log(tree))


def test_langsmith_without_model_or_tool_runs_reads_its_leaves() -> None:
    tree = {
        "id": "r",
        "name": "pipeline",
        "run_type": "chain",
        "inputs": {"question": "2 + 2?"},
        "child_runs": [
            {"id": "a", "name": "draft", "run_type": "chain", "outputs": {"output": "4"}, "start_time": "1"},
            {"id": "b", "name": "check", "run_type": "parser", "outputs": {"output": "ok"}, "start_time": "2"},
        ],
    }
    log = parse_log(tree)
    assert _turns(log) == [("draft", "4"), ("check", "ok")] and log.task == "2 + 2?"
    with pytest.raises(GraphError, match=r"run\.child_runs\[1\]: missing field 'run_type'"):
        parse_log({**tree, "child_runs": [tree["child_runs"][0], {"id": "c"}]})


# ---------------------------------------------------------------------------------------------- OpenAI Agents


def test_openai_agents_trace_follows_the_handoff_and_the_function_call() -> None:
    raw = _load("openai_agents_trace.json")
    log = parse_log(raw)
    assert [turn.agent for turn in log.turns] == ["Triage Agent", "Math Tutor", "calculator", "Math Tutor"]
    assert log.turns[0].recipient == "Math Tutor"  # the handoff addresses the triage agent's call
    assert log.turns[1].content.endswith('call calculator({"expression": "180 / 2.5"})')
    assert (log.turns[2].content, log.turns[2].input) == ("72.0", '{"expression": "180 / 2.5"}')
    assert _role(log, "calculator") is Role.TOOL
    assert log.task == "A train travels 180 km in 2.5 hours. What is its average speed?"
    items = raw["data"]
    assert _turns(parse_log(items)) == _turns(log)
    assert _turns(parse_log({"trace": items[0], "spans": items[1:]})) == _turns(log)


def test_an_openai_agents_trace_of_response_spans_only_has_no_turn() -> None:
    spans = [
        {"object": "trace.span", "id": "s1", "parent_id": None, "span_data": {"type": "agent", "name": "A"}},
        {"object": "trace.span", "id": "s2", "parent_id": "s1", "span_data": {"type": "response", "response_id": "r"}},
    ]
    with pytest.raises(GraphError, match="holds no turn"):
        parse_log(spans)


# ---------------------------------------------------------------------------------------------- CrewAI


def test_crewai_gives_one_turn_per_task_spoken_by_its_agent() -> None:
    raw = _load("crewai_output.json")
    log = parse_log(raw)
    assert [turn.agent for turn in log.turns] == ["Senior Energy Researcher", "Financial Analyst"]
    assert [turn.content for turn in log.turns] == [task["raw"] for task in raw["tasks_output"]]
    assert log.turns[1].input.startswith("Using the research, compute the simple payback")
    assert _turns(parse_log(raw["tasks_output"])) == _turns(log)
    assert _turns(parse_log(raw["tasks_output"][0])) == _turns(log)[:1]
    with pytest.raises(GraphError, match=r"tasks_output\[1\]\.agent: expected the role"):
        parse_log({"tasks_output": [raw["tasks_output"][0], {**raw["tasks_output"][1], "agent": ""}]})


# ---------------------------------------------------------------------------------------------- OpenTelemetry


def test_otlp_genai_spans_give_model_calls_and_tool_executions() -> None:
    log = parse_log(_load("otel_otlp.json"))
    assert [turn.agent for turn in log.turns] == ["TravelPlanner", "get_weather", "TravelPlanner"]
    assert log.turns[0].content == 'call get_weather({"location": "Paris"})'
    assert log.turns[1].content == "rain, 14 degrees C, 80% chance of precipitation"
    assert log.turns[1].input == '{"location": "Paris"}' and _role(log, "get_weather") is Role.TOOL
    assert log.turns[2].content.startswith("Tomorrow Paris expects rain")
    assert log.task == "Weather in Paris tomorrow, and should I pack an umbrella?"


def test_sdk_spans_with_older_genai_conventions_read_in_start_order() -> None:
    log = parse_log(_load("otel_sdk_spans.json"))
    assert _turns(log) == [
        ("Reviewer", "The draft cites 3 studies; two are from 2019 and one from 2021."),
        ("Summarizer", "The draft cites three studies, two from 2019."),
    ]
    assert log.task == "Review the draft on sleep and memory."


def test_an_agent_span_alone_is_a_turn_and_spans_without_genai_are_refused() -> None:
    span = {
        "name": "invoke_agent Helper",
        "context": {"span_id": "0x1"},
        "attributes": {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Helper",
            "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]',
        },
    }
    assert _turns(parse_log([span])) == [("Helper", "done")]
    http = {"name": "GET", "context": {"span_id": "0x2"}, "attributes": {"http.request.method": "GET"}}
    with pytest.raises(GraphError, match="none of the 1 spans carries a gen_ai"):
        parse_log([http])


# ---------------------------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("data", "found"),
    [
        ([], "an empty array"),
        ({"turns": []}, "an object with keys turns"),
        ([1, 2], "an array whose first item is integer"),
        ("text", "string"),
        ([{"foo": 1}], "an array whose first item is object"),
    ],
)
def test_what_no_reader_reads_gets_one_error_naming_every_format(data: object, found: str) -> None:
    with pytest.raises(GraphError) as error:
        parse_log(data)
    message = str(error.value)
    assert message.startswith(f"unrecognised agent log ({found}). Readable formats:")
    for log_format in LOG_FORMATS:
        assert log_format.title in message
    assert "Who&When" in message and "OpenTelemetry" in message and "CrewAI" in message


def test_limits_bound_every_reader() -> None:
    with pytest.raises(GraphError, match="turns, above the limit of 3"):
        parse_log(_load("autogen_task_result.json"), LogLimits(max_turns=3))
    with pytest.raises(GraphError, match=r"tasks_output\[0\] \(content\): \d+ characters, above the limit of 20"):
        parse_log(_load("crewai_output.json"), LogLimits(max_turn_chars=20))


def test_the_examples_of_docs_graphs_md_read_as_documented() -> None:
    docs = (Path(__file__).parents[3] / "docs" / "graphs.md").read_text()
    section = docs[docs.index("### Who&When") : docs.index("### Edges when a turn has no references")]
    blocks = re.findall(r"```json\n(.*?)```", section, re.S)
    sources = [parse_log(json.loads(block)).source for block in blocks]
    assert sources == [WHO_WHEN, AUTOGEN, LANGSMITH, OPENAI_AGENTS, CREWAI, OTEL_GENAI]
