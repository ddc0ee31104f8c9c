#!/usr/bin/env bash
# Builds the trust wheel, with the compiled contracts inside, into DIR (default dist/):
#   scripts/wheel.sh [DIR]
# First `python -m trust.adapters.chain.artifacts --write` compiles contracts/src (or reads the build/
# cache) into src/trust/adapters/chain/abi/contracts.json, package data of the wheel: an SDK, a worker
# or a gateway installed from it needs neither solc nor a checkout. The wheel is built from a copy of
# src/ (no __pycache__, no egg-info), so nothing a setuptools build left in build/ before gets into it.
# Uses .venv/bin/python (PYTHON overrides it), which needs setuptools; nothing is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
PYTHON=${PYTHON:-.venv/bin/python}

# This checkout's package and sources, whatever the interpreter would import otherwise.
PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" TRUST_PROJECT_ROOT="$PWD" \
    "$PYTHON" -m trust.adapters.chain.artifacts --write

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
tar --exclude=__pycache__ --exclude='*.egg-info' --exclude='*.tmp' -cf - src pyproject.toml README.md | tar -xf - -C "$stage"
"$PYTHON" -m pip wheel --quiet --no-deps --no-build-isolation --no-index --wheel-dir "$OUT" "$stage"
ls "$OUT"/trust_audit-*.whl
