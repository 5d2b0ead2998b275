#!/usr/bin/python3
"""Tests of the server's edge: requests that crashed or timed out are not
computed again by a GET, error bodies are JSON whatever bytes came in, slow
clients are cut off, ambiguous or oversized bodies get JSON errors, the
store stays under its cap (410 for an evicted result), a full disk answers
507 while reads go on, and the store survives kill -9 in the middle of
writes.

    edge_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME     one test (CTest)
    edge_test.py HLOSCOPE_BIN SOURCE_DIR --list        the test names

Raw-HTTP cases use sockets, so that the server sees exactly the bytes
written. Uses the Server helper of api_test.py. Exit status 77: skipped.
"""
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_test as base  # noqa: E402
from api_test import Fail, Server, check, error_of, example, long_model, BIG_RUNS  # noqa: E402

TESTS = {}
SKIP = 77


class Skip(Exception):
    pass


def test(fn):
    TESTS[fn.__name__] = fn
    return fn


def db_path(server):
    return os.path.join(server.data, "hloscope.sqlite")


def db_rows(server, where="1"):
    con = sqlite3.connect(db_path(server), timeout=10)
    try:
        return con.execute("SELECT id, status FROM results WHERE " + where).fetchall()
    finally:
        con.close()


def wait_for(what, cond, timeout=15, step=0.02):
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        check(time.time() < deadline, what)
        time.sleep(step)


