#!/usr/bin/env bash
# Builds .venv-zoo: the virtualenv bench/bench_zoo.py runs in (issue 31's real-model benchmark).
#
# Why a venv of its own: the zoo needs torchvision, and PyPI's torchvision fails to import beside
# the CPU torch 2.13 that .venv holds ("operator torchvision::nms does not exist"). On x86_64 the
# pair torch 2.14.1 / torchvision 0.29.1 loads (a CUDA build, ~5.5 GB, that runs on the CPU; pip
# on Python 3.11 takes both from this machine's disk, elsewhere it downloads them); on aarch64 the
# CPU pair torch 2.9.1 / torchvision 0.24.1 does. The peers and transformers are pinned so two
# runs of the benchmark compare the same code; modscope itself is installed editable, and the
# script checks afterwards that nothing replaced the torch it installed first.
#
# Usage: bash scripts/zoo_venv.sh [VENV_DIR]   (default: .venv-zoo beside this script's repo)
# Re-running it on an existing venv installs only what is missing.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo/.venv-zoo}"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null || python=python3

case "$(uname -m)" in
    x86_64) torch_pair=("torch==2.14.1" "torchvision==0.29.1") ;;
    aarch64) torch_pair=("torch==2.9.1" "torchvision==0.24.1") ;;
    *) echo "zoo_venv.sh: no known torch/torchvision pair for $(uname -m)" >&2; exit 1 ;;
esac
torch_version="${torch_pair[0]#torch==}"
peers=("transformers==5.23.0" "torchinfo==1.8.0" "torchview==0.2.7" "torchlens==2.36.1")

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install -q "${torch_pair[@]}"
"${pip[@]}" install -q "${torch_pair[@]}" "${peers[@]}"   # the pair again: a peer may not move it
"${pip[@]}" install -q "${torch_pair[@]}" -e "$repo"

# Nothing may have replaced the torch the pair chose (modscope asks for no torch by default).
installed="$("$venv/bin/python" -c 'import torch, torchvision; print(torch.__version__.split("+")[0])')"
if [ "$installed" != "$torch_version" ]; then
    echo "zoo_venv.sh: torch $installed in $venv, expected $torch_version" >&2
    exit 1
fi
"${pip[@]}" check
echo "zoo_venv.sh: $venv ready (torch $installed with torchvision; $(IFS=' '; echo "${peers[*]}"); modscope editable)"
