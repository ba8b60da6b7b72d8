#!/usr/bin/env bash
# Side by side on one device: a bundled example and the same example built
# at an earlier commit (put beside it in the bundle as NAME_before), run
# alternately ROUNDS times (default 2) with the same arguments, so both see
# the same machine. Logs to $OUT/before-after-NAME.log; the lines with a
# time or a result are echoed.
#   bash scripts/before-after.sh NAME ARGS...
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
name="$1"
shift
bin=target/gpu-bundle/bin/examples
logs="${OUT:-target/gpu-bundle/logs}"
log="$logs/before-after-$name.log"
mkdir -p "$logs"
for build in "$name" "${name}_before"; do
  if [[ -e "$bin/$build.xz" ]]; then xz -d -f "$bin/$build.xz" && chmod +x "$bin/$build"; fi
  [[ -x "$bin/$build" ]] || { echo "before-after: no $bin/$build" >&2; exit 1; }
done
: >"$log"
for round in $(seq "${ROUNDS:-2}"); do
  for build in "${name}_before" "$name"; do
    echo "== round $round: $build $*" | tee -a "$log"
    timeout "${EACH_S:-150}" "$bin/$build" "$@" >>"$log" 2>&1
    echo "== $build: exit $?" | tee -a "$log"
  done
done
grep -a -E "^== |[0-9] ?(ms|s)\b|verified|equal|error" "$log" | grep -v '^\[' | tail -n 80
