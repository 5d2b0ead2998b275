#!/usr/bin/env bash
# HTTP benchmarks of `hloscope serve` with wrk (Debian's wrk package), all
# on loopback, bounded in time:
#   (a) GET of a cached result summary vs a bare libmicrohttpd hello-world
#       (bench/hello_mhd.c, same thread settings), same run, ratio;
#   (b) POST /v1/compile of seed_64_linear with loop=scan, every request a
#       result-cache miss (a different "name"), p50/p99;
#   (c) GET /healthz on keep-alive connections, idle and while 2 long runs
#       are in flight, with the worker pool and with --inline-work 1.
#     bench/bench_http.sh [BUILD_DIR] [SECONDS]    (defaults: build, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SECS=${2:-3}
BIN=$BUILD/hloscope
command -v wrk >/dev/null || { echo "bench_http: needs wrk (apt-get install wrk)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "bench_http: build $BIN first" >&2; exit 1; }
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

cc -O2 -o "$WORK/hello_mhd" bench/hello_mhd.c $(pkg-config --cflags --libs libmicrohttpd) -lpthread

start() { # start NAME CMD... -> sets URL to the server's base URL
    "${@:2}" > "$WORK/$1.out" 2> "$WORK/$1.err" &
    pids+=($!)
    URL=
    for _ in $(seq 100); do
        URL=$(sed -n 's#.*\(http://127\.0\.0\.1:[0-9]*\)/.*#\1#p' "$WORK/$1.out")
        [ -n "$URL" ] && return
        sleep 0.05
    done
    echo "bench_http: $1 did not start" >&2; cat "$WORK/$1.err" >&2; exit 1
}
start hloscope "$BIN" serve --port 0 --data "$WORK/data" --workers 2 \
      --max-run-flops 1e12 --max-run-bytes 1e10
SRV=$URL
start hello "$WORK/hello_mhd" 0
HELLO=$URL

# wrk output -> "req/s p50 p99 non2xx max" (latencies in ms)
wrk_stats() {
    awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
                     if (v ~ /s$/) return v * 1000; return v }
    /^ +Latency +[0-9]/ { max = ms($4) }
    /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
    /^Requests\/sec:/ { rps = $2 }
    /Non-2xx/ { bad = $NF }
    END { printf "%.0f %.3f %.3f %s %.3f\n", rps, p50, p99, (bad ? bad : 0), max }'
}

id=$(curl -sS --fail-with-body --data @examples/seed_64_linear.json "$SRV/v1/compile" \
     | sed -n 's/^{"id":"\([0-9a-f]\{32\}\)".*/\1/p')
[ -n "$id" ] || { echo "bench_http: compile failed" >&2; exit 1; }

echo "== (a) GET cached summary vs hello-world (wrk -t2 -c32, 3 alternating rounds of ${SECS}s)"
# The machine may be shared: alternate the two servers and keep the round
# with the median hloscope throughput, and the median hello round.
median_round() { sort -n | sed -n '2p'; }
for r in 1 2 3; do
    wrk -t2 -c32 -d"${SECS}s" --latency "$SRV/v1/results/$id" | wrk_stats >> "$WORK/a"
    wrk -t2 -c32 -d"${SECS}s" --latency "$HELLO/" | wrk_stats >> "$WORK/h"
done
read -r a_rps a_p50 a_p99 a_bad a_max < <(median_round < "$WORK/a")
read -r h_rps h_p50 h_p99 h_bad h_max < <(median_round < "$WORK/h")

echo "== (b) POST /v1/compile?loop=scan, result-cache misses (wrk -t2 -c4 -d${SECS}s)"
model=$(tr -d '\n' < examples/seed_64_linear.json | sed 's/"name": *"[^"]*"/"name": "%s"/')
cat > "$WORK/post.lua" <<LUA
local template = [[$model]]
local counter, tid = 0, 0
local threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
function init(args) tid = wrk.thread:get("tid") or 0 end
request = function()
  counter = counter + 1
  local body = string.format(template, "bench-" .. tid .. "-" .. counter .. "-" .. os.time())
  return wrk.format("POST", "/v1/compile?loop=scan", {["Content-Type"] = "application/json"}, body)
