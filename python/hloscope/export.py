"""hloscope.export: a PyTorch module to hloscope's model JSON.

The module is traced (trace.py), then every node of the fx graph is
lowered to ops of `graph` blocks (graph.py) whose params carry the
module's state_dict names and whose op scopes are the module paths. A
scan_layers call ends the current graph block and becomes
{"repeat": N, "module": <the layers' path>, "block": <layer 0 exported>};
"loop" says whether hloscope traces it as a scan or unrolled. What cannot
be lowered is collected and reported together (ExportError)."""
import collections

import torch
import torch.nn.functional as F

from . import markers
from .graph import F32, PRED, S32, GraphBlock, V
from .ops import _DTYPES, _FUNCS, _MODULES, Unsupported, _canon, _dtype
from .trace import _module_value
from .trace import trace as _trace


class ExportError(ValueError):
    """The module uses ops the exporter cannot lower. `unsupported` lists
    (op, module path, count)."""

    def __init__(self, message, unsupported=()):
        super().__init__(message)
        self.unsupported = list(unsupported)


def scope_of(path):
    """Module path to op_name scope: "layers.3.attn.q_proj" ->
    "layers.3/attn/q_proj" (an index stays with its container)."""
    out = []
    for seg in path.split(".") if path else []:
        if seg.isdigit() and out:
            out[-1] += "." + seg
        else:
            out.append(seg)
    return "/".join(out)


def _op_label(node):
    if node.op == "call_module":
        return type(node.graph.owning_module.get_submodule(node.target)
                    ).__name__ if node.graph.owning_module else node.target
    if node.op == "call_method":
        return "Tensor." + node.target
    t = node.target
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", str(t))
    if mod.startswith("torch.nn.functional") or getattr(F, name, None) is t:
        return "F." + name
    if mod == "_operator":
        return "operator." + name
    return ("torch." if mod.startswith("torch") else "") + name


