#!/usr/bin/env bash
# Runs each fuzz target for SECONDS (default 600) on its committed corpus.
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP lets the stable toolchain take them.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-600}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for target in params_reader proof_decoder shape_reader; do
    mkdir -p "corpus/$target"
    echo "=== $target for ${seconds}s"
    # Fresh inputs found while fuzzing go to a scratch folder; the committed corpus stays small.
    scratch="$(mktemp -d)"
    cargo fuzz run "$target" "$scratch" "corpus/$target" -- \
        -max_total_time="$seconds" -malloc_limit_mb=512 -rss_limit_mb=2048 -max_len=65536 \
        2>&1 | tail -n 5
    rm -rf "$scratch"
done
