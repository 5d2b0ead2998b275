#!/usr/bin/env bash
# Soak of `hloscope serve` (issue 12's bench): wrk with 64 connections of
# mixed traffic for SECONDS — cached summaries (70%), a graph.svg (10%) and
# distinct compiles (20%, a fresh "name": result-store misses) — while 4
# clients run models back to back (distinct seeds: each a real run, in the
# compile/run workers). Prints errors, non-2xx, p50/p99 and the RSS of the
# server (and of its workers) after a warm-up and at the end.
#     bench/bench_soak.sh [BUILD_DIR] [SECONDS]    (defaults: build, 60)
# SOAK_FLAGS adds flags to `hloscope serve` (e.g. "--isolate 0").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SECS=${2:-60}
BIN=$BUILD/hloscope
command -v wrk >/dev/null || { echo "bench_soak: needs wrk (apt-get install wrk)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "bench_soak: build $BIN first" >&2; exit 1; }
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
WORK=$(mktemp -d)
SRV_PID=
cleanup() { [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# A 32 MiB artefact LRU, so that the warm-up fills it: what grows after it
# is what the server does not give back.
# shellcheck disable=SC2086
"$BIN" serve --port 0 --data "$WORK/data" --workers 2 --cache-bytes 33554432 \
      ${SOAK_FLAGS:-} > "$WORK/out" 2> "$WORK/err" &
SRV_PID=$!
URL=
for _ in $(seq 600); do # up to 30 s: the layout workers warm up first, slowly under load
    URL=$(sed -n 's#.*\(http://127\.0\.0\.1:[0-9]*\)/.*#\1#p' "$WORK/out")
    [ -n "$URL" ] && break
    sleep 0.05
done
[ -n "$URL" ] || { echo "bench_soak: the server did not start" >&2; cat "$WORK/err" >&2; exit 1; }

# RSS in KiB of the server, and of the server with its children.
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
rss_all() {
    local total kids
    total=$(rss "$SRV_PID")
    kids=$(ps -o pid= --ppid "$SRV_PID")
    for k in $kids; do total=$((total + $(rss "$k" 2>/dev/null || echo 0))); done
    echo "$total"
}

id=$(curl -sS --fail-with-body --data @examples/seed_64_linear.json "$URL/v1/compile" \
     | sed -n 's/^{"id":"\([0-9a-f]\{32\}\)".*/\1/p')
[ -n "$id" ] || { echo "bench_soak: compile failed" >&2; exit 1; }
curl -sS -o /dev/null --fail "$URL/v1/results/$id/graph.svg"

model=$(tr -d '\n' < examples/seed_64_linear.json | sed 's/"name": *"[^"]*"/"name": "%s"/')
cat > "$WORK/mix.lua" <<LUA
local template = [[$model]]
local counter, tid = 0, 0
local threads = {}
ok, busy, other = 0, 0, 0
function setup(thread) table.insert(threads, thread); thread:set("tid", #threads) end
function init(args) tid = wrk.thread:get("tid") or 0 end
response = function(status, headers, body)
  if status < 300 then ok = ok + 1 elseif status == 429 then busy = busy + 1 else other = other + 1 end
end
done = function(summary, latency, requests)
  local a, b, c = 0, 0, 0
  for _, t in ipairs(threads) do a = a + t:get("ok"); b = b + t:get("busy"); c = c + t:get("other") end
  io.write(string.format("statuses: 2xx %d, 429 %d, other %d\n", a, b, c))
end
request = function()
  counter = counter + 1
  local k = counter % 10
  if k < 7 then return wrk.format("GET", "/v1/results/$id") end
  if k == 7 then return wrk.format("GET", "/v1/results/$id/graph.svg") end
  local body = string.format(template, "soak-" .. tid .. "-" .. counter .. "-" .. os.time())
  return wrk.format("POST", "/v1/compile?loop=scan", {["Content-Type"] = "application/json"}, body)
end
LUA

cat > "$WORK/runs.py" <<'PY'
import http.client, json, sys, time
port, secs, k = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
ex = json.load(open("examples/mlp.json"))
ex.pop("train", None)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
n, bad, busy, lat, end, i = 0, 0, 0, [], time.time() + secs, 0
while time.time() < end:
    i += 1
    body = dict(ex, name="soak-run-%d-%d" % (k, i), seed=1000 * k + i)
    t0 = time.perf_counter()
    c.request("POST", "/v1/run", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    lat.append((time.perf_counter() - t0) * 1e3)
    n += 1
    busy += r.status == 429
    bad += r.status not in (200, 429)
lat.sort()
print(n, bad, busy, "%.1f" % lat[len(lat) // 2], "%.1f" % lat[int(len(lat) * 0.99)])
PY
port=${URL##*:}
# Warm-up: the workers' caches and pools, the allocator's arenas, the LRU.
wrk -t2 -c64 -d15s -s "$WORK/mix.lua" "$URL" > /dev/null
# The heap the server holds (hloscope_heap_bytes): flat when nothing leaks,
# whatever the allocator keeps in RSS.
heap() { curl -s "$URL/metrics" | awk '/^hloscope_heap_bytes / {print $2}'; }
rss0=$(rss "$SRV_PID"); all0=$(rss_all); heap0=$(heap)
kids0=$(for k in $(ps -o pid= --ppid "$SRV_PID"); do echo "$k:$(rss "$k" 2>/dev/null || echo 0)"; done)
for k in 1 2 3 4; do python3 "$WORK/runs.py" "$port" "$SECS" "$k" > "$WORK/clients.$k" & done
wrk -t2 -c64 -d"${SECS}s" --latency -s "$WORK/mix.lua" "$URL" > "$WORK/wrk"
wait $(jobs -p | grep -v "^$SRV_PID\$") 2>/dev/null || true
rss1=$(rss "$SRV_PID"); all1=$(rss_all); heap1=$(heap)
kids1=$(for k in $(ps -o pid= --ppid "$SRV_PID"); do echo "$k:$(rss "$k" 2>/dev/null || echo 0)"; done)

awk '
function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
                 if (v ~ /s$/) return v * 1000; return v }
/^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
/^Requests\/sec:/ { rps = $2 } /requests in/ { n = $1 }
/Non-2xx/ { bad = $NF } /Socket errors/ { err = $0 } /^statuses:/ { st = $0 }
END { printf "wrk mix (70%% cached GET, 10%% graph.svg, 20%% distinct compile), 64 connections, %s s\n", "'"$SECS"'";
      printf "  requests %d, %.0f req/s, p50 %.3f ms, p99 %.3f ms, non-2xx %d (%s), %s\n",
             n, rps, p50, p99, bad, st, (err ? err : "socket errors: none") }' "$WORK/wrk"
# Each child (compile/run workers, the layout server) on its own: a child
# replaced during the soak shows as gone and new.
echo "children (pid: RSS KiB) after warm-up: $(echo $kids0) ; at the end: $(echo $kids1)"
cat "$WORK"/clients.* | awk '{ n += $1; bad += $2; busy += $3; p50 = p50 " " $4; p99 = p99 " " $5 }
    END { printf "4 run clients (examples/mlp forward, distinct seeds): %d runs, 429 %d, other non-200 %d, p50 ms per client:%s, p99:%s\n", n, busy, bad, p50, p99 }'
awk -v a="$rss0" -v b="$rss1" -v c="$all0" -v d="$all1" -v h0="${heap0:-0}" -v h1="${heap1:-0}" 'BEGIN {
    printf "RSS server: %.1f -> %.1f MiB (%+.1f%%); server + workers + layout: %.1f -> %.1f MiB (%+.1f%%)\n",
           a / 1024, b / 1024, 100 * (b - a) / a, c / 1024, d / 1024, 100 * (d - c) / c
    if (h0 > 0) printf "heap held by the server: %.1f -> %.1f MiB (%+.1f%%)\n",
           h0 / 1048576, h1 / 1048576, 100 * (h1 - h0) / h0 }'
grep -c 'worker crashed' "$WORK/err" | awk '{ printf "worker crashes logged: %d\n", $1 }'
