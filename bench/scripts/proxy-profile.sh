#!/usr/bin/env bash
# kvroute in front of the proxy-overhead harness's zero-cost backends, with the same wrk load and
# 22 KB chat bodies, narrowed to what a change to the hot path needs: CPU time per request (the
# router's utime+stime over the measured run), heap allocated per request, req/s, and a JFR recording
# to profile. CPU and allocation per request hardly depend on how busy the machine is; req/s does.
#
# Usage: bench/scripts/proxy-profile.sh [policy...]   (default: round-robin cache-aware)
# Env:   DUR (10), WARM_REQ (20000 requests served before measuring), CONNS (32), BASE_PORT (18700),
#        PROXY_CPU (0), LOAD_CPU (1), OUT (bench-report/proxy-profile), KVROUTE_JAVA_OPTS,
#        KVROUTE_FLAGS (extra serve flags), JAR (run this copy of kvroute.jar, not the launcher's),
#        VECTOR (0: with JAR, run without the Vector API module, as a JVM without it would),
#        FIRST (1: first measure each of the first 10 seconds after /ready, as proxy-overhead.sh does,
#        and the time from the start to /ready), WARM_FIRST (1: the same ten 1-second runs again after
#        the warm-up by count, on a long-warm server), SCRAPE (1: with FIRST, save /metrics after
#        the first and second 1-second runs as OUT/POLICY-metrics-after-N.txt), SPLIT (1: with FIRST or WARM_FIRST, each second's
#        CPU of the JIT, GC and other threads, and the others' CPU per request), FIRST_REQ (N > 0: CPU per request over the first N
#        requests after /ready, JIT threads included), CDS (1: with JAR, use the launcher's class-data
#        sharing archive for it, trained first when missing); with FIRST or FIRST_REQ it also prints the
#        JIT compilations and JIT CPU between /ready and the end of those first requests,
#        REPEAT (N: N measured runs in a row on the same server, a line each, OUT/POLICY.jfr the
#        last's; for drift over a long-running server), PAIRS (N: instead of the above, two servers
#        up at once, A = the first policy with KVROUTE_JAVA_OPTS and B = B_POLICY (else the second
#        policy given, else the first) with B_JAVA_OPTS (else A's) and B_JAR (else A's jar: a
#        before/after pair of builds in the same minutes; needs JAR), warmed alike (with JAR: always
#        with the Vector API module, no class-data archive), then N pairs of DUR-second runs, the order swapped
#        every pair, so each pair meets the same minutes of the machine: CPU per request of each and
#        B/A; no JFR), ASYNC (1: also profile the measured run with async-profiler, fetched from
#        Maven Central (tools.profiler:async-profiler ASYNC_VERSION, 4.1) and attached with jcmd:
#        event ASYNC_EVENT (cpu; kernel frames end in _[k]) every ASYNC_INTERVAL (200us), collapsed
#        stacks in OUT/POLICY.collapsed for a flame graph, and the event loop's top frames by self
#        time and its samples by component (the body's parse, the index, Netty's codec...) printed;
#        JFR's samples miss native and kernel time, where a proxy spends half of it)
# JFR (settings=profile) records from the start; the measured run is dumped into OUT/POLICY.jfr: allocation per request is
# the sum of every thread's jdk.ThreadAllocationStatistics delta over it, divided by the requests the
# router counted (kvroute_requests_total). CPU per request leaves out the JIT compiler threads;
# the line also gives the share of all the router's CPU spent in the kernel (stime), which JFR does not sample.
# Loopback only; bounded by DUR plus the warm-up (5-second wrk runs until WARM_REQ requests).
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${DUR:-10}
CONNS=${CONNS:-32}
BASE_PORT=${BASE_PORT:-18700}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=${OUT:-bench-report/proxy-profile}
WARM_REQ=${WARM_REQ:-20000}
FIRST=${FIRST:-0}
read -r -a EXTRA <<<"${KVROUTE_FLAGS:-}"
policies=("$@")
[ ${#policies[@]} -gt 0 ] || policies=(round-robin cache-aware)
# the inputs checked before anything is built or started
case "${REPEAT:-1}" in *[!0-9]* | 0 | "") echo "proxy-profile: REPEAT=${REPEAT} (expected: a count of 1 or more)" >&2; exit 2 ;; esac
case "${PAIRS:-0}" in *[!0-9]* | "") echo "proxy-profile: PAIRS=${PAIRS} (expected: a count)" >&2; exit 2 ;; esac
for j in ${JAR:+"$JAR"} ${B_JAR:+"$B_JAR"}; do
  [ -f "$j" ] && [ "$(head -c 2 "$j" 2>/dev/null)" = PK ] || { echo "proxy-profile: $j is no jar" >&2; exit 2; }
