#!/usr/bin/env bash
# Builds the `cuda` test, example and bench binaries here and packs them, with
# a runner, into target/gpu-bundle/ for a GPU machine that has a driver but no
# Rust toolchain:
#
#   bash scripts/gpu-bundle.sh            # here
#   bash target/gpu-bundle/run.sh         # there (writes logs under $OUT if set)
#
# GPU_BUNDLE_TARGETS="--example porep_c2 --test gpu_pool ..." builds and packs
# only those cargo targets (a session that runs a few binaries need not wait
# for every test to build, and its bundle stays small).
#
# Examples and benches run there only when listed in
# target/gpu-bundle/examples.txt, one "name args..." a line (kept across
# bundlings; GPU_BUNDLE_EXAMPLES=FILE copies FILE there first).
set -euo pipefail

crate_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$crate_dir"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/cuda-build}"
bundle_dir="target/gpu-bundle"
max_bundle_mib=60
# Host-side checks that need the source tree and libclang, not a GPU.
skip_binaries=(gpu_bindgen)

mkdir -p "$bundle_dir"
rm -rf "$bundle_dir/bin" "$bundle_dir/run.sh"
mkdir -p "$bundle_dir/bin/tests" "$bundle_dir/bin/examples" "$bundle_dir/bin/benches"
if [[ -n "${GPU_BUNDLE_EXAMPLES:-}" ]]; then
  cp "$GPU_BUNDLE_EXAMPLES" "$bundle_dir/examples.txt"
fi

# Every executable cargo builds for the test run of all targets, as
# "kind name path" lines (kind: tests, examples or benches).
# Prints "kind name path" for each executable in cargo's JSON on stdin
# (kind: tests, examples or benches); shows compiler diagnostics on stderr.
executables_from_json() {
  python3 -c '
import json, sys
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("reason") == "compiler-message":
        # JSON output hides diagnostics: show them as cargo would.
        sys.stderr.write(message["message"].get("rendered") or "")
        continue
    if message.get("reason") != "compiler-artifact" or not message.get("executable"):
        continue
    target, test_mode = message["target"], message["profile"]["test"]
    kinds = target["kind"]
    if "example" in kinds:
        # `cargo test --all-targets` builds examples as test harnesses,
        # which reject the examples own arguments: keep the real ones.
        if test_mode:
            continue
        kind, name = "examples", target["name"]
    elif "bench" in kinds:
        kind, name = "benches", target["name"]
    elif "test" in kinds:
        kind, name = "tests", target["name"]
    elif test_mode:
        kind, name = "tests", "unit_" + target["name"].replace("-", "_")
    else:
        continue
    print(kind, name, message["executable"])
'
}

# Every test and bench executable of the test build of all targets, then the
# examples as plain programs.
if [[ -n "${GPU_BUNDLE_TARGETS:-}" ]]; then
  # shellcheck disable=SC2086 # cargo's target flags, split on purpose
  artifacts="$(cargo build --features cuda --release $GPU_BUNDLE_TARGETS --message-format=json |
    executables_from_json)"
else
  artifacts="$(
    cargo test --features cuda --release --all-targets --no-run --message-format=json |
      executables_from_json
    cargo build --features cuda --release --examples --message-format=json |
      executables_from_json
  )"
fi
[[ -n "$artifacts" ]] || { echo "gpu-bundle: cargo built no executables" >&2; exit 1; }

while read -r kind name path; do
  if [[ " ${skip_binaries[*]} " == *" $name "* ]]; then
    echo "gpu-bundle: leaving out $name (needs the source tree and libclang)"
    continue
  fi
  cp "$path" "$bundle_dir/bin/$kind/$name"
  strip "$bundle_dir/bin/$kind/$name"
  # Every binary embeds all kernels (MSM for G1 and G2): xz takes 13 MiB to 4.
  xz -T0 -6 -f "$bundle_dir/bin/$kind/$name"
done <<<"$artifacts"

cat >"$bundle_dir/run.sh" <<'RUN_SH'
#!/usr/bin/env bash
# Runs the bundled binaries on a GPU machine (no Rust toolchain needed). Made
# by scripts/gpu-bundle.sh. Logs go to $OUT/gpu-bundle.log when OUT is set,
# else next to this script; the last line printed is "N passed, M failed",
# counting binaries by exit status.
set -uo pipefail

bundle_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log_dir="${OUT:-$bundle_dir/logs}"
mkdir -p "$log_dir"
log="$log_dir/gpu-bundle.log"
: >"$log"
per_binary_timeout="${GPU_BUNDLE_TIMEOUT_S:-300}"

# Tests expect the crate root as their working directory, as under cargo.
crate_root="$(cd "$bundle_dir/../.." && pwd)"
if [[ -f "$crate_root/Cargo.toml" ]]; then cd "$crate_root"; else cd "$bundle_dir"; fi
export CARGO_MANIFEST_DIR="$PWD"

say() { echo "$*" | tee -a "$log"; }

say "== $(date -u +%FT%TZ) on $(hostname), in $PWD"
nvidia-smi -L 2>&1 | tee -a "$log" || say "nvidia-smi failed"

# Binaries travel xz-compressed; unpack them in place (xz, or Python's lzma).
for packed in "$bundle_dir"/bin/*/*.xz; do
  [[ -e "$packed" ]] || continue
  if command -v xz >/dev/null; then
    xz -d -f "$packed"
  else
    python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$packed" &&
      rm -f "$packed"
  fi
  chmod +x "${packed%.xz}"
done

passed=0
failed=0
failures=()

# run_one LABEL COMMAND...: runs it with a timeout, logs it, counts it.
run_one() {
  local label="$1"
  shift
  say "== $label: $*"
  local started=$SECONDS
  timeout "$per_binary_timeout" "$@" >>"$log" 2>&1
  local status=$?
  say "== $label: exit $status after $((SECONDS - started)) s"
  if ((status == 0)); then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$label")
  fi
}

for test_binary in "$bundle_dir"/bin/tests/*; do
  [[ -x "$test_binary" ]] || continue
  # --show-output prints what passing tests printed (timings, skip notes).
  run_one "test $(basename "$test_binary")" "$test_binary" --show-output
done

# "name args..." lines; a name is an example's or a bench's.
if [[ -f "$bundle_dir/examples.txt" ]]; then
  while read -r name args; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    binary="$bundle_dir/bin/examples/$name"
    [[ -x "$binary" ]] || binary="$bundle_dir/bin/benches/$name"
    if [[ ! -x "$binary" ]]; then
      say "== example $name: not in the bundle"
      failed=$((failed + 1))
      failures+=("example $name (missing)")
      continue
    fi
    # shellcheck disable=SC2086 # args are split on purpose
    run_one "example $name" "$binary" $args
  done <"$bundle_dir/examples.txt"
fi

for failure in "${failures[@]}"; do say "FAILED: $failure"; done
say "log: $log"
echo "$passed passed, $failed failed" | tee -a "$log"
((failed == 0))
RUN_SH
chmod +x "$bundle_dir/run.sh"

bundle_kib="$(du -sk "$bundle_dir" | cut -f1)"
echo "gpu-bundle: $(find "$bundle_dir/bin" -type f | wc -l) binaries, $((bundle_kib / 1024)) MiB in $bundle_dir"
if ((bundle_kib > max_bundle_mib * 1024)); then
  echo "gpu-bundle: the bundle is over $max_bundle_mib MiB" >&2
  exit 1
fi