class _Lowering:
    def __init__(self, gm, prefix, input_shape, exporter, module,
                 input_dtype=F32):
        self.gm = gm
        self.module = module  # the traced module (gm keeps only what the
        # graph calls)
        self.root = gm
        self.prefix = prefix  # module path of the traced module ("" or
        # "layers.0" when exporting a layer of a scan)
        self.ex = exporter
        self.blocks = []  # model-format entries, in order
        self.block = GraphBlock(input_shape, input_dtype)
        self.env = {}
        self.static = set()  # nodes computed without the input or params
        self.unsupported = collections.Counter()
        # State is what the module itself holds (the GraphModule adds its
        # tensor constants as buffers).
        sd = module.state_dict(keep_vars=True)
        self.persistent = {k for k, v in sd.items()
                           if not isinstance(v, torch.nn.Parameter)}
        self.parameters = dict(module.named_parameters())

    # ---- values -----------------------------------------------------------
    def value(self, a):
        """A lowered argument: a V (tensor value), a list of them, or a
        Python value for what does not depend on the input or parameters."""
        if isinstance(a, torch.fx.Node):
            if a in self.env:
                v = self.env[a]
                if a in self.static and v.block is not self.block:
                    return a.meta.get("hs_value")  # computed in an earlier
                    # block: folded here
                if isinstance(v, V) and v.block is not self.block:
                    raise Unsupported(
                        "a value computed before a scan_layers call is used "
                        "after it (only the scan's carry crosses it)")
                return v
            return a.meta.get("hs_value")
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(e) for e in a)
        if isinstance(a, dict):
            return {k: self.value(e) for k, e in a.items()}
        if isinstance(a, slice):
            return slice(self.value(a.start), self.value(a.stop),
                         self.value(a.step))
        return a

    def tensor(self, x, name="const"):
        """x as a V: static tensors become constants (one value: a
        `constant` op; else a param "_constants.<name>" with its values)."""
        if isinstance(x, V):
            return x
        if isinstance(x, (int, float, bool)):
            return self.block.const(x, (), F32 if isinstance(x, float)
                                    else PRED if isinstance(x, bool) else S32)
        if not isinstance(x, torch.Tensor):
            raise Unsupported(f"a {type(x).__name__} where a tensor was "
                              "expected")
        dt = _dtype(x)
        flat = x.detach().reshape(-1).to(torch.float32)
        if flat.numel() and bool((flat == flat[0]).all()):
            return self.block.const(float(flat[0]), tuple(x.shape), dt)
        tri = _triangle(x)
        if tri is not None:
            return self._triangle(x, *tri)
        # One param per distinct constant in a block (every unrolled layer
        # folds the same rotary table or mask).
        key = (tuple(x.shape), dt, flat.numpy().tobytes())
        if key in self.block.constants:
            return self.block.constants[key]
        pname, k = "_constants." + name, 1
        while pname in self.block.params:
            k += 1
            pname = f"_constants.{name}_{k}"
        v = self.block.param(pname, tuple(x.shape), values=_json_floats(flat))
        v = self.block.convert(v, dt)
        self.block.constants[key] = v
        return v

    def _triangle(self, x, k, hi, lo, upper):
        """x = hi where col - row >= k (upper) or <= k (lower), else lo, in
        its last two axes: iota, compare, select, no table in the JSON."""
        blk = self.block
        dt = _dtype(x)
        sq = tuple(x.shape[-2:])
        rows = blk.emit("iota", [], {"shape": list(sq), "dimension": 0}, sq,
                        F32)
        cols = blk.emit("iota", [], {"shape": list(sq), "dimension": 1}, sq,
                        F32)
        where = blk.compare("GE" if upper else "LE",
                            blk.binary("subtract", cols, rows), float(k))
        v = blk.select(where, float(hi), float(lo))
        return blk.broadcast(blk.convert(v, dt), tuple(x.shape))

    def state(self, target, t):
        """The param that holds the module's parameter or persistent f32
        buffer `target` (its state_dict name: targets are relative to the
        traced module, as a layer of a scan is traced by itself), or None
        for anything else (a constant, folded where it is used)."""
        if target in self.parameters:
            if t.dtype != torch.float32:
                raise Unsupported(f"a parameter of type {t.dtype}")
            init = "uniform"
            if t.numel() and bool((t == 1).all()):
                init = "ones"
            elif t.numel() and bool((t == 0).all()):
                init = "zeros"
            return self.block.param(target, tuple(t.shape), init=init)
        if target in self.persistent and isinstance(t, torch.Tensor) and \
                t.dtype == torch.float32:
            return self.block.param(target, tuple(t.shape),
                                    values=_json_floats(t.reshape(-1)))
        return None

    def module_state(self, module_path, name):
        """Parameter or buffer `name` of the submodule a leaf lowers."""
        full = f"{module_path}.{name}"
        t = _module_value(self.gm, full)
        v = self.state(full, t)
        return v if v is not None else self.tensor(t, full.replace(".", "_"))

    # ---- the walk ---------------------------------------------------------
    def depends(self, node):
        """Whether node computes on the input or a parameter (then it is
        lowered; otherwise it is static, see lower_static)."""
        return any(a in self.env and a not in self.static and
                   _has_v(self.env[a]) for a in node.all_input_nodes)

    def check_inputs(self, placeholders):
        if not placeholders:
            raise ExportError("the module's forward takes no input")
        for extra in placeholders[1:]:
            if not extra.args:
                raise ExportError(
                    f"the module's forward takes more than one input "
                    f"('{extra.target}' has no default); export takes "
                    "modules of one tensor")

    def bind_input(self, node, index):
        """The value of the forward's index-th argument (the block's x; the
        others keep their defaults)."""
        if index == 0:
            self.env[node] = self.block.x

    def scope_for(self, node):
        """The op scope of what node lowers to: its module path."""
        return scope_of(node.meta.get("hs_module", ""))

    def run(self):
        placeholders = [n for n in self.gm.graph.nodes
                        if n.op == "placeholder"]
        self.check_inputs(placeholders)
        for node in self.gm.graph.nodes:
            self.block.scope = self.scope_for(node)
            if node.op == "placeholder":
                self.bind_input(node, placeholders.index(node))
                continue
            if node.op == "output":
                if self.unsupported:
                    return None  # export lists them; the output may be
                    # made of their stand-ins
                try:
                    return self.finish(node)
                except Unsupported as e:
                    raise ExportError(f"the module's output: {e}") from None
            if node.op == "get_attr":
                try:
                    v = self.state(node.target, node.meta["hs_value"])
                except Unsupported as e:
                    self.fail(node, str(e))
                    continue
                if v is not None:
                    self.env[node] = v
                continue
            # scan's fn may read parameters its node does not list.
            if not self.depends(node) and node.op != "call_module" and \
                    node.target is not markers._scan_layers_node and \
                    markers.scan_fn_of(node.target) is None:
                self.lower_static(node)
                continue
            val = node.meta.get("hs_value")
            if node.op != "call_module" and not _has_tensor(val) and \
                    markers.scan_fn_of(node.target) is None:
                # A size, a dtype, a Python number: its value on the
                # example (the export is specialised to the input shape).
                self.env[node] = val
                continue
            try:
                self.env[node] = self.lower(node)
            except Unsupported as e:
                self.fail(node, str(e))
            except (ValueError, IndexError, KeyError, TypeError,
                    AttributeError, NotImplementedError) as e:
                self.fail(node, f"{type(e).__name__}: {e}")

    def lower_static(self, node):
        """A tensor that depends on neither the input nor a parameter (a
        rotary table from arange, a causal mask from full(-inf).triu(1)):
        computed with ops when every op on the way lowers, so the JSON
        stays small; otherwise its value on the example is folded into a
        constant where it is used."""
        val = node.meta.get("hs_value")
        if not isinstance(val, torch.Tensor) or val.dtype not in _DTYPES:
            return
        mark = self.block.mark()
        try:
            v = self.lower(node)
        except (Unsupported, ValueError, IndexError, KeyError, TypeError,
                AttributeError, NotImplementedError):
            self.block.rollback(mark)
            return
        if isinstance(v, V) and v.shape == tuple(val.shape):
            self.env[node] = v
            self.static.add(node)
        else:
            self.block.rollback(mark)

    def fail(self, node, why):
        label = _op_label(node)
        path = node.meta.get("hs_module", "") or "<root>"
        self.unsupported[(label, path, why)] += 1
        # Keep going with a stand-in so that every unsupported op is found.
        val = node.meta.get("hs_value")
        if isinstance(val, torch.Tensor):
            shape = tuple(val.shape)
            self.env[node] = V("?", shape, _DTYPES.get(val.dtype, F32),
                               self.block)
        elif isinstance(val, (tuple, list)):
            self.env[node] = type(val)(
                V("?", tuple(t.shape), F32, self.block)
                if isinstance(t, torch.Tensor) else t for t in val)

    def finish(self, node):
        out = self.value(node.args[0])
        if isinstance(out, (tuple, list)):
            raise ExportError("the module returns a "
                              f"{type(out).__name__}; export takes modules "
                              "that return one tensor")
        out = self.tensor(out, "output")
        if out.dtype != F32:
            out = self.block.convert(out, F32)
        blk = self.block.to_json(out)
        if blk is not None:
            self.blocks.append(blk)
        return out

    def lower(self, node):
        args = self.value(node.args)
        kwargs = self.value(node.kwargs)
        if node.op == "call_module":
            m = self.gm.get_submodule(node.target)
            fn = _MODULES.get(type(m))
            if fn is None:
                raise Unsupported("no lowering for this module")
            return fn(self, node, m, args, kwargs)
        if node.target is markers._scan_layers_node:
            return self.scan_layers(node, args[0], kwargs["layers"])
        if markers.scan_fn_of(node.target) is not None:
            from .scan_export import lower_scan
            return lower_scan(self, node, args[0], args[1])
        if node.target is markers._place_to_host_node:
            return self.block.placement("place_to_host", self.tensor(args[0]))
        if node.target is markers._place_to_device_node:
            return self.block.placement("place_to_device",
                                        self.tensor(args[0]))
        fn = _FUNCS.get(_canon(node))
        if fn is None:
            raise Unsupported("no lowering for this op")
        return fn(self, node, args, kwargs)

    def out_shape(self, node):
        return tuple(node.meta["hs_value"].shape)

    # ---- scan_layers ------------------------------------------------------
    def scan_layers(self, node, x, paths):
        x = self.tensor(x)
        parent = paths[0].rsplit(".", 1)[0] if "." in paths[0] else ""
        idx = [p.rsplit(".", 1)[-1] for p in paths]
        if self.prefix or idx != [str(i) for i in range(len(paths))] or \
                any(p.rsplit(".", 1)[0] != parent for p in paths if "." in p):
            raise Unsupported(
                "scan_layers exports the whole of one ModuleList or "
                "Sequential in order (layers.0 .. layers.N-1) called from "
                "the top-level module")
        layer = self.module.get_submodule(paths[0])
        out = self.block.to_json(x)
        if out is not None:
            self.blocks.append(out)
        elif x.name != "x":
            raise Unsupported("scan_layers on a value that is not the "
                              "block's input")
        example = node.args[0].meta["hs_value"]
        sub = self.ex.export_layer(layer, paths[0], example)
        self.blocks.append({"repeat": len(paths), "module": parent,
                            "block": sub})
        shape = self.out_shape(node)
        self.block = GraphBlock(shape)
        return self.block.x


