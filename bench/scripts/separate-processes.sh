#!/usr/bin/env bash
# The demo's table from separate processes, as the README starts them: for each policy, 8 fresh mock
# engines (`mock-engine --profile seed`), a fresh router (`serve` with the demo's flags) and `loadtest
# --workload seed --compare-policy P`, which warms up, measures, simulates the same workload beside the
# run and prints the demo's agreement rule (hit rate within 3 points, mean TTFT within 15%) and whether
# this machine kept up with the time scale (clock lag).
#
# Prints each policy's real-vs-simulated lines, keeps every process's output under OUT, and replaces the
# section between the separate-processes markers in DOC (docs/bench.md) unless DOC=-.
# Loopback only; bounded (about 3 minutes per policy at K = 2).
#
# Then, unless OVERLOAD_K=0, one deliberately overloaded cache-aware run at time scale OVERLOAD_K (20):
# its own report must say NOT TRUSTWORTHY, with the lag figures.
#
# Usage: bench/scripts/separate-processes.sh [POLICY ...]    (default: round-robin sticky cache-aware)
# Env:   K (engine time scale, 2), OVERLOAD_K (20; 0 = skip), BASE_PORT (18800: engines BASE+1..BASE+8, router BASE+80),
#        OUT (bench-report/separate-processes), DOC (docs/bench.md), LOADTEST_FLAGS (extra loadtest flags)
set -euo pipefail
cd "$(dirname "$0")/../.."

K=${K:-2}
BASE_PORT=${BASE_PORT:-18800}
OUT=${OUT:-bench-report/separate-processes}
DOC=${DOC:-docs/bench.md}
POLICIES=("$@")
[ ${#POLICIES[@]} -gt 0 ] || POLICIES=(round-robin sticky cache-aware)
read -r -a EXTRA <<<"${LOADTEST_FLAGS:-}"
mkdir -p "$OUT"
./kvroute --version >/dev/null 2>"$OUT/build.log" || { cat "$OUT/build.log" >&2; exit 1; }

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap cleanup EXIT

wait_ready() { # url seconds
  local deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { echo "separate-processes: $1 not ready after $2 s" >&2; return 1; }
    sleep 0.5
  done
}

engines=$(seq -s, -f "http://127.0.0.1:%g" $((BASE_PORT + 1)) $((BASE_PORT + 8)))
router="http://127.0.0.1:$((BASE_PORT + 80))"
summary="$OUT/summary.md"
{
  echo "Measured $(date -u +%Y-%m-%d) on this machine ($(nproc) cores, load average $(cut -d" " -f1 /proc/loadavg) at the start), time scale K = $K, with"
  echo "\`bench/scripts/separate-processes.sh\` (8 engines, the router and \`loadtest\` as three processes, each"
  echo "policy on a fresh fleet and router):"
  echo
} >"$summary"

run_policy() { # policy K label
  local policy=$1 K=$2 label=$3
  local log="$OUT/$label"
  ./kvroute mock-engine --profile seed --host 127.0.0.1 --port $((BASE_PORT + 1)) --replicas 8 \
    --time-scale "$K" >"$log.engines.log" 2>&1 &
  pids+=($!)
  backends=()
  # named as the demo and the simulator name replicas: sticky hashes the names onto its ring
  for i in $(seq 0 7); do backends+=(--backend "http://127.0.0.1:$((BASE_PORT + 1 + i)),name=engine-$i"); done
  ./kvroute serve --bind 127.0.0.1 --port $((BASE_PORT + 80)) --admin-port -1 --policy "$policy" \
    --load-measure prefilling --balance-abs-threshold 3 --balance-rel-threshold 1.5 --policy-seed 1 \
    --no-admission --page-size-tokens 16 "${backends[@]}" >"$log.router.log" 2>&1 &
  pids+=($!)
  for p in $(seq $((BASE_PORT + 1)) $((BASE_PORT + 8))); do wait_ready "http://127.0.0.1:$p/health" 120; done
  wait_ready "$router/ready" 120
  echo "separate-processes: $policy (K = $K)..." >&2
  ./kvroute loadtest --target "$router" --engines "$engines" --workload seed --label "$label" \
    --compare-policy "$policy" "${EXTRA[@]}" >"$log.loadtest.out" 2>"$log.loadtest.err" || true
  cleanup
  echo "### $label (K = $K)" >>"$summary"
  echo >>"$summary"
  echo '```' >>"$summary"
  # the report (stdout); warm-up and progress lines are in .err
  cat "$log.loadtest.out" >>"$summary"
  echo '```' >>"$summary"
  echo >>"$summary"
  grep -E "agree|TRUSTWORTHY" "$log.loadtest.out" | sed "s/^/$label: /" >&2 || true
}

for policy in "${POLICIES[@]}"; do run_policy "$policy" "$K" "$policy"; done
OVERLOAD_K=${OVERLOAD_K:-20}
if [ "$OVERLOAD_K" != 0 ]; then run_policy cache-aware "$OVERLOAD_K" "cache-aware-overloaded"; fi

cat "$summary"
if [ "$DOC" != "-" ]; then
  python3 bench/scripts/doc-section.py "$DOC" separate-processes "$summary" && echo "separate-processes: wrote $DOC" >&2
fi
