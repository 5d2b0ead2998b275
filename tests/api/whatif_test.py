#!/usr/bin/python3
"""REST API tests of GET /v1/results/{id}/whatif.json (issue 15: reroll as
scan on the user's own module): a decoder dumped unrolled by hloscope and
sent back as HLO text, the same model as a description, the real Mixtral
8x7B train step of ../shared/hlo-real (compile only), and bad queries.

    whatif_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME     one test (CTest)
    whatif_test.py HLOSCOPE_BIN SOURCE_DIR --list        the test names

The server plumbing is api_test.py's.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_test as A  # noqa: E402
from api_test import check, error_of  # noqa: E402

TESTS = {}


def test(fn):
    TESTS[fn.__name__] = fn
    return fn


def unrolled_decoder_hlo(s):
    r, _ = s.json("POST", "/v1/compile?loop=unrolled", A.example("decoder_50x256"))
    status, _, text = s.get("/v1/results/%s/hlo?stage=traced" % r["id"])
    check(status == 200 and b"while" not in text, "the unrolled dump", status)
    return text.decode()


@test
def decoder_dump_rerolls_bit_identically(s):
    r, _ = s.json("POST", "/v1/compile", {"hlo": unrolled_decoder_hlo(s)})
    w, h = s.json("GET", "/v1/results/%s/whatif.json?rerolled=hlo" % r["id"])
    check(w["id"] == r["id"], "the result's id", w.get("id"))
    check(w["repeats"][0]["count"] == 50, "50 layers found", w["repeats"])
    sc = w["scan"]
    check(sc["analysed"] and sc["equivalent"] is True and sc["max_abs_difference"] == 0,
          "rerolled, and bit-identical when run", sc)
    check(sc["instructions_after"] * 10 < sc["instructions_before"], "far fewer instructions", sc)
    for k in ("compile_seconds_before", "compile_seconds_after", "path", "note"):
        check(k in sc, "scan has " + k, sc)
    for section in ("offload", "sharding"):
        check(w[section]["analysed"] in (True, False) and
              (w[section]["analysed"] or w[section]["reason"]),
              section + " says whether it was analysed and why not", w[section])
    # The rerolled module is HLO the server compiles, as small as it said.
    r2, _ = s.json("POST", "/v1/compile", {"hlo": w["rerolled_hlo"]})
    summary, _ = s.json("GET", "/v1/results/%s" % r2["id"])
    text = json.dumps(summary)
    check(str(sc["instructions_after"]) in text, "the rerolled module compiles",
          summary.get("instructions"))
    # A second GET is the cached artefact; another query is another entry.
    again, h2 = s.json("GET", "/v1/results/%s/whatif.json?rerolled=hlo" % r["id"])
    check(h2.get("x-cache") == "hit" or again == w, "cached", h2)
    quick, _ = s.json("GET", "/v1/results/%s/whatif.json?run=0" % r["id"])
    check(quick["scan"]["equivalent"] is None and "rerolled_hlo" not in quick,
          "?run=0 compiles only", quick["scan"])


@test
def a_model_description_is_analysed_as_traced(s):
    r, _ = s.json("POST", "/v1/compile?loop=unrolled", A.example("decoder_50x256"))
    w, _ = s.json("GET", "/v1/results/%s/whatif.json?run=0" % r["id"])
    check(w["scan"]["analysed"] and w["repeats"][0]["count"] == 50, "the model's layers", w["scan"])


@test
def bad_queries_are_json_errors(s):
    r, _ = s.json("POST", "/v1/compile", A.example("mlp"))
    for q in ("run=yes", "budget=-3", "rerolled=svg", "offloaded=dot"):
        status, _, data = s.get("/v1/results/%s/whatif.json?%s" % (r["id"], q))
        check(status == 422, "?%s is a 422" % q, status, data)
        e = error_of(data)
        check(e["path"].startswith("?"), "the error names the query", e)
    status, _, data = s.get("/v1/results/%s/whatif.json" % ("0" * 16))
    check(status == 404, "an unknown id is 404", status, data)
    # mlp's numbered layers are a projection, four gated MLP blocks and a
    # head: the four blocks reroll, and the run says the others stay out.
    w, _ = s.json("GET", "/v1/results/%s/whatif.json" % r["id"])
    run = w["scan"]["runs"][0]
    check(w["scan"]["analysed"] and w["scan"]["loops"] == 1 and run["rerolled"]
          and run["layers"] == 7 and run["layers_rerolled"] == 4
          and "layers.0" in run["note"], "mlp's four blocks reroll, the others said", w["scan"])
    one, _ = s.json("POST", "/v1/compile", {"hlo": "HloModule one\nENTRY main {\n"
                                                   "  x = f32[4] parameter(0)\n"
                                                   "  ROOT y = f32[4] negate(x)\n}\n"})
    w, _ = s.json("GET", "/v1/results/%s/whatif.json" % one["id"])
    check(w["scan"]["analysed"] is False and w["scan"]["reason"], "no layers, said why", w["scan"])


@test
def mixtral_forward_layers_reroll(s):
    path = os.path.join(A.SRC, "..", "shared", "hlo-real", "hlo_mixtral_8x7b_bf16_1x8.hlo")
    with open(path) as f:
        hlo = f.read()
    r, _ = s.json("POST", "/v1/compile?device=tpu-v5p", {"hlo": hlo})
    w, _ = s.json("GET", "/v1/results/%s/whatif.json?run=0" % r["id"])
    check(w["repeats"][0]["count"] == 32, "32 layers found from structure", w["repeats"][:2])
    sc = w["scan"]
    check(sc["analysed"] and sc["instructions_after"] < sc["instructions_before"],
          "the forward layers reroll", sc)
    print("mixtral whatif: %.2f s, %s" % (w["analysis_seconds"], sc["note"]))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    A.BIN, A.SRC, name = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    if name == "--list":
        print("\n".join(TESTS))
        return
    s = A.Server("--max-body", str(8 << 20))
    try:
        TESTS[name](s)
    except A.Fail as f:
        print("FAIL %s: %s" % (name, f))
        sys.exit(1)
    finally:
        s.close()
    print("ok %s" % name)


if __name__ == "__main__":
    main()
