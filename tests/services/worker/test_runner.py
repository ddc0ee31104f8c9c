"""What `trust worker run` says at start-up about the code sandbox (`trust.services.worker.runner`)."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from trust.core.graphs.hdag import Tier
from trust.services.worker.runner import _tier_auditor
from trust.settings import SandboxSettings, Settings, WorkerSettings

LOG = logging.getLogger("trust.services.worker.test")


async def test_a_tier1_worker_names_its_sandbox_layers(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOG.name)
    async with AsyncExitStack() as stack:
        auditor, hook = await _tier_auditor(Tier.COMPUTATIONAL, Settings(), stack, "0x" + "1" * 40, LOG)
    assert auditor.tier is Tier.COMPUTATIONAL and hook is None
    (line,) = [r.getMessage() for r in caplog.records if "sandbox" in r.getMessage()]
    assert line.startswith("code sandbox: resource_limits, namespaces")


async def test_a_worker_without_bubblewrap_starts_and_warns_that_code_gets_no_vote(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOG.name)
    settings = Settings(worker=WorkerSettings(sandbox=SandboxSettings(bwrap=str(tmp_path / "no-bwrap"))))
    async with AsyncExitStack() as stack:
        auditor, _ = await _tier_auditor(Tier.COMPUTATIONAL, settings, stack, "0x" + "1" * 40, LOG)
    assert auditor.tier is Tier.COMPUTATIONAL
    (record,) = [r for r in caplog.records if "sandbox" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "the code sandbox is unavailable" in record.getMessage() and "get no vote" in record.getMessage()
    assert str(tmp_path / "no-bwrap") in record.getMessage()
