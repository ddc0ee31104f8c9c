#!/usr/bin/env bash
# Static analysis of contracts/src with slither; fails on any high or medium finding.
# Builds into its own output folder so that it never disturbs forge's cache.
set -euo pipefail
cd "$(dirname "$0")/../contracts"
export PATH="$PWD/../node_modules/@foundry-rs/forge-linux-amd64/bin:$PATH"
rm -rf out-slither cache-slither
FOUNDRY_OUT=out-slither FOUNDRY_CACHE_PATH=cache-slither ../.venv-slither/bin/slither . \
    --config-file slither.config.json --foundry-out-directory out-slither
