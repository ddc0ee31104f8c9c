#!/usr/bin/env bash
# Sets up the project and runs the main job: `trust demo`, the paper's clinical example (section 1.3)
# audited end to end on a local network (Anvil, the local IPFS node, the contracts, nine auditor
# workers of all three tiers as separate processes with their own wallets). It ends with one JSON
# line and leaves the explorer running at the printed URL until Ctrl-C; pass --no-explorer to stop
# right after the JSON line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/trust demo "$@"