def _contains(obj, kind):
    """Whether obj is, or a (nested) list/tuple holds, an instance of kind."""
    if isinstance(obj, kind):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_contains(e, kind) for e in obj)
    return False


def _has_v(obj):
    return _contains(obj, V)


def _has_tensor(obj):
    return _contains(obj, torch.Tensor)


def _triangle(x):
    """(k, hi, lo, upper) when x, over its last two axes and the same in
    every leading index, holds hi on one side of a diagonal and lo on the
    other (a causal mask: tril(ones), full(-inf).triu(1)); else None."""
    if x.dim() < 2 or x.shape[-1] < 2 or x.shape[-2] < 2 or \
            x.numel() > (1 << 24):
        return None
    m = x.detach().reshape(-1, *x.shape[-2:]).to(torch.float32)
    if not bool((m == m[0]).all()):
        return None
    m = m[0]
    vals = torch.unique(m)
    if vals.numel() != 2 or bool(torch.isnan(vals).any()):
        return None
    rows = torch.arange(m.shape[0]).unsqueeze(1)
    cols = torch.arange(m.shape[1]).unsqueeze(0)
    d = (cols - rows).expand(m.shape)
    for hi, lo in ((vals[0], vals[1]), (vals[1], vals[0])):
        dh, dl = d[m == hi], d[m == lo]
        if int(dl.max()) < int(dh.min()):
            return int(dh.min()), float(hi), float(lo), True
        if int(dh.max()) < int(dl.min()):
            return int(dh.max()), float(hi), float(lo), False
    return None


