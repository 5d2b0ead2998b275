"""PyTorch export tests (issue #16): each test exports a module written in
plain PyTorch (models.py), runs it on the emulated device with
`hloscope run --dump`, loads the dumped parameters back into the same
module with load_state_dict and compares outputs (and, for training, the
loss and first-step gradients) with PyTorch's.

usage: export_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME
Runs with /usr/bin/python3 (Debian's torch 1.13)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

BIN, SRC, NAME = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(SRC, "python"))
sys.path.insert(0, os.path.join(SRC, "tests", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import hloscope  # noqa: E402
import models  # noqa: E402

TMP = tempfile.mkdtemp(prefix="hloscope-py-")
# vit_b_16's image size in its test (torchvision's default is 224).
VIT_SIZE = 224


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-30))


def run_dump(model, tag, *extra):
    """Writes the model JSON, runs it with --dump; returns the dump dir."""
    path = os.path.join(TMP, tag + ".json")
    with open(path, "w") as f:
        json.dump(model, f)
    out = os.path.join(TMP, "dump-" + tag)
    r = subprocess.run([BIN, "run", path, "--dump", out, *extra],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"hloscope run {tag}: {r.stdout}{r.stderr}")
    return out


def forward_matches(module, x, loop="unrolled", tag="m"):
    module.eval()
    model = hloscope.export(module, x, loop=loop)
    d = run_dump(model, tag)
    loaded = hloscope.load_dump(module, d)
    module.eval()
    names = set(module.state_dict())
    check(set(loaded) <= names | set(),
          f"dumped names outside the state_dict: {set(loaded) - names}")
    xin = torch.from_numpy(np.load(os.path.join(d, "input.npy")))
    with torch.no_grad():
        want = module(xin).numpy()
    got = np.load(os.path.join(d, "output.npy"))
    check(got.shape == want.shape, f"output shape {got.shape} vs {want.shape}")
    err = rel_err(want, got)
    print(f"{tag}: {len(loaded)} tensors loaded, output rel err {err:.3g}")
    check(err <= 1e-5, f"{tag}: relative error {err} > 1e-5")
    return model, d


# ---- tests ----------------------------------------------------------------

def test_llama_matches_pytorch():
    torch.manual_seed(1)
    m = models.Llama(dim=64, heads=4, hidden=172, n_layers=8)
    model, d = forward_matches(m, torch.randn(2, 16, 64), tag="llama")
    files = set(os.listdir(os.path.join(d, "params")))
    check("layers.7.self_attn.q_proj.weight.npy" in files,
          "state_dict names in the dump")
    ops = model["layers"][0]["ops"]
    scopes = {o["scope"] for o in ops}
    check("layers.3/self_attn/q_proj" in scopes and
          "layers.3/mlp/down_proj" in scopes, "op scopes are module paths")
    # The causal mask is computed (iota), the 8 layers' rotary tables are
    # one param each: the JSON stays far below the server's 1 MiB body.
    consts = [p for p in model["layers"][0]["params"] if "_constants" in p]
    check("iota" in {o["op"] for o in ops} and len(consts) <= 2,
          f"masks as iota, tables once: {consts}")
    check(len(json.dumps(model)) < 1 << 20, "the JSON fits --max-body")


def test_gpt2_matches_pytorch():
    torch.manual_seed(2)
    m = models.GPT2(dim=64, heads=4, n_layers=4)
    forward_matches(m, torch.randn(2, 24, 64), tag="gpt2")


def test_fx_symbolic_decoder_matches_pytorch():
    """A decoder torch.fx traces symbolically (no concrete fallback): the
    causal mask is triu of a computed value (iota, compare, select)."""
    torch.manual_seed(9)
    m = models.FxDecoder(dim=64, heads=4, n_layers=4)
    model, _ = forward_matches(m, torch.randn(2, 16, 64), tag="fx")
    check("<root>: symbolic" in model["description"], model["description"])
    check("iota" in {o["op"] for o in model["layers"][0]["ops"]},
          "triu lowered with iota")


def test_torch_transformer_encoder_matches_pytorch():
    """torch.nn.TransformerEncoder / TransformerEncoderLayer and
    nn.MultiheadAttention as PyTorch ships them: causal mask, batch first
    and sequence first."""
    torch.manual_seed(10)
    m = models.TorchEncoder(dim=64, heads=4, n_layers=3)
    model, d = forward_matches(m, torch.randn(2, 16, 64), tag="encoder")
    files = set(os.listdir(os.path.join(d, "params")))
    check("encoder.layers.2.self_attn.in_proj_weight.npy" in files and
          "seq_first.self_attn.out_proj.bias.npy" in files,
          f"MultiheadAttention's state_dict names: {sorted(files)[:8]}")


def test_llama_scan_matches_pytorch():
    torch.manual_seed(3)
    m = models.Llama(dim=64, heads=4, hidden=172, n_layers=8, scan=True)
    model, _ = forward_matches(m, torch.randn(1, 16, 64), loop="scan",
                               tag="llama-scan")
    rep = [l for l in model["layers"] if "repeat" in l]
    check(len(rep) == 1 and rep[0]["repeat"] == 8 and
          rep[0]["module"] == "layers", f"one repeat over layers: {rep}")


def test_seed_scan_bit_identical():
    """The seed's snippet, with only its imports changed, exports; the
    scanned model's output is bit-identical to the unrolled one's."""
    import seed_snippet

    torch.manual_seed(4)
    m = seed_snippet.Model()
    x = torch.randn(4, 1024)
    eager = m(x)
    plain = x
    for layer in m.layers:
        plain = layer(plain)
    check(torch.equal(eager, plain), "scan_layers runs the layers in order")
    scanned = hloscope.export(m, x, loop="scan")
    unrolled = hloscope.export(m, x, loop="unrolled")
    check({**scanned, "loop": "unrolled"} == unrolled,
          "the exports differ only in loop")
    _, ds = forward_matches(m, x, loop="scan", tag="seed-scan")
    du = run_dump(unrolled, "seed-unrolled")
    a = np.load(os.path.join(ds, "output.npy"))
    b = np.load(os.path.join(du, "output.npy"))
    check(a.tobytes() == b.tobytes(),
          f"scan vs unrolled differ by {np.abs(a - b).max()}")
    print("scan and unrolled outputs are bit-identical")


def test_llama_train_step_matches_autograd():
    torch.manual_seed(5)
    m = models.Llama(dim=32, heads=4, hidden=64, n_layers=8)
    lr = 0.01
    model = hloscope.export(m, torch.randn(1, 8, 32), train={
        "loss": "mse", "target": "random",
        "optimizer": {"type": "sgd", "lr": lr}, "steps": 1})
    # hloscope draws the initial weights: run forward once to dump them.
    fwd = dict(model)
    del fwd["train"]
    d0 = run_dump(fwd, "train-init")
    hloscope.load_dump(m, d0)
    d = run_dump(model, "train", "--train")
    x = torch.from_numpy(np.load(os.path.join(d0, "input.npy")))
    m.zero_grad()
    # A random target: against zeros the final RMSNorm makes the loss
    # (nearly) independent of every inner weight.
    target = torch.from_numpy(np.load(os.path.join(d, "target.npy")))
    loss = torch.nn.functional.mse_loss(m(x), target)
    loss.backward()
    got_loss = np.load(os.path.join(d, "loss.npy")).reshape(-1)[0]
    err = abs(float(loss) - float(got_loss)) / abs(float(loss))
    print(f"loss torch {float(loss):.6g} hloscope {got_loss:.6g} rel {err:.3g}")
    check(err <= 1e-4, f"loss relative error {err}")
    worst, n = 0.0, 0
    for name, p in m.named_parameters():
        g = np.load(os.path.join(d, "grads", name + ".npy"))
        e1 = rel_err(p.grad.numpy(), g)
        if e1 > 1e-4:
            print(f"  {name}: {e1:.3g} {np.abs(p.grad.numpy()).max():.3g}")
        worst = max(worst, e1)
        n += 1
    print(f"{n} gradients, worst rel err {worst:.3g}")
    check(n == len(list(m.parameters())), "every parameter has a gradient")
    check(worst <= 1e-4, f"gradient relative error {worst}")


def test_lm_with_embedding_matches_and_trains():
    """Token ids in (the model format's "ids" input), nn.Embedding lowered
    as one-hot @ weight; forward within 1e-5, and one SGD step with
    cross-entropy against torch autograd within 1e-4."""
    torch.manual_seed(11)
    m = models.TinyLM(vocab=300, dim=32, heads=4, n_layers=2)
    ids = torch.randint(0, 300, (2, 16))
    model, d0 = forward_matches(m, ids, tag="lm")
    check(model["input"] == {"shape": [2, 16], "ids": 300},
          f"ids input: {model['input']}")
    train = dict(model, train={"loss": "cross_entropy", "target": "random",
                               "optimizer": {"type": "sgd", "lr": 0.1}})
    d = run_dump(train, "lm-train", "--train")
    x = torch.from_numpy(np.load(os.path.join(d0, "input.npy"))).long()
    t = torch.from_numpy(np.load(os.path.join(d, "target.npy"))).long()
    m.zero_grad()
    loss = torch.nn.functional.cross_entropy(m(x).reshape(-1, 300),
                                             t.reshape(-1))
    loss.backward()
    got = float(np.load(os.path.join(d, "loss.npy")).reshape(-1)[0])
    err = abs(got - float(loss)) / abs(float(loss))
    worst = max(rel_err(p.grad.numpy(),
                        np.load(os.path.join(d, "grads", n + ".npy")))
                for n, p in m.named_parameters())
    print(f"loss rel err {err:.3g}, worst gradient rel err {worst:.3g}")
    check(err <= 1e-4 and worst <= 1e-4, f"loss {err}, gradients {worst}")


def test_batchnorm_buffers_round_trip():
    """nn.BatchNorm1d in eval mode: its running statistics are persistent
    buffers, exported with their values under their state_dict names."""
    torch.manual_seed(12)
    m = nn.Sequential(nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(),
                      nn.Linear(64, 10))
    m.train()
    with torch.no_grad():
        for _ in range(5):  # running statistics that are not 0 and 1
            m(torch.randn(16, 32) * 3 + 1)
    mean = m[1].running_mean.clone()
    model, d = forward_matches(m, torch.randn(8, 32), tag="bn")
    check(model["layers"][0]["params"]["1.running_mean"]["values"] ==
          mean.tolist(), "running_mean exported with its values")
    dumped = np.load(os.path.join(d, "params", "1.running_var.npy"))
    check(np.array_equal(dumped, m[1].running_var.numpy()),
          "running_var dumped as it was")


def _with_running_stats(m, shape, seed):
    """Batch norms whose running statistics are not 0 and 1: a few
    training-mode passes on shifted inputs, then eval."""
    torch.manual_seed(seed)
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(*shape) * 2 + 0.5)
    return m.eval()


def _vision_f32(factory, tag, shape=(1, 3, 224, 224)):
    """f32 export of a vision model against PyTorch eval: relative error
    <= 1e-5 (forward_matches), with the state_dict names of the module."""
    torch.manual_seed(21)
    m = _with_running_stats(factory(), (2,) + tuple(shape[1:]), 22)
    model, d = forward_matches(m, torch.randn(*shape), tag=tag)
    names = {f[:-4] for f in os.listdir(os.path.join(d, "params"))}
    want = {k for k in m.state_dict() if not k.endswith("tracked")}
    check(names == want, f"{tag}: dumped names are the state_dict's "
          f"(extra {sorted(names - want)[:5]}, missing "
          f"{sorted(want - names)[:5]})")
    ops = [o["op"] for blk in model["layers"] for o in blk.get("ops", [])]
    check("convolution" in ops and "batch-norm-inference" in ops,
          f"{tag}: lowered to convolution and batch-norm-inference")


def _vision_bf16(factory, tag, shape=(1, 3, 224, 224)):
    """export(..., dtype="bf16") against PyTorch's own bf16 forward
    (module.to(torch.bfloat16) on the same bf16-exact weights and input)
    and against f32. The bound is PyTorch's own bf16 error: e = |bf16
    PyTorch - f32| (max over the output, relative to its scale). Two bf16
    computations that round at different points each differ from f32 by
    about e, so they differ from each other by at most about 2e; the test
    allows 3e against PyTorch bf16 and 2e against f32."""
    torch.manual_seed(23)
    m = _with_running_stats(factory(), (2,) + tuple(shape[1:]), 24)
    model = hloscope.export(m, torch.randn(*shape), dtype="bf16")
    check(model.get("dtype") == "bf16", f"{tag}: the JSON says bf16")
    d = run_dump(model, tag)
    hloscope.load_dump(m, d)
    m.eval()
    xin = torch.from_numpy(np.load(os.path.join(d, "input.npy")))
    check(torch.equal(xin, xin.to(torch.bfloat16).float()),
          f"{tag}: the dumped input is bf16-exact")
    with torch.no_grad():
        f32 = m(xin).double().numpy()
        b16 = m.to(torch.bfloat16)(xin.to(torch.bfloat16)).double().numpy()
    got = np.load(os.path.join(d, "output.npy"))
    e = rel_err(f32, b16)
    e_b16, e_f32 = rel_err(b16, got), rel_err(f32, got)
    print(f"{tag}: bf16 vs PyTorch bf16 {e_b16:.3g}, vs f32 {e_f32:.3g}; "
          f"PyTorch's bf16 vs f32 {e:.3g}")
    check(0 < e_b16 <= 3 * e, f"{tag}: bf16 error {e_b16} vs PyTorch bf16 "
          f"above 3 x {e}")
    check(e_f32 <= 2 * e, f"{tag}: bf16 error {e_f32} vs f32 above 2 x {e}")


def test_resnet18_matches_pytorch():
    import torchvision
    _vision_f32(lambda: torchvision.models.resnet18(weights=None),
                "resnet18")


def test_mobilenet_v2_matches_pytorch():
    import torchvision
    _vision_f32(lambda: torchvision.models.mobilenet_v2(weights=None),
                "mobilenet_v2")


def test_small_cnn_matches_pytorch():
    _vision_f32(models.SmallCNN, "small_cnn", (2, 3, 32, 32))
    _vision_bf16(models.SmallCNN, "small_cnn_bf16", (2, 3, 32, 32))


def test_vision_bf16_matches_pytorch_bf16():
    import torchvision
    _vision_bf16(lambda: torchvision.models.resnet18(weights=None),
                 "resnet18_bf16")
    _vision_bf16(lambda: torchvision.models.mobilenet_v2(weights=None),
                 "mobilenet_v2_bf16")


def test_vit_b_16_matches_pytorch():
    """torchvision's vit_b_16 (the 16x16 patch convolution, the class
    token's cat, the position embedding, twelve nn.MultiheadAttention
    encoder layers, the head) against PyTorch eval within 1e-5. Its head
    is zeros as torchvision initialises it; a random one makes the
    comparison mean something."""
    import torchvision
    torch.manual_seed(25)
    m = torchvision.models.vit_b_16(weights=None, image_size=VIT_SIZE)
    torch.nn.init.normal_(m.heads.head.weight, std=0.02)
    model, _ = forward_matches(m, torch.randn(1, 3, VIT_SIZE, VIT_SIZE),
                               tag="vit_b_16")
    ops = [o["op"] for blk in model["layers"] for o in blk.get("ops", [])]
    check(ops.count("convolution") == 1, "one patch convolution")


def test_cli_exports_bf16_vision():
    """python3 -m hloscope export torchvision.models:resnet18 --input
    1,3,64,64 --dtype bf16 writes a model hloscope runs at bf16."""
    out = os.path.join(TMP, "cli_resnet.json")
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
    r = subprocess.run([sys.executable, "-m", "hloscope", "export",
                        "torchvision.models:resnet18", "--input",
                        "1,3,64,64", "--dtype", "bf16", "-o", out],
                       capture_output=True, text=True, env=env)
    check(r.returncode == 0, r.stdout + r.stderr)
    with open(out) as f:
        model = json.load(f)
    check(model["dtype"] == "bf16", "the CLI's JSON says bf16")
    r = subprocess.run([BIN, "compile", out], capture_output=True,
                       text=True)
    check(r.returncode == 0, r.stderr)
    check("bf16[1,3,64,64]" in r.stdout and "bf16[64,3,7,7]" in r.stdout,
          "the input and conv1.weight are bf16 parameters")


def test_unsupported_ops_are_listed():
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            y = torch.cumsum(self.fc(x), dim=-1)
            z = torch.cumsum(y, dim=-1)
            s, _ = torch.sort(z, dim=-1)
            return s

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Odd()

        def forward(self, x):
            return self.block(x)

    try:
        hloscope.export(Outer(), torch.randn(2, 16))
    except hloscope.ExportError as e:
        msg = str(e)
        print(msg)
        rows = {(op, path): n for op, path, n in e.unsupported}
        check(rows.get(("torch.cumsum", "block")) == 2, f"cumsum x2: {rows}")
        check(rows.get(("torch.sort", "block")) == 1, f"sort x1: {rows}")
        check("block" in msg and "x2" in msg, "the message lists them")
        return
    raise Fail("export of cumsum/sort did not fail")


def test_scan_layers_checks_structure():
    def refused(layers, *words):
        try:
            hloscope.scan_layers(layers, torch.randn(2, 8))
        except hloscope.ScanLayersError as e:
            check(all(w in str(e) for w in words), f"{e} lacks {words}")
            return
        raise Fail(f"scan_layers accepted {layers}")

    refused([nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 4)],
            "layer 2", "weight", "[4, 8]")
    refused([nn.Linear(8, 8), nn.Linear(8, 8, bias=False)],
            "layer 1", "bias")
    refused([nn.Linear(8, 8), nn.Tanh()], "layer 1", "Tanh")


def test_scan_matches_a_loop():
    def fn(carry, x):
        c = carry * 0.5 + x
        return c, c.sum(-1)

    init = torch.zeros(3)
    xs = torch.randn(5, 3)
    carry, ys = hloscope.scan(fn, init, xs)
    c, want = init, []
    for i in range(5):
        c, y = fn(c, xs[i])
        want.append(y)
    check(torch.equal(carry, c) and torch.equal(ys, torch.stack(want)),
          "scan = the loop")

    class Cumulative(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            h = self.fc(x)  # [seq, 6] (a 2-D input)
            last, ys = hloscope.scan(lambda c, r: (c + r, c + r),
                                     torch.zeros(6), h)
            return ys * last

    torch.manual_seed(6)
    forward_matches(Cumulative(), torch.randn(4, 6), tag="scan-fn")


def test_placement_marks_export():
    class Offload(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(32, 32)
            self.b = nn.Linear(32, 32)

        def forward(self, x):
            h = hloscope.place_to_host(self.a(x))
            return self.b(hloscope.place_to_device(h))

    torch.manual_seed(7)
    m = Offload()
    x = torch.randn(2, 32)
    check(torch.equal(m(x), m.b(m.a(x))), "placement is identity in eager")
    model, _ = forward_matches(m, x, tag="offload")
    ops = [o["op"] for o in model["layers"][0]["ops"]]
    check("place_to_host" in ops and "place_to_device" in ops,
          f"placement ops exported: {ops}")


class Server:
    def __init__(self):
        self.data = tempfile.mkdtemp(prefix="hloscope-py-srv-")
        self.proc = subprocess.Popen(
            [BIN, "serve", "--port", "0", "--data", self.data,
             "--examples", os.path.join(SRC, "examples")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        check(m is not None, f"server did not print its URL: {line!r}")
        self.url = m.group(1)
        c = hloscope.Client(self.url, timeout=10)
        deadline = time.time() + 20
        while True:
            try:
                c.get("/healthz")
                return
            except Exception:
                check(time.time() < deadline, "no /healthz within 20 s")
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        shutil.rmtree(self.data, ignore_errors=True)


def test_client_against_server():
    torch.manual_seed(8)
    m = models.Llama(dim=32, heads=4, hidden=64, n_layers=2, scan=True)
    model = hloscope.export(m, torch.randn(1, 8, 32), loop="scan")
    srv = Server()
    try:
        c = hloscope.Client(srv.url)
        r = c.compile(model)
        check("id" in r and "links" in r, f"a summary with links: {list(r)}")
        check(all(u.startswith(srv.url) for u in r["links"].values()
                  if isinstance(u, str)), "links are absolute")
        run = c.run(model)
        check("id" in run, "run returns a summary")
        cmp = c.compare(model, {"loop": "unrolled"}, {"loop": "scan"})
        check("a" in cmp and "b" in cmp and "diff" in cmp, "compare")
        bad = dict(model, layers=[dict(model["layers"][0], featurs=3)]
                   + model["layers"][1:])
        try:
            c.compile(bad)
        except hloscope.HloscopeError as e:
            print(e)
            check(e.status == 422 and e.path.startswith("/layers/0"),
                  f"error path: {e.path}")
            check("featurs" in e.message, e.message)
        else:
            raise Fail("a bad key compiled")
        try:
            c.compile('{"input": {"shape": [1, 2]}, ')
        except hloscope.HloscopeError as e:
            check(e.line == 1 and e.column > 0, f"line/column: {e}")
        else:
            raise Fail("bad JSON compiled")
        # The command line: export a factory from a file, compile it.
        out = os.path.join(TMP, "cli.json")
        env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
        r = subprocess.run(
            [sys.executable, "-m", "hloscope", "export",
             os.path.join(SRC, "tests", "python", "seed_snippet.py") + ":Model",
             "--input", "2,1024", "--scan", "-o", out],
            capture_output=True, text=True, env=env)
        check(r.returncode == 0, r.stderr)
        r = subprocess.run([sys.executable, "-m", "hloscope", "compile", out,
                            "--server", srv.url],
                           capture_output=True, text=True, env=env)
        check(r.returncode == 0, r.stderr)
        summary = json.loads(r.stdout)
        check("links" in summary, "the CLI prints the summary")
    finally:
        srv.stop()


def test_pip_installs_from_the_tree():
    """pip install ./python in a venv over Debian's packages (torch, numpy),
    with nothing from PyPI: --no-index, and the system's setuptools."""
    src = os.path.join(TMP, "src")
    shutil.copytree(os.path.join(SRC, "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                  "__pycache__"))
    venv = os.path.join(TMP, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                    venv], check=True)
    py = os.path.join(venv, "bin", "python")
    r = subprocess.run([py, "-m", "pip", "install", "--no-index",
                        "--no-build-isolation", src],
                       capture_output=True, text=True)
    check(r.returncode == 0, r.stdout + r.stderr)
    r = subprocess.run([py, "-c", "import hloscope, torch; "
                        "print(hloscope.__file__)"], capture_output=True,
                       text=True, cwd=TMP)
    check(r.returncode == 0 and "site-packages" in r.stdout,
          r.stdout + r.stderr)


def main(tests=None):
    """Runs test_<NAME> of tests (a module's globals; this one's by
    default)."""
    fn = (tests or globals()).get("test_" + NAME)
    if fn is None:
        print(f"unknown test {NAME}", file=sys.stderr)
        return 2
    try:
        fn()
    except Fail as e:
        print(f"FAIL {NAME}: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print(f"ok {NAME}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