end
LUA
read -r c_rps c_p50 c_p99 c_bad c_max < <(wrk -t2 -c4 -d"${SECS}s" --latency -s "$WORK/post.lua" "$SRV" | wrk_stats)

echo "== (c) GET /healthz over 8 keep-alive connections, idle and with 2 long runs in flight"
# A keep-alive connection stays with the event-loop thread that accepted it,
# as a browser's does: work done on that thread holds up all of them. The
# connections are opened first, then 2 runs start; every connection asks
# /healthz in turn until both runs are answered. Prints "n p50 p99 max" (ms).
cat > "$WORK/healthz.py" <<'PY'
import http.client, json, sys, threading, time
port, runs = int(sys.argv[1]), int(sys.argv[2])
conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=120) for _ in range(8)]
def ask(c):
    t0 = time.perf_counter()
    c.request("GET", "/healthz")
    c.getresponse().read()
    return (time.perf_counter() - t0) * 1e3
for c in conns:
    ask(c)
def run(k):
    body = {"name": "long", "seed": int(time.time() * 1000) % 100000 + k,
            "input": {"shape": [512, 1024]},
            "layers": [{"repeat": 96, "block": {"type": "linear", "features": 1024}}]}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/run", body=json.dumps(body))
    c.getresponse().read()
threads = [threading.Thread(target=run, args=(k,)) for k in range(runs)]
for t in threads:
    t.start()
lat, t_end = [], time.time() + 2.0
while any(t.is_alive() for t in threads) or time.time() < t_end:
    for c in conns:
        lat.append(ask(c))
    time.sleep(0.005)
lat.sort()
print(len(lat), "%.3f" % lat[len(lat) // 2], "%.3f" % lat[min(len(lat) - 1, int(len(lat) * 0.99))], "%.3f" % lat[-1])
PY
port_of() { sed 's#.*:\([0-9]*\)$#\1#' <<< "$1"; }
read -r i_rps i_p50 i_p99 i_max < <(python3 "$WORK/healthz.py" "$(port_of "$SRV")" 0)
read -r l_rps l_p50 l_p99 l_max < <(python3 "$WORK/healthz.py" "$(port_of "$SRV")" 2)
i_bad=0 l_bad=0 n_bad=0
# The rejected design: compile/run on the event-loop threads.
start inline "$BIN" serve --port 0 --data "$WORK/data-inline" --inline-work 1 \
      --max-run-flops 1e12 --max-run-bytes 1e10
INLINE=$URL
read -r n_rps n_p50 n_p99 n_max < <(python3 "$WORK/healthz.py" "$(port_of "$INLINE")" 2)

echo
printf '%-52s %10s %9s %9s %9s %6s\n' "benchmark" "req/s" "p50 ms" "p99 ms" "max ms" "non2xx"
printf '%-52s %10s %9s %9s %9s %6s\n' "(a) GET /v1/results/{id} (cached summary)" "$a_rps" "$a_p50" "$a_p99" "$a_max" "$a_bad"
printf '%-52s %10s %9s %9s %9s %6s\n' "(a) hello_mhd (bare libmicrohttpd)" "$h_rps" "$h_p50" "$h_p99" "$h_max" "$h_bad"
printf '%-52s %10s\n' "(a) ratio hloscope / hello" "$(awk -v a="$a_rps" -v h="$h_rps" 'BEGIN { printf "%.2f", a / h }')"
printf '%-52s %10s %9s %9s %9s %6s\n' "(b) POST /v1/compile?loop=scan (result-cache miss)" "$c_rps" "$c_p50" "$c_p99" "$c_max" "$c_bad"
printf '%-52s %10s %9s %9s %9s %6s\n' "(c) GET /healthz, idle (req/s column: requests)" "$i_rps" "$i_p50" "$i_p99" "$i_max" "$i_bad"
printf '%-52s %10s %9s %9s %9s %6s\n' "(c) GET /healthz, 2 runs in flight (worker pool)" "$l_rps" "$l_p50" "$l_p99" "$l_max" "$l_bad"
printf '%-52s %10s %9s %9s %9s %6s\n' "(c) same, --inline-work 1 (runs on event loop)" "$n_rps" "$n_p50" "$n_p99" "$n_max" "$n_bad"
