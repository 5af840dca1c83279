#!/usr/bin/env bash
# The README's docker-compose stack plus `loadtest`, as the README documents them, for round-robin,
# sticky and cache-aware: for each policy a fresh core stack (`KVROUTE_POLICY=P docker compose up -d`,
# router + 4 engines with `--profile seed`), then `loadtest --workload seed --replicas 4
# --compare-policy P` from the host, then `docker compose down`. Prints each report and replaces the
# section between the compose-loadtest markers in DOC (docs/bench.md) unless DOC=-.
#
# Needs: a running Docker daemon, docker-compose (Debian's 1.29) or the compose plugin, and the image
# $KVROUTE_IMAGE (kvroute:local; build it as .ci/run does: docker/jre-base/build.sh, then
# `docker build --build-arg JRE_IMAGE=kvroute-jre:local -t kvroute:local .`).
# Loopback only; bounded (about 2.5 minutes per policy at ENGINE_TIME_SCALE = 2).
#
# Usage: bench/scripts/compose-loadtest.sh [POLICY ...]    (default: round-robin sticky cache-aware)
# Env:   ENGINE_TIME_SCALE (2), OUT (bench-report/compose-loadtest), DOC (docs/bench.md)
set -euo pipefail
cd "$(dirname "$0")/../.."

export KVROUTE_IMAGE="${KVROUTE_IMAGE:-kvroute:local}"
export ENGINE_TIME_SCALE="${ENGINE_TIME_SCALE:-2}"
OUT=${OUT:-bench-report/compose-loadtest}
DOC=${DOC:-docs/bench.md}
POLICIES=("$@")
[ ${#POLICIES[@]} -gt 0 ] || POLICIES=(round-robin sticky cache-aware)
mkdir -p "$OUT"
if command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose -p kvroute-loadtest)
else
  compose=(docker compose -p kvroute-loadtest)
fi
docker image inspect "$KVROUTE_IMAGE" >/dev/null 2>&1 \
  || { echo "compose-loadtest: image $KVROUTE_IMAGE is missing (build it first, see the header)" >&2; exit 1; }
./kvroute --version >/dev/null 2>"$OUT/build.log" || { cat "$OUT/build.log" >&2; exit 1; }

down() { "${compose[@]}" down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1 || true; }
trap down EXIT

wait_ready() { # url seconds
  local deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { echo "compose-loadtest: $1 not ready after $2 s" >&2; return 1; }
    sleep 1
  done
}

summary="$OUT/summary.md"
{
  echo "Measured $(date -u +%Y-%m-%d) on this machine ($(nproc) cores, load average $(cut -d" " -f1 /proc/loadavg) at the start), engines at ENGINE_TIME_SCALE = $ENGINE_TIME_SCALE,"
  echo "with \`bench/scripts/compose-loadtest.sh\` (the README's core stack, a fresh one per policy, and its"
  echo "\`loadtest\` command with \`--compare-policy\`):"
  echo
} >"$summary"

for policy in "${POLICIES[@]}"; do
  down
  KVROUTE_POLICY="$policy" "${compose[@]}" up -d >"$OUT/$policy.compose.log" 2>&1
  for p in 8001 8002 8003 8004; do wait_ready "http://localhost:$p/health" 120; done
  wait_ready "http://localhost:8080/ready" 120
  echo "compose-loadtest: $policy (ENGINE_TIME_SCALE = $ENGINE_TIME_SCALE)..." >&2
  ./kvroute loadtest --target http://localhost:8080 \
    --engines http://localhost:8001,http://localhost:8002,http://localhost:8003,http://localhost:8004 \
    --workload seed --replicas 4 --label "$policy" --compare-policy "$policy" \
    >"$OUT/$policy.loadtest.out" 2>"$OUT/$policy.loadtest.err" || true
  "${compose[@]}" logs --no-color >"$OUT/$policy.containers.log" 2>&1 || true
  down
  { echo "### $policy"; echo; echo '```'; cat "$OUT/$policy.loadtest.out"; echo '```'; echo; } >>"$summary"
  grep -E "agree|TRUSTWORTHY" "$OUT/$policy.loadtest.out" | sed "s/^/$policy: /" >&2 || true
done

cat "$summary"
if [ "$DOC" != "-" ]; then
  python3 bench/scripts/doc-section.py "$DOC" compose-loadtest "$summary" && echo "compose-loadtest: wrote $DOC" >&2
fi
