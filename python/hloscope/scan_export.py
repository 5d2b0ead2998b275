"""Exporting hloscope.scan(fn, init, xs): a graph op "scan" whose body is
fn traced once with torch.fx (docs/MODEL_FORMAT.md, "Scan ops").

The carry and the xs may be tensors or (nested) tuples/lists of them; the
model format takes their leaves in order (init, xs, the body's carry and
x, new_carry and y, the op's outputs), and the exporter rebuilds the
structure for the graph that uses the results. fn's parameters keep their
state_dict names: fn is traced on a module that shares the traced
module's parameters, buffers and submodules, so `self.cell(x)` in fn is
the module path "cell" and `self.weight_hh` the parameter "weight_hh"."""
import torch

from . import markers
from .export import ExportError, _Lowering, scope_of
from .graph import GraphBlock, V
from .ops import Unsupported
from .trace import trace as _trace


def _flatten(t):
    """(leaves, spec) of a tensor or a (nested) tuple/list of them."""
    if isinstance(t, (list, tuple)):
        leaves, specs = [], []
        for e in t:
            lv, sp = _flatten(e)
            leaves += lv
            specs.append(sp)
        return leaves, (type(t), specs)
    return [t], None


def _unflatten(spec, leaves):
    it = iter(leaves)

    def build(sp):
        if sp is None:
            return next(it)
        typ, specs = sp
        return typ(build(s) for s in specs)
    return build(spec)


class _StepModule(torch.nn.Module):
    """fn(carry, x) as a module for torch.fx: one argument per leaf of the
    carry and of x, and the traced module's parameters, buffers and
    submodules under their own names (the same dicts, nothing copied)."""

    def __init__(self, root, fn, carry_spec, x_spec, n_carry):
        super().__init__()
        for table in ("_parameters", "_buffers", "_modules",
                      "_non_persistent_buffers_set"):
            self.__dict__[table] = root.__dict__[table]
        self.__dict__["hs_step"] = (fn, carry_spec, x_spec, n_carry)

    def call_step(self, leaves):
        fn, carry_spec, x_spec, n_carry = self.__dict__["hs_step"]
        return fn(_unflatten(carry_spec, leaves[:n_carry]),
                  _unflatten(x_spec, leaves[n_carry:]))


def _step_module(root, fn, carry_spec, x_spec, n_carry, n_x):
    """A _StepModule subclass whose forward names every leaf (torch.fx
    makes one placeholder per named argument)."""
    names = [f"carry_{k}" for k in range(n_carry)] + \
        [f"x_{j}" for j in range(n_x)]
    src = (f"def forward(self, {', '.join(names)}):\n"
           f"    return self.call_step(({', '.join(names)},))\n")
    scope = {}
    exec(src, scope)  # noqa: S102 - the names above, nothing from outside
    cls = type("ScanStep", (_StepModule,), {"forward": scope["forward"]})
    return cls(root, fn, carry_spec, x_spec, n_carry)


class _BodyLowering(_Lowering):
    """fn's graph lowered as a scan body: its inputs are the carry and x
    leaves, its result (new carry, y) becomes the body's new_carry and y
    lists. Ops fn computes itself (outside any submodule) take the loop's
    scope; a submodule's ops its module path."""

    def __init__(self, gm, exporter, module, carry, xs, name):
        super().__init__(gm, "", (), exporter, module)
        self.name = name  # the scan op's: its constants' params say so
        self.block = GraphBlock(())
        self.carry = [self.block.input(f"carry_{k}", v.shape, v.dtype)
                      for k, v in enumerate(carry)]
        self.xs = [self.block.input(f"x_{j}", v.shape[1:], v.dtype)
                   for j, v in enumerate(xs)]
        self.json = None
        self.y_values = []

    def check_inputs(self, placeholders):
        pass

    def tensor(self, x, name="const"):
        # A folded constant is a param "_constants.<name>": named after the
        # scan, so that it is not the enclosing graph's.
        return super().tensor(x, f"{self.name}_{name}")

    def bind_input(self, node, index):
        inputs = self.carry + self.xs
        if index < len(inputs):
            self.env[node] = inputs[index]

    def scope_for(self, node):
        path = node.meta.get("hs_module", "")
        return scope_of(path) if path else None

    def finish(self, node):
        out = self.value(node.args[0])
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ExportError("scan's fn must return (new carry, y)")
        new_carry, _ = _flatten(out[0])
        ys, spec = _flatten(out[1])
        if len(new_carry) != len(self.carry):
            raise ExportError(f"scan's fn returns a carry of "
                              f"{len(new_carry)} tensors for one of "
                              f"{len(self.carry)}")
        blk = self.block
        new_carry = [blk.convert(self.tensor(c, "carry"), c0.dtype)
                     for c, c0 in zip(new_carry, self.carry)]
        self.y_values = [self.tensor(y, "y") for y in ys]
        self.y_spec = spec
        self.json = {"carry": [v.name for v in self.carry],
                     "x": [v.name for v in self.xs]}
        if blk.params:
            self.json["params"] = {k: sp for k, (sp, _) in
                                   blk.params.items()}
        self.json["ops"] = blk.ops
        self.json["new_carry"] = [v.name for v in new_carry]
        self.json["y"] = [v.name for v in self.y_values]
        return None