def raw(server, data, timeout=10, shut=False):
    """Sends bytes on a fresh connection and reads until the server closes
    it (or the timeout): (status, headers, body)."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            buf += chunk
            if b"\r\n\r\n" in buf:
                head, _, body = buf.partition(b"\r\n\r\n")
                n = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
                     if l.lower().startswith(b"content-length:")]
                if n and len(body) >= n[0]:
                    break
        return parse_response(buf)
    finally:
        s.close()


def parse_response(buf):
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    check(lines and lines[0].startswith(b"HTTP/1."), "an HTTP response", buf[:300])
    status = int(lines[0].split()[1])
    headers = {}
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode("latin-1")
    return status, headers, body


def json_error(status, headers, body, want_status, want_code=None):
    check(status == want_status, "status %d, expected %d" % (status, want_status), body[:400])
    check(headers.get("content-type", "").startswith("application/json"),
          "a JSON error, not libmicrohttpd's HTML page", headers, body[:400])
    e = error_of(body)
    check(isinstance(e["message"], str) and e["message"], "the error has a message", body[:400])
    if want_code:
        check(e["code"] == want_code, "error code %r, expected %r" % (e["code"], want_code), body[:400])
    return e


# ---- a request that crashed or timed out is not computed by a GET ----------------


def quietly(fn):
    """fn() in a thread whose server may be killed under it."""
    def run():
        try:
            fn()
        except (OSError, Fail):
            pass
    t = threading.Thread(target=run)
    t.daemon = True
    t.start()
    return t


def pending_id(server):
    rows = wait_for("the request is recorded as pending",
                    lambda: db_rows(server, "status = 0"))
    return rows[0][0]


@test
def interrupted_request_is_not_recomputed(s):
    """The poison pill: a request is recorded, then the server dies while
    computing it (kill -9 here; a crash in the engine is the same). After a
    restart a GET of its link answers a JSON error at once, computes
    nothing, and the server stays up; a POST of the same request retries."""
    data = tempfile.mkdtemp(prefix="hloscope-edge-")
    try:
        a = Server(*BIG_RUNS, data=data)
        quietly(lambda: a.post("/v1/run", long_model(71), timeout=60))
        rid = pending_id(a)
        status, headers, body = a.get("/v1/results/" + rid)
        e = json_error(status, headers, body, 503, "pending")
        check(headers.get("retry-after"), "a pending result says when to ask again", headers)
        check(a.json("GET", "/healthz")[0]["inflight"] == 1,
              "the GET of a pending result computes nothing")
        a.stop(signal.SIGKILL, expect_rc=None)

        b = Server(*BIG_RUNS, data=data)
        for path in ("", "/hlo", "/graph.svg", "/memory.json", "/metrics"):
            t0 = time.time()
            status, headers, body = b.get("/v1/results/%s%s" % (rid, path))
            took = time.time() - t0
            e = json_error(status, headers, body, 500, "interrupted")
            check("POST" in e["message"], "the error says how to retry", e)
            check(took < 1.0, "answered at once, not computed (%.2f s)" % took)
            h, _ = b.json("GET", "/healthz")
            check(h["inflight"] == 0, "nothing is being computed after GET %s" % path, h)
        check(db_rows(b, "id = '%s'" % rid)[0][1] == 500, "the row is marked failed")
        # Restarting again changes nothing: the row stays failed, never pending.
        b.stop(signal.SIGKILL, expect_rc=None)
        c = Server(*BIG_RUNS, data=data)
        status, headers, body = c.get("/v1/results/" + rid)
        json_error(status, headers, body, 500, "interrupted")
        # An explicit retry: the same request posted again is computed.
        r, _ = c.json("POST", "/v1/run", long_model(71))
        check(r["id"] == rid, "the retry has the same id", r["id"], rid)
        got, _ = c.json("GET", "/v1/results/" + rid)
        check(got == r, "after the retry the link answers the result")
        c.stop()
    finally:
        shutil.rmtree(data, ignore_errors=True)


@test
def timed_out_request_is_not_recomputed(s):
    """A request that passed its deadline leaves no result: its link first
    answers `pending`, and once the deadline has surely passed, a stored
    `interrupted` error — never a recomputation."""
    s2 = Server("--deadline-ms", "1000", *BIG_RUNS)
    try:
        status, _, body = s2.post("/v1/run", long_model(72))
        json_error(status, {"content-type": "application/json"}, body, 503, "deadline_exceeded")
        rid = pending_id(s2)
        t0 = time.time()
        e = None
        while time.time() - t0 < 10:
            status, headers, body = s2.get("/v1/results/" + rid)
            if status == 500:
                e = json_error(status, headers, body, 500, "interrupted")
                break
            json_error(status, headers, body, 503, "pending")
            check(s2.json("GET", "/healthz")[0]["inflight"] == 0, "a GET computes nothing")
            time.sleep(0.25)
        check(e and "deadline" in e["message"], "the link answers interrupted (deadline)", e)
        status, headers, body = s2.get("/v1/results/%s/graph.svg" % rid)
        json_error(status, headers, body, 500, "interrupted")
        check(s2.get("/healthz")[0] == 200, "the server is up")
    finally:
        s2.close()


# ---- error bodies are JSON whatever the bytes --------------------------------------

SMALL_HLO = """HloModule edge, entry_computation_layout={(f32[4,8]{1,0}, f32[8,16]{1,0})->f32[4,16]{1,0}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4,8], w: f32[8,16]) -> f32[4,16] {
  %x = f32[4,8]{1,0} parameter(0)
  %w = f32[8,16]{1,0} parameter(1)
  %dot = f32[4,16]{1,0} dot(f32[4,8]{1,0} %x, f32[8,16]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="layers.0/linear"}
  %zero = f32[] constant(0)
  %b = f32[4,16]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %r = f32[4,16]{1,0} maximum(f32[4,16]{1,0} %dot, f32[4,16]{1,0} %b)
}
"""


@test
def bad_utf8_errors_have_a_message(s):
    """Byte-mutated HLO bodies (invalid UTF-8 raw in the JSON, and
    multi-byte text the HLO parser quotes and cuts) always get a JSON error
    with a message."""
    rnd = random.Random(7)
    good = json.dumps({"hlo": SMALL_HLO}).encode()
    status, _, body = s.post("/v1/compile", good)
    check(status == 200, "the unmutated HLO compiles", body[:300])
    bodies = []
    for k in range(120):
        b = bytearray(good)
        for _ in range(rnd.randrange(1, 4)):
            i = rnd.randrange(len(b))
            b[i:i + 1] = bytes(rnd.choice([[rnd.randrange(0x80, 0x100)],
                                           [0xe2, 0x82], [0xc3], [0xf0, 0x9f, 0x98],
                                           list("é€😀".encode())[:rnd.randrange(1, 10)]]))
        bodies.append(bytes(b))
    # Valid JSON whose HLO text has multi-byte names where the parser
    # quotes a token (cut at its quoting limit, possibly mid-character).
    for n in (1, 7, 40, 63, 64, 65, 200):
        for word in ("é", "€", "😀"):
            text = SMALL_HLO.replace("%dot =", "%" + word * n + " =", 1)
            text = text.replace("dot(", word * n + "(", 1)
            bodies.append(json.dumps({"hlo": text}, ensure_ascii=False).encode())
    answered = {}
    for b in bodies:
        status, headers, data = s.post("/v1/compile", b)
        check(status < 500, "no 5xx for a mutated body (%d)" % status, b[:200], data[:300])
        if status >= 400:
            json_error(status, headers, data, status)
            answered[status] = answered.get(status, 0) + 1
    check(sum(answered.values()) > 100, "most mutations are errors", answered)
    # A message too long for the error buffer is cut between characters.
    status, headers, data = s.get("/v1/nope/" + "%C3%A9" * 700)
    e = json_error(status, headers, data, 404)
    check("\\x" not in e["message"], "cut at a character boundary", e["message"][-40:])
    status, headers, data = s.get("/v1/results/%ff%fe%c3")
    e = json_error(status, headers, data, 404)
    check("\\xff" in e["message"], "invalid bytes are quoted as \\xNN", e)
    check(s.get("/healthz")[0] == 200, "the server is up")


# ---- slow clients ---------------------------------------------------------------


def slow_client(sock, t0, trickle, out, key):
    """On a connection that sent its start, one byte of trickle every 0.3 s
    until the server closes it; out[key] = seconds the connection lived."""
    try:
        for ch in trickle:
            time.sleep(0.3)
            sock.sendall(bytes([ch]))
        sock.settimeout(30)
        sock.recv(1)
    except OSError:
        pass
    finally:
        out[key] = time.time() - t0
        sock.close()


@test
def slow_clients_are_timed_out(s):
    """Slowloris: connections trickling their head (or their body) are
    closed at the deadline although they keep sending, so they cannot hold
    their address's connection slots; a normal request then succeeds."""
    s2 = Server("--header-timeout", "1", "--body-timeout", "2", "--max-per-ip", "8")
    try:
        out = {}
        head = b"POST /v1/compile HTTP/1.1\r\nHost: x\r\n"
        body_head = (b"POST /v1/compile HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 300\r\n\r\n")
        threads = []
        time.sleep(0.5)  # the start-up /healthz connection is gone: 8 slots free
        for k in list(range(7)) + ["body"]:
            t0 = time.time()
            sock = socket.create_connection(("127.0.0.1", s2.port), timeout=30)
            sock.sendall(body_head if k == "body" else head)
            trickle = b" " * 300 if k == "body" else b"X-Slow: " + b"a" * 200
            threads.append(threading.Thread(target=slow_client, args=(sock, t0, trickle, out, k)))
        for t in threads:
            t.daemon = True
            t.start()
        time.sleep(0.2)
        # All 8 slots of 127.0.0.1 are taken: a ninth connection is refused.
        try:
            s2.get("/healthz", timeout=2)
            locked = False
        except OSError:
            locked = True
        check(locked, "the per-IP limit is reached while the slow clients hold it")
        for t in threads:
            t.join(timeout=20)
        check(len(out) == 8, "every slow connection was closed by the server", out)
        heads = [out[k] for k in range(7)]
        check(max(heads) < 3.0, "slow heads closed near the 1 s deadline", heads)
        check(1.8 < out["body"] < 4.5, "a slow body closed near its 2 s deadline", out["body"])
        t0 = time.time()
        status, _, _ = s2.get("/healthz", timeout=5)
        check(status == 200, "a normal request succeeds after the slow ones are gone")
        # A normal request with a body is not affected by the deadlines.
        r, _ = s2.json("POST", "/v1/compile", example("mlp"))
        check(r["id"], "a compile succeeds")
    finally:
        s2.close()


