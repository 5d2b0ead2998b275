#!/usr/bin/python3
"""Real dumps through the REST API's front door (issue 13 items 3 and 4):
raw HLO text as the body, split files and ?module, tuple parameters, runs
refused up front on shapes, whole out-of-memory reports and shapes.

    dumps_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME     one test (CTest)
    dumps_test.py HLOSCOPE_BIN SOURCE_DIR --list        the test names

The inputs are XLA's own files in ../shared/hlo-samples. Runs through
api_test.py's main (its Server, one per test).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_test as base  # noqa: E402
from api_test import Server, check, error_of, example  # noqa: E402

TESTS = {}


def test(*flags):
    """Registers a test; flags start its server with them instead."""
    def register(fn):
        def with_flags(s):
            if not flags:
                return fn(s)
            s.close()
            s = Server(*flags)
            try:
                fn(s)
            finally:
                s.close()
        TESTS[fn.__name__] = with_flags
        return fn
    return register


def sample(name):
    with open(os.path.join(base.SRC, "..", "shared", "hlo-samples", name)) as f:
        return f.read()


TEXT = {"Content-Type": "text/plain; charset=utf-8"}


@test()
def raw_hlo_text_is_the_hlo_request(s):
    hlo = sample("add.hlo")
    wrapped, _ = s.json("POST", "/v1/compile", {"hlo": hlo})
    status, _, data = s.post("/v1/compile", hlo, headers=TEXT)
    check(status == 200, "text/plain HLO compiles", data[:500])
    raw = json.loads(data)
    check(raw["id"] == wrapped["id"] and raw["input"] == "hlo",
          "raw text is the same request as {\"hlo\": text}", raw["id"], wrapped["id"])
    # No Content-Type at all: the body's first word says it is HLO.
    status, _, data = s.post("/v1/compile", "\n" + hlo if not hlo.startswith("HloModule") else hlo)
    check(status == 200, "a body starting with HloModule compiles", data[:500])
    # A dump without a header (no HloModule line) needs the Content-Type.
    status, _, data = s.post("/v1/run?device=teach-16m",
                             sample("while_with_known_trip_count.hlo"), headers=TEXT)
    check(status == 200 and json.loads(data)["outputs"], "text/plain HLO runs", data[:500])
    bad = "HloModule m\n\nENTRY e {\n  x = f32[2] parameter(0\n}\n"
    status, _, data = s.post("/v1/compile", bad)
    e = error_of(data)
    check(status == 400 and e["line"] == bad.count("\n") and e["path"] == "/hlo",
          "raw HLO syntax error has its line", data)
    status, _, data = s.post("/v1/compile", b"HloModule m\xff\n", headers=TEXT)
    check(status == 400 and error_of(data)["code"] == "parse", "invalid UTF-8 is 400", data)
    # A JSON request labelled text/plain (browsers' fetch() labels every
    # string body so) is still the JSON request, not HLO text.
    model = open(os.path.join(base.SRC, "examples", "mlp.json")).read()
    as_json, _ = s.json("POST", "/v1/compile", json.loads(model))
    status, _, data = s.post("/v1/compile", "\n " + model, headers=TEXT)
    check(status == 200 and json.loads(data)["id"] == as_json["id"],
          "a JSON model sent as text/plain is the model", data[:500])


@test()
def split_text_takes_a_module_index(s):
    hlo = sample("matrix_einsum.hlo")
    status, _, data = s.post("/v1/compile", hlo, headers=TEXT)
    e = error_of(data)
    check(status == 422 and e["path"] == "?module" and "holds 2 modules" in e["message"]
          and "?module=N" in e["message"], "a split text without ?module says how to pick", data)
    names = []
    for k in range(2):
        r, _ = s.json("POST", "/v1/compile?module=%d" % k, {"hlo": hlo})
        names.append(r["module"])
    check(names[0] != names[1], "?module picks different modules", names)
    # The CLI compiles the same modules in the same order.
    out = subprocess.run([base.BIN, "compile", "--emit", "json",
                          os.path.join(base.SRC, "..", "shared", "hlo-samples", "matrix_einsum.hlo")],
                         capture_output=True, text=True)
    check([m["module"] for m in json.loads(out.stdout)] == names,
          "CLI and API agree on the module order", out.stdout[:500])
    status, _, data = s.post("/v1/compile?module=2", {"hlo": hlo})
    e = error_of(data)
    check(status == 422 and e["path"] == "?module" and "no module 2" in e["message"],
          "an index past the last is 422", data)
    status, _, data = s.post("/v1/compile?module=-1", {"hlo": hlo})
    check(status == 422 and error_of(data)["path"] == "?module", "a negative index is 422", data)
    status, _, data = s.post("/v1/compile?module=0", example("mlp"))
    check(status == 422 and error_of(data)["path"] == "?module", "module applies to HLO only", data)
    # A syntax error in the second module names it and the file's line.
    start = hlo.index("\nHloModule einsum_inverse_diag") + 1
    at = hlo.index("parameter(0)", start) + len("parameter(0")
    bad = hlo[:at] + hlo[at + 1:]  # drop the ')'
    status, _, data = s.post("/v1/compile?module=0", {"hlo": bad})
    e = error_of(data)
    line = bad[:at].count("\n") + 1
    check(status == 400 and e["message"].startswith("module 1: ") and line <= e["line"] <= line + 1,
          "the error names the module and the line in the whole text", data, line)


@test()
def tuple_parameters_run(s):
    r, _ = s.json("POST", "/v1/run", {"hlo": sample("single_device_tupled.hlo")})
    check(r["outputs"] and r["entry_parameters"] == 1, "a tupled entry runs", r)


@test("--max-run-bytes", "1e6")
def runs_are_refused_up_front(s):
    hlo = sample("cpu_hlo.hlo")  # f32[5000,6000] arguments: 120 MB
    t0 = time.time()
    status, _, data = s.post("/v1/run", hlo, headers=TEXT)
    took = time.time() - t0
    e = error_of(data)
    check(status == 422 and e["code"] == "limit" and e["message"].startswith("arguments need ")
          and "> --max-run-bytes 976.56K" in e["message"], "arguments beyond the limit", data)
    check(took < 1.0, "refused in under a second", took)
    status, _, data = s.post("/v1/compile", hlo, headers=TEXT)
    check(status == 200, "compile of the same module works", data[:300])
    # Every blocker at once: f16/s8 the device may lack, and the bytes.
    status, _, data = s.post("/v1/run", sample("multiple_gemm_fusions.hlo"), headers=TEXT)
    e = error_of(data)
    check(status == 422, "a run that cannot go ahead is 422", data)
    if "cannot be executed" in e["message"]:
        check(e["code"] == "unsupported", "an unexecutable opcode is 'unsupported'", data)


@test()
def oom_report_is_whole(s):
    # The compile is a result flagged out_of_memory (issue 15 item 5);
    # its report is the one the CLI prints.
    r, _ = s.json("POST", "/v1/compile?device=teach-16m", example("seed_64_linear"))
    check(r["out_of_memory"], "OOM is flagged", r.get("out_of_memory"))
    e = {"message": r["oom_report"]}
    out = subprocess.run([base.BIN, "compile", os.path.join(base.SRC, "examples", "seed_64_linear.json"),
                          "--device", "teach-16m"], capture_output=True, text=True)
    prefix = "hloscope: %s: " % os.path.join(base.SRC, "examples", "seed_64_linear.json")
    check(out.returncode == 1 and out.stderr.startswith(prefix), "the CLI fails too", out.stderr)
    cli = out.stderr[len(prefix):].rstrip("\n")
    check(e["message"].rstrip("\n") == cli, "API and CLI show the same whole report",
          e["message"], cli)
    check(len(cli) > 511 and cli.count("\n") >= 10, "the report is longer than hs_error holds", cli)


@test()
def output_shape_is_never_cut(s):
    n = 40
    leaves = ", ".join("f32[1024,1024]{1,0}" for _ in range(n))
    params = "\n".join("  p%d = f32[1024,1024] parameter(%d)" % (k, k) for k in range(n))
    hlo = "HloModule wide\n\nENTRY e {\n%s\n  ROOT t = (%s) tuple(%s)\n}\n" % (
        params, ", ".join("f32[1024,1024]" for _ in range(n)),
        ", ".join("p%d" % k for k in range(n)))
    r, _ = s.json("POST", "/v1/compile", hlo)
    check(r["output_shape"] == "(%s)" % leaves, "output_shape is whole", r["output_shape"][-80:])
    m, _ = s.json("GET", "/v1/results/%s/memory.json" % r["id"])
    shapes = [b["shape"] for b in m.get("buffers", []) if b["instruction"] == "t"]
    check(shapes and shapes[0] == "(%s)" % leaves, "buffer shapes are whole", shapes[:1])


@test()
def run_outputs_are_summarized_at_every_type(s):
    # Outputs at s32, bf16 and u8 carry their sum and first elements, as
    # the CLI's run prints them (before: only f32 outputs had any).
    hlo = ("HloModule types\n\nENTRY e {\n"
           "  i = s32[10]{0} iota(), iota_dimension=0\n"
           "  b = bf16[10]{0} convert(i)\n"
           "  h = bf16[10]{0} multiply(b, b)\n"
           "  u = u8[10]{0} convert(i)\n"
           "  ROOT t = (s32[10]{0}, bf16[10]{0}, u8[10]{0}) tuple(i, h, u)\n}\n")
    r, _ = s.json("POST", "/v1/run", hlo)
    outs = r["outputs"]
    check([o["shape"] for o in outs] == ["s32[10]", "bf16[10]", "u8[10]"], "three outputs",
          [o["shape"] for o in outs])
    check(outs[0]["sum"] == 45 and outs[0]["first"] == list(range(8)), "s32 summary", outs[0])
    check(outs[1]["sum"] == sum(k * k for k in range(10)) and outs[1]["first"][3] == 9,
          "bf16 summary (exact squares)", outs[1])
    check(outs[2]["sum"] == 45, "u8 summary", outs[2])
    with tempfile.NamedTemporaryFile("w", suffix=".hlo") as f:
        f.write(hlo)
        f.flush()
        out = subprocess.run([base.BIN, "run", f.name], capture_output=True, text=True)
    check("output 1:     bf16[10]  sum=285  first=[0, 1, 4, 9, ...]" in out.stdout,
          "the CLI prints the same summary", out.stdout, out.stderr)


if __name__ == "__main__":
    base.TESTS.clear()
    base.TESTS.update(TESTS)
    base.main()