done
# both routers of a pair start the same way: a B_JAR beside the launcher's would skip its class-data archive
[ -z "${B_JAR:-}" ] || [ -n "${JAR:-}" ] || { echo "proxy-profile: B_JAR needs JAR (start both routers from a jar)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
[ -n "${JAR:-}" ] || ./kvroute --version >/dev/null
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
BACKENDS=()
for i in 1 2 3 4; do BACKENDS+=("$((BASE_PORT + i))"); done
PORT=$((BASE_PORT + 12))

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
    f.write("return {\n" + "".join("[==[" + b + "]==],\n" for b in bodies) + "}\n")
PY
cat >"$work/load.lua" <<LUA
local bodies = dofile("$work/bodies.lua")
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function request()
  n = n + 1
  return wrk.format(nil, "/v1/chat/completions", nil, bodies[(n % #bodies) + 1])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
LUA
load() { taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"$2"s --timeout 10s -s "$work/load.lua" "http://127.0.0.1:$1" 2>&1 | grep '^RESULT' || echo "RESULT requests=0 duration_us=1 p50_us=0 p99_us=0 errors=1 non2xx=0"; }
field() { sed -E "s/.*$1=([0-9]+).*/\1/" <<<"$2"; }
wait_ready() { for _ in $(seq 1 1800); do [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$1")" = 200 ] && return 0; sleep 0.05; done; echo "no 200 from $1" >&2; return 1; }
HZ=$(getconf CLK_TCK)

# no prompt_tokens_details, as vLLM's default: see proxy-overhead.sh (a fixed cached_tokens 0 empties a cache-aware view)
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

served() { curl -s -m 30 "http://127.0.0.1:$1/metrics" | awk '/^kvroute_requests_total/ {s += $2} END {printf "%.0f", s + 0}'; }
# CPU ticks of the router's threads other than the JIT compilers (whose work is warm-up, not requests)
cpu_ticks() {
  local t=0 task
  for task in /proc/"$1"/task/*; do
    [ "${2:-}" != all ] && grep -q 'CompilerThre' "$task/comm" 2>/dev/null && continue
    t=$((t + $(awk '{print $14 + $15}' "$task/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
# of those, the ticks spent in the kernel (stime: the sockets' reads and writes, epoll), which JFR's
# execution samples never see
sys_ticks() {
  awk '{ b = 0; for (k = length($0); k > 0; k--) if (substr($0, k, 1) == ")") { b = k; break }
         split(substr($0, b + 2), f, " "); s += f[13] } END { print s + 0 }' /proc/"$1"/task/*/stat 2>/dev/null
}
# JIT compilations so far (HotSpot's sun.ci.totalCompiles) and the CPU ticks of the compiler threads
compiles() { jcmd "$1" PerfCounter.print 2>/dev/null | awk -F= '/^sun.ci.totalCompiles=/ {print $2}'; }
jit_ticks() {
  local t=0 task
  for task in /proc/"$1"/task/*; do
    grep -q 'CompilerThre' "$task/comm" 2>/dev/null && t=$((t + $(awk '{print $14 + $15}' "$task/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
# CPU ticks of the router's threads in three groups: "JIT GC rest" (rest: event loops and the others
# but JFR's own threads, whose sampling the harness does not run);
# one awk over /proc, so that reading it leaves no gap between the 1-second runs on a busy machine
tick_groups() {
  awk '{ a = index($0, "("); b = 0
         for (k = length($0); k > a; k--) if (substr($0, k, 1) == ")") { b = k; break }
         comm = substr($0, a + 1, b - a - 1); split(substr($0, b + 2), f, " "); c = f[12] + f[13]
         if (comm ~ /CompilerThre/) j += c; else if (comm ~ /^JFR/) ; else if (comm ~ /GC Thread|ParGC|^GC|VM Thread/) g += c; else r += c }
       END { print j + 0, g + 0, r + 0 }' /proc/"$1"/task/*/stat 2>/dev/null
}
# ten 1-second wrk runs (32 new connections each), as proxy-overhead.sh measures the first seconds:
# per second req/s / p99 ms, and with SPLIT=1 the router's CPU ms in it: JIT, GC (and the VM
# thread's safepoint work), the rest; and the rest's CPU per request in us
ten_seconds() {
  local out="" s r n t0 t1
  for s in 1 2 3 4 5 6 7 8 9 10; do
    [ "${SPLIT:-0}" = 1 ] && read -r -a t0 <<<"$(tick_groups "$kv")"
    r=$(load "$PORT" 1)
    n=$(field requests "$r")
    out+="$(( n * 1000000 / $(field duration_us "$r") ))/$(( $(field p99_us "$r") / 1000 ))"
    if [ "${SPLIT:-0}" = 1 ]; then
      # no /metrics scrape here (a scrape is work of its own): the requests wrk completed
      read -r -a t1 <<<"$(tick_groups "$kv")"
      out+="[jit $(( (t1[0] - t0[0]) * 1000 / HZ )) gc $(( (t1[1] - t0[1]) * 1000 / HZ )) rest $(( (t1[2] - t0[2]) * 1000 / HZ )) ms, $(( (t1[2] - t0[2]) * 1000000 / HZ / (n > 0 ? n : 1) )) us/req]"
    fi
    out+=" "
    # SCRAPE=1: the router's own view of the first two seconds (its latency histograms), for reading
    # later; a scrape is work of its own, so only when asked
    if [ "${SCRAPE:-0}" = 1 ] && [ "$s" -le 2 ]; then
      curl -s -m 30 "http://127.0.0.1:$PORT/metrics" >"$OUT/$policy-metrics-after-$s.txt"
    fi
  done
  echo "$out"
}
# JFR's profile settings, with each thread's allocation counter sampled every second (not only at
# chunk boundaries), so the measured run's dump holds its first and last values,
java_home=$(java -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.home/ {print $2}')
if [ "${ASYNC:-0}" = 1 ]; then
  # async-profiler's jar carries its agent library for each platform
  mvn -q -B dependency:copy -Dartifact="tools.profiler:async-profiler:${ASYNC_VERSION:-4.1}" -DoutputDirectory="$work" \
    >"$work/async-fetch.log" 2>&1 || { cat "$work/async-fetch.log" >&2; exit 1; }
  (cd "$work" && jar xf async-profiler-*.jar linux-x64/libasyncProfiler.so)
  agent="$work/linux-x64/libasyncProfiler.so"
  [ -f "$agent" ] || { echo "proxy-profile: no linux-x64 agent in async-profiler ${ASYNC_VERSION:-4.1}" >&2; exit 1; }
fi
# jcmd reads name=value pairs itself: the agent's options go quoted, as one argument
async() { jcmd "$1" JVMTI.agent_load "$agent" "\"$2\"" >/dev/null; }
# the event loop's frames with the most self time in a collapsed-stacks file
async_top() {
  python3 - "$1" <<'PY'
import collections, sys
own, total = collections.Counter(), 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip().rpartition(" ")
    frames = stack.split(";")
    if not any("IoEventLoop" in f for f in frames):
        continue
    total += int(n)
    own[frames[-1]] += int(n)
kernel = sum(n for f, n in own.items() if f.endswith("_[k]"))
print(f"  event loop: {total} samples, {100 * kernel / max(total, 1):.0f}% in the kernel; top frames by self time:")
for f, n in own.most_common(15):
    print(f"  {100 * n / max(total, 1):5.1f}% {f}")
# Each user-space sample goes to the component of its deepest frame that names one, so a Netty
# call made by the exchange counts as Netty and the exchange's own code as the exchange. Times the
# router's CPU per request measured without the profiler, a share is microseconds per request.
parts = [  # (component, frame prefixes), the first that matches wins
    ("kept-message digest (BytesDigest)", ["dev/kvroute/core/request/BytesDigest", "dev/kvroute/core/request/VectorNh"]),
    ("body parse (ChatBodyScanner, JsonRequestParser)", ["dev/kvroute/core/request/"]),
    ("tokenizer and kept prompts", ["dev/kvroute/core/tokenize/"]),
    ("prefix index", ["dev/kvroute/core/index/"]),
    ("usage read (UsageScanner, Jackson)", ["dev/kvroute/proxy/UsageScanner", "com/fasterxml/"]),
    ("metrics (ProxyMetrics, Micrometer)", ["io/micrometer/", "dev/kvroute/proxy/ProxyMetrics"]),
    ("routing (core, policies, load)", ["dev/kvroute/core/"]),
    ("proxy exchange and handlers", ["dev/kvroute/"]),
    ("Netty HTTP codec", ["io/netty/handler/codec/http/"]),
    ("Netty buffers (incl. the body's heap copy)", ["io/netty/buffer/"]),
    ("Netty transport", ["io/netty/channel/uring/", "io/netty/channel/epoll/", "io/netty/channel/nio/"]),
    ("Netty pipeline, promises, rest", ["io/netty/"]),
]
def part(frames):
    for f in reversed(frames):
        for name, prefixes in parts:
            if any(x in f for x in prefixes):
                return name
    return "JDK and other"
by_part = collections.Counter()
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip().rpartition(" ")
    frames = stack.split(";")
    if any("IoEventLoop" in f for f in frames):
        by_part["kernel" if frames[-1].endswith("_[k]") else part(frames)] += int(n)
print("  event loop by component (share of its samples):")
for name, n in by_part.most_common():
    print(f"  {100 * n / max(total, 1):5.1f}% {name}")
PY
}
# and every JIT compilation recorded (not only those over 100 ms), for what compiles after /ready
sed -e '/jdk.ThreadAllocationStatistics/,/<\/event>/ s/everyChunk/1 s/' \
  -e '/"jdk.Compilation"/,/<\/event>/ s/100 ms/0 ms/' "$java_home/lib/jfr/profile.jfc" >"$work/profile.jfc"
if [ "${PAIRS:-0}" -gt 0 ]; then
  # two routers on PORT (A) and PORT+1 (B), pinned to the same core; only the loaded one works
  start_pair() { # port policy opts jar ("": the launcher's) -> sets pid_PORT
    local launch=(./kvroute)
    [ -n "$4" ] && launch=(java -Xmx4g -XX:MaxDirectMemorySize=2g -XX:+ExitOnOutOfMemoryError $3 --add-modules jdk.incubator.vector -jar "$4")
    KVROUTE_JAVA_OPTS="$3" taskset -c "$PROXY_CPU" "${launch[@]}" serve --bind 127.0.0.1 --port "$1" --admin-port -1 \
      --event-loop-threads 1 --policy "$2" "${EXTRA[@]}" \
      $(printf -- '--backend http://127.0.0.1:%s ' "${BACKENDS[@]}") >"$OUT/kvroute-pair-$1.log" 2>&1 &
    pids+=($!)
    eval "pid_$1=$!"
    local _ up=0
    for _ in $(seq 1 1200); do
      [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/ready")" = 200 ] && { up=1; break; }
      kill -0 "$!" 2>/dev/null || break
      sleep 0.1
    done
    [ "$up" = 1 ] || { echo "proxy-profile: no /ready from the router on port $1 (see $OUT/kvroute-pair-$1.log)" >&2; exit 1; }
    while [ "$(served "$1")" -lt "$WARM_REQ" ]; do alive "$1"; load "$1" 5 >/dev/null; done
  }
  alive() { local v=pid_$1; kill -0 "${!v}" 2>/dev/null || { echo "proxy-profile: the router on port $1 exited (see $OUT/kvroute-pair-$1.log)" >&2; exit 1; }; }
  a_opts=${KVROUTE_JAVA_OPTS:--XX:+UseSerialGC -Xms512m -XX:+AlwaysPreTouch}
  start_pair "$PORT" "${policies[0]}" "$a_opts" "${JAR:-}"
  # B: B_POLICY, else a second policy given, else the first; B_JAR, else A's jar
  start_pair $((PORT + 1)) "${B_POLICY:-${policies[1]:-${policies[0]}}}" "${B_JAVA_OPTS:-$a_opts}" "${B_JAR:-${JAR:-}}"
  for i in $(seq 1 "$PAIRS"); do
    order=("$PORT" $((PORT + 1)))
    [ $((i % 2)) = 0 ] && order=($((PORT + 1)) "$PORT")
    for p in "${order[@]}"; do
      v=pid_$p
      alive "$p"
      n0=$(served "$p"); c0=$(cpu_ticks "${!v}")
      r=$(load "$p" "$DUR")
      alive "$p"
      c1=$(cpu_ticks "${!v}"); n1=$(served "$p"); req=$((n1 - n0))
      [ "$req" -gt 0 ] || { echo "proxy-profile: the router on port $p served nothing in pair $i" >&2; exit 1; }
      eval "ticks_$p=$((c1 - c0)) req_$p=$req rps_$p=$(( req * 1000000 / $(field duration_us "$r") ))"
    done
    ta=ticks_$PORT; tb=ticks_$((PORT + 1)); qa=req_$PORT; qb=req_$((PORT + 1)); ra=rps_$PORT; rb=rps_$((PORT + 1))
    # CPU per request from the raw ticks and counts; the ratio from those, not from rounded figures
    echo "pair $i: $(awk -v ta="${!ta}" -v qa="${!qa}" -v tb="${!tb}" -v qb="${!qb}" -v hz="$HZ" -v ra="${!ra}" -v rb="${!rb}" 'BEGIN {
      a = ta * 1e6 / hz / qa; b = tb * 1e6 / hz / qb
      printf "A %d req/s %.0f us/req, B %d req/s %.0f us/req, B/A CPU %s", ra, a, rb, b, (a > 0 ? sprintf("%.2f", b / a) : "-") }')"
  done
  exit 0
fi
for policy in "${policies[@]}"; do
  opts=${KVROUTE_JAVA_OPTS:--XX:+UseSerialGC -Xms512m -XX:+AlwaysPreTouch}
  # JFR records from the start: started later (jcmd JFR.start), it makes the JIT recompile the
  # request path during the measured run, which then measures the compiler, not the proxy
  # DebugNonSafepoints: without it JFR places samples inside inlined code (the index's walks) wrongly
  opts="$opts -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints -XX:StartFlightRecording=name=p,settings=$work/profile.jfc"
  # JAR: a copy of kvroute.jar to measure instead of the launcher's (a before/after pair in one run)
  launch=(./kvroute)
  cds=()
  # with JAR, the Vector API module as the launcher adds it (VECTOR=0: the portable string scan)
  [ -n "${JAR:-}" ] && [ "${VECTOR:-1}" = 1 ] && opts="$opts --add-modules jdk.incubator.vector"
  if [ -n "${JAR:-}" ] && [ "${CDS:-0}" = 1 ]; then
    [ -f "${JAR%.jar}.jsa" ] || java -XX:ArchiveClassesAtExit="${JAR%.jar}.jsa" -Xlog:cds=off,cds+dynamic=off $opts \
      -jar "$JAR" serve --warm-up-only --warm-up-requests 3000 --warm-up-max 60s >/dev/null 2>&1 || true
    cds=(-XX:SharedArchiveFile="${JAR%.jar}.jsa" -Xshare:auto -Xlog:cds=off,cds+dynamic=off)
  fi
  [ -n "${JAR:-}" ] && launch=(java -Xmx4g -XX:MaxDirectMemorySize=2g -XX:+ExitOnOutOfMemoryError ${cds[@]+"${cds[@]}"} $opts -jar "$JAR")
  KVROUTE_JAVA_OPTS="$opts" taskset -c "$PROXY_CPU" "${launch[@]}" serve --bind 127.0.0.1 --port "$PORT" --admin-port -1 \
    --event-loop-threads 1 --policy "$policy" "${EXTRA[@]}" \
    $(printf -- '--backend http://127.0.0.1:%s ' "${BACKENDS[@]}") >"$OUT/kvroute-$policy.log" 2>&1 &
  kv=$!
  pids+=("$kv")
  t0=$(date +%s%N)
  wait_ready "http://127.0.0.1:$PORT/ready"
  ready_ms=$(( ($(date +%s%N) - t0) / 1000000 )); ready_utc=$(date -u +%Y-%m-%dT%H:%M:%S.%3N)
  # the JIT's work after /ready (compilations and its threads' CPU): what the warm-up left undone
  k0=$(compiles "$kv"); j0=$(jit_ticks "$kv")
  if [ "$FIRST" = 1 ]; then
    # as the proxy-overhead harness: ten 1-second runs right after /ready, req/s / p99 ms of each
    echo "$policy first seconds (req/s / p99 ms), /ready after ${ready_ms} ms: $(ten_seconds)"
    # the first seconds' JIT compilations, deoptimizations and GC pauses, for jfr print
    jcmd "$kv" JFR.dump name=p filename="$OUT/$policy-first.jfr" >/dev/null
    # what the warm-up left to the first seconds: C2 compilations and deoptimizations after /ready
    # (from the recording, which starts with the JVM), and the warm-up's own line from the log
    jfr print --json --events jdk.Compilation,jdk.Deoptimization "$OUT/$policy-first.jfr" | python3 -c '
import collections, json, sys
c2 = deopt = 0; c2_ms = 0.0; why = collections.Counter()
for e in json.load(sys.stdin)["recording"]["events"]:
    v = e["values"]
    if v["startTime"][:23] < sys.argv[1]:
        continue
    if e["type"] == "jdk.Deoptimization":
        deopt += 1; why[v["reason"]] += 1
    elif v["compileLevel"] == 4:
        c2 += 1; c2_ms += float(v["duration"].strip("PTS")) * 1000 if "M" not in v["duration"] else 0
print(f"{sys.argv[2]} after /ready (JFR): {c2} C2 compilations ({c2_ms:.0f} ms of compiler wall time), "
      f"{deopt} deoptimizations (" + ", ".join(f"{k} {n}" for k, n in why.most_common(4)) + ")")' "$ready_utc" "$policy"
    grep -ho 'warm-up: .* in [0-9,]* ms' "$OUT/kvroute-$policy.log" | sed "s/^/$policy /" || true
  fi
  if [ "${FIRST_REQ:-0}" -gt 0 ]; then
    # CPU per request over the first FIRST_REQ requests after /ready, JIT threads included (on one
    # core they take their time from serving): robust to a busy machine, unlike the seconds above
    c0=$(cpu_ticks "$kv" all); n0=$(served "$PORT")
    while [ "$(served "$PORT")" -lt "$FIRST_REQ" ]; do load "$PORT" 2 >/dev/null; done
    c1=$(cpu_ticks "$kv" all); n1=$(served "$PORT")
    echo "$policy first $((n1 - n0)) requests after /ready: cpu/req $(( (c1 - c0) * 1000000 / HZ / (n1 - n0 > 0 ? n1 - n0 : 1) )) us (JIT threads included)"
  fi
  if [ "$FIRST" = 1 ] || [ "${FIRST_REQ:-0}" -gt 0 ]; then
    echo "$policy after /ready, before the warm-up by count: $(( $(compiles "$kv") - k0 )) JIT compilations, JIT CPU $(( ($(jit_ticks "$kv") - j0) * 1000 / HZ )) ms, $(served "$PORT") requests"
  fi
  # warm-up by count, not time: on a busy machine the JIT gets its share late
  while [ "$(served "$PORT")" -lt "$WARM_REQ" ]; do load "$PORT" 5 >/dev/null; done
  if [ "${WARM_FIRST:-0}" = 1 ]; then
    # the same ten 1-second runs (32 new connections each) on the long-warm server: what FIRST's
    # seconds would be with nothing left to warm up, i.e. the cost of the 1-second runs themselves
    echo "$policy 1-second runs after the warm-up by count (req/s / p99 ms): $(ten_seconds)"
  fi
  for _ in $(seq 1 "${REPEAT:-1}"); do
    begin=$(date -u +%Y-%m-%dT%H:%M:%S); begin_local=$(date +%H:%M:%S)
    n0=$(served "$PORT"); c0=$(cpu_ticks "$kv"); a0=$(cpu_ticks "$kv" all); s0=$(sys_ticks "$kv")
    [ "${ASYNC:-0}" != 1 ] || async "$kv" "start,event=${ASYNC_EVENT:-cpu},interval=${ASYNC_INTERVAL:-200us},cstack=vm"
    r=$(load "$PORT" "$DUR")
    c1=$(cpu_ticks "$kv"); a1=$(cpu_ticks "$kv" all); s1=$(sys_ticks "$kv"); n1=$(served "$PORT")
    [ "${ASYNC:-0}" != 1 ] || async "$kv" "stop,file=$OUT/$policy.collapsed,collapsed"
    jcmd "$kv" JFR.dump name=p begin="$begin_local" filename="$OUT/$policy.jfr" >/dev/null
    req=$((n1 - n0)); [ "$req" -gt 0 ] || req=1
    # heap bytes allocated by every thread over the recording (JFR's per-thread counters, first to last)
    alloc=$(jfr print --json --events jdk.ThreadAllocationStatistics "$OUT/$policy.jfr" | python3 -c '
import json, sys
lo, hi = {}, {}
# the dump holds whole chunks: keep the samples taken from the measured run'"'"'s start (UTC)
for e in json.load(sys.stdin)["recording"]["events"]:
    if e["values"]["startTime"][:19] < sys.argv[1]:
        continue
    t = e["values"]["thread"]["osThreadId"]
    a = e["values"]["allocated"]
    lo[t] = min(lo.get(t, a), a); hi[t] = max(hi.get(t, a), a)
print(sum(hi[t] - lo[t] for t in hi))' "$begin")
    echo "$policy: $(( req * 1000000 / $(field duration_us "$r") )) req/s, $req requests, cpu/req $(( (c1 - c0) * 1000000 / HZ / req )) us (no JIT threads; $(( (a1 - a0) * 1000000 / HZ / req )) us with them; $(( (s1 - s0) * 100 / (a1 - a0 > 0 ? a1 - a0 : 1) ))% in the kernel), alloc/req $(( alloc / req )) B, p50 $(field p50_us "$r") us, p99 $(field p99_us "$r") us, errors $(field errors "$r") non2xx $(field non2xx "$r"), load $(cut -d' ' -f1 /proc/loadavg)"
    [ "${ASYNC:-0}" != 1 ] || async_top "$OUT/$policy.collapsed"
  done
  kill "$kv"; wait "$kv" 2>/dev/null || true
done
