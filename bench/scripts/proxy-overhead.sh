#!/usr/bin/env bash
# Proxy overhead: kvroute beside nginx and HAProxy, in one run, with the same load generator (wrk)
# and the same request bodies, in front of the same zero-cost backends.
#
#   backends   4 nginx servers (one worker, pinned to LOAD_CPU with wrk) that answer every chat
#              completion with a fixed non-streaming reply (usage included), /health, /v1/models
#              and an idle vLLM engine's /metrics: no engine cost, so what is measured is the proxy. The usage
#              has no prompt_tokens_details, as vLLM's by default (--enable-prompt-tokens-details
#              off): a fixed "cached_tokens": 0 would tell a cache-aware router, on every reply,
#              that the engine had lost everything it routed there.
#   bodies     64 chat requests of about 22 KB (16 sessions x 4 turns: a ~5K-token history plus a
#              new message), sent in rotation, so cache-aware routing sees real shared prefixes.
#   targets    direct (wrk to one backend), nginx (proxy_pass, upstream keepalive), HAProxy
#              (roundrobin, http-reuse always), kvroute round-robin, kvroute cache-aware, and the Netty
#              floor (`kvroute relay`: a bare Netty HTTP/1.1 relay on kvroute's transport, round robin,
#              no routing, no metrics; what kvroute's own work adds is measured against it). Each proxy
#              is loaded alone (the others idle), pinned to PROXY_CPU, with one worker (nginx worker_processes 1, HAProxy
#              nbthread 1, kvroute --event-loop-threads 1; the JVM sees one CPU).
#
# Every proxy is started once and stays up. For each target: steady throughput as the median of
# ROUNDS rounds (each round one DUR-second wrk run of every proxy in turn, after 2 unmeasured
# seconds, CONNS connections, so that the runs of one round meet the same minutes of the machine;
# the range and each round's ratios are printed too), CPU per request (the proxy's utime+stime over each steady run, median; the share of it in
# the kernel, stime, and so the user-space part, which is where proxies differ), p50/p99
# latency at half of nginx's median steady rate (wrk, think time per connection), RSS after the
# rounds, and for kvroute the heap allocated per request over the steady runs
# (jvm_gc_memory_allocated_bytes_total) and, from a fresh start, the throughput and p99 of each of
# the first 10 seconds after /ready answers 200 (ten consecutive 1-second wrk runs; then a warm-up
# run of WARM seconds).
#
# Prints a Markdown table with the ratios to nginx (and to HAProxy), keeps the raw wrk output under OUT, and replaces
# the section between the proxy-overhead markers in DOC (docs/performance.md) unless DOC=-.
# Loopback only; bounded (about 11 minutes, --quick about 4).
#
# Usage: bench/scripts/proxy-overhead.sh [--quick]
# Env:   DUR (20), ROUNDS (3), WARM (kvroute's and the relay's warm-up, 40; others 5), CONNS (32),
#        BASE_PORT (18600: backends +1..+4, nginx +10, HAProxy +11, kvroute round-robin +12,
#        cache-aware +13, Netty relay +14),
#        PROXY_CPU (0), LOAD_CPU (1), OUT (bench-report/proxy-overhead), DOC (docs/performance.md),
#        KVROUTE_JAVA_OPTS (the launcher's JVM options), KVROUTE_FLAGS (extra serve flags),
#        PACING (random: each connection's think time is drawn afresh, so sends arrive apart, at the
#        rate asked whatever the target's latency; fixed: the same whole-millisecond think time on
#        every connection, the script's first way, whose connections send in step)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

DUR=${DUR:-20}
ROUNDS=${ROUNDS:-3}
WARM=${WARM:-40}
CONNS=${CONNS:-32}
BASE_PORT=${BASE_PORT:-18600}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=${OUT:-bench-report/proxy-overhead}
DOC=${DOC:-docs/performance.md}
PACING=${PACING:-random}
if [ "${1:-}" = "--quick" ]; then
  DUR=5
  WARM=15
fi
read -r -a EXTRA <<<"${KVROUTE_FLAGS:-}"

