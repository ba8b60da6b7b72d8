#!/usr/bin/env bash
# The main job in one command on a fresh machine: a proof on the GPU when
# this machine has an NVIDIA driver and GPU, else on the CPU.
#
#   bash scripts/prove.sh [prove example options, e.g. --size 20 --proofs 3]
#
# With a GPU it installs the pinned CUDA toolchain (scripts/install-cuda.sh,
# once) and builds with `--features cuda`; the example itself falls back to
# the CPU if the GPU turns out unusable.
set -euo pipefail
crate_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$crate_dir"

if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  [[ -x .cuda/root/bin/nvcc || -n "${CUDA_PATH:-}" ]] || bash scripts/install-cuda.sh
  exec cargo run --release --features cuda --example prove -- "$@"
fi
echo "no NVIDIA GPU found: proving on the CPU"
exec cargo run --release --example prove -- "$@"
