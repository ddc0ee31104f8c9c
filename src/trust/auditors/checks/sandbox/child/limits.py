"""The resource limits the child sets on itself, before any audited code runs.

They hold whatever runs afterwards (the audit hook does not need to be intact for them): a process
cannot raise a hard limit without CAP_SYS_RESOURCE, which nothing inside the sandbox holds (bubblewrap
drops every capability, and the user namespace grants none over the host's resources).
"""

from __future__ import annotations

import resource
from collections.abc import Iterable

__all__ = ["apply_limits"]


def apply_limits(rlimits: Iterable[tuple[str, int, int]]) -> None:
    """Sets each (RLIMIT_* name, soft, hard). A limit the worker itself already runs under is kept
    where it is lower: a process may lower its hard limits, never raise them."""
    for name, soft, hard in rlimits:
        which = getattr(resource, name)
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))