for tool in wrk nginx haproxy taskset python3 curl java; do
  command -v "$tool" >/dev/null || { echo "proxy-overhead: $tool not found (apt-get install -y wrk nginx haproxy)" >&2; exit 2; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
./kvroute --version >/dev/null 2>"$OUT/build.log" || { cat "$OUT/build.log" >&2; exit 1; }

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'cleanup; rm -rf "$work"' EXIT

BACKENDS=()
for i in 1 2 3 4; do BACKENDS+=("$((BASE_PORT + i))"); done
NGINX_PORT=$((BASE_PORT + 10))
HAPROXY_PORT=$((BASE_PORT + 11))
KVROUTE_PORT=$((BASE_PORT + 12))

# ---- request bodies: 16 sessions x 4 turns, ~22 KB each, as a Lua table for wrk ----
python3 - "$work/bodies.lua" <<'PY'
import json, random, sys
r = random.Random(18)
words = ("prefill decode cache block page token replica router prompt history session turn model "
         "engine queue batch latency throughput memory layer attention adapter request stream").split()
def text(n):
    return " ".join(r.choice(words) + str(r.randrange(1000)) for _ in range(n))
bodies = []
for s in range(16):
    msgs = [{"role": "system", "content": f"You are assistant {s}. " + text(300)}]
    for t in range(12):
        msgs.append({"role": "user" if t % 2 == 0 else "assistant", "content": text(150)})
    for turn in range(4):
        msgs.append({"role": "user", "content": text(80)})
        bodies.append(json.dumps({"model": "kvroute/mock-llm", "messages": msgs, "max_tokens": 16}))
        msgs.append({"role": "assistant", "content": text(40)})
with open(sys.argv[1], "w") as f:
    f.write("return {\n")
    for b in bodies:
        f.write("[==[" + b + "]==],\n")
    f.write("}\n")
sizes = sorted(len(b) for b in bodies)
print(f"bodies: {len(bodies)}, {sizes[0]}..{sizes[-1]} bytes", file=sys.stderr)
PY

# ---- wrk script: rotating bodies; PACE_MS > 0 paces each connection; prints one summary line ----
cat >"$work/load.lua" <<LUA
local bodies = dofile("$work/bodies.lua")
local pace = tonumber(os.getenv("PACE_MS") or "0")
local fixed = os.getenv("PACING") == "fixed"
local n = 0
math.randomseed(os.time())
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function request()
  n = n + 1
  return wrk.format(nil, "/v1/chat/completions", nil, bodies[(n % #bodies) + 1])
end
if pace > 0 and fixed then
  -- the same think time on every connection: they start together and stay in step (bursts)
  function delay() return math.floor(pace) end
elseif pace > 0 then
  -- a geometric think time (wrk's delay is whole milliseconds) with mean PACE_MS: the connections'
  -- sends fall apart as independent arrivals would, instead of in step
  local q = pace / (pace + 1)
  function delay() return math.floor(math.log(1 - math.random()) / math.log(q)) end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d mean_us=%d p50_us=%d p99_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration, latency.mean, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
LUA

load() { # port seconds [mean think time, ms] -> RESULT line
  PACE_MS=${3:-0} PACING=$PACING taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"$2"s --timeout 10s -s "$work/load.lua" \
    "http://127.0.0.1:$1" >"$work/wrk.out" 2>&1 || true
  cat "$work/wrk.out" >>"$OUT/wrk.log"
  grep '^RESULT' "$work/wrk.out" || { cat "$work/wrk.out" >&2; echo "RESULT requests=0 duration_us=1 p50_us=0 p99_us=0 errors=1 non2xx=0"; }
}
field() { sed -E "s/.*$1=([0-9]+).*/\1/" <<<"$2"; }

wait_ready() { # url (up to ~90 s: a router's self warm-up runs before its /ready, up to --warm-up-max)
  for _ in $(seq 1 1800); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1" 2>/dev/null)" = 200 ] && return 0
    sleep 0.05
  done
  echo "proxy-overhead: $1 did not answer 200" >&2
  return 1
}

# the process tree's CPU ticks: utime+stime, and stime alone (the kernel's part: the sockets' reads
# and writes and epoll, which a JVM profiler never samples); and its RSS (KiB)
tree() { echo "$1 $(pgrep -P "$1" | tr '\n' ' ')"; }
ticks() { # pid awk-expression-over-/proc/PID/stat -> its sum over the tree
  local t=0 p
  for p in $(tree "$1"); do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk "{print $2}" "/proc/$p/stat")))
  done
  echo "$t"
}
cpu_ticks() { ticks "$1" '$14 + $15'; }
sys_ticks() { ticks "$1" '$15'; }
rss_kib() {
  local t=0 p
  for p in $(tree "$1"); do
    [ -r "/proc/$p/status" ] && t=$((t + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status")))
  done
  echo "$t"
}
HZ=$(getconf CLK_TCK)

# ---- zero-cost backends ----
reply='{"id":"chatcmpl-0","object":"chat.completion","created":1,"model":"kvroute/mock-llm","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":5000,"completion_tokens":16,"total_tokens":5016}}'
{
  echo "worker_processes 1; pid $work/backends.pid; error_log $work/backends.err; daemon off;"
  echo "events { worker_connections 4096; }"
  echo "http { access_log off; client_max_body_size 64m; client_body_buffer_size 128k; keepalive_requests 1000000;"
  for p in "${BACKENDS[@]}"; do
    echo " server { listen 127.0.0.1:$p; default_type application/json;"
    echo "  location = /health { return 200 ''; }"
    # an idle vLLM engine's load gauges, as a real fleet's /metrics gives (without them kvroute
    # counts no engine load on the backend, warns, and takes branches a vLLM fleet does not)
    echo "  location = /metrics { default_type text/plain; return 200 'vllm:num_requests_running{model_name=\\\"kvroute/mock-llm\\\"} 0.0\\nvllm:num_requests_waiting{model_name=\\\"kvroute/mock-llm\\\"} 0.0\\n'; }"
    echo "  location = /v1/models { return 200 '{\"object\":\"list\",\"data\":[{\"id\":\"kvroute/mock-llm\",\"object\":\"model\",\"owned_by\":\"vllm\",\"max_model_len\":131072}]}'; }"
    echo "  location / { return 200 '$reply'; } }"
  done
  echo "}"
} >"$work/backends.conf"
taskset -c "$LOAD_CPU" nginx -c "$work/backends.conf" -p "$work" &
pids+=($!)
for p in "${BACKENDS[@]}"; do wait_ready "http://127.0.0.1:$p/health"; done

steady() { # port pid -> "req/s cpu_us_per_request requests kernel_%" (cpu, kernel "-" for pid 0); one DUR-second run
  local c0=0 c1=0 s0=0 s1=0 r req rps cpu=- kern=-
  [ "$2" != 0 ] && c0=$(cpu_ticks "$2") && s0=$(sys_ticks "$2")
  r=$(load "$1" "$DUR")
  [ "$2" != 0 ] && c1=$(cpu_ticks "$2") && s1=$(sys_ticks "$2")
  req=$(field requests "$r")
  rps=$(( req * 1000000 / $(field duration_us "$r") ))
  [ "$2" != 0 ] && [ "$req" -gt 0 ] && cpu=$(( (c1 - c0) * 1000000 / HZ / req ))
  [ "$2" != 0 ] && [ "$c1" -gt "$c0" ] && kern=$(( (s1 - s0) * 100 / (c1 - c0) ))
  if [ "$(field errors "$r")" != 0 ] || [ "$(field non2xx "$r")" != 0 ]; then
    echo "proxy-overhead: port $1: $(field errors "$r") errors, $(field non2xx "$r") non-2xx" >&2
  fi
  echo "$rps $cpu $req $kern"
}
paced() { # port rate -> "p50_ms p99_ms paced_req/s"
  # closed loop with think time: rate = CONNS / (think + latency). A 3-second probe at
  # think = CONNS / rate measures the target's mean latency at about that load; the measured run
  # thinks that much less, so every target is paced to the same rate whatever its latency
  local pace q
  pace=$(awk -v c="$CONNS" -v r="$2" 'BEGIN {printf "%.3f", c * 1000 / r}')
  if [ "$PACING" != fixed ]; then
    q=$(load "$1" 3 "$pace")
    pace=$(awk -v p="$pace" -v m="$(field mean_us "$q")" 'BEGIN {p -= m / 1000; printf "%.3f", (p > 0.05 ? p : 0.05)}')
  fi
  q=$(load "$1" "$DUR" "$pace")
  echo "$(awk -v u="$(field p50_us "$q")" 'BEGIN {printf "%.2f", u / 1000}') $(awk -v u="$(field p99_us "$q")" 'BEGIN {printf "%.2f", u / 1000}') $(( $(field requests "$q") * 1000000 / $(field duration_us "$q") ))"
}
median() { # numbers -> their median (the lower of the middle two for an even count)
  tr ' ' '\n' <<<"$*" | grep -E '^[0-9]+$' | sort -n | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'
}
first_seconds() { # port -> "rps/p99 ..." for each of the first 10 seconds after /ready
  local s out="" r
  for s in $(seq 1 10); do
    r=$(load "$1" 1)
    out+="$(( $(field requests "$r") * 1000000 / $(field duration_us "$r") ))/$(awk -v u="$(field p99_us "$r")" 'BEGIN {printf "%.0f", u / 1000}') "
  done
  echo "$out"
}
allocated() { # port -> bytes allocated on the heap so far
  curl -s "http://127.0.0.1:$1/metrics" | awk '/^jvm_gc_memory_allocated_bytes_total/ {printf "%.0f", $2}'
}

# ---- direct: one backend, no proxy ----
load "${BACKENDS[0]}" 5 >/dev/null
read -r direct_rps _ _ <<<"$(steady "${BACKENDS[0]}" 0)"
echo "direct: $direct_rps req/s" >&2

# ---- every proxy started once and left up (idle but for its own runs), each warmed ----
labels=(nginx haproxy "kvroute round-robin" "kvroute cache-aware" "Netty relay (floor)")
ports=("$NGINX_PORT" "$HAPROXY_PORT" "$KVROUTE_PORT" "$((KVROUTE_PORT + 1))" "$((KVROUTE_PORT + 2))")
procs=()
{
  echo "worker_processes 1; pid $work/nginx.pid; error_log $work/nginx.err; daemon off;"
  echo "events { worker_connections 4096; }"
  echo "http { access_log off; client_max_body_size 64m; client_body_buffer_size 128k; keepalive_requests 1000000;"
  echo " upstream fleet { $(printf 'server 127.0.0.1:%s; ' "${BACKENDS[@]}") keepalive 64; }"
  echo " server { listen 127.0.0.1:$NGINX_PORT;"
  echo "  location / { proxy_pass http://fleet; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
  echo "}"
} >"$work/nginx.conf"
taskset -c "$PROXY_CPU" nginx -c "$work/nginx.conf" -p "$work" &
procs+=($!)
{
  echo "global"; echo "  nbthread 1"; echo "  maxconn 4096"
  echo "defaults"; echo "  mode http"; echo "  timeout connect 3s"; echo "  timeout client 60s"; echo "  timeout server 60s"
  echo "  http-reuse always"
  echo "frontend fe"; echo "  bind 127.0.0.1:$HAPROXY_PORT"; echo "  default_backend fleet"
  echo "backend fleet"; echo "  balance roundrobin"
  for i in "${!BACKENDS[@]}"; do echo "  server b$i 127.0.0.1:${BACKENDS[$i]}"; done
} >"$work/haproxy.cfg"
taskset -c "$PROXY_CPU" haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
procs+=($!)
pids+=("${procs[@]}")
for k in 0 1; do
  wait_ready "http://127.0.0.1:${ports[$k]}/health"
  load "${ports[$k]}" 5 >/dev/null
done
# kvroute: from a fresh start, each of the first 10 seconds after /ready answers 200; then the
# warm-up run (the first policy's JVM idles beside the second's start)
firsts=()
for k in 2 3; do
  policy=${labels[$k]#kvroute }
  taskset -c "$PROXY_CPU" ./kvroute serve --bind 127.0.0.1 --port "${ports[$k]}" --admin-port -1 \
    --event-loop-threads 1 --policy "$policy" "${EXTRA[@]}" \
    $(printf -- '--backend http://127.0.0.1:%s ' "${BACKENDS[@]}") >"$OUT/kvroute-$policy.log" 2>&1 &
  procs+=($!)
  pids+=($!)
  wait_ready "http://127.0.0.1:${ports[$k]}/ready"
  firsts[$k]=$(first_seconds "${ports[$k]}")
  load "${ports[$k]}" "$WARM" >/dev/null
done
# the Netty floor: the same launcher and JVM options as kvroute serve, one event loop, warmed as long
taskset -c "$PROXY_CPU" ./kvroute relay --port "${ports[4]}" --event-loop-threads 1 \
  $(printf -- '--backend http://127.0.0.1:%s ' "${BACKENDS[@]}") >"$OUT/relay.log" 2>&1 &
procs+=($!)
pids+=($!)
wait_ready "http://127.0.0.1:${ports[4]}/health"
load "${ports[4]}" "$WARM" >/dev/null

# ---- steady throughput: ROUNDS rounds, each target once per round, in turn ----
# One run per target cannot tell a change from the run-to-run spread of the baseline (nginx measured
# 13,400 to 17,800 req/s in single runs of the same build); alternated rounds meet the same minutes of
# the machine, and the report gives each target's median and its range.
rps_of=() cpu_of=() kern_of=() alloc_b=() alloc_n=() round_rows=()
for round in $(seq 1 "$ROUNDS"); do
  line="$round"
  for k in "${!labels[@]}"; do
    # 2 unmeasured seconds first: the target's connections, caches and CPU back from idling
    load "${ports[$k]}" 2 >/dev/null
    kv=0
    [[ ${labels[$k]} == kvroute* ]] && kv=1 && a0=$(allocated "${ports[$k]}")
    read -r rps cpu req kern <<<"$(steady "${ports[$k]}" "${procs[$k]}")"
    if [ "$kv" = 1 ]; then
      alloc_b[$k]=$(( ${alloc_b[$k]:-0} + $(allocated "${ports[$k]}") - a0 ))
      alloc_n[$k]=$(( ${alloc_n[$k]:-0} + req ))
    fi
    rps_of[$k]+=" $rps"
    cpu_of[$k]+=" $cpu"
    kern_of[$k]+=" $kern"
    line+="|$rps|$cpu"
    echo "round $round, ${labels[$k]}: $rps req/s, cpu/req $cpu us" >&2
  done
  round_rows+=("$line")
done

# ---- latency at half of nginx's median steady rate, every target (direct: the baseline) ----
HALF=$(( $(median "${rps_of[0]}") / 2 ))
read -r d50 d99 d_rate <<<"$(paced "${BACKENDS[0]}" "$HALF")"
for k in "${!labels[@]}"; do
  read -r p50 p99 prate <<<"$(paced "${ports[$k]}" "$HALF")"
  rss=$(( $(rss_kib "${procs[$k]}") / 1024 ))
  alloc=-
  [ -n "${alloc_n[$k]:-}" ] && [ "${alloc_n[$k]}" -gt 0 ] && alloc=$(awk -v a="${alloc_b[$k]}" -v n="${alloc_n[$k]}" 'BEGIN {printf "%.0f", a / n / 1024}')
  rows[$k]="$p50|$p99|$prate|$rss|$alloc"
  echo "${labels[$k]}: paced $prate req/s p50 $p50 ms p99 $p99 ms, rss $rss MiB" >&2
done
cleanup

# ---- report ----
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a ~ /^[0-9.]+$/ && b > 0) printf "%.2fx", a / b; else print "-"}'; }
user() { awk -v c="$1" -v k="$2" 'BEGIN {if (c ~ /^[0-9]+$/ && k ~ /^[0-9]+$/) printf "%.0f", c * (100 - k) / 100; else print "-"}'; }
added() { awk -v a="$1" -v b="$2" 'BEGIN {if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/) printf "%+.2f", a - b; else print "-"}'; }
range() { tr ' ' '\n' <<<"$*" | grep -E '^[0-9]+$' | sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "–" hi}'; }
n_rps=$(median "${rps_of[0]}")
n_cpu=$(median "${cpu_of[0]}")
h_rps=$(median "${rps_of[1]}")
report=$work/report.md
{
  echo "Run $(date -u +%Y-%m-%dT%H:%MZ) at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo '+changes'): $(nproc) cores, $(java -version 2>&1 | head -1),"
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $CONNS connections, ${DUR} s per measured run, 64 bodies of ~22 KB;"
  echo "steady figures: the median of $ROUNDS rounds, each round one run of every proxy in turn;"
  echo "latency at ${HALF} req/s (half of nginx's median steady rate; think times: $PACING)."
  echo
  echo "| target | req/s (steady, median) | range over the rounds | vs nginx | vs HAProxy | CPU/request (µs) | vs nginx | of it in the kernel | so in user space (µs) | paced req/s | p50 (ms) | p99 (ms) | p99 added over direct (ms) | RSS (MiB) | heap alloc/request (KiB) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  echo "| direct | $direct_rps | - | $(ratio "$direct_rps" "$n_rps") | $(ratio "$direct_rps" "$h_rps") | - | - | - | - | $d_rate | $d50 | $d99 | +0.00 | - | - |"
  for k in "${!labels[@]}"; do
    IFS='|' read -r p50 p99 prate rss alloc <<<"${rows[$k]}"
    rps=$(median "${rps_of[$k]}")
    cpu=$(median "${cpu_of[$k]}")
    kern=$(median "${kern_of[$k]}")
    echo "| ${labels[$k]} | $rps | $(range "${rps_of[$k]}") | $(ratio "$rps" "$n_rps") | $(ratio "$rps" "$h_rps") | $cpu | $(ratio "$cpu" "$n_cpu") | $kern% | $(user "$cpu" "$kern") | $prate | $p50 | $p99 | $(added "$p99" "$d99") | $rss | $alloc |"
  done
  echo
  echo "Each round (req/s / CPU µs per request; the ratios to that round's nginx and HAProxy):"
  echo
  echo "| round | nginx | HAProxy | kvroute round-robin | kvroute cache-aware | Netty relay | round-robin vs nginx | cache-aware vs nginx | Netty relay vs nginx | round-robin vs HAProxy | cache-aware vs HAProxy |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for line in "${round_rows[@]}"; do
    IFS='|' read -r round nr nc hr hc rr rc cr cc fr fc <<<"$line"
    echo "| $round | $nr / $nc | $hr / $hc | $rr / $rc | $cr / $cc | $fr / $fc | $(ratio "$rr" "$nr") | $(ratio "$cr" "$nr") | $(ratio "$fr" "$nr") | $(ratio "$rr" "$hr") | $(ratio "$cr" "$hr") |"
  done
  echo
  echo "First 10 seconds after \`/ready\` answered 200 (fresh JVM; req/s / p99 ms of each second; share of the median steady rate):"
  echo
  echo "| target | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | slowest second vs steady |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---:|"
  for k in 2 3; do
    min=$(tr ' ' '\n' <<<"${firsts[$k]}" | grep . | cut -d/ -f1 | sort -n | head -1)
    echo "| ${labels[$k]} | $(tr ' ' '\n' <<<"${firsts[$k]}" | grep . | paste -sd'|' | sed 's/|/ | /g') | $(ratio "$min" "$(median "${rps_of[$k]}")") |"
  done
} >"$report"
cat "$report"
cp "$report" "$OUT/report.md"

if [ "$DOC" != "-" ]; then
  python3 - "$DOC" "$report" "bench/scripts/proxy-overhead.sh${1:+ $1}" <<'PY'
import sys
doc, report, cmd = sys.argv[1:4]
begin, end = "<!-- proxy-overhead:begin -->", "<!-- proxy-overhead:end -->"
text = open(doc).read()
section = f"{begin}\n```\n{cmd}\n```\n\n{open(report).read()}{end}"
if begin in text and end in text:
    text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
else:
    text = text.rstrip("\n") + "\n\n## Proxy overhead beside nginx and HAProxy\n\n" + section + "\n"
open(doc, "w").write(text)
PY
  echo "proxy-overhead: wrote the table into $DOC" >&2
fi