def _example_of(a):
    """The value on the example of an fx argument (nested)."""
    return torch.fx.node.map_arg(a, lambda n: n.meta.get("hs_value"))


def lower_scan(L, node, init, xs):
    """The graph op "scan" of a scan node in L's block; returns the
    (carry, ys) structure of its results."""
    fn = markers.scan_fn_of(node.target)
    result, _ = _flatten(node.meta.get("hs_value"))
    if any(isinstance(r, torch.fx.Proxy) for r in result):
        # Run on the example, fn computed with a value of the forward's
        # own trace (a closure).
        raise Unsupported("scan's fn reads a value the forward computed "
                          "outside it; pass it in init or xs")
    init_leaves, carry_spec = _flatten(init)
    xs_leaves, x_spec = _flatten(xs)
    if any(v is None for v in init_leaves + xs_leaves):
        raise Unsupported("None in scan's init or xs")
    init_v = [L.tensor(v, "init") for v in init_leaves]
    xs_v = [L.tensor(v, "xs") for v in xs_leaves]
    ex_carry, _ = _flatten(_example_of(node.args[0]))
    ex_xs, _ = _flatten(_example_of(node.args[1]))
    examples = tuple(ex_carry) + tuple(t[0] for t in ex_xs)

    step = _step_module(L.module, fn, carry_spec, x_spec, len(init_v),
                        len(xs_v))
    try:
        gm, how = _trace(step, examples)
    except Exception as e:
        raise Unsupported(
            f"cannot trace scan's fn: {type(e).__name__}: "
            f"{str(e).splitlines()[0] if str(e) else ''} (fn may use the "
            "module's parameters and submodules, and values it is given; "
            "pass other values in init or xs)") from e
    for n in gm.graph.nodes:
        for a in n.all_input_nodes:
            if a.graph is not gm.graph:
                # fn closed over a value of the forward's own trace.
                raise Unsupported(
                    f"scan's fn reads '{a.name}', a value the forward "
                    "computed outside it; pass it in init or xs")
    L.ex.how.append((f"{L.prefix or '<root>'} scan", how))
    blk = L.block
    name = blk.fresh("scan")
    body = _BodyLowering(gm, L.ex, step, init_v, xs_v, name)
    body.run()
    L.ex.unsupported.update(body.unsupported)
    if body.json is None or body.unsupported:
        # Listed with the other unsupported ops; a stand-in keeps going.
        raise Unsupported("scan's fn has ops that cannot be exported")

    out_carry = [V(blk.fresh(f"{name}_carry"), v.shape, v.dtype, blk)
                 for v in init_v]
    n = xs_v[0].shape[0]
    out_ys = [V(blk.fresh(f"{name}_ys"), (n,) + y.shape, y.dtype, blk)
              for y in body.y_values]
    op = {"name": name, "op": "scan",
          "init": [v.name for v in init_v], "xs": [v.name for v in xs_v],
          "body": body.json,
          "outputs": [v.name for v in out_carry + out_ys]}
    if blk.scope is not None:
        op["scope"] = blk.scope
    blk.ops.append(op)
    return (_unflatten(carry_spec, out_carry),
            _unflatten(body.y_spec, out_ys))

