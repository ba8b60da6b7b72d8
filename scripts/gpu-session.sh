#!/usr/bin/env bash
# A device session over the bundle that scripts/gpu-bundle.sh fills: runs
# the steps named in STEPS (default "tests porep") and logs every command
# and its exit status to $OUT/session.log (or target/gpu-bundle/logs).
#   tests   the GPU test binaries ($TESTS, default every gpu_ binary listed below), one after another
#   porep   filecoin_porep, 3 challenges, 10 partitions (PoRep 4M)
#   keygen  keygen: keys on the GPU at 2^$KEYGEN_SIZES (default "20 22 24")
#           against the CPU generator at $KEYGEN_CPU_SIZES (default the same)
#   c2      porep_c2: ten PoRep partitions, $C2_ARGS (default production's
#           11 layers and 18 challenges; e.g. "--layers 2 --challenges 3")
#   batchapi  the same with --batch-api (create_proof_batch, four rounds)
#   prove   prove --circuit field --split at 2^$PROVE_SIZES (default 20 22), 3 proofs
#           (with $REPEATS set, every prove run times that many single
#           proofs, best and median, instead of 3: runs of one build spread
#           ~50 ms at 2^24, so ten say more than three, for ~10 s a run)
#   streamed  gpu_streamed at $STREAMED_SIZES (default "16 20 22"): a key
#           resident against the same key streamed a chunk at a time
#   msm     gpu_msm $MSM_ARGS (default "22 20 16")
#   copysweep  gpu_msm --copies-sweep $SWEEP_LOGS (default "22 22"): MSMs
#           without and with shifted copies of their bases, side by side
#   pairsweep  the copies sweep with G2's first level in each layout of
#           --msm-g2-first-level (1 one thread a point, 2 a pair of
#           threads, 3 a pair held to 128 registers, the default),
#           alternating in $ROUNDS rounds
#   copies  prove as above at 2^$PROVE_SIZES, the key without shifted copies
#           and with them, alternating in $ROUNDS rounds (default 2)
#   knobs   prove as above at 2^$PROVE_SIZES for each setting in $KNOBS
#           (space-separated; each "default" or items joined by "+": a
#           tuning flag, --FLAG=VALUE or --SWITCH, or an environment
#           variable VAR=VALUE such as RUST_LOG=groth16_gpu=debug; e.g.
#           "default --copy-bits=22,20 --msm-inline-pieces=32+--msm-phases";
#           examples/common/tuning_flags.rs lists the flags), alternating
#           in $ROUNDS rounds, one key per size saved and loaded
#   knobsweep  the copies sweep (as copysweep) for each setting in
#           $SWEEP_KNOBS (written as knobs' $KNOBS), alternating in $ROUNDS
#           rounds
#   varianttests  the test_* binaries under $bundle/variants/NAME/
#   compare the binaries named in $COMPARE (default "prove"; also
#           "filecoin_porep", "gpu_msm", "gpu_ntt" at $NTT_LOGS) under
#           $bundle/variants/NAME/, each packed by hand from another
#           build, alternating in $ROUNDS rounds (default 2): prove as above
#           at 2^$PROVE_SIZES, filecoin_porep as porep above, gpu_msm as
#           copysweep above; builds side by side in one run
# Run it from the repository root on the device machine, carrying
# target/gpu-bundle.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bundle=target/gpu-bundle
log_dir="${OUT:-$bundle/logs}"
mkdir -p "$log_dir"
log="$log_dir/session.log"
: >"$log"
export CARGO_MANIFEST_DIR="$PWD"

say() { echo "$*" | tee -a "$log"; }

# prove's --repeats only where asked: builds before it do not take it.
repeats=()
[[ -n "${REPEATS:-}" ]] && repeats=(--repeats "$REPEATS")

for packed in "$bundle"/bin/*/*.xz "$bundle"/variants/*/*.xz; do
  [[ -e "$packed" ]] || continue
  xz -d -f "$packed" 2>/dev/null ||
    python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$packed"
  rm -f "$packed"
  chmod +x "${packed%.xz}"
done

# run LABEL TIMEOUT COMMAND...
run() {
  local label="$1" limit="$2"
  shift 2
  say "== $label: $*"
  local started=$SECONDS
  timeout "$limit" "$@" >>"$log" 2>&1
  say "== $label: exit $? after $((SECONDS - started)) s"
}

# copysweep LABEL COMMAND...: gpu_msm's copies sweep at $SWEEP_LOGS.
copysweep() {
  local label="$1"
  shift
  # shellcheck disable=SC2086 # the sizes are split on purpose
  run "$label" 500 "$@" --copies-sweep ${SWEEP_LOGS:-22 22}
}

# knob_settings SETTING: fills `settings` with SETTING's VAR=VALUE
# environment pairs and `knob_flags` with its tuning flags ("default":
# none; else items joined by "+"; --FLAG=VALUE becomes "--FLAG VALUE"). The
# examples refuse a flag they do not know; "A=1,B=2" for "A=1+B=2" would
# set A to "1,B=2": exits 2 on it.
knob_settings() {
  local items=() item
  settings=()
  knob_flags=()
  [[ "$1" == default ]] || IFS=+ read -r -a items <<<"$1"
  for item in "${items[@]}"; do
    if [[ "$item" == --*=* ]]; then
      knob_flags+=("${item%%=*}" "${item#*=}")
    elif [[ "$item" == --* ]]; then
      knob_flags+=("$item")
    elif [[ "${item#*=}" == *,[A-Z]*=* ]]; then
      # A value may hold '=' (RUST_LOG=groth16_gpu=debug); a second
      # VAR= after a comma is the mistake.
      echo "knobs: '$item' holds a second setting; join settings with '+'" >&2
      exit 2
    else
      settings+=("$item")
    fi
  done
}

