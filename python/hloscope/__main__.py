"""python3 -m hloscope export MODULE:FACTORY --input 1,128,256 [--scan] -o
model.json, and python3 -m hloscope compile|run model.json --server URL."""
import argparse
import importlib
import importlib.util
import json
import os
import sys

from .client import Client, HloscopeError
from .export import ExportError, export


def _load_factory(spec):
    if ":" not in spec:
        raise SystemExit(f"expected MODULE:FACTORY (a Python module or file "
                         f"and a callable in it), got {spec!r}")
    mod, fn = spec.rsplit(":", 1)
    if mod.endswith(".py") or os.path.sep in mod:
        s = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(mod))[0], mod)
        if s is None:
            raise SystemExit(f"cannot load {mod}")
        m = importlib.util.module_from_spec(s)
        sys.path.insert(0, os.path.dirname(os.path.abspath(mod)))
        s.loader.exec_module(m)
    else:
        m = importlib.import_module(mod)
    if not hasattr(m, fn):
        raise SystemExit(f"{mod} has no {fn!r}")
    return getattr(m, fn)


def _cmd_export(a):
    import torch
    shape = [int(d) for d in a.input.split(",")]
    torch.manual_seed(a.seed)
    module = _load_factory(a.factory)()
    x = torch.randint(0, a.ids, shape) if a.ids else torch.randn(*shape)
    try:
        model = export(module, x, loop="scan" if a.scan else "unrolled",
                       name=a.name, dtype=a.dtype)
    except ExportError as e:
        print(f"hloscope export: {e}", file=sys.stderr)
        return 1
    text = json.dumps(model)
    if a.output == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(a.output, "w") as f:
            f.write(text)
    return 0


def _cmd_server(a):
    with open(a.model) as f:
        model = f.read()
    c = Client(a.server)
    try:
        fn = c.compile if a.cmd == "compile" else c.run
        r = fn(model, loop=a.loop, device=a.device)
    except HloscopeError as e:
        print(f"hloscope {a.cmd}: {e}", file=sys.stderr)
        return 1
    json.dump(r, sys.stdout, indent=2)
    sys.stdout.write("\n")
    graph = r.get("links", {}).get("graph_svg")
    if graph:
        print(f"graph: {graph}", file=sys.stderr)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m hloscope")
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="export a PyTorch module to model JSON")
    e.add_argument("factory", help="MODULE:FACTORY or file.py:FACTORY, a "
                   "callable that returns the nn.Module")
    e.add_argument("--input", required=True,
                   help="the example input's shape, e.g. 1,128,256")
    e.add_argument("--ids", type=int, metavar="N",
                   help="the input is token ids in [0, N) (for a model "
                   "that starts with an nn.Embedding)")
    e.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16"])
    e.add_argument("--scan", action="store_true",
                   help='"loop": "scan" (scan_layers calls become scans)')
    e.add_argument("--name")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("-o", "--output", default="-")
    for cmd in ("compile", "run"):
        c = sub.add_parser(cmd, help=f"{cmd} a model JSON on a server")
        c.add_argument("model")
        c.add_argument("--server", required=True)
        c.add_argument("--loop", choices=["unrolled", "scan"])
        c.add_argument("--device")
    a = p.parse_args(argv)
    if a.cmd == "export":
        return _cmd_export(a)
    return _cmd_server(a)


if __name__ == "__main__":
    sys.exit(main())
