#!/usr/bin/env bash
# Overload through real sockets (issue 16): two mock engines behind one kvroute router, N streams
# (default 1,200) opened at once. Prints what the clients saw (complete streams, 429/503 with
# Retry-After and a JSON body, and the must-never cases: a 200 without a token, an exception), then
# checks the router after the burst: circuits, /ready, requests right after, and memory (JVM heap
# used after a GC nudge, and RSS) before and after. Loopback only, bounded: every client socket has
# a deadline and the script stops its processes on exit.
# Usage: bench/scripts/overload.sh
# The router's per-backend limit is configured (--max-concurrency-per-backend SEQS+4, as an operator
# who knows the engines' max_num_seqs sets it); LIMIT=0 derives it from the engines' reports instead
# (then the first second of the burst goes out at initialConcurrencyPerBackend, 256, before the
# engines' first full-batch report arrives).
# Env:   N (1200), MAX_TOKENS (64), SEQS (engines' --max-num-seqs, 32), LIMIT (SEQS+4), DEADLINE
#        (--queue-deadline, 10s), QUEUE (--max-queue-length, 400), HEAP (router -Xmx, 512m), BASE_PORT (18600)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-1200}
MAX_TOKENS=${MAX_TOKENS:-64}
SEQS=${SEQS:-32}
DEADLINE=${DEADLINE:-10s}
QUEUE=${QUEUE:-400}
HEAP=${HEAP:-512m}
LIMIT=${LIMIT:-$((SEQS + 4))}
BASE_PORT=${BASE_PORT:-18600}
JAR=kvroute-app/target/kvroute.jar
./kvroute --version >/dev/null
E=$BASE_PORT
R=$((BASE_PORT + 10))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
java -jar "$JAR" mock-engine --host 127.0.0.1 --port "$E" --replicas 2 --max-num-seqs "$SEQS" >/tmp/overload-engines.log 2>&1 &
pids+=($!)
java -Xmx"$HEAP" -XX:+UseParallelGC -jar "$JAR" serve --bind 127.0.0.1 --port "$R" --admin-port -1 \
  --backend "http://127.0.0.1:$E" --backend "http://127.0.0.1:$((E + 1))" \
  --first-byte-timeout 30s --queue-deadline "$DEADLINE" --max-queue-length "$QUEUE" --max-concurrency-per-backend "$LIMIT" >/tmp/overload-router.log 2>&1 &
ROUTER=$!
pids+=($ROUTER)
for _ in $(seq 1 120); do curl -sf -o /dev/null "http://127.0.0.1:$R/ready" && break; sleep 0.5; done
mem() { # heap used (MiB) and RSS (MiB)
  local heap rss
  heap=$(curl -s "http://127.0.0.1:$R/metrics" | grep '^jvm_memory_used_bytes{area="heap"' \
    | python3 -c 'import sys; print(round(sum(float(l.split()[-1]) for l in sys.stdin) / 1048576))')
  rss=$(awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/$ROUTER/status)
  echo "heap_used_mib=$heap rss_mib=$rss"
}
python3 bench/scripts/overload_client.py 127.0.0.1 "$R" 20 8 60 >/dev/null # warm-up
sleep 3
echo "before: $(mem)"
python3 bench/scripts/overload_client.py 127.0.0.1 "$R" "$N" "$MAX_TOKENS" 120
echo "right after: ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$R/ready")"
# the router's own time from reading a request to its last byte (for a 429: from read to refusal)
curl -s "http://127.0.0.1:$R/metrics" | grep -E '^kvroute_circuit_state|^kvroute_admission_requests_total|^kvroute_upstream_errors_total|^kvroute_request_duration_seconds_max|^kvroute_admission_queue_wait_seconds_max' || true
echo "after-burst requests: $(python3 bench/scripts/overload_client.py 127.0.0.1 "$R" 20 8 60)"
sleep 10
echo "10 s later: $(mem) (router -Xmx$HEAP)"