say "== $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi -L >>"$log" 2>&1
for step in ${STEPS:-tests porep}; do
  case "$step" in
    tests)
      for t in ${TESTS:-gpu_prover gpu_prover_devices gpu_streamed gpu_pool gpu_msm gpu_msm_knobs gpu_copies gpu_ntt gpu_device gpu_pinned gpu_shape}; do
        run "test $t" 400 "$bundle/bin/tests/$t" --show-output
      done
      ;;
    porep)
      run porep 300 "$bundle/bin/examples/filecoin_porep" --challenges 3 --partitions 10
      ;;
    keygen)
      sizes="${KEYGEN_SIZES:-20 22 24}"
      cpu_sizes="${KEYGEN_CPU_SIZES:-$sizes}"
      RUST_LOG=${RUST_LOG:-groth16_gpu=info} run keygen 560 "$bundle/bin/examples/keygen" \
        --sizes "${sizes// /,}" --cpu-sizes "${cpu_sizes// /,}"
      ;;
    c2)
      # shellcheck disable=SC2086 # the arguments are split on purpose
      run c2 580 "$bundle/bin/examples/porep_c2" ${C2_ARGS:-}
      ;;
    batchapi)
      RUST_LOG=groth16_gpu::groth16::api=debug run batchapi 500 "$bundle/bin/examples/filecoin_porep" --challenges 3 --partitions 10 --batch-api
      ;;
    prove)
      for size in ${PROVE_SIZES:-20 22}; do
        run "prove $size" 300 "$bundle/bin/examples/prove" --size "$size" --circuit field --split --proofs 3 "${repeats[@]}"
      done
      ;;
    streamed)
      # shellcheck disable=SC2086 # the sizes are split on purpose
      run streamed 300 "$bundle/bin/examples/gpu_streamed" ${STREAMED_SIZES:-16 20 22}
      ;;
    msm)
      # shellcheck disable=SC2086 # the sizes are split on purpose
      run msm 300 "$bundle/bin/examples/gpu_msm" ${MSM_ARGS:-22 20 16}
      ;;
    copysweep)
      copysweep copysweep "$bundle/bin/examples/gpu_msm"
      ;;
    pairsweep)
      for round in $(seq "${ROUNDS:-2}"); do
        for mode in 1 2 3; do
          copysweep "round $round, G2 first level $mode" \
            "$bundle/bin/examples/gpu_msm" --msm-g2-first-level "$mode"
        done
      done
      ;;
    copies)
      for round in $(seq "${ROUNDS:-2}"); do
        for size in ${PROVE_SIZES:-20 22}; do
          for copies in never auto; do
            # The first run generates each size's key; the rest load it.
            run "round $round, copies $copies, prove $size" 400 "$bundle/bin/examples/prove" \
              --size "$size" --circuit field --split --proofs 3 "${repeats[@]}" --copies "$copies" \
              --params "/tmp/field-$size.params"
          done
        done
      done
      ;;
    knobs)
      for round in $(seq "${ROUNDS:-2}"); do
        for setting in ${KNOBS:-default}; do
          knob_settings "$setting"
          for size in ${PROVE_SIZES:-20 22}; do
            # The first run generates each size's key; the rest load it.
            run "round $round, $setting, prove $size" 400 env "${settings[@]}" \
              "$bundle/bin/examples/prove" --size "$size" --circuit field --split --proofs 3 "${repeats[@]}" \
              --params "/tmp/field-$size.params" "${knob_flags[@]}"
          done
        done
      done
      ;;
    knobsweep)
      for round in $(seq "${ROUNDS:-2}"); do
        for setting in ${SWEEP_KNOBS:-default}; do
          knob_settings "$setting"
          copysweep "round $round, $setting, gpu_msm" env "${settings[@]}" \
            "$bundle/bin/examples/gpu_msm" "${knob_flags[@]}"
        done
      done
      ;;
    varianttests)
      # Each variant's own test binaries (test_NAME), packed beside it.
      for variant in "$bundle"/variants/*/; do
        for t in "$variant"test_*; do
          [[ -x "$t" ]] || continue
          run "$(basename "$variant") $(basename "$t")" 400 "$t" --show-output
        done
      done
      ;;
    compare)
      for round in $(seq "${ROUNDS:-2}"); do
        for variant in "$bundle"/variants/*/; do
          name="$(basename "$variant")"
          for binary in ${COMPARE:-prove}; do
            [[ -x "$variant/$binary" ]] || continue
            if [[ "$binary" == gpu_msm ]]; then
              copysweep "round $round, $name, gpu_msm" "$variant/gpu_msm"
            elif [[ "$binary" == gpu_ntt ]]; then
              # shellcheck disable=SC2086 # the sizes are split on purpose
              run "round $round, $name, gpu_ntt" 300 "$variant/gpu_ntt" ${NTT_LOGS:-24 16}
            elif [[ "$binary" == prove ]]; then
              for size in ${PROVE_SIZES:-20 22}; do
                # The first run generates each size's key; the rest load it.
                run "round $round, $name, prove $size" 400 "$variant/prove" --size "$size" \
                  --circuit field --split --proofs 3 "${repeats[@]}" --params "/tmp/field-$size.params"
              done
            else
              run "round $round, $name, $binary" 300 "$variant/$binary" --challenges 3 --partitions 10
            fi
          done
        done
      done
      ;;
    *) say "== unknown step $step" ;;
  esac
done
say "== done $(date -u +%FT%TZ)"