def _json_floats(flat):
    """A tensor's values as JSON numbers: infinities become the largest
    finite f32 of their sign (JSON has none; softmax treats the lowest f32
    as PyTorch treats -inf)."""
    flat = flat.detach().to(torch.float32)
    if bool(torch.isnan(flat).any()):
        raise Unsupported("a NaN in a constant or buffer")
    return flat.clamp(-3.4028234663852886e38, 3.4028234663852886e38).tolist()


# ---- the entry point ----------------------------------------------------------

class _Exporter:
    def __init__(self, module):
        self.module = module
        self.unsupported = collections.Counter()
        self.how = []

    def lower_module(self, module, prefix, example):
        try:
            gm, how = _trace(module, example)
        except ExportError:
            raise
        except Exception as e:
            # Neither trace could follow the forward: say where.
            raise ExportError(
                f"cannot trace {type(module).__name__} "
                f"({prefix or '<root>'}) on an input of shape "
                f"{list(example.shape)}: {type(e).__name__}: {e}") from e
        self.how.append((prefix or "<root>", how))
        L = _Lowering(gm, prefix, tuple(example.shape), self, module,
                      _DTYPES[example.dtype])
        if not isinstance(example, torch.Tensor) or \
                example.dtype not in (torch.float32, torch.int64,
                                      torch.int32):
            raise ExportError("export takes an f32 example input (or integer "
                              "token ids), got "
                              f"{getattr(example, 'dtype', type(example))}")
        L.run()
        self.unsupported.update(L.unsupported)
        return L

    def export_layer(self, layer, path, example):
        L = self.lower_module(layer, path, example)
        if len(L.blocks) != 1 or "repeat" in L.blocks[0]:
            raise ExportError(f"the layers given to scan_layers ({path}) "
                              "must be one graph (no nested scan_layers)")
        return L.blocks[0]


