#!/usr/bin/env bash
# Compose smoke test: brings up docker-compose.yml's core stack (router + four mock engines, no
# observability profile) from the local image, checks that the router answers a chat request through
# to an engine, and brings the stack down, checking that nothing of it is left.
#
# Needs: the image $KVROUTE_IMAGE (default kvroute:local) built, docker-compose (Debian's 1.29 or
# the compose plugin), curl, python3. The router is published on $KVROUTE_PORT and the engines on
# $ENGINE_1_PORT..$ENGINE_4_PORT, each a free port by default. Exit status 0 when every check passed.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Five distinct free TCP ports on this host (the kernel picks them, all held open until every one is
# picked: asked one at a time, the kernel may hand out the same port twice, and the router and an
# engine then fight over it), so the test does not collide with anything else running here
read -r P0 P1 P2 P3 P4 < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("", 0))
print(*[s.getsockname()[1] for s in socks])
for s in socks:
    s.close()')
export KVROUTE_IMAGE="${KVROUTE_IMAGE:-kvroute:local}"
export KVROUTE_PORT="${KVROUTE_PORT:-$P0}"
export ENGINE_1_PORT="${ENGINE_1_PORT:-$P1}" ENGINE_2_PORT="${ENGINE_2_PORT:-$P2}"
export ENGINE_3_PORT="${ENGINE_3_PORT:-$P3}" ENGINE_4_PORT="${ENGINE_4_PORT:-$P4}"
project="kvroute-smoke"
if command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose -p "$project")
else
  compose=(docker compose -p "$project")
fi

docker image inspect "$KVROUTE_IMAGE" >/dev/null 2>&1 \
  || { echo "compose-smoke: image $KVROUTE_IMAGE is missing (build it first)" >&2; exit 1; }

"${compose[@]}" --profile observability config -q
echo "compose-smoke: docker-compose.yml is valid, with and without the observability profile"

down() {
  "${compose[@]}" down --volumes --remove-orphans --timeout 10
}
on_exit() {
  status=$?
  if [ "$status" -ne 0 ]; then
    echo "compose-smoke: FAILED; container states and logs:" >&2
    "${compose[@]}" ps >&2 || true
    "${compose[@]}" logs --no-color --tail 40 >&2 || true
  fi
  down >/dev/null 2>&1 || true
  exit "$status"
}
trap on_exit EXIT

start=$(date +%s)
# --no-build: the stack must come up from the local image alone; nothing is pulled or built.
echo "compose-smoke: router on :$KVROUTE_PORT, engines on :$ENGINE_1_PORT :$ENGINE_2_PORT :$ENGINE_3_PORT :$ENGINE_4_PORT"
"${compose[@]}" up -d --no-build
echo "compose-smoke: up in $(( $(date +%s) - start ))s (engines healthy before the router starts)"

base="http://localhost:$KVROUTE_PORT"
for _ in $(seq 1 60); do
  curl -fsS -o /dev/null "$base/ready" 2>/dev/null && break
  sleep 1
done
curl -fsS "$base/ready" >/dev/null
echo "compose-smoke: router ready at $base"

body='{"model":"kvroute/mock-llm","user":"smoke","max_tokens":8,"messages":[{"role":"user","content":"Hello from the compose smoke test."}]}'
headers="$(mktemp)"
response="$(curl -fsS -D "$headers" -H 'content-type: application/json' -d "$body" "$base/v1/chat/completions")"
backend="$(tr -d '\r' <"$headers" | awk -F': ' 'tolower($1)=="x-kvroute-backend"{print $2}')"
rm -f "$headers"
echo "compose-smoke: chat answered by ${backend:-?}: ${response:0:160}"
[ -n "$backend" ] || { echo "compose-smoke: no x-kvroute-backend header" >&2; exit 1; }
case "$response" in *'"choices"'*) ;; *) echo "compose-smoke: no choices in the answer" >&2; exit 1 ;; esac

metrics="$(curl -fsS "$base/metrics")"
grep -q '^kvroute_requests_total' <<<"$metrics" || { echo "compose-smoke: no kvroute_* metrics" >&2; exit 1; }
echo "compose-smoke: router /metrics exports kvroute_*"

for port in "$ENGINE_1_PORT" "$ENGINE_2_PORT" "$ENGINE_3_PORT" "$ENGINE_4_PORT"; do
  metrics="$(curl -fsS "http://localhost:$port/metrics")"
  grep -q '^vllm:num_requests_waiting' <<<"$metrics" \
    || { echo "compose-smoke: engine on :$port exports no vllm:num_requests_waiting" >&2; exit 1; }
done
echo "compose-smoke: the four engines export vllm:* metrics on their published ports"

unhealthy="$("${compose[@]}" ps | grep -c 'unhealthy' || true)"
[ "$unhealthy" = "0" ] || { echo "compose-smoke: $unhealthy unhealthy containers" >&2; exit 1; }

trap - EXIT
down
left="$(docker ps -a --filter "label=com.docker.compose.project=$project" -q | wc -l)"
nets="$(docker network ls --filter "label=com.docker.compose.project=$project" -q | wc -l)"
[ "$left" = "0" ] && [ "$nets" = "0" ] \
  || { echo "compose-smoke: $left containers and $nets networks left after down" >&2; exit 1; }
echo "compose-smoke: down cleanly (no containers or networks left); total $(( $(date +%s) - start ))s"
