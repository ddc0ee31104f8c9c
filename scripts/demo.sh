#!/usr/bin/env bash
# Sets up the project and runs the main job: the local network with the protocol deployed and
# auditors of all three tiers staked (`trust devnet up`). Stop it with `.venv/bin/trust devnet down`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/trust devnet up "$@"