def _params_of(blk):
    """The params of an exported block and of its scan ops' bodies."""
    out = set(blk.get("params", {}))
    for op in blk.get("ops", []):
        if op.get("op") == "scan":
            out |= set(op["body"].get("params", {}))
    return out


_MODEL_DTYPES = ("f32", "bf16", "f16")


def export(module, example_input, *, loop="unrolled", name=None,
           seed=0, device=None, train=None, residuals=None, dtype="f32"):
    """The model JSON (a dict) of `module` applied to `example_input`.

    Parameters and buffers keep the module's state_dict names and op_names
    its module paths; scan_layers calls become repeats that hloscope
    traces as scans when loop="scan". The module is put in eval mode
    (dropout is the identity). dtype="bf16" or "f16" runs the model at
    that type, as module.to(torch.bfloat16) with a bf16 input would: the
    parameters, buffers, input and activations (the module itself is
    traced in f32). Raises ExportError listing every op it cannot lower
    with its module path and count."""
    if dtype not in _MODEL_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(_MODEL_DTYPES)}, "
                         f"got {dtype!r}")
    if dtype != "f32" and train:
        raise ValueError(f"training a {dtype} model is not supported (the "
                         "loss and optimizer are f32)")
    if loop not in ("unrolled", "scan"):
        raise ValueError(f'loop must be "unrolled" or "scan", got {loop!r}')
    if not isinstance(example_input, torch.Tensor):
        raise ExportError("export takes one example tensor")
    ids = None
    if not example_input.is_floating_point():
        # Token ids: drawn by hloscope in [0, ids), ids the smallest
        # vocabulary of the module's embeddings (or above the example's).
        vocabs = [e.num_embeddings for e in module.modules()
                  if isinstance(e, torch.nn.Embedding)]
        ids = min(vocabs) if vocabs else int(example_input.max()) + 1
    if example_input.dim() not in (2, 3, 4):
        raise ExportError(
            f"the model format takes a 2-D, 3-D or 4-D input ([batch, "
            f"features], [batch, seq, features] or [batch, channels, "
            f"height, width]), got {list(example_input.shape)}")
    was_training = module.training
    module.eval()
    try:
        ex = _Exporter(module)
        L = ex.lower_module(module, "",
                            example_input if ids else example_input.float())
    finally:
        module.train(was_training)
    if ex.unsupported:
        rows = sorted(ex.unsupported.items(), key=lambda kv: (kv[0][1],
                                                              kv[0][0]))
        lines = [f"  {op} at {path} x{n}: {why}"
                 for (op, path, why), n in rows]
        raise ExportError(
            f"{len(rows)} unsupported op(s) in {type(module).__name__}:\n" +
            "\n".join(lines),
            [(op, path, n) for (op, path, why), n in rows])
    seen = {}
    for i, blk in enumerate(L.blocks):
        # A scan body's param named like its block's is that parameter.
        for p in _params_of(blk):
            if p in seen and not p.startswith("_constants."):
                raise ExportError(
                    f"'{p}' is used both before and after a scan_layers "
                    "call (tied weights); the model format gives each "
                    "block its own parameters")
            seen[p] = i
    layers = []
    for blk in L.blocks:
        if "repeat" in blk:
            layers.append(blk)
        else:
            blk = dict(blk)
            layers.append({"module": "", **blk})
    how = "; ".join(f"{path}: {h}" for path, h in ex.how)
    model = {"name": name or type(module).__name__,
             "description": f"exported from PyTorch by hloscope.export "
                            f"(torch.fx trace: {how})",
             "seed": int(seed),
             "input": {"shape": list(example_input.shape),
                       **({"ids": ids} if ids else {})},
             "layers": layers,
             "loop": loop}
    if dtype != "f32":
        model["dtype"] = dtype
    if device:
        model["device"] = device
    if train:
        model["train"] = train
    if residuals:
        model["residuals"] = residuals
    return model