# ---- ambiguous and oversized bodies ------------------------------------------------


@test
def conflicting_content_length_is_400(s):
    for extra in (b"Content-Length: 2\r\nContent-Length: 40\r\n",
                  b"Content-Length: 2\r\nContent-Length: 2\r\n",
                  b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"):
        req = b"POST /v1/compile HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n{}"
        status, headers, body = raw(s, req)
        e = json_error(status, headers, body, 400, "bad_request")
        check("Content-Length" in e["message"], "the message names the header", e)
    check(s.get("/healthz")[0] == 200, "the server is up")


@test
def oversized_body_is_413_json(s):
    s2 = Server("--max-body", "1000")
    try:
        big = b"{" + b" " * 5000 + b"}"
        head = b"POST /v1/compile HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        # Content-Length larger than the limit: the body is read and dropped.
        status, headers, body = raw(s2, head + b"Content-Length: %d\r\n\r\n" % len(big) + big)
        e = json_error(status, headers, body, 413, "too_large")
        check("--max-body" in e["message"], "the message names the flag", e)
        # Expect: 100-continue: refused before the body is sent.
        status, headers, body = raw(s2, head + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n"
                                    % len(big))
        json_error(status, headers, body, 413, "too_large")
        # Chunked: no length up front; counted as it arrives.
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(big[i:i + 700]), big[i:i + 700])
                          for i in range(0, len(big), 700)) + b"0\r\n\r\n"
        status, headers, body = raw(s2, head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks)
        json_error(status, headers, body, 413, "too_large")
        # Within the limit: fine.
        status, _, body = s2.post("/v1/compile", json.dumps(example("mlp")))
        check(status == 200, "a small body compiles", body[:300])
    finally:
        s2.close()


