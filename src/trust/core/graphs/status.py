"""Node verification states of Table 1 (paper section 2.1.3 and 2.2).

`VALID`: the node passed its audit. `INVALID_ROOT`: the node failed its own audit, so the fault
originates there. `INVALID_CASCADE`: the node was not audited because something it depends on
failed (dependency-aware cascade, section 2.1.3); it is invalid by inheritance, not by its own
error. `NEGLIGENT`: the node (an agent step in a CIG) did not itself make the error but had the
information to catch it and passed it on.

`UNDETERMINED` is not one of Table 1's states: the network could not decide the node at all (no
committee could be seated, or its votes split or stayed silent through the last escalation round).
Nothing is known of its own step, so it is neither a fault's origin nor passes a fault on; the
contract still counts it as not passed when it finalizes the trace.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["NodeStatus"]


class NodeStatus(StrEnum):
    """The four verification states of Table 1 (the values are the paper's spellings), and
    `UNDETERMINED` for a node the network could not decide (see the module docstring)."""

    VALID = "Valid"
    INVALID_ROOT = "Invalid_Root"
    INVALID_CASCADE = "Invalid_Cascade"
    NEGLIGENT = "Negligent"
    UNDETERMINED = "Undetermined"
