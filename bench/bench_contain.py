#!/usr/bin/python3
"""What containment costs (issue 12 item 3): the same requests against two
`hloscope serve` of one build, side by side in one run: --isolate 1 (every
compile and run in a worker process, the default) and --isolate 0 (in the
server process, as before). Requests alternate between the two servers (the
first of each pair alternates too), so both see the same machine load.

    python3 bench/bench_contain.py [BUILD_DIR] [REQUESTS]     (build, 40)

Cases, each request a result-store miss (a fresh "name" or hidden size):
  compile seed     POST /v1/compile of examples/seed_64_linear (scan), a
                   new name each time: the compile cache answers (the
                   compile-latency case of bench_http.sh (b))
  compile fresh    POST /v1/compile of 8 decoder blocks, hidden 256 + i:
                   every request runs the whole pipeline
  run mlp          POST /v1/run of examples/mlp without its train section
  run decoder      POST /v1/run of 2 decoder blocks, hidden 256 + 4i
  GET cached       GET /v1/results/{id} of a stored result (no worker)
With wrk installed, also bench_http.sh's case (b) on both servers: wrk -t2
-c4 POST /v1/compile?loop=scan of seed_64_linear with a fresh name, three
alternating rounds of 3 s; the round of median throughput is shown.
"""
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 40
BIN = os.path.join(BUILD, "hloscope")


def example(name):
    with open(os.path.join(ROOT, "examples", name + ".json")) as f:
        return json.load(f)


WRK_POST = """
local template = [[%s]]
local counter, tid, threads = 0, 0, 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
function init(args) tid = wrk.thread:get("tid") or 0 end
request = function()
  counter = counter + 1
  local body = string.format(template, "wrk-" .. tid .. "-" .. counter .. "-" .. os.time() .. "-%s")
  return wrk.format("POST", "/v1/compile?loop=scan", {["Content-Type"] = "application/json"}, body)
end
"""


def wrk_ms(v):
    for unit, f in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if v.endswith(unit):
            return float(v[:-len(unit)]) * f
    return float(v)


def wrk_compile(port, script):
    out = subprocess.run(["wrk", "-t2", "-c4", "-d3s", "--latency", "-s", script,
                          "http://127.0.0.1:%d" % port], capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = wrk_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = wrk_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, p50, p99, int(bad.group(1)) if bad else 0


class Server:
    def __init__(self, isolate):
        self.data = tempfile.mkdtemp(prefix="bench-contain-")
        self.proc = subprocess.Popen(
            [BIN, "serve", "--port", "0", "--data", self.data, "--workers", "2",
             "--isolate", str(isolate), "--examples", os.path.join(ROOT, "examples")],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        m = re.search(r"127\.0\.0\.1:(\d+)/", self.proc.stdout.readline())
        self.port = int(m.group(1))
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def request(self, method, path, body=None):
        t0 = time.perf_counter()
        self.conn.request(method, path, json.dumps(body) if body is not None else None,
                          {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        data = r.read()
        t = time.perf_counter() - t0
        if r.status != 200:
            sys.exit("bench_contain: %s %s: %d %s" % (method, path, r.status, data[:300]))
        return t, json.loads(data)

    def close(self):
        self.conn.close()
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)


def seed(i):
    return "/v1/compile", dict(example("seed_64_linear"), name="seed-%d" % i)


def decoder(i, repeat):
    width = 256 + 4 * i  # heads divide it
    return {"name": "dec-%d" % i, "seed": 0, "input": {"shape": [1, 64, width]},
            "loop": "unrolled",
            "layers": [{"repeat": repeat, "block": {"type": "decoder", "heads": 4,
                                                    "hidden": width}}]}


def mlp(i):
    m = dict(example("mlp"), name="mlp-%d" % i)
    m.pop("train", None)
    return m


CASES = [
    ("compile seed", lambda i: seed(i)),
    ("compile fresh", lambda i: ("/v1/compile", decoder(i, 8))),
    ("run mlp", lambda i: ("/v1/run", mlp(i))),
    ("run decoder", lambda i: ("/v1/run", decoder(100 + i, 2))),
]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    servers = {"worker": Server(1), "in-process": Server(0)}
    try:
        print("bench_contain: %d requests per case and server, alternating; ms" % N)
        print("%-14s %10s %10s %10s %10s %8s %10s" % ("case", "worker p50", "p90",
                                                     "in-proc p50", "p90", "ratio", "cost ms"))
        ids = {}
        for label, make in CASES:
            for k in servers:  # warm up: the first compile of a kind, a worker's start
                _, r = servers[k].request("POST", *make(500 + len(label)))
                ids[k] = r["id"]
            t = {k: [] for k in servers}
            for i in range(N):
                order = list(servers) if i % 2 == 0 else list(reversed(list(servers)))
                for k in order:
                    path, body = make(i)
                    t[k].append(servers[k].request("POST", path, body)[0] * 1e3)
            w, p = t["worker"], t["in-process"]
            print("%-14s %10.3f %10.3f %10.3f %10.3f %8.2f %10.3f" % (
                label, statistics.median(w), pct(w, 0.9), statistics.median(p), pct(p, 0.9),
                statistics.median(w) / statistics.median(p),
                statistics.median(w) - statistics.median(p)))
        t = {k: [] for k in servers}
        for i in range(N * 10):
            for k in servers:
                t[k].append(servers[k].request("GET", "/v1/results/" + ids[k])[0] * 1e3)
        w, p = t["worker"], t["in-process"]
        print("%-14s %10.3f %10.3f %10.3f %10.3f %8.2f %10.3f" % (
            "GET cached", statistics.median(w), pct(w, 0.9), statistics.median(p), pct(p, 0.9),
            statistics.median(w) / statistics.median(p),
            statistics.median(w) - statistics.median(p)))
        if shutil.which("wrk"):
            wrk_rounds(servers)
    finally:
        for s in servers.values():
            s.close()


def wrk_rounds(servers):
    model = json.dumps(dict(example("seed_64_linear"), name="%s"))
    rounds = {k: [] for k in servers}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(3):
            for k in (list(servers) if r % 2 == 0 else list(reversed(list(servers)))):
                script = os.path.join(tmp, "post-%s-%d.lua" % (k, r))
                with open(script, "w") as f:
                    f.write(WRK_POST % (model, k))
                rounds[k].append(wrk_compile(servers[k].port, script))
    print("wrk -t2 -c4 -d3s POST /v1/compile?loop=scan (bench_http.sh (b)), median of 3 rounds:")
    for k in servers:
        rps, p50, p99, bad = sorted(rounds[k])[1]
        print("  %-10s %8.0f req/s  p50 %7.3f ms  p99 %7.3f ms  non-2xx %d" % (k, rps, p50, p99, bad))


if __name__ == "__main__":
    main()
