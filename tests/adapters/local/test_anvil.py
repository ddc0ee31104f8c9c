"""Anvil as a process: where it writes the states of past blocks, and that stopping it removes them.

Anvil writes each past block's whole state to disk once it no longer fits in memory (about half a
megabyte each on a fresh chain) and leaves the files behind when stopped; under its default folder
(`~/.foundry/anvil/tmp`) runs of many blocks filled the disk. A node started here keeps them in a
folder of its own that `stop` removes.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from trust.adapters.local.anvil import AnvilNode
from trust.adapters.local.toolchain import Toolchain

BLOCKS = 1_200
"""Enough blocks that Anvil has written past states to disk (it starts after a few hundred)."""


def _mine(node: AnvilNode, blocks: int) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "anvil_mine", "params": [hex(blocks)]}
    assert "error" not in httpx.post(node.rpc_url, json=body, timeout=60).json()


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_past_states_go_to_the_nodes_own_folder_and_stop_removes_it(tmp_path: Path) -> None:
    states = tmp_path / "states"
    (states / "stale").mkdir(parents=True)  # left by a node that was killed: emptied at start
    with AnvilNode.start(Toolchain.discover(), states_dir=states) as node:
        assert node.states_dir == states and not (states / "stale").exists()
        _mine(node, BLOCKS)
        assert _files(states), "Anvil wrote no past state to the node's folder"
    assert not states.exists()


def test_a_node_without_a_folder_gets_a_temporary_one() -> None:
    with AnvilNode.start(Toolchain.discover()) as node:
        folder = node.states_dir
        assert folder is not None and folder.is_dir()
    assert not folder.exists()
