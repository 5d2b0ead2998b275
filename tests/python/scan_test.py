"""hloscope.scan exported as a loop (issue #16, item 3): modules that call
scan(fn, init, xs) in their forward (scan_models.py) export a graph op
"scan" whose body is fn traced once; hloscope runs it as one `while`
("loop": "scan") or unrolled, and both match PyTorch eager (f32 relative
error <= 1e-5) and each other bit for bit. The compiled scanned module
holds a `while` and does not grow with the sequence; a training step
through the loop matches torch autograd (<= 1e-4).

usage: scan_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME
(the helpers and arguments of export_test.py)."""
import json
import os
import subprocess
import sys

import export_test as et  # noqa: E402 - reads sys.argv as this script does

import numpy as np  # noqa: E402
import torch  # noqa: E402

import hloscope  # noqa: E402
import scan_models  # noqa: E402

check, Fail = et.check, et.Fail


def scan_ops(model):
    return [o for layer in model["layers"] for o in layer.get("ops", [])
            if o["op"] == "scan"]


def compiled(model, tag):
    """(optimized HLO text, optimized instruction count) of hloscope
    compile."""
    path = os.path.join(et.TMP, tag + ".json")
    with open(path, "w") as f:
        json.dump(model, f)
    text = subprocess.run([et.BIN, "compile", path], capture_output=True,
                          text=True)
    check(text.returncode == 0, f"compile {tag}: {text.stderr}")
    js = subprocess.run([et.BIN, "compile", path, "--emit", "json"],
                        capture_output=True, text=True)
    check(js.returncode == 0, f"compile {tag} --emit json: {js.stderr}")
    return text.stdout, json.loads(js.stdout)["instructions"]["optimized"]


def both_loops(module, x, tag):
    """Exports module both ways, checks each against PyTorch (1e-5) and
    the two outputs against each other (bit for bit); returns the scanned
    export."""
    scanned = hloscope.export(module, x, loop="scan")
    unrolled = hloscope.export(module, x, loop="unrolled")
    check({**scanned, "loop": "unrolled"} == unrolled,
          "the exports differ only in loop")
    check(len(scan_ops(scanned)) == 1, f"one scan op: {scanned['layers']}")
    _, ds = et.forward_matches(module, x, loop="scan", tag=tag + "-scan")
    _, du = et.forward_matches(module, x, loop="unrolled",
                               tag=tag + "-unrolled")
    a = np.load(os.path.join(ds, "output.npy"))
    b = np.load(os.path.join(du, "output.npy"))
    check(a.tobytes() == b.tobytes(),
          f"{tag}: scan vs unrolled differ by {np.abs(a - b).max()}")
    print(f"{tag}: scanned and unrolled outputs are bit-identical")
    return scanned


def grows(factory, shape_of, tag):
    """The scanned module's optimized instruction count on two sequence
    lengths (equal) and the unrolled one's (larger for the longer)."""
    counts = {}
    for loop in ("scan", "unrolled"):
        for seq in (4, 12):
            torch.manual_seed(0)
            model = hloscope.export(factory(), torch.randn(*shape_of(seq)),
                                    loop=loop)
            text, n = compiled(model, f"{tag}-{loop}-{seq}")
            counts[loop, seq] = n
            has_while = " while(" in text
            check(has_while == (loop == "scan"),
                  f"{tag} {loop} {seq}: a while only when scanned")
    print(f"{tag}: optimized instructions {counts}")
    check(counts["scan", 4] == counts["scan", 12],
          f"the scanned module grows with the sequence: {counts}")
    check(counts["unrolled", 12] > counts["unrolled", 4],
          f"the unrolled module does not grow: {counts}")


def test_rnn_scan_matches_pytorch():
    torch.manual_seed(31)
    m = scan_models.ElmanRNN(4, 6)
    scanned = both_loops(m, torch.randn(5, 2, 4), "rnn")
    op = scan_ops(scanned)[0]
    check(set(op["body"]["params"]) == {"w_ih", "w_hh", "b"},
          f"fn's parameters keep their state_dict names: "
          f"{op['body'].get('params')}")
    check(len(op["body"]["carry"]) == 1 and len(op["xs"]) == 1,
          "one carry, one xs")
    grows(lambda: scan_models.ElmanRNN(4, 6), lambda s: (s, 2, 4), "rnn")


