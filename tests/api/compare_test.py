#!/usr/bin/python3
"""Two modules compared, and compiles that do not fit (issue 15 items 4
and 5): POST /v1/compare with two sources (a before/after pair of dumps, a
model and a dump), each side a compile result of its own with the
engine's diff and a metrics table between them; errors that name the
side; and a compile above the device's HBM that is a result all the same
(graph, memory timeline, XLA's report) while its run is refused.

    compare_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME     one test (CTest)
    compare_test.py HLOSCOPE_BIN SOURCE_DIR --list        the test names

The dump pairs are made by `hloscope compile --stage traced|optimized`
and from XLA's own pass test in ../shared/hlo-samples (its CHECK lines are
the pass's output). Runs through api_test.py's main (one Server per test).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_test as base  # noqa: E402
from api_test import check, error_of, example  # noqa: E402

TESTS = {}


def test(fn):
    TESTS[fn.__name__] = fn
    return fn


def dump(name, stage, *flags):
    """The HLO text `hloscope compile` prints for an example at a stage."""
    out = subprocess.run([base.BIN, "compile", os.path.join(base.SRC, "examples", name + ".json"),
                          "--stage", stage, *flags], capture_output=True, text=True)
    check(out.returncode == 0 and out.stdout.startswith("HloModule"),
          "hloscope compile --stage %s %s" % (stage, name), out.stderr)
    return out.stdout


def sample(name):
    with open(os.path.join(base.SRC, "..", "shared", "hlo-samples", name)) as f:
        return f.read()


def pass_test_pair(text):
    """XLA's hlo-opt pass test as a before/after pair: the module is the
    input, its CHECK lines the pass's output (FileCheck captures
    %[[name:.*]] become the names they capture)."""
    before = "\n".join(l for l in text.split("\n") if not l.startswith("//"))
    after = []
    for line in text.split("\n"):
        m = re.match(r"// CHECK(?:-NEXT|-LABEL)?:\s?(.*)$", line)
        if not m:
            continue
        body = re.sub(r"%\[\[(\w+):[^\]]*\]\]", r"%\1", m.group(1))
        after.append(re.sub(r"%\[\[(\w+)\]\]", r"%\1", body))
    return before, "\n".join(after) + "\n"


def row(table, metric):
    rows = [r for r in table if r["metric"] == metric]
    check(len(rows) == 1, "the table has one %s row" % metric, table)
    return rows[0]


@test
def dump_pair_is_two_compile_results(s):
    """before/after as --xla_dump_to writes them: the example traced and
    optimized by hloscope itself, each side the compile result of its own
    text, the diff as given (traced) and after our passes, and the table."""
    before, after = dump("mlp", "traced"), dump("mlp", "optimized")
    c, _ = s.json("POST", "/v1/compare", {"a": {"hlo": before}, "b": {"hlo": after}})
    check(c["form"] == "sources" and c["endpoint"] == "compare", "the two-source form", c.get("form"))
    ca, _ = s.json("POST", "/v1/compile", {"hlo": before})
    cb, _ = s.json("POST", "/v1/compile", {"hlo": after})
    check(c["a"]["id"] == ca["id"] and c["b"]["id"] == cb["id"],
          "each side is the compile result of its source", c["a"]["id"], ca["id"])
    for side, alone in (("a", ca), ("b", cb)):
        check(c[side]["instructions"] == alone["instructions"]
              and c[side]["memory"]["peak_device_bytes"] == alone["memory"]["peak_device_bytes"],
              "side %s says what its compile says" % side, c[side]["instructions"], alone["instructions"])
        status, _, svg = s.get(c[side]["links"]["graph_svg"])
        check(status == 200 and b"<svg" in svg, "side %s has its graph" % side, svg[:200])
    t = c["table"]
    ins = row(t, "instructions_traced")
    check(ins["a"] == ca["instructions"]["traced"] and ins["b"] == cb["instructions"]["traced"]
          and abs(ins["ratio"] - ins["b"] / ins["a"]) < 1e-9, "the table holds both sides", ins)
    peak = row(t, "peak_device_bytes")
    check(peak["unit"] == "bytes" and peak["a"] == ca["memory"]["peak_device_bytes"], "peak row", peak)
    # The dumps as given: the optimized text has fewer instructions than
    # the traced one (fusion, DCE); the diff says which went.
    dt = c["diff_traced"]
    check(dt["stage"] == "traced" and dt["counts"]["removed"] > 0
          and dt["counts"]["unchanged"] > 0, "the traced diff of the pair", dt["counts"])
    na = sum(v["a"] for v in dt["opcodes"].values())
    nb = sum(v["b"] for v in dt["opcodes"].values())
    check(na == ca["instructions"]["traced"] and nb == cb["instructions"]["traced"],
          "the opcode histogram counts every instruction", na, nb)
    check("fusion" in dt["opcodes"] and dt["opcodes"]["fusion"]["a"] == 0
          and dt["opcodes"]["fusion"]["b"] > 0, "the optimized dump has fusions", dt["opcodes"])
    check(c["diff"]["stage"] == "optimized", "the diff after our passes too", c["diff"].get("stage"))
    # Stored: the same request is answered from the store.
    again, headers = s.json("POST", "/v1/compare", {"a": {"hlo": before}, "b": {"hlo": after}})
    check(again["id"] == c["id"] and headers.get("x-cache") == "hit", "a repeated pair is a hit", headers)
    src, _ = s.json("GET", "/v1/results/%s/source" % c["id"])
    check(src["text"] == before and src["text_b"] == after, "the source of a pair is both texts")


@test
def xla_pass_test_is_a_before_after_pair(s):
    """gpu_hlo_pass.hlo (XLA's hlo-opt test of dot-algorithm-rewriter): the
    module before the pass against the module its CHECK lines expect after
    it. The pass splits one f32 dot with algorithm bf16_bf16_f32_x3 into
    three bf16 dots."""
    before, after = pass_test_pair(sample("gpu_hlo_pass.hlo"))
    c, _ = s.json("POST", "/v1/compare", {"a": {"hlo": before}, "b": {"hlo": after}})
    op = c["diff_traced"]["opcodes"]
    check(op["dot"]["a"] == 1 and op["dot"]["b"] == 3, "one dot before, three after", op.get("dot"))
    check(op.get("bitcast-convert", {}).get("a") == 0 and op["bitcast-convert"]["b"] > 0,
          "the split appears as bitcast-converts", op)
    added = {i["name"] for i in c["diff_traced"]["added"]}
    check({"dot1", "dot2", "dot3"} <= added, "the three dots are added", sorted(added))
    check(c["a"]["instructions"]["traced"] < c["b"]["instructions"]["traced"],
          "the pass makes the module bigger", c["a"]["instructions"], c["b"]["instructions"])


@test
def model_and_its_dump_with_own_devices(s):
    """A model against the HLO dump hloscope traced from it: the same
    instructions by name (nothing added, removed or changed), each side on
    its own device."""
    model = example("mlp")
    model.pop("train", None)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(model, f)
        f.flush()
        traced = subprocess.run([base.BIN, "compile", f.name, "--stage", "traced"],
                                capture_output=True, text=True)
    check(traced.returncode == 0, "the model's traced dump", traced.stderr)
    c, _ = s.json("POST", "/v1/compare", {"a": {"model": model, "device": "tpu-v5p"},
                                          "b": {"hlo": traced.stdout, "device": "teach-64m"}})
    check(c["a"]["device"] == "tpu-v5p" and c["b"]["device"] == "teach-64m",
          "each side has its own device", c["a"]["device"], c["b"]["device"])
    check(c["a"]["input"] == "model" and c["b"]["input"] == "hlo", "a model and a dump")
    n = c["diff_traced"]["counts"]
    check(n["added"] == 0 and n["removed"] == 0 and n["changed"] == 0 and n["unchanged"] > 0,
          "the dump of a model is the model's module", n)
    alone, _ = s.json("POST", "/v1/compile?device=tpu-v5p", model)
    check(alone["id"] == c["a"]["id"], "side a is the model's compile on its device")
    # The one-model form gives the same compile results, and the same table.
    v, _ = s.json("POST", "/v1/compare", {"model": model, "a": {"device": "tpu-v5p"}, "b": {}})
    check(v["form"] == "variants" and v["a"]["id"] == c["a"]["id"],
          "both forms name the same compile result", v.get("form"), v["a"]["id"])
    check(row(v["table"], "peak_device_bytes")["a"] == alone["memory"]["peak_device_bytes"],
          "the variants form has the table too", v["table"])
    # The query applies to both sides; a side's own key wins.
    q, _ = s.json("POST", "/v1/compare?device=tpu-v5e",
                  {"a": {"model": model}, "b": {"hlo": traced.stdout, "device": "teach-64m"}})
    check(q["a"]["device"] == "tpu-v5e" and q["b"]["device"] == "teach-64m",
          "query first, then the side", q["a"]["device"], q["b"]["device"])


@test
def errors_name_the_side(s):
    good = sample("add.hlo")
    bad = good.replace("add(", "add(x, ", 1) if "add(" in good else good + "\n}"
    lines = good.split("\n")
    status, _, data = s.post("/v1/compare", {"a": {"hlo": good}, "b": {"hlo": bad}})
    e = error_of(data)
    check(status in (400, 422) and e["path"] == "/b/hlo" and e["message"].startswith("side b: ")
          and e["line"] > 0 and e["column"] > 0, "a bad dump is named at /b/hlo line:column", data)
    check(bad.split("\n")[e["line"] - 1] != lines[e["line"] - 1] or e["line"] >= len(lines),
          "the line is the one that is wrong", e, bad)
    cases = [
        ({"a": {"hlo": good, "model": {}}, "b": {"hlo": good}}, "/a", "both"),
        ({"a": {"hlo": good}, "b": {"device": "tpu-v5e"}}, "/b", "no source"),
        ({"a": {"hlo": 3}, "b": {"hlo": good}}, "/a/hlo", "string"),
        ({"a": {"hlo": good, "device": "nope"}, "b": {"hlo": good}}, "/a/device", "unknown device"),
        ({"a": {"hlo": good}, "b": {"hlo": good, "colour": "red"}}, "/b/colour", "unknown override"),
        ({"a": {"hlo": good}, "b": {"hlo": good, "loop": "scan"}}, "/b/loop", "model descriptions"),
        ({"a": {"model": example("mlp"), "module": 1}, "b": {"hlo": good}}, "/a/module", "split HLO"),
        ({"a": {"model": {"layers": []}}, "b": {"hlo": good}}, "/a/model", "side a"),
        ({"model": example("mlp"), "a": {"hlo": good}, "b": {}}, "/a/hlo", "drop 'model'"),
    ]
    for body, path, words in cases:
        status, _, data = s.post("/v1/compare", body)
        e = error_of(data)
        check(status == 422 and e["path"].startswith(path) and words in e["message"],
              "%s: 422 at %s" % (words, path), data)
    # The one-model form still says what it needs.
    status, _, data = s.post("/v1/compare", {"a": {"loop": "scan"}, "b": {}})
    e = error_of(data)
    check(status == 422 and "needs 'model'" in e["message"] and "two sources" in e["message"],
          "no model and no sources", data)


@test
def oom_compile_is_a_result(s):
    """A compile whose peak exceeds the device's HBM is a stored result
    flagged out_of_memory, with its graph, its memory timeline and XLA's
    report; a run of the same request still refuses with that report."""
    model = example("seed_64_linear")
    r, _ = s.json("POST", "/v1/compile?device=teach-16m", model)
    check(r["out_of_memory"] is True and r["oom_report"].startswith("RESOURCE_EXHAUSTED"),
          "flagged, with XLA's report", r.get("out_of_memory"), r.get("oom_report", "")[:200])
    cap = r["memory"]["capacity"]["device_bytes"]
    check(r["memory"]["peak_device_bytes"] > cap, "the peak is above the capacity", r["memory"])
    used = re.search(r"Used ([\d.]+\w) of ([\d.]+\w) hbm", r["oom_report"])
    check(used and used.group(2) == "16.00M", "the report's capacity is the device's", r["oom_report"][:300])
    stored, _ = s.json("GET", "/v1/results/%s" % r["id"])
    check(stored["out_of_memory"] and stored["oom_report"] == r["oom_report"], "the stored result is the same")
    mem, _ = s.json("GET", r["links"]["memory_json"])
    check(mem["oom_report"] == r["oom_report"] and mem["buffers"]
          and mem["peak"]["device"]["bytes"] == r["memory"]["peak_device_bytes"],
          "memory.json: the timeline and the report", list(mem))
    status, _, svg = s.get(r["links"]["graph_svg"])
    check(status == 200 and b"<svg" in svg, "the graph of a program that does not fit", svg[:200])
    status, _, svg = s.get(r["links"]["memory_svg"])
    check(status == 200 and b"<svg" in svg, "its memory timeline", svg[:200])
    status, _, data = s.post("/v1/run?device=teach-16m", model)
    e = error_of(data)
    check(status == 422 and e["code"] == "out_of_memory"
          and e["message"].rstrip("\n") == r["oom_report"].rstrip("\n"),
          "the run refuses with the same report", data[:400])
    fits, _ = s.json("POST", "/v1/compile", model)
    check(fits["out_of_memory"] is False and "oom_report" not in fits, "a program that fits is not flagged")
    # A comparison of a pair where one side does not fit shows both.
    c, _ = s.json("POST", "/v1/compare", {"a": {"model": model, "device": "teach-16m"},
                                          "b": {"model": model}})
    check(c["a"]["out_of_memory"] and not c["b"]["out_of_memory"] and c["a"]["id"] == r["id"],
          "a compare side that does not fit is its OOM result", c["a"].get("out_of_memory"))


def instructions_of(text):
    """{name: (computation, op_name)} of every instruction of HLO text."""
    out, comp = {}, None
    for line in text.split("\n"):
        m = re.match(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$", line)
        if m and not line.startswith(" "):
            comp = m.group(1)
            continue
        m = re.match(r"^\s+(?:ROOT )?%?([\w.\-]+) = ", line)
        if m:
            op = re.search(r'op_name="([^"]*)"', line)
            out[m.group(1)] = (comp, op.group(1) if op else "")
    return out


def on_rows(diff, side):
    names = set()
    for b in diff["blocks"]:
        for r in b["rows"]:
            if r[side]:
                names.add(r[side])
    return names


@test
def diff_of_two_results_whole(s):
    """GET /v1/results/{a}/diff/{b}: the engine's diff whole. A model
    unrolled against its scan: on A nothing differs, on B only the loop
    (its counter, tuple, stacked weights and slices, the condition); every
    instruction of both on a row of the side-by-side blocks. XLA's pass
    test as a pair: the three new dots opposite gaps. Errors: a bad stage
    is 422 at its parameter, an unknown other result 404."""
    model = example("decoder_50x256")
    c, _ = s.json("POST", "/v1/compare", {"model": model, "a": {"loop": "unrolled"},
                                          "b": {"loop": "scan"}})
    a, b = c["a"]["id"], c["b"]["id"]
    d, _ = s.json("GET", "/v1/results/%s/diff/%s?stage=traced" % (a, b))
    check(d["counts"]["added"] == c["diff_traced"]["counts"]["added"]
          and d["counts"]["unchanged"] == c["diff_traced"]["counts"]["unchanged"],
          "the same diff as compare's", d["counts"], c["diff_traced"]["counts"])
    check(d["a"]["not_same"] == {} and d["a"]["groups"] == {},
          "nothing of the unrolled layers differs (weights match their slices)",
          list(d["a"]["not_same"].items())[:10])
    _, _, tb = s.get("/v1/results/%s/hlo?stage=traced" % b)
    ib = instructions_of(tb.decode())
    loop = [n for n, (comp, op) in ib.items() if "scan" in op or "cond" in comp]
    check(len(d["b"]["not_same"]) > 0 and set(d["b"]["not_same"]) <= set(loop),
          "only the loop differs on B", sorted(set(d["b"]["not_same"]) - set(loop))[:10])
    check(all(v == "added" for v in d["b"]["not_same"].values()), "the loop is added")
    _, _, ta = s.get("/v1/results/%s/hlo?stage=traced" % a)
    ia = instructions_of(ta.decode())
    check(on_rows(d, 0) == set(ia) and on_rows(d, 1) == set(ib),
          "every instruction is on a row", len(on_rows(d, 0)), len(ia), len(on_rows(d, 1)), len(ib))
    check(any(blk["a"] == "main" and blk["b"] and "body" in blk["b"] for blk in d["blocks"]),
          "the unrolled entry opposite the scan body", [(x["a"], x["b"]) for x in d["blocks"]])
    # one result at two stages; cached
    st, _ = s.json("GET", "/v1/results/%s/diff/%s?stage_a=traced&stage_b=optimized" % (a, a))
    check(st["a"]["stage"] == "traced" and st["b"]["stage"] == "optimized"
          and st["counts"]["removed"] > 0, "a module before and after its passes", st["counts"])
    _, h = s.json("GET", "/v1/results/%s/diff/%s?stage_a=traced&stage_b=optimized" % (a, a))
    check(h.get("x-cache") == "hit", "the diff is cached", h)
    # XLA's pass test: the dot split in three
    before, after = pass_test_pair(sample("gpu_hlo_pass.hlo"))
    p, _ = s.json("POST", "/v1/compare", {"a": {"hlo": before}, "b": {"hlo": after}})
    x, _ = s.json("GET", "/v1/results/%s/diff/%s?stage=traced" % (p["a"]["id"], p["b"]["id"]))
    rows = [r for blk in x["blocks"] for r in blk["rows"]]
    dots = [r for r in rows if r[1] in ("dot1", "dot2", "dot3")]
    check(len(dots) == 3 and all(r[0] is None and r[2] == "added" for r in dots),
          "the three dots opposite gaps", dots)
    check(x["b"]["not_same"].get("dot1") == "added", "dot1 added on B", x["b"]["not_same"])
    # errors
    status, _, data = s.get("/v1/results/%s/diff/%s?stage_b=fused" % (a, b))
    e = error_of(data)
    check(status == 422 and e["path"] == "?stage_b", "a bad stage names its parameter", status, data[:300])
    status, _, data = s.get("/v1/results/%s/diff/%s" % (a, "0" * 32))
    check(status == 404 and "no result" in error_of(data)["message"], "an unknown other result", status, data[:300])
    status, _, data = s.get("/v1/results/%s/diff/%s" % (a, c["id"]))
    check(status == 404 and "comparison" in error_of(data)["message"], "a comparison is no side", status, data[:300])


if __name__ == "__main__":
    base.TESTS.clear()
    base.TESTS.update(TESTS)
    base.main()
