#!/usr/bin/python3
"""REST API tests of graph overlays (?overlay=bytes|flops|time|memory_space,
docs/RENDER.md#overlays): node figures are the device's cost model's, so the
top level of a view adds up to the summary's estimate; the scale and its
legend; host memory in its own colour. On a real XLA dump nobody here wrote
(../shared/hlo-real's Mixtral 8x7B train step) and on the offload example.

    overlay_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME     one test (CTest)
    overlay_test.py HLOSCOPE_BIN SOURCE_DIR --list        the test names

The server plumbing is api_test.py's, the runner groups_test.py's.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_test as A  # noqa: E402
import groups_test as G  # noqa: E402
from api_test import check, error_of  # noqa: E402

test = G.test


def top_level(g):
    return [n for n in g["nodes"]
            if n["cluster"] is None and n["computation"] == g["computation"]]


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


@test
def mixtral_overlays_are_the_cost_models(s):
    path = os.path.join(A.SRC, "..", "shared", "hlo-real", "hlo_mixtral_8x7b_bf16_1x8.hlo")
    with open(path) as f:
        hlo = f.read()
    r, _ = s.json("POST", "/v1/compile?device=tpu-v5p", {"hlo": hlo})
    est = r["estimate"]
    check(est.get("flops", 0) > 1e9, "the summary has the estimate", est)
    base = "/v1/results/%s" % r["id"]
    # Every view of the optimized module (the one the estimate times): the
    # top level, closed groups included, adds up to the estimate.
    g, _ = s.json("GET", base + "/graph.json")
    for n in g["nodes"]:
        check(all(k in n for k in ("bytes", "flops", "seconds", "memory_space")),
              "every node carries its figures without an overlay", n)
    check(g["overlay"] is None and "fill" not in g["nodes"][0], "no overlay by default",
          g["overlay"])
    layer = next(x["path"] for x in g["groups"] if x["depth"] == 2 and x["instructions"] > 50)
    for q in ("?overlay=flops", "?overlay=time&expand=" + layer):
        v, _ = s.json("GET", base + "/graph.json" + q)
        top = top_level(v)
        flops = sum(n["flops"] for n in top)
        seconds = sum(n["seconds"] for n in top)
        check(close(flops, est["flops"]), "FLOPs add up to the estimate (%s)" % q, flops,
              est["flops"])
        check(close(seconds, est["sim_seconds"]), "seconds add up to the estimate (%s)" % q,
              seconds, est["sim_seconds"])
        check(any(n["opcode"] == "layer" and n["flops"] > 0 for n in top),
              "closed groups carry their members' figures", q)
        key = "flops" if "flops" in q else "seconds"
        values = [n[key] for n in v["nodes"] if n[key] > 0]
        ov = v["overlay"]
        check(ov["kind"] == ("flops" if key == "flops" else "time") and ov["scale"] == "log"
              and ov["min"] == min(values) and ov["max"] == max(values),
              "the scale spans the nonzero values drawn", ov, min(values), max(values))
        hottest = max(v["nodes"], key=lambda n: n[key])
        check(hottest["fill"] == "#800026", "the largest is the darkest", hottest)
    # The drawing: a legend with the scale's ends, and the overlay in the
    # cache key (the same view coloured another way is another artefact).
    status, _, svg_t = s.get(base + "/graph.svg?overlay=time")
    check(status == 200 and b'id="legend:overlay"' in svg_t and b" ms</text>" in svg_t,
          "graph.svg draws the legend in ms", status, svg_t[:300])
    check(b'fill="#800026"' in svg_t, "the hottest node is filled dark red")
    status, _, svg_b = s.get(base + "/graph.svg?overlay=bytes")
    check(status == 200 and b" MiB</text>" in svg_b and svg_b != svg_t,
          "overlay=bytes is its own artefact, in MiB", status)
    status, _, svg_n = s.get(base + "/graph.svg")
    check(status == 200 and b"legend:overlay" not in svg_n, "no legend without an overlay")
    status, _, data = s.get(base + "/graph.dot?overlay=flops")
    check(status == 200 and b"GFLOP" in data and b"legend:overlay" in data,
          "graph.dot carries the legend node", data[:200])
    status, _, data = s.get(base + "/graph.svg?overlay=heat")
    err = error_of(data)
    check(status == 422 and err["path"] == "?overlay" and "memory_space" in err["message"],
          "an unknown overlay is 422 at ?overlay", status, data)


@test
def offload_host_memory_has_its_own_colour(s):
    r, _ = s.json("POST", "/v1/compile", A.example("graph_offload"))
    base = "/v1/results/%s" % r["id"]
    # Compiled, the parked activations are S(5) buffers (the traced module
    # only annotates them).
    g, _ = s.json("GET", base + "/graph.json?expand=all&overlay=memory_space")
    host = [n for n in g["nodes"] if n["memory_space"] == "host"]
    check(len(host) >= 4, "the parked activations are in host memory", len(host))
    for n in g["nodes"]:
        shape = n["shape"] or ""
        space = ("device" if "S(5)" not in shape else
                 "mixed" if shape.startswith("(") and "S(5)" in shape else "host")
        fill = {"device": "#eceff1", "host": "#d81b60", "mixed": "#f8bbd0"}[space]
        if space == "mixed" and n["memory_space"] == "host":
            space, fill = "host", "#d81b60"  # a tuple whose arrays are all on the host
        check(n["memory_space"] == space and n["fill"] == fill,
              "host nodes (S(5)) have their own colour", n["name"], shape, n["fill"])
    closed, _ = s.json("GET", base + "/graph.json?overlay=memory_space")
    check(any(n["memory_space"] == "mixed" for n in closed["nodes"]),
          "a closed layer holding both spaces is mixed",
          [(n["name"], n["memory_space"]) for n in closed["nodes"]])
    status, _, svg = s.get(base + "/graph.svg?expand=all&overlay=memory_space")
    check(status == 200 and b'fill="#d81b60"' in svg and b"host S(5)" in svg,
          "graph.svg fills host nodes and says so in the legend", status, svg[:300])


if __name__ == "__main__":
    G.main()
