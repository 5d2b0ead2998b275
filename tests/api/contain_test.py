#!/usr/bin/python3
"""Containment (issue 12 item 3, docs/API.md "Containment"): compiles and
runs happen in worker processes, so that a request that crashes, aborts,
hangs or runs away with memory in the engine costs itself a JSON error and
not the server, which replaces the worker, goes on serving, stores the
request as failed and never computes it again on a GET, before or after a
restart.

    contain_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME     one test (CTest)
    contain_test.py HLOSCOPE_BIN SOURCE_DIR --list        the test names

The faults come from the worker's test hook: HS_WORKER_FAULT holds a token
in the server's environment, and a request whose text holds TOKEN:crash
(:abort, :hang, :memory) makes its worker do that. The runaway-memory test
also uses a real request, a run whose output is larger than the worker's
memory limit. Uses the Server helper of api_test.py.
"""
import os
import re
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_test as base  # noqa: E402
from api_test import Server, check, error_of, example  # noqa: E402

TOKEN = "contain-test-%d-%s" % (os.getpid(), os.urandom(6).hex())
TESTS = {}


def test(fn):
    TESTS[fn.__name__] = fn
    return fn


def faulty(kind, n=4):
    """HLO text whose comment carries the fault marker (a comment, so the
    same module without it compiles)."""
    return {"hlo": "HloModule contain_%s\n\nENTRY main {\n  p = f32[%d] parameter(0)\n"
                   "  ROOT n = f32[%d] negate(p)\n}\n/* %s:%s */\n" % (kind, n, n, TOKEN, kind)}


