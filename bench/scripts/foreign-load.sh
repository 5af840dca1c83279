#!/usr/bin/env bash
# Foreign load: requests an engine runs that a kvroute router did not send. Two scenarios on 4 mock
# engines (the seed workload's engines), each run twice on fresh engines, with the routers'
# engine-load scrape off (--engine-load-interval 0s) and on (1s, with --foreign-load so that the
# policy counts what the scrape finds):
#
#   direct       one kvroute router (cache-aware) takes the seed workload for 4 replicas, while a
#                second client replays one replica's share (another seed) straight to engine 1 (a
#                batch job that bypasses the router);
#   two-routers  two kvroute routers (cache-aware) in front of the same engines, each taking half of
#                the seed workload's sessions (two seeds), as two replicas behind a load balancer.
#
# Prints every client's row (loadtest's markdown) for both runs. Loopback only, bounded: each run is
# one seed workload (about 2 minutes at the default K=2).
# Usage: bench/scripts/foreign-load.sh [direct|two-routers] [--quick]
# Env:   RUNS (the engine-load intervals to run, "0s 1s"), K (engine time scale, 2), BASE_PORT (18400), OUT (report directory,
#        loadtest-report/foreign-load), POLICY_FLAGS (the routers' policy settings; default: the seed
#        workload's, as behind the demo's table)
set -euo pipefail
cd "$(dirname "$0")/../.."

SCENARIO=${1:-direct}
K=${K:-2}
BASE_PORT=${BASE_PORT:-18400}
OUT=${OUT:-loadtest-report/foreign-load}
JAR=kvroute-app/target/kvroute.jar
read -r -a POLICY <<<"${POLICY_FLAGS:---load-measure prefilling --balance-abs-threshold 3 --balance-rel-threshold 1.5}"
PER_REPLICA=16
if [ "${2:-}" = "--quick" ]; then
  PER_REPLICA=4
fi
case "$SCENARIO" in
  direct | two-routers) ;;
  *) echo "foreign-load: unknown scenario $SCENARIO (expected: direct or two-routers)" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
# builds the jar when the sources are newer
./kvroute --version >/dev/null 2>"$OUT/build.log" || { cat "$OUT/build.log" >&2; exit 1; }
rm -f "$OUT/$SCENARIO"-engine-load-*.md # rows of earlier runs with other RUNS

ENGINES=()
for i in 0 1 2 3; do
  ENGINES+=("http://127.0.0.1:$((BASE_PORT + i))")
done
ALL=$(IFS=,; echo "${ENGINES[*]}")

pids=()
cleanup() {
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  pids=()
}
trap cleanup EXIT

wait_for() { # URL
  for _ in $(seq 1 100); do
    if java -jar "$JAR" healthcheck --quiet "$1" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  echo "foreign-load: $1 did not come up" >&2
  return 1
}

router() { # port interval log
  local foreign=--foreign-load
  if [ "$2" = 0s ]; then
    foreign=--no-foreign-load
  fi
  java -jar "$JAR" serve --bind 127.0.0.1 --port "$1" --admin-port -1 --policy cache-aware "${POLICY[@]}" \
    --engine-load-interval "$2" "$foreign" $(printf -- '--backend %s ' "${ENGINES[@]}") >"$3" 2>&1 &
  pids+=($!)
  wait_for "http://127.0.0.1:$1/ready"
}

loadtest() { # target engines replicas sessions-per-replica seed label; in the background
  java -jar "$JAR" loadtest --target "$1" --engines "$2" --workload seed --replicas "$3" \
    --sessions-per-replica "$4" --seed "$5" --time-scale "$K" --label "$6" --markdown "$OUT/$6.md" \
    >"$OUT/$6.log" 2>&1 &
  pids+=($!)
}

run() { # engine-load interval
  local interval=$1 tag="$SCENARIO-engine-load-$1"
  java -jar "$JAR" mock-engine --host 127.0.0.1 --port "$BASE_PORT" --replicas 4 --scheduler fcfs-prefill \
    --kv-capacity-tokens 181440 --max-model-len 181440 --time-scale "$K" --enable-prompt-tokens-details \
    >"$OUT/engines-$tag.log" 2>&1 &
  pids+=($!)
  for e in "${ENGINES[@]}"; do wait_for "$e/health"; done
  local a=$((BASE_PORT + 10)) b=$((BASE_PORT + 11))
  router "$a" "$interval" "$OUT/router-a-$tag.log"
  local first=${#pids[@]}
  if [ "$SCENARIO" = direct ]; then
    loadtest "${ENGINES[0]}" "${ENGINES[0]}" 1 "$PER_REPLICA" 7 "$tag-direct"
    loadtest "http://127.0.0.1:$a" "$ALL" 4 "$PER_REPLICA" 42 "$tag-router"
  else
    router "$b" "$interval" "$OUT/router-b-$tag.log"
    first=${#pids[@]}
    loadtest "http://127.0.0.1:$b" "$ALL" 4 $((PER_REPLICA / 2)) 7 "$tag-router-b"
    loadtest "http://127.0.0.1:$a" "$ALL" 4 $((PER_REPLICA / 2)) 42 "$tag-router-a"
  fi
  for p in "${pids[@]:$first}"; do
    wait "$p" || echo "foreign-load: a load test failed; see $OUT/$tag-*.log" >&2
  done
  cleanup
}

for interval in ${RUNS:-0s 1s}; do
  run "$interval"
done
echo "foreign-load $SCENARIO, K=$K, routers: cache-aware ${POLICY[*]}"
header=$(grep -h -m1 '^| policy' "$OUT/$SCENARIO"-engine-load-*.md | head -1)
echo "${header/| policy |/| client |}"
echo "|---|---:|---:|---:|---:|---:|---:|"
grep -h '^| ' "$OUT/$SCENARIO"-engine-load-*.md | grep -v -e '^| policy' -e '^|---' | sort