def test_nested_carry_scan_matches_pytorch():
    torch.manual_seed(32)
    m = scan_models.NestedCarry()
    scanned = both_loops(m, torch.randn(5, 2, 4), "nested")
    op = scan_ops(scanned)[0]
    check(len(op["init"]) == 3 and len(op["xs"]) == 2 and
          len(op["body"]["y"]) == 3 and len(op["outputs"]) == 6,
          f"the carry's, xs' and ys' leaves in order: {op['init']}, "
          f"{op['xs']}, {op['body']['y']}")


def test_linear_step_scan_matches_pytorch():
    torch.manual_seed(33)
    m = scan_models.LinearStep()
    scanned = both_loops(m, torch.randn(6, 2, 8), "linear-step")
    check("<root>: symbolic" in scanned["description"],
          f"scan needs no concrete trace: {scanned['description']}")
    op = scan_ops(scanned)[0]
    check(set(op["body"]["params"]) ==
          {"cell.weight", "cell.bias", "head.weight", "head.bias"},
          f"the submodules' state_dict names: {op['body'].get('params')}")
    scopes = {o.get("scope") for o in op["body"]["ops"]}
    check({"cell", "head"} <= scopes, f"op scopes are module paths: "
          f"{scopes}")
    grows(scan_models.LinearStep, lambda s: (s, 2, 8), "linear-step")


def train_step(m, x, loop, tag):
    """One SGD step through the scan against torch autograd: (loss error,
    worst gradient error)."""
    lr = 0.05
    model = hloscope.export(m, x, loop=loop, train={
        "loss": "mse", "target": "random",
        "optimizer": {"type": "sgd", "lr": lr}, "steps": 1})
    fwd = dict(model)
    del fwd["train"]
    d0 = et.run_dump(fwd, tag + "-init")
    hloscope.load_dump(m, d0)
    d = et.run_dump(model, tag, "--train")
    xin = torch.from_numpy(np.load(os.path.join(d0, "input.npy")))
    target = torch.from_numpy(np.load(os.path.join(d, "target.npy")))
    m.zero_grad()
    loss = torch.nn.functional.mse_loss(m(xin), target)
    loss.backward()
    got = float(np.load(os.path.join(d, "loss.npy")).reshape(-1)[0])
    err = abs(got - float(loss)) / abs(float(loss))
    worst = 0.0
    for name, p in m.named_parameters():
        g = np.load(os.path.join(d, "grads", name + ".npy"))
        worst = max(worst, et.rel_err(p.grad.numpy(), g))
    print(f"{tag}: loss {float(loss):.6g} vs {got:.6g} (rel {err:.3g}), "
          f"worst gradient rel err {worst:.3g}")
    return err, worst, d


def test_rnn_scan_train_step_matches_autograd():
    """The reverse scan differentiates the loop: fn's weights get their
    gradients summed over the steps, the same bits as unrolled."""
    dumps = {}
    for loop in ("scan", "unrolled"):
        torch.manual_seed(34)
        m = scan_models.ElmanRNN(4, 6)
        err, worst, dumps[loop] = train_step(m, torch.randn(5, 2, 4), loop,
                                             f"rnn-train-{loop}")
        check(err <= 1e-4 and worst <= 1e-4,
              f"{loop}: loss {err}, gradients {worst}")
    for name in ("w_ih", "w_hh", "b"):
        a, b = (np.load(os.path.join(dumps[k], "grads", name + ".npy"))
                for k in ("scan", "unrolled"))
        check(a.tobytes() == b.tobytes(),
              f"{name}: scanned and unrolled gradients differ by "
              f"{np.abs(a - b).max()}")


def test_scan_closure_is_listed():
    """fn may read the module's parameters and what it is given; a value
    the forward computed and fn closes over is listed with the other
    unsupported ops, saying what to do."""
    class Closes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            g = self.fc(x).mean(0)

            def step(c, xt):
                return c + xt * g, c

            last, ys = hloscope.scan(step, torch.zeros(4), x)
            return ys + last

    try:
        hloscope.export(Closes(), torch.randn(5, 4))
    except hloscope.ExportError as e:
        print(e)
        check(("scan", "<root>", 1) in e.unsupported, f"{e.unsupported}")
        check("pass it in init or xs" in str(e), str(e))
        return
    raise Fail("a closure over the forward's value exported")


if __name__ == "__main__":
    sys.exit(et.main(globals()))
