"""POST /v1/compile latency of two servers (an old and a new build),
alternately, on fresh models: decoder blocks unrolled, hidden 600 + i, so
every request misses both the result store and the compile cache.

    build-old/hloscope serve --port 18480 --data /tmp/o &
    build/hloscope serve --port 18481 --data /tmp/n &
    python3 bench/bench_program_post.py 18480 18481 60 32   # requests, layers
"""
import json, sys, time, http.client, statistics
old_port, new_port, n, layers = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def model(i):
    return {"name": "bench%d" % i, "seed": 0, "input": {"shape": [1, 128, 256]}, "loop": "unrolled",
            "layers": [{"repeat": layers, "block": {"type": "decoder", "heads": 4, "hidden": 600 + i}}]}
def post(port, body, path="/v1/compile"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = json.dumps(body)
    t0 = time.perf_counter()
    c.request("POST", path, data, {"Content-Type": "application/json"})
    r = c.getresponse(); out = r.read()
    t = time.perf_counter() - t0
    assert r.status == 200, out[:300]
    j = json.loads(out)
    assert j["compile_cache"] == "miss"
    return t
res = {"old": [], "new": []}
for i in range(n):
    order = [("old", old_port), ("new", new_port)] if i % 2 == 0 else [("new", new_port), ("old", old_port)]
    for name, port in order:
        res[name].append(post(port, model(i)))
for k in res:
    print(k, "median %.3f ms  mean %.3f ms  min %.3f ms" % (statistics.median(res[k]) * 1e3, statistics.mean(res[k]) * 1e3, min(res[k]) * 1e3))
print("ratio new/old median %.3f  min %.3f" % (statistics.median(res["new"]) / statistics.median(res["old"]), min(res["new"]) / min(res["old"])))