# ---- the bounded store ------------------------------------------------------------


def padded_model(k, pad=6000):
    m = example("mlp")
    m["name"] = "edge-%d" % k
    m["description"] = "p" * pad
    return m


def used_bytes(server):
    con = sqlite3.connect(db_path(server), timeout=10)
    try:
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        free = con.execute("PRAGMA freelist_count").fetchone()[0]
        size = con.execute("PRAGMA page_size").fetchone()[0]
        return (pages - free) * size
    finally:
        con.close()


@test
def store_evicts_oldest_unpinned_and_answers_410(s):
    cap = 300000
    s2 = Server("--max-store-bytes", str(cap))
    try:
        pinned, _ = s2.json("POST", "/v1/compile", example("seed_64_linear"))
        ids = []
        for k in range(80):
            r, _ = s2.json("POST", "/v1/compile", padded_model(k))
            ids.append(r["id"])
        used = used_bytes(s2)
        check(used <= cap, "the store stays under --max-store-bytes (%d > %d)" % (used, cap))
        status, headers, body = s2.get("/v1/results/" + ids[0])
        e = json_error(status, headers, body, 410, "evicted")
        check("--max-store-bytes" in e["message"] and "POST" in e["message"],
              "the message says why and how to get it back", e)
        status, headers, body = s2.get("/v1/results/%s/graph.svg" % ids[0])
        json_error(status, headers, body, 410, "evicted")
        got, _ = s2.json("GET", "/v1/results/" + ids[-1])
        check(got["id"] == ids[-1], "the newest result is kept")
        got, _ = s2.json("GET", "/v1/results/" + pinned["id"])
        check(got == pinned, "an example's result is pinned: never evicted")
        # Posting an evicted request computes it again.
        r, _ = s2.json("POST", "/v1/compile", padded_model(0))
        check(r["id"] == ids[0], "same id")
        got, _ = s2.json("GET", "/v1/results/" + ids[0])
        check(got["id"] == ids[0], "the link works again after the POST")
        # The tombstones and the pin survive a restart.
        s2.stop()
        s2.start()
        got, _ = s2.json("GET", "/v1/results/" + pinned["id"])
        check(got == pinned, "pinned after a restart")
        status, headers, body = s2.get("/v1/results/" + ids[1])
        json_error(status, headers, body, 410, "evicted")
    finally:
        s2.close()


class TmpfsServer(Server):
    """The server with its --data on a tmpfs of `size` of its own (a private
    mount namespace), to fill the disk without touching the machine's."""

    def __init__(self, size, *flags):
        self.size = size
        wrapper = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
        wrapper.write("#!/usr/bin/python3\nimport os, sys\nargs = sys.argv[1:]\n"
                      "data = args[args.index('--data') + 1]\n"
                      "os.execvp('unshare', ['unshare', '-m', 'sh', '-c', "
                      "'mount -t tmpfs -o size=%s tmpfs \"$1\" && shift && exec \"$@\"', "
                      "'sh', data, %r] + args)\n" % (size, base.BIN))
        wrapper.close()
        os.chmod(wrapper.name, 0o755)
        self.wrapper = wrapper.name
        real, base.BIN = base.BIN, wrapper.name
        try:
            Server.__init__(self, *flags)
        finally:
            base.BIN = real

    def close(self):
        Server.close(self)
        os.unlink(self.wrapper)


