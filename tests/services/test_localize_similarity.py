"""Which similarity stationarity uses: `AuditSettings.similarity`, the MiniLM model by default, the
lexical fallback on request or (with a warning) when the embeddings extra is missing."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from trust.auditors.tiers import computational_auditor
from trust.core.graphs.agent_log import parse_log
from trust.core.graphs.stationarity import LexicalSimilarity
from trust.services.localize import audit_agent_log, build_similarity, localize_log_file, similarity_name
from trust.settings import AuditSettings, SandboxSettings, Settings

# The Coder says the same thing twice in other words: MiniLM scores the pair about 0.97, above
# tau_stat = 0.95; character trigrams score it about 0.61.
LOOP_LOG: dict[str, Any] = {
    "format": "trust.agent-log",
    "version": 1,
    "task": "Sort a list of a million integers.",
    "agents": [{"name": "Coder", "role": "coder"}, {"name": "Reviewer", "role": "reviewer"}],
    "turns": [
        {"agent": "Coder", "content": "I will sort the list with merge sort."},
        {"agent": "Reviewer", "content": "Use a faster method."},
        {"agent": "Coder", "content": "I am going to sort the list using merge sort."},
    ],
}


def _trust(*args: str, similarity: str | None, preamble: str = "") -> subprocess.CompletedProcess[str]:
    """`trust ARGS` in a fresh interpreter; `preamble` runs before the CLI starts."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TRUST_LLM", "TRUST_AUDIT"))}
    env["COLUMNS"] = "400"  # one line per message
    if similarity is not None:
        env["TRUST_AUDIT__SIMILARITY"] = similarity
    code = f"import sys\n{preamble}\nfrom trust.cli import main\nsys.argv = ['trust', *sys.argv[1:]]\nmain()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_setting_defaults_to_the_model_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUST_AUDIT__SIMILARITY", raising=False)
    assert Settings().audit.similarity == "minilm"
    monkeypatch.setenv("TRUST_AUDIT__SIMILARITY", "lexical")
    assert Settings().audit.similarity == "lexical"
    monkeypatch.setenv("TRUST_AUDIT__SIMILARITY", "bert")
    with pytest.raises(ValidationError, match="audit.similarity"):
        Settings()


def test_lexical_is_built_without_a_model_or_a_warning() -> None:
    warnings: list[str] = []
    similarity = build_similarity(AuditSettings(similarity="lexical"), warn=warnings.append)
    assert isinstance(similarity, LexicalSimilarity) and warnings == []
    assert similarity_name(similarity) == "lexical"


def test_the_json_names_the_similarity_used(tmp_path: Path) -> None:
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(LOOP_LOG))
    settings = Settings(audit=AuditSettings(similarity="lexical"))
    data = localize_log_file(path, settings).to_json()
    assert data["similarity"] == "lexical" and data["stationary"] == []
    tier1 = computational_auditor(SandboxSettings())
    report = asyncio.run(audit_agent_log(parse_log(LOOP_LOG), AuditSettings(), [tier1]))
    assert report.to_json()["similarity"] == "lexical"


def test_without_the_extra_the_cli_falls_back_to_lexical_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(LOOP_LOG))
    # An interpreter where sentence-transformers cannot be imported, as without the extra.
    hide = "sys.modules['sentence_transformers'] = None"
    run = _trust("graph", "localize", str(path), "--json", similarity=None, preamble=hide)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["similarity"] == "lexical"
    assert "warning:" in run.stderr and "TRUST_AUDIT__SIMILARITY=minilm" in run.stderr
    assert "pip install -e '.[embeddings]'" in run.stderr and "uses the lexical similarity instead" in run.stderr
    table = _trust("graph", "localize", str(path), similarity="lexical", preamble=hide)
    assert table.returncode == 0, table.stderr
    assert "stationarity similarity: lexical" in table.stdout and "warning" not in table.stderr


@pytest.mark.slow
def test_the_cli_uses_the_model_by_default_and_sees_a_paraphrased_loop(tmp_path: Path) -> None:
    from trust.adapters.llm.embeddings import EXTRA_HINT, MiniLmSimilarity, embeddings_available

    if not embeddings_available():
        pytest.skip(f"the sentence-embedding model is not installed; {EXTRA_HINT}")
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(LOOP_LOG))
    run = _trust("graph", "localize", str(path), "--json", similarity=None)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["similarity"] == "minilm"
    assert [(pair["agent"], pair["earlier"], pair["later"]) for pair in data["stationary"]] == [("Coder", "t0", "t2")]
    assert data["stationary"][0]["similarity"] > AuditSettings().tau_stat
    assert "warning" not in run.stderr
    model = build_similarity(AuditSettings(), warn=pytest.fail)
    assert isinstance(model, MiniLmSimilarity) and similarity_name(model) == "minilm"
