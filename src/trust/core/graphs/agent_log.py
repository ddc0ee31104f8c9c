"""Agent logs in, CIGs out: the project's agent-log JSON, the Who&When importer, and edge inference.

The model every reader produces (`AgentLog`), two of the readers, all parsed from already-decoded
JSON (reading files is the caller's business), and the CIG built from it; the readers of other
tools' logs (AutoGen/AG2, LangSmith, OpenAI Agents SDK, CrewAI, OpenTelemetry GenAI) and the
detector are in `trust.core.graphs.logs`:

- `trust.agent-log` version 1, the project's own format (documented in docs/graphs.md, section
  "Agent log JSON"): a task, the agents with their roles, and the turns in the order they happened,
  each optionally naming the earlier turns it answers (`references`).
- Who&When (Zhang et al., ICML 2025), both shapes (`parse_who_when`): `question`, `history`
  [{content, role, name}] (or role-only [{content, role}], the speaker in `role`),
  `system_prompt` {agent: prompt}, and the labels `mistake_agent`, `mistake_step`
  (a 0-based index into `history`, stored as a string), `mistake_reason`, `is_correct`.

`detect_format` tells every format apart, `parse_log` dispatches, `build_cig` turns a parsed log into a
`Cig`. Every malformed field raises `GraphError` naming its path (`history[4].content: expected a
string, got int`), and `LogLimits` bounds sizes so that a hostile log cannot exhaust memory.

Edge rule when a turn has no explicit `references` (Who&When never has them), see `OverlapRule`:

1. sequence: turn i responds to turn i - 1 (a group chat shows each speaker the previous message);
2. overlap: turn i also depends on an earlier turn j < i - 1 when at least `min_shared` of i's
   distinctive tokens were last produced by j, within the last `window` turns. Distinctive tokens
   are numbers of two or more digits (thousands separators dropped, so 737,015 = 737015),
   code-like identifiers (with an underscore, a digit or an inner capital), quoted strings, URLs and
   paths, and capitalised words in the middle of a sentence (names). Tokens of the task statement
   and tokens found in more than `common_share` of the turns are not distinctive: they tie
   everything to everything. "Last produced" credits each token to the most recent turn that
   contained it, which is what the agent actually read; a token that turn i - 1 also contained is
   credited to i - 1 and adds nothing.

The inference keeps one dict token -> last turn, so it is O(total tokens), not O(turns^2); each turn
contributes at most `max_tokens` tokens and gains at most `max_parents` overlap edges.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, ReplyContract, Role, turn_id
from trust.errors import GraphError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "WHO_WHEN",
    "AgentLog",
    "AgentSpec",
    "LogLimits",
    "LogTurn",
    "MistakeLabel",
    "OverlapRule",
    "build_cig",
    "detect_format",
    "distinctive_tokens",
    "infer_role",
    "log_to_json",
    "parse_agent_log",
    "parse_log",
    "parse_who_when",
    "who_when_speaker",
]

FORMAT_NAME = "trust.agent-log"
FORMAT_VERSION = 1
WHO_WHEN = "who-when"


# ---------------------------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str
    role: Role
    description: str = ""


@dataclass(frozen=True, slots=True)
class LogTurn:
    """One turn as logged. `references` is None when the log does not say whom the turn answers
    (edges are then inferred); an empty tuple says it answers nobody (it starts from the task)."""

    agent: str
    content: str
    input: str = ""
    references: tuple[int, ...] | None = None
    timestamp: str | None = None
    contract: ReplyContract | None = None
    recipient: str | None = None
    """The agent the turn is addressed to, when the log says (a Magentic-One "Orchestrator (-> WebSurfer)",
    an AutoGen handoff's target); None when it goes to whoever speaks next. Kept for readers and
    exports: the edge rule does not read it (an addressed message is followed by its addressee's
    turn in every format that records one, which the sequence edge already links)."""


@dataclass(frozen=True, slots=True)
class MistakeLabel:
    """A ground-truth attribution shipped with a benchmark log (Who&When)."""

    agent: str
    step: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class AgentLog:
    """A parsed log. `source` is the format it came from; `label` and `is_correct` are benchmark
    annotations (None for our own format), kept for evaluation and never used by the audit."""

    task: str
    agents: tuple[AgentSpec, ...]
    turns: tuple[LogTurn, ...]
    source: str = FORMAT_NAME
    label: MistakeLabel | None = None
    is_correct: bool | None = None

    def role_of(self, agent: str) -> Role:
        for spec in self.agents:
            if spec.name == agent:
                return spec.role
        raise GraphError(f"agent {agent!r} is not declared in the log's agents")


@dataclass(frozen=True, slots=True)
class LogLimits:
    """Size bounds of an accepted log; a log beyond them gets a `GraphError` saying which bound."""

    max_turns: int = 200_000
    max_turn_chars: int = 1_000_000
    max_total_chars: int = 256_000_000
    max_agents: int = 10_000
    max_references: int = 256


@dataclass(frozen=True, slots=True)
class OverlapRule:
    """The content-overlap edge rule of the module docstring. None of these is a paper parameter:
    they bound the inference and were set on Who&When (most of its logs have 5 to 10 turns)."""

    window: int = 32
    min_shared: int = 2
    max_parents: int = 4
    max_tokens: int = 256
    common_share: float = 0.5

    def __post_init__(self) -> None:
        if self.window < 1 or self.min_shared < 1 or self.max_parents < 0 or self.max_tokens < 1:
            raise GraphError(f"overlap rule {self}: window, min_shared and max_tokens must be >= 1")
        if not 0 < self.common_share <= 1:
            raise GraphError(f"overlap rule common_share {self.common_share}: expected a share in (0, 1]")


# ---------------------------------------------------------------------------------------------- helpers


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _expect_str(value: object, path: str, *, allow_empty: bool = True) -> str:
    if not isinstance(value, str):
        raise GraphError(f"{path}: expected a string, got {_type_name(value)}")
    if not allow_empty and not value.strip():
        raise GraphError(f"{path}: must not be empty")
    return value


def _expect_object(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise GraphError(f"{path}: expected an object, got {_type_name(value)}")
    return value


def _expect_list(value: object, path: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise GraphError(f"{path}: expected an array, got {_type_name(value)}")
    return value


def _require(data: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in data:
        where = f"{path}: " if path else ""
        raise GraphError(f"{where}missing field {key!r}")
    return data[key]


def _field(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_unknown(data: Mapping[str, Any], allowed: Sequence[str], path: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        where = path or "log"
        raise GraphError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; expected {', '.join(allowed)}")


class _Budget:
    """Counts characters against `LogLimits` while parsing."""

    def __init__(self, limits: LogLimits) -> None:
        self.limits = limits
        self.total = 0

    def text(self, value: str, path: str) -> str:
        if len(value) > self.limits.max_turn_chars:
            raise GraphError(
                f"{path}: {len(value):,} characters, above the limit of {self.limits.max_turn_chars:,}; "
                "split the turn or raise LogLimits.max_turn_chars"
            )
        self.total += len(value)
        if self.total > self.limits.max_total_chars:
            raise GraphError(
                f"{path}: the log passes {self.limits.max_total_chars:,} characters in all; "
                "audit it in parts or raise LogLimits.max_total_chars"
            )
        return value

    def turns(self, count: int, path: str) -> None:
        if count > self.limits.max_turns:
            raise GraphError(f"{path}: {count:,} turns, above the limit of {self.limits.max_turns:,}")

    def agents(self, count: int, path: str) -> None:
        if count > self.limits.max_agents:
            raise GraphError(f"{path}: {count:,} agents, above the limit of {self.limits.max_agents:,}")


_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

_ROLE_WORDS: tuple[tuple[Role, frozenset[str]], ...] = (
    (Role.TOOL, frozenset({"terminal", "executor", "tool", "environment", "computer", "interpreter", "shell"})),
    (
        Role.REVIEWER,
        frozenset(
            {"verification", "verifier", "verify", "validation", "validator", "review", "reviewer", "critic"}
            | {"checker", "auditor", "qa"}
        ),
    ),
    (Role.PLANNER, frozenset({"planner", "planning", "manager", "orchestrator", "coordinator"})),
    (Role.AGGREGATOR, frozenset({"aggregator", "summarizer"})),
    (Role.CODER, frozenset({"coder", "programmer", "programming", "developer", "debugging", "debugger", "python"})),
    (Role.USER, frozenset({"user", "human"})),
)


def infer_role(name: str) -> Role:
    """The role an agent's name announces, or `Role.EXPERT`.

    The name is split into words at underscores, spaces and capitals ("DataVerification_Expert" ->
    data, verification, expert), and the first matching family wins, tools first (so
    "Computer_terminal" is a tool), then reviewers (verification, validation, review, critic,
    checker, ...), planners, aggregators, coders, users. Only the name is read: Who&When system
    prompts proved unreliable (the prompt of a "Verification_Expert" in 15.json describes a
    quantum-mechanics specialist), and the name is what the other agents see. A domain name that
    contains a reviewer word ("Music_Critic_Expert") is taken as a reviewer: the rule is lexical.
    """
    words = {word.lower() for word in _NAME_WORDS.findall(name)}
    for role, family in _ROLE_WORDS:
        if words & family:
            return role
    return Role.EXPERT


# ---------------------------------------------------------------------------------------------- formats


def detect_format(data: object) -> str:
    """The name of the format `data` is in (`FORMAT_NAME`, `WHO_WHEN` or one of the readers of
    `trust.core.graphs.logs`), from its shape; one `GraphError` naming every readable format when
    it is none of them."""
    # Imported here because the readers build this module's values (AgentLog, LogTurn): a
    # module-level import would be circular.
    from trust.core.graphs.logs.detect import detect_log_format

    return detect_log_format(data)


def parse_log(data: object, limits: LogLimits | None = None) -> AgentLog:
    """Parses a log in any readable format, detected by `detect_format` (docs/graphs.md lists them)."""
    from trust.core.graphs.logs.detect import read_log

    return read_log(data, limits)


_AGENT_LOG_FIELDS = ("format", "version", "task", "agents", "turns")
_AGENT_FIELDS = ("name", "role", "description")
_TURN_FIELDS = ("agent", "content", "input", "references", "timestamp", "expects", "to")
_EXPECTS_FIELDS = ("format", "required")


def parse_agent_log(data: object, limits: LogLimits | None = None) -> AgentLog:
    """Parses a `trust.agent-log` version 1 object (docs/graphs.md, "Agent log JSON")."""
    budget = _Budget(limits or LogLimits())
    root = _expect_object(data, "log")
    _check_unknown(root, _AGENT_LOG_FIELDS, "")
    if root.get("format") != FORMAT_NAME:
        raise GraphError(f"format: expected {FORMAT_NAME!r}, got {root.get('format')!r}")
    version = _require(root, "version", "")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise GraphError(f"version: {version!r} is not supported; this build reads version {FORMAT_VERSION}")
    task = budget.text(_expect_str(root.get("task", ""), "task"), "task")

    raw_agents = _expect_list(_require(root, "agents", ""), "agents")
    budget.agents(len(raw_agents), "agents")
    agents: list[AgentSpec] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_agents):
        path = f"agents[{index}]"
        entry = _expect_object(raw, path)
        _check_unknown(entry, _AGENT_FIELDS, path)
        name = _expect_str(_require(entry, "name", path), f"{path}.name", allow_empty=False)
        if name in seen:
            raise GraphError(f"{path}.name: agent {name!r} is declared twice")
        seen.add(name)
        raw_role = _require(entry, "role", path)
        try:
            role = Role.parse(raw_role)
        except GraphError as exc:
            raise GraphError(f"{path}.role: {exc}") from None
        description = _expect_str(entry.get("description", ""), f"{path}.description")
        agents.append(AgentSpec(name, role, budget.text(description, f"{path}.description")))

    raw_turns = _expect_list(_require(root, "turns", ""), "turns")
    budget.turns(len(raw_turns), "turns")
    if not raw_turns:
        raise GraphError("turns: the log has no turns; a CIG needs at least one")
    turns: list[LogTurn] = []
    previous_time: datetime | None = None
    for index, raw in enumerate(raw_turns):
        path = f"turns[{index}]"
        entry = _expect_object(raw, path)
        _check_unknown(entry, _TURN_FIELDS, path)
        agent = _expect_str(_require(entry, "agent", path), f"{path}.agent", allow_empty=False)
        if agent not in seen:
            raise GraphError(f'{path}.agent: {agent!r} is not declared in agents; add {{"name": {agent!r}, ...}}')
        content = budget.text(_expect_str(_require(entry, "content", path), f"{path}.content"), f"{path}.content")
        given_input = budget.text(_expect_str(entry.get("input", ""), f"{path}.input"), f"{path}.input")
        references = _parse_references(entry.get("references"), index, f"{path}.references", budget.limits)
        timestamp, previous_time = _parse_timestamp(entry.get("timestamp"), previous_time, f"{path}.timestamp")
        contract = _parse_expects(entry.get("expects"), f"{path}.expects")
        recipient = entry.get("to")
        if recipient is not None:
            recipient = _expect_str(recipient, f"{path}.to", allow_empty=False)
        turns.append(LogTurn(agent, content, given_input, references, timestamp, contract, recipient))
    return AgentLog(task=task, agents=tuple(agents), turns=tuple(turns), source=FORMAT_NAME)


def _parse_references(value: object, index: int, path: str, limits: LogLimits) -> tuple[int, ...] | None:
    if value is None:
        return None
    items = _expect_list(value, path)
    if len(items) > limits.max_references:
        raise GraphError(f"{path}: {len(items)} references, above the limit of {limits.max_references}")
    refs: list[int] = []
    for position, item in enumerate(items):
        if not isinstance(item, int) or isinstance(item, bool):
            raise GraphError(f"{path}[{position}]: expected a turn index (integer), got {_type_name(item)}")
        if not 0 <= item < index:
            raise GraphError(
                f"{path}[{position}]: {item} is not an earlier turn; a turn can only reference turns 0..{index - 1}"
            )
        if item in refs:
            raise GraphError(f"{path}[{position}]: turn {item} is referenced twice")
        refs.append(item)
    return tuple(refs)


def _parse_timestamp(value: object, previous: datetime | None, path: str) -> tuple[str | None, datetime | None]:
    if value is None:
        return None, previous
    text = _expect_str(value, path, allow_empty=False)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise GraphError(f"{path}: {text!r} is not an ISO 8601 timestamp (e.g. 2025-01-31T12:00:00Z)") from None
    if previous is not None:
        if (moment.tzinfo is None) != (previous.tzinfo is None):
            raise GraphError(f"{path}: {text!r} mixes timestamps with and without a time zone")
        if moment < previous:
            raise GraphError(f"{path}: {text!r} is earlier than the turn before it; list turns in time order")
    return text, moment


def _parse_expects(value: object, path: str) -> ReplyContract | None:
    if value is None:
        return None
    entry = _expect_object(value, path)
    _check_unknown(entry, _EXPECTS_FIELDS, path)
    fmt = _expect_str(_require(entry, "format", path), f"{path}.format")
    if fmt not in ("json", "text"):
        raise GraphError(f"{path}.format: {fmt!r} is not a reply format; expected 'json' or 'text'")
    required = _expect_list(entry.get("required", []), f"{path}.required")
    names = tuple(_expect_str(name, f"{path}.required[{i}]", allow_empty=False) for i, name in enumerate(required))
    if names and fmt != "json":
        raise GraphError(f"{path}.required: required fields need format 'json'")
    return ReplyContract(fmt, names)


_ROLE_NOTE = re.compile(r"^(?P<agent>.*?)\s*\((?P<note>[^()]*)\)\s*$")


def who_when_speaker(role: str) -> tuple[str, str | None]:
    """The speaker and the addressee of a role-only Who&When entry's `role`.

    The hand-crafted (Magentic-One) logs write the speaker in `role` with a note in parentheses:
    `Orchestrator (thought)` and `Orchestrator (termination condition)` are the orchestrator
    talking to itself, `Orchestrator (-> WebSurfer)` is its instruction to WebSurfer. The speaker is
    the name before the note (the benchmark's `mistake_agent` names it so); a note that starts with
    `->` names the addressee.
    """
    match = _ROLE_NOTE.match(role)
    if match is None or not match.group("agent").strip():
        return role.strip(), None
    note = match.group("note").strip()
    recipient = note[2:].strip() if note.startswith("->") else None
    return match.group("agent").strip(), recipient or None


def parse_who_when(data: object, limits: LogLimits | None = None) -> AgentLog:
    """Imports a Who&When log; agents are the `system_prompt` keys plus any speaker without a
    prompt (such as Computer_terminal), roles by `infer_role`. The first turn's `input` is the
    question. Unknown top-level keys are ignored (the dataset has a few optional ones).

    Two shapes: the algorithm-generated logs name the speaker in `name` (and `role` is the chat
    role, user or assistant); the hand-crafted logs have no `name` (or a null one) and name the
    speaker in `role` (`who_when_speaker`). The shape is the log's, not the entry's: when any entry
    has a name, every entry must, since the `role` of such a log is a chat role and not a speaker.
    Either way turn i is `history[i]`, so `mistake_step` stays an index into `history`. The
    hand-crafted logs spell the outcome `is_corrected`; it is read when `is_correct` is absent."""
    budget = _Budget(limits or LogLimits())
    root = _expect_object(data, "log")
    question = budget.text(_expect_str(_require(root, "question", ""), "question"), "question")
    history = _expect_list(_require(root, "history", ""), "history")
    budget.turns(len(history), "history")
    if not history:
        raise GraphError("history: the log has no turns; a CIG needs at least one")

    prompts = _expect_object(root.get("system_prompt", {}), "system_prompt")
    budget.agents(len(prompts), "system_prompt")
    agents: dict[str, AgentSpec] = {}
    for name, prompt in prompts.items():
        text = budget.text(_expect_str(prompt, f"system_prompt.{name}"), f"system_prompt.{name}")
        agents[name] = AgentSpec(name, infer_role(name), text)

    entries = [_expect_object(raw, f"history[{index}]") for index, raw in enumerate(history)]
    named = any(entry.get("name") is not None for entry in entries)
    turns: list[LogTurn] = []
    for index, entry in enumerate(entries):
        path = f"history[{index}]"
        recipient: str | None = None
        if named:
            if entry.get("name") is None:
                raise GraphError(
                    f"{path}: missing field 'name' (other entries name their speaker in 'name', so 'role' "
                    "is a chat role here; give every entry a name, or none for a role-only log)"
                )
            name = _expect_str(entry["name"], f"{path}.name", allow_empty=False)
            if "role" in entry:
                _expect_str(entry["role"], f"{path}.role")
        else:
            role = _expect_str(_require(entry, "role", path), f"{path}.role", allow_empty=False)
            name, recipient = who_when_speaker(role)
        content = budget.text(_expect_str(_require(entry, "content", path), f"{path}.content"), f"{path}.content")
        if name not in agents:
            agents[name] = AgentSpec(name, infer_role(name))
            budget.agents(len(agents), "history")
        turns.append(LogTurn(name, content, question if index == 0 else "", recipient=recipient))

    label = None
    if "mistake_step" in root or "mistake_agent" in root:
        label = _who_when_label(root, len(history))
    outcome_key = "is_correct" if "is_correct" in root else "is_corrected"
    is_correct = root.get(outcome_key)
    if is_correct is not None and not isinstance(is_correct, bool):
        raise GraphError(f"{outcome_key}: expected a boolean, got {_type_name(is_correct)}")
    return AgentLog(
        task=question,
        agents=tuple(agents.values()),
        turns=tuple(turns),
        source=WHO_WHEN,
        label=label,
        is_correct=is_correct,
    )


def _who_when_label(root: Mapping[str, Any], length: int) -> MistakeLabel:
    agent = _expect_str(_require(root, "mistake_agent", ""), "mistake_agent", allow_empty=False)
    raw_step = _require(root, "mistake_step", "")
    if isinstance(raw_step, int) and not isinstance(raw_step, bool):
        step = raw_step
    elif isinstance(raw_step, str) and raw_step.strip().isdigit():
        step = int(raw_step.strip())
    else:
        raise GraphError(f'mistake_step: expected a 0-based index into history (e.g. "3"), got {raw_step!r}')
    if not 0 <= step < length:
        raise GraphError(f"mistake_step: {step} is outside history (0..{length - 1})")
    reason = _expect_str(root.get("mistake_reason", ""), "mistake_reason")
    return MistakeLabel(agent, step, reason)


def log_to_json(log: AgentLog) -> dict[str, Any]:
    """The `trust.agent-log` form of any parsed log (references only where the log had them)."""
    turns: list[dict[str, Any]] = []
    for turn in log.turns:
        entry: dict[str, Any] = {"agent": turn.agent, "content": turn.content}
        if turn.input:
            entry["input"] = turn.input
        if turn.references is not None:
            entry["references"] = list(turn.references)
        if turn.timestamp is not None:
            entry["timestamp"] = turn.timestamp
        if turn.contract is not None:
            entry["expects"] = {"format": turn.contract.format, "required": list(turn.contract.required)}
        if turn.recipient is not None:
            entry["to"] = turn.recipient
        turns.append(entry)
    agents = []
    for spec in log.agents:
        agent: dict[str, Any] = {"name": spec.name, "role": spec.role.value}
        if spec.description:
            agent["description"] = spec.description
        agents.append(agent)
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "task": log.task, "agents": agents, "turns": turns}


# ---------------------------------------------------------------------------------------------- edges

_TOKEN = re.compile(
    r"(?P<url>https?://[^\s)\]>\"'`]+)"
    r"|(?P<path>(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.\w+)"
    r"|(?P<quoted>\"[^\"\n]{3,40}\"|'[^'\n]{3,40}')"
    r"|(?P<number>(?<![\w.])(?:\d{1,3}(?:,\d{3})+(?![\d])|\d+)(?:\.\d+)?)"
    r"|(?P<ident>\b(?=\w*(?:_|\d|[a-z][A-Z]))[A-Za-z_]\w{3,})"
    r"|(?P<name>(?<=[a-z,] )[A-Z][a-z]{2,}\b)"
    r"|\w+"
)


def distinctive_tokens(text: str, limit: int | None = None) -> list[str]:
    """The candidate tokens of the overlap rule, normalised, in order of first appearance.

    Numbers of two or more digits (thousands separators dropped; 3.50 -> 3.5), identifiers of four
    or more characters with an underscore, a digit or an inner capital, quoted strings, URLs and
    paths are kept as they are found. A capitalised word is kept, lower-cased, when it follows a
    lower-case word or a comma in the middle of a sentence ("the population of Seattle"), which keeps
    names and drops sentence starts. One regular-expression pass: O(len(text)).
    """
    found: dict[str, None] = {}
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind is None:
            continue
        token = match.group()
        if kind == "number":
            token = token.replace(",", "")
            if "." in token:
                token = token.rstrip("0").rstrip(".")
            if len(token) - token.count(".") < 2:
                continue
        elif kind == "name":
            token = token.lower()
        elif kind == "quoted":
            token = token[1:-1].strip().lower()
        found[token] = None
        if limit is not None and len(found) >= limit:
            break
    return list(found)


def build_cig(log: AgentLog, rule: OverlapRule | None = None) -> Cig:
    """The CIG of a parsed log: one node per turn (ids `t0`, `t1`, ...; step = index), edges from
    `references` where a turn has them and from the sequence + overlap rule otherwise."""
    rule = rule or OverlapRule()
    cig = Cig()
    roles = {spec.name: spec.role for spec in log.agents}
    n = len(log.turns)
    infer = any(turn.references is None for turn in log.turns)
    tokens: list[list[str]] = []
    common: set[str] = set()
    if infer:
        task_tokens = set(distinctive_tokens(log.task))
        tokens = [distinctive_tokens(turn.content, rule.max_tokens) for turn in log.turns]
        if n >= 4:
            frequency: Counter[str] = Counter()
            for found in tokens:
                frequency.update(found)
            cap = rule.common_share * n
            common = {token for token, count in frequency.items() if count > cap}
        common |= task_tokens

    last_seen: dict[str, int] = {}
    for index, turn in enumerate(log.turns):
        if turn.agent not in roles:
            raise GraphError(f"turns[{index}].agent: {turn.agent!r} is not declared in the log's agents")
        cig.add_turn(
            AgentTurn(
                id=turn_id(index),
                step=index,
                agent=turn.agent,
                role=roles[turn.agent],
                output=turn.content,
                input=turn.input or (log.task if index == 0 else ""),
                timestamp=turn.timestamp,
                contract=turn.contract,
            )
        )
        if turn.references is not None:
            for ref in turn.references:
                if not 0 <= ref < index:
                    raise GraphError(f"turns[{index}].references: {ref} is not an earlier turn")
                cig.add_edge_at(ref, index, EdgeOrigin.REFERENCE)
        elif index > 0:
            cig.add_edge_at(index - 1, index, EdgeOrigin.SEQUENCE)
            if rule.max_parents:
                credit: Counter[int] = Counter()
                for token in tokens[index]:
                    if token in common:
                        continue
                    source = last_seen.get(token)
                    if source is not None and source < index - 1 and index - source <= rule.window:
                        credit[source] += 1
                ranked = sorted(credit.items(), key=lambda item: (-item[1], -item[0]))
                for source, count in ranked[: rule.max_parents]:
                    if count >= rule.min_shared:
                        cig.add_edge_at(source, index, EdgeOrigin.OVERLAP)
        if infer:
            for token in tokens[index]:
                last_seen[token] = index
    return cig
