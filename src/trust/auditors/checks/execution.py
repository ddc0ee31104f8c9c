"""The execution check: a turn whose code failed when a tool ran it (paper 2.2.4: code generation is
audited by running the code, and an agent log already holds the run).

`ExecutionCheck` reads the request's `observations` (the tool turns that answer the node: a terminal
that printed "exitcode: 1 (execution failed)" or a Traceback). The fault is the code producer's, not
the terminal's. It fails when a run failed, passes when the node's code ran cleanly, and is not
applicable when the node holds no code block or nobody ran it: a seat of the network sees no
observations, only an audit of the whole log (`trust.auditors.graph.audit_cig`) does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trust.auditors.base import AuditRequest, CheckResult, Node, Outcome, node_text
from trust.core.graphs.cig import AgentTurn
from trust.core.graphs.refinement import ErrorType
from trust.core.maths.text import CODE_BLOCK

__all__ = ["ExecutionCheck", "has_code"]

_CODE_LANGUAGES = frozenset({"", "python", "py", "python3", "sh", "bash", "shell", "console", "javascript", "js"})
_EXECUTION_FAILED = re.compile(
    r"exitcode:\s*(?P<code>-?[1-9]\d*)|\(execution failed\)|Traceback \(most recent call last\)", re.I
)
_ERROR_LINE = re.compile(r"^\s*(\w*(?:Error|Exception)\b.*)$", re.M)
_DETAIL_CHARS = 200


def has_code(text: str) -> bool:
    """Whether `text` holds a fenced block of a language a terminal runs (or an untagged one)."""
    return any(match.group(1).lower() in _CODE_LANGUAGES for match in CODE_BLOCK.finditer(text))


def _describe(run: Node) -> str:
    return f"{run.agent} ran it at step {run.step}" if isinstance(run, AgentTurn) else f"{run.id} ran it"


@dataclass(frozen=True, slots=True)
class ExecutionCheck:
    """Fails a node whose code failed when a tool ran it; see the module docstring."""

    @property
    def name(self) -> str:
        return "execution"

    async def check(self, request: AuditRequest) -> CheckResult:
        if not request.observations:
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "nobody ran this node's code in what the audit sees")
        if not has_code(request.text):
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "no code block in this node")
        for run in request.observations:
            output = node_text(run)
            if _EXECUTION_FAILED.search(output):
                errors = _ERROR_LINE.findall(output)
                lines = output.strip().splitlines()
                detail = errors[-1].strip() if errors else (lines[0] if lines else "")
                return CheckResult(
                    self.name,
                    Outcome.FAIL,
                    f"its code failed when {_describe(run)}: {detail[:_DETAIL_CHARS]}",
                    fault="code failed",
                    error_type=ErrorType.FACTUAL,
                )
        return CheckResult(self.name, Outcome.PASS, f"its code ran cleanly ({len(request.observations)} run(s))")