@test
def full_disk_is_507_and_reads_go_on(s):
    probe = subprocess.run(["unshare", "-m", "sh", "-c",
                            "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"],
                           capture_output=True)
    if probe.returncode != 0:
        raise Skip("no private tmpfs here (unshare -m): %s" % probe.stderr.decode()[:200])
    s2 = TmpfsServer("1m", "--max-store-bytes", "0")
    try:
        first, _ = s2.json("POST", "/v1/compile", example("mlp"))
        statuses = []
        for k in range(400):
            status, headers, body = s2.post("/v1/compile", padded_model(k, pad=20000))
            statuses.append(status)
            if status != 200:
                break
        e = json_error(status, headers, body, 507, "insufficient_storage")
        check("read" in e["message"], "the message says reads go on", e)
        check(statuses.count(200) > 3, "some writes succeeded before the disk filled", statuses)
        # Reads go on: stored results, repeated requests, everything else.
        got, _ = s2.json("GET", "/v1/results/" + first["id"])
        check(got == first, "a stored result is read from a full disk")
        again, headers = s2.json("POST", "/v1/compile", example("mlp"))
        check(again == first and headers.get("x-cache") == "hit",
              "a POST answered from the store still works")
        check(s2.get("/v1/examples")[0] == 200 and s2.get("/healthz")[0] == 200,
              "the other endpoints answer")
        status, headers, body = s2.post("/v1/compile", padded_model(999, pad=20000))
        json_error(status, headers, body, 507, "insufficient_storage")
    finally:
        s2.close()


@test
def kill9_during_writes_keeps_the_store_intact(s):
    data = tempfile.mkdtemp(prefix="hloscope-edge-")
    try:
        done = []
        for cycle in range(3):
            srv = Server("--workers", "2", data=data)
            stop = threading.Event()

            def writer(w):
                k = 0
                while not stop.is_set():
                    try:
                        st, _, body = srv.post("/v1/compile", padded_model(cycle * 100000 + w * 1000 + k, 2000),
                                               timeout=10)
                        if st == 200:
                            done.append(json.loads(body)["id"])
                    except (OSError, ValueError):
                        return
                    k += 1

            ws = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
            for t in ws:
                t.daemon = True
                t.start()
            time.sleep(1.5 + cycle * 0.37)
            srv.proc.send_signal(signal.SIGKILL)
            stop.set()
            for t in ws:
                t.join(timeout=15)
            srv.close()
            con = sqlite3.connect(os.path.join(data, "hloscope.sqlite"), timeout=10)
            try:
                ok = con.execute("PRAGMA integrity_check").fetchall()
                mode = con.execute("PRAGMA journal_mode").fetchone()[0]
            finally:
                con.close()
            check(ok == [("ok",)], "integrity_check after kill -9 (cycle %d)" % cycle, ok)
            check(mode == "wal", "the store is in WAL mode", mode)
        check(len(done) > 20, "writes were under way when killed (%d answered)" % len(done))
        srv = Server(data=data)
        try:
            for rid in done[:: max(1, len(done) // 25)]:
                got, _ = srv.json("GET", "/v1/results/" + rid)
                check(got["id"] == rid, "an answered result survives kill -9", rid)
        finally:
            srv.close()
    finally:
        shutil.rmtree(data, ignore_errors=True)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base.BIN, base.SRC = sys.argv[1], os.path.abspath(sys.argv[2])
    name = sys.argv[3]
    if name == "--list":
        print("\n".join(TESTS))
        return
    s = Server()
    try:
        TESTS[name](s)
    except Skip as k:
        print("SKIP %s: %s" % (name, k))
        sys.exit(SKIP)
    except Fail as f:
        print("FAIL %s: %s" % (name, f))
        sys.exit(1)
    finally:
        s.close()
    print("ok %s" % name)


if __name__ == "__main__":
    main()
