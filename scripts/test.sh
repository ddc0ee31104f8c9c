#!/usr/bin/env bash
# Sets up the project and runs every test: the forge suite (unit, fuzz, invariant; CI profile),
# slither (no high or medium finding allowed), ruff, mypy and import-linter (the core's dependency direction), and the Python suite on real Anvil
# nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

export PATH="$PWD/node_modules/@foundry-rs/forge-linux-amd64/bin:$PWD/node_modules/@foundry-rs/anvil-linux-amd64/bin:$PATH"

echo "==> forge test (profile ci)"
(cd contracts && FOUNDRY_PROFILE=ci forge test)

echo "==> slither"
bash scripts/slither.sh

echo "==> ruff, mypy and import-linter"
.venv/bin/ruff check src tests
.venv/bin/ruff format --check src tests
.venv/bin/mypy src
.venv/bin/lint-imports

echo "==> pytest (two processes, each running whole test modules: a module's devnet stays its own)"
.venv/bin/python -m pytest -n 2 --dist loadfile --durations=30