def workers_of(server):
    """The pids of the server's compile/run workers (its children named so)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == server.proc.pid and argv0 == b"hloscope-worker":
            pids.append(int(d))
    return sorted(pids)


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024.0


def wait_workers(server, n, timeout=10):
    deadline = time.time() + timeout
    while len(workers_of(server)) != n:
        check(time.time() < deadline, "%d workers again within %d s" % (n, timeout),
              workers_of(server))
        time.sleep(0.05)
    return workers_of(server)


class LoggedServer(Server):
    """A server whose stderr is kept for the test to read after stop()."""
    def stop(self, *a, **kw):
        sig = a[0] if a else kw.get("sig", signal.SIGTERM)
        self.proc.send_signal(sig)
        self.proc.wait(timeout=60)
        self.log = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode


def good_model(name):
    m = dict(example("mlp"), name=name)
    m.pop("train", None)
    return m


def expect_contained(s, path, body, status, code):
    st, _, data = s.post(path, body)
    check(st == status, "%s answered %d, expected %d" % (path, st, status), data)
    e = error_of(data)
    check(e["code"] == code, "error code %r, expected %r" % (e["code"], code), e)
    check(re.fullmatch(r"[0-9a-f]{32}", e.get("request_id", "")) and e["request_id"] in e["message"],
          "the error carries the request id, in its message too", e)
    return e


@test
def crash_is_a_json_error_and_the_server_goes_on(s):
    before = wait_workers(s, 2)
    for kind in ("crash", "abort"):
        e = expect_contained(s, "/v1/compile", faulty(kind), 500, "worker_crashed")
        check("crashed" in e["message"] and "signal" in e["message"],
              "the message says the worker crashed, of which signal", e)
        st, _, data = s.get("/healthz")
        check(st == 200, "the server still answers after a worker's " + kind, data)
        after = wait_workers(s, 2)
        check(len(set(after) - set(before)) == 1, "the dead worker was replaced", before, after)
        before = after
        r, _ = s.json("POST", "/v1/run", good_model("after-" + kind))
        check(r["run"]["instructions"] > 0 and r["outputs"], "the next request succeeds", r)
        # The crashed request is stored as failed: a GET answers its error
        # without computing it (no worker dies).
        for _ in range(2):
            st, _, data = s.get("/v1/results/" + e["request_id"])
            check(st == 500 and error_of(data)["code"] == "worker_crashed",
                  "GET of the crashed id answers its stored error", st, data)
        check(workers_of(s) == before, "the GETs computed nothing", before, workers_of(s))


@test
def steps_crash_is_a_json_error(s):
    """The step timeline of a run re-runs its model: in a worker too."""
    r, _ = s.json("POST", "/v1/run", good_model("steps %s:steps:crash" % TOKEN))
    before = wait_workers(s, 2)
    for art in ("steps.json", "steps.svg"):
        st, _, data = s.get("/v1/results/%s/%s" % (r["id"], art))
        check(st == 500, art + " of a crashing step timeline is a 500", st, data)
        e = error_of(data)
        check(e["code"] == "worker_crashed" and e["request_id"] == r["id"],
              "its error says so, with the run's id", e)
        after = wait_workers(s, 2)
        check(len(set(after) - set(before)) == 1, "the worker was replaced", before, after)
        before = after
    again, _ = s.json("GET", "/v1/results/" + r["id"])
    check(again == r, "the run's result is untouched", again, r)
    ok, _ = s.json("POST", "/v1/run", good_model("steps-fine"))
    steps, _ = s.json("GET", "/v1/results/%s/steps.json?steps=3" % ok["id"])
    check(len(steps["steps"]) == 3, "another run's steps are computed", steps)


@test
def crashed_request_stays_failed_after_restart(s):
    data_dir = s.data
    s.close()
    first = LoggedServer(data=data_dir)
    try:
        e = expect_contained(first, "/v1/run", faulty("crash"), 500, "worker_crashed")
        first.stop()
        check(first.log.count("worker crashed") == 1 and e["request_id"] in first.log,
              "the crash is logged once, with the input's fingerprint", first.log)
        again = LoggedServer(data=data_dir)
        try:
            for _ in range(3):
                st, _, data = again.get("/v1/results/" + e["request_id"])
                check(st == 500 and error_of(data)["code"] == "worker_crashed",
                      "after a restart the id still answers its stored error", st, data)
            st, _, data = again.get("/v1/results/%s/hlo" % e["request_id"])
            check(400 <= st < 600 and error_of(data), "its artefacts are not computed", st, data)
            r, _ = again.json("POST", "/v1/compile", good_model("after-restart"))
            check(r["instructions"]["optimized"] > 0, "a new request succeeds", r)
            again.stop()
            check("worker crashed" not in again.log, "nothing crashed after the restart",
                  again.log)
        finally:
            again.close()
    finally:
        first.close()
        shutil.rmtree(data_dir, ignore_errors=True)


@test
def hang_is_killed_after_its_deadline(s):
    before = wait_workers(s, 2)
    t0 = time.time()
    st, _, data = s.post("/v1/compile?timeout_ms=500", faulty("hang"))
    took = time.time() - t0
    check(st == 503 and error_of(data)["code"] == "deadline_exceeded",
          "a hung worker answers 503 deadline_exceeded", st, data)
    check(took < 10, "answered soon after the deadline and its grace (%.1f s)" % took)
    after = wait_workers(s, 2)
    check(len(set(after) - set(before)) == 1, "the hung worker was killed and replaced",
          before, after)
    r, _ = s.json("POST", "/v1/compile", good_model("after-hang"))
    check(r["instructions"]["optimized"] > 0, "the next request succeeds", r)


LIMIT_MIB = 384


def big_output_run(n):
    """A real run whose output alone is n*n*4 bytes (a broadcast)."""
    return {"hlo": "HloModule big\n\nENTRY main {\n  c = f32[] constant(1)\n"
                   "  ROOT b = f32[%d,%d] broadcast(c), dimensions={}\n}\n" % (n, n)}


@test
def runaway_memory_hits_the_worker_limit(s):
    s.close()
    lim = LoggedServer("--worker-memory", str(LIMIT_MIB << 20), "--max-run-bytes", "1e11")
    try:
        base_rss = rss_mib(lim.proc.pid)
        e = expect_contained(lim, "/v1/run", faulty("memory"), 422, "worker_memory_limit")
        check("%d MiB" % LIMIT_MIB in e["message"], "the message names the limit", e)
        # A legal request, too big for this server's workers: 1 GiB of output.
        e = expect_contained(lim, "/v1/run", big_output_run(16384), 422, "worker_memory_limit")
        st, _, data = lim.get("/v1/results/" + e["request_id"])
        check(st == 422 and error_of(data)["code"] == "worker_memory_limit",
              "the refusal is stored", st, data)
        # The same module fits when it is only compiled (no tensor exists).
        r, _ = lim.json("POST", "/v1/compile", big_output_run(16384))
        check(r["instructions"]["optimized"] >= 1, "compiling it is fine", r)
        r, _ = lim.json("POST", "/v1/run", good_model("after-memory"))
        check(r["outputs"], "the next run succeeds", r)
        grew = rss_mib(lim.proc.pid) - base_rss
        check(grew < 64, "the server's own memory did not take the blow (+%.0f MiB)" % grew)
        wait_workers(lim, 2)
    finally:
        lim.close()


@test
def small_worker_limit_counts_from_what_the_worker_holds(s):
    """--worker-memory is what requests may take beyond the worker's own
    address space (libraries, stacks, OpenBLAS's work buffer: about 300 MiB
    under RLIMIT_AS). A 48 MiB limit once refused every request (a 500 for
    a request the worker could not read) or hung a product in OpenBLAS,
    which retries its buffer for ever, until the deadline."""
    s.close()
    if base.sanitized_binary():
        # No RLIMIT_AS under AddressSanitizer (the pool watches the resident
        # size): nothing of this applies there.
        return
    lim = LoggedServer("--worker-memory", str(48 << 20), "--deadline-ms", "20000")
    try:
        t0 = time.time()
        r, _ = lim.json("POST", "/v1/run", good_model("small-limit"))
        check(r["outputs"], "a run with products fits in 48 MiB", r)
        check(time.time() - t0 < 10, "and does not wait for the deadline (%.1f s)" % (time.time() - t0))
        # Beyond it: the limit's error, not a hang or a 5xx.
        e = expect_contained(lim, "/v1/run", big_output_run(8192), 422, "worker_memory_limit")
        check("48 MiB" in e["message"], "the message names the limit", e)
    finally:
        lim.close()


@test
def in_process_mode_still_computes(s):
    s.close()
    inproc = Server("--isolate", "0")
    try:
        check(workers_of(inproc) == [], "--isolate 0 starts no worker", workers_of(inproc))
        r, _ = inproc.json("POST", "/v1/run", good_model("in-process"))
        check(r["outputs"] and r["run"]["instructions"] > 0, "a run in the server process", r)
    finally:
        inproc.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    os.environ["HS_WORKER_FAULT"] = TOKEN  # the servers inherit it
    base.TESTS = TESTS  # api_test's runner, over these tests
    base.main()
