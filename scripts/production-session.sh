#!/usr/bin/env bash
# One device command for the production-size issue, each stage under its own
# time limit so the whole stays inside a 10-minute call: the GPU key tests,
# the key-generation table, then ten production-sized PoRep partitions.
# Logs go to $OUT (or target/gpu-bundle/logs). Settings:
#   KEYGEN_SIZES (default 20,22,24), KEYGEN_CPU_SIZES (default 20,22),
#   C2_ARGS (porep_c2's arguments; default production's), and the limits
#   TESTS_S, KEYGEN_S, C2_S, GPU_TEST_EACH_S, SWEEP_S in seconds (defaults
#   90, 170, 320, 150, 200); STAGES names the stages to run (default
#   "keygen-tests keygen c2"; "gpu-tests" runs the test binaries named in
#   GPU_TESTS, each under GPU_TEST_EACH_S; "msm-sweep" times G1 MSMs of a
#   2^27 partition's sizes at several window widths, SWEEP_ARGS gpu_msm's
#   sweep flags).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=target/gpu-bundle/bin
logs="${OUT:-target/gpu-bundle/logs}"
mkdir -p "$logs"
for packed in "$bin"/*/*.xz; do
  [[ -e "$packed" ]] || continue
  xz -d -f "$packed" && chmod +x "${packed%.xz}"
done
export CARGO_MANIFEST_DIR="$PWD"
nvidia-smi -L
echo "host: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"

stage() {
  local name="$1" limit="$2"
  shift 2
  [[ " ${STAGES:-keygen-tests keygen c2} " == *" $name "* ]] || return 0
  echo "== $name ($(date -u +%T)): $*"
  timeout "$limit" "$@" >"$logs/$name.log" 2>&1
  local status=$?
  echo "== $name: exit $status"
  grep -v '^\[' "$logs/$name.log" | tail -n 40
}

stage keygen-tests "${TESTS_S:-90}" "$bin/tests/gpu_keygen" --show-output
stage keygen "${KEYGEN_S:-170}" env RUST_LOG=groth16_gpu=info "$bin/examples/keygen" \
  --sizes "${KEYGEN_SIZES:-20,22,24}" --cpu-sizes "${KEYGEN_CPU_SIZES:-20,22}"
# shellcheck disable=SC2086 # the arguments are split on purpose
stage msm-sweep "${SWEEP_S:-200}" "$bin/examples/gpu_msm" --window-sweep \
  ${SWEEP_ARGS:---sweep-logs 24,25,26,27 --sweep-bits 16,18,19,20,22}
# shellcheck disable=SC2086 # the arguments are split on purpose
stage c2 "${C2_S:-320}" "$bin/examples/porep_c2" ${C2_ARGS:-}
if [[ " ${STAGES:-} " == *" gpu-tests "* ]]; then
  tests=(${GPU_TESTS:-gpu_device gpu_prover gpu_prover_devices gpu_pool gpu_streamed gpu_msm unit_groth16_gpu})
  share=${GPU_TEST_EACH_S:-150}
  for name in "${tests[@]}"; do
    echo "== test $name ($(date -u +%T))"
    timeout "$share" "$bin/tests/$name" >>"$logs/gpu-tests.log" 2>&1
    echo "== test $name: exit $?"
    grep -a "^test result\|FAILED\|panicked" "$logs/gpu-tests.log" | tail -n 3
  done
fi
[[ -f "$logs/c2.log" ]] && grep -a "key generation:" "$logs/c2.log" | tail -n 12
