"""hloscope.export: a PyTorch module to hloscope's model JSON.

The module is traced (trace.py), then every node of the fx graph is
lowered to ops of `graph` blocks (graph.py) whose params carry the
module's state_dict names and whose op scopes are the module paths. A
scan_layers call ends the current graph block and becomes
{"repeat": N, "module": <the layers' path>, "block": <layer 0 exported>};
"loop" says whether hloscope traces it as a scan or unrolled. What cannot
be lowered is collected and reported together (ExportError)."""
import collections
import math
import operator

import torch
import torch.nn.functional as F

from . import markers
from .graph import F32, PRED, S32, GraphBlock, V
from .trace import trace as _trace


class ExportError(ValueError):
    """The module uses ops the exporter cannot lower. `unsupported` lists
    (op, module path, count)."""

    def __init__(self, message, unsupported=()):
        super().__init__(message)
        self.unsupported = list(unsupported)


class Unsupported(Exception):
    pass


_DTYPES = {torch.float32: F32, torch.bool: PRED, torch.int64: S32,
           torch.int32: S32, torch.int16: S32, torch.int8: S32,
           torch.uint8: S32}


def _dtype(t):
    if t.dtype not in _DTYPES:
        raise Unsupported(f"element type {t.dtype} (export f32 modules)")
    return _DTYPES[t.dtype]


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
    if mod.startswith("torch.nn.functional") or name in dir(F) and \
            getattr(F, name, None) is t:
        return "F." + name
    if mod == "_operator":
        return "operator." + name
    return ("torch." if mod.startswith("torch") else "") + name


def _canon(node):
    if node.op == "call_method":
        return node.target
    t = node.target
    name = getattr(t, "__name__", None) or str(t)
    return name.lstrip("_") if name in ("__getitem__",) else name


def _norm_dim(d, rank):
    d = int(d)
    return d + rank if d < 0 else d


def _arg(args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


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

    def get_attr(self, node):
        target = node.target
        t = node.meta["hs_value"]
        # Targets are relative to the traced module (a layer of a scan is
        # traced by itself): the state_dict name within the block.
        local = target
        if target in self.parameters:
            if t.dtype != torch.float32:
                raise Unsupported(f"parameter of type {t.dtype}")
            init = "uniform"
            if t.numel() and bool((t == 1).all()):
                init = "ones"
            elif t.numel() and bool((t == 0).all()):
                init = "zeros"
            return self.block.param(local, tuple(t.shape), init=init)
        if target in self.persistent and isinstance(t, torch.Tensor) and \
                t.dtype == torch.float32:
            return self.block.param(local, tuple(t.shape),
                                    values=_json_floats(t.reshape(-1)))
        return None  # a constant: folded where it is used

    # ---- the walk ---------------------------------------------------------
    def depends(self, node):
        """Whether node computes on the input or a parameter (then it is
        lowered; otherwise it is static, see lower_static)."""
        return any(a in self.env and a not in self.static and
                   _has_v(self.env[a]) for a in node.all_input_nodes)

    def run(self):
        placeholders = [n for n in self.gm.graph.nodes
                        if n.op == "placeholder"]
        if not placeholders:
            raise ExportError("the module's forward takes no input")
        for extra in placeholders[1:]:
            if not extra.args:
                raise ExportError(
                    f"the module's forward takes more than one input "
                    f"('{extra.target}' has no default); export takes "
                    "modules of one tensor")
        for node in self.gm.graph.nodes:
            self.block.scope = scope_of(node.meta.get("hs_module", ""))
            if node.op == "placeholder":
                if node is placeholders[0]:
                    self.env[node] = self.block.x
                continue
            if node.op == "output":
                try:
                    return self.finish(node)
                except Unsupported as e:
                    raise ExportError(f"the module's output: {e}") from None
            if node.op == "get_attr":
                v = self.get_attr(node)
                if v is not None:
                    self.env[node] = v
                continue
            if not self.depends(node) and node.op != "call_module" and \
                    node.target is not markers._scan_layers_node:
                self.lower_static(node)
                continue
            val = node.meta.get("hs_value")
            if node.op != "call_module" and not _has_tensor(val):
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


# ---- lowerings -------------------------------------------------------------
_FUNCS = {}
_MODULES = {}


def _registers(table):
    """A decorator factory: @deco(key, ...) files the function under each
    key of table (functions and methods by name, modules by class)."""
    def register(*keys):
        def deco(fn):
            for k in keys:
                table[k] = fn
            return fn
        return deco
    return register


_func = _registers(_FUNCS)
_module = _registers(_MODULES)


def _linear(L, x, w, b):
    x = L.tensor(x)
    y = L.block.dot(x, w, [len(x.shape) - 1], [1])
    if b is not None:
        y = L.block.binary("add", y, b)
    return y


@_module(torch.nn.Linear)
def _m_linear(L, node, m, args, kw):
    w = L.get_attr_param(node.target, "weight")
    b = L.get_attr_param(node.target, "bias") if m.bias is not None else None
    return _linear(L, args[0], w, b)


def _get_attr_param(self, module_path, name):
    full = f"{module_path}.{name}"
    fake = type("N", (), {})()
    fake.target = full
    fake.meta = {"hs_value": self.gm.get_submodule(module_path)
                 .get_parameter(name) if name in dict(
                     self.gm.get_submodule(module_path).named_parameters(
                         recurse=False)) else
                 self.gm.get_submodule(module_path).get_buffer(name)}
    v = self.get_attr(fake)
    return v if v is not None else self.tensor(fake.meta["hs_value"],
                                               full.replace(".", "_"))


_Lowering.get_attr_param = _get_attr_param


def _layer_norm(L, x, w, b, eps, n_axes=1):
    x = L.tensor(x)
    r = len(x.shape)
    dims = list(range(r - n_axes, r))
    n = 1
    for d in dims:
        n *= x.shape[d]
    blk = L.block
    mean = blk.binary("divide", blk.reduce(x, dims), float(n))
    xc = blk.binary("subtract", x, blk.reshape(
        mean, [1 if i in dims else d for i, d in enumerate(x.shape)]))
    var = blk.binary("divide", blk.reduce(blk.binary("multiply", xc, xc),
                                          dims), float(n))
    inv = blk.unary("rsqrt", blk.binary("add", var, float(eps)))
    y = blk.binary("multiply", xc, blk.reshape(
        inv, [1 if i in dims else d for i, d in enumerate(x.shape)]))
    if w is not None:
        y = blk.binary("multiply", y, L.tensor(w))
    if b is not None:
        y = blk.binary("add", y, L.tensor(b))
    return y


@_module(torch.nn.LayerNorm)
def _m_layernorm(L, node, m, args, kw):
    w = L.get_attr_param(node.target, "weight") if m.weight is not None \
        else None
    b = L.get_attr_param(node.target, "bias") if m.bias is not None else None
    return _layer_norm(L, args[0], w, b, m.eps, len(m.normalized_shape))


@_module(torch.nn.Dropout, torch.nn.Identity)
def _m_identity(L, node, m, args, kw):
    if isinstance(m, torch.nn.Dropout) and m.training and m.p > 0:
        raise Unsupported("dropout in training mode (export calls "
                          "module.eval() first)")
    return L.tensor(args[0])


def _relu(L, x):
    return L.block.binary("maximum", L.tensor(x), 0.0)


def _gelu(L, x, approximate="none"):
    blk, x = L.block, L.tensor(x)
    if approximate == "tanh":
        inner = blk.binary("multiply", blk.binary(
            "add", x, blk.binary("multiply", blk.binary(
                "multiply", blk.binary("multiply", x, x), x), 0.044715)),
            math.sqrt(2.0 / math.pi))
        return blk.binary("multiply", blk.binary("multiply", x, 0.5),
                          blk.binary("add", blk.unary("tanh", inner), 1.0))
    e = blk.unary("erf", blk.binary("multiply", x, 1.0 / math.sqrt(2.0)))
    return blk.binary("multiply", blk.binary("multiply", x, 0.5),
                      blk.binary("add", e, 1.0))


def _silu(L, x):
    x = L.tensor(x)
    return L.block.binary("multiply", x, L.block.unary("logistic", x))


def _softmax(L, x, dim, log=False):
    blk, x = L.block, L.tensor(x)
    d = _norm_dim(dim if dim is not None else -1, len(x.shape))
    keep = [1 if i == d else s for i, s in enumerate(x.shape)]
    m = blk.reshape(blk.reduce(x, [d], "max"), keep)
    z = blk.binary("subtract", x, m)
    e = blk.unary("exponential", z)
    s = blk.reshape(blk.reduce(e, [d]), keep)
    if log:
        return blk.binary("subtract", z, blk.unary("log", s))
    return blk.binary("divide", e, s)


@_module(torch.nn.ReLU)
def _m_relu(L, node, m, args, kw):
    return _relu(L, args[0])


@_module(torch.nn.GELU)
def _m_gelu(L, node, m, args, kw):
    return _gelu(L, args[0], getattr(m, "approximate", "none"))


@_module(torch.nn.SiLU)
def _m_silu(L, node, m, args, kw):
    return _silu(L, args[0])


@_module(torch.nn.Tanh)
def _m_tanh(L, node, m, args, kw):
    return L.block.unary("tanh", L.tensor(args[0]))


@_module(torch.nn.Sigmoid)
def _m_sigmoid(L, node, m, args, kw):
    return L.block.unary("logistic", L.tensor(args[0]))


@_module(torch.nn.Softmax)
def _m_softmax(L, node, m, args, kw):
    return _softmax(L, args[0], m.dim)


def _heads(L, t, b, s, h, d):
    """[B, S, E] -> [B, H, S, D]."""
    return L.block.transpose(L.block.reshape(t, (b, s, h, d)), [0, 2, 1, 3])


@_module(torch.nn.MultiheadAttention)
def _m_mha(L, node, m, args, kw):
    """nn.MultiheadAttention with one in_proj_weight (query, key and value
    of one size), as torch.nn.functional.multi_head_attention_forward
    computes it in eval mode: returns (output, weights or None)."""
    if _arg(args, kw, 3, "key_padding_mask") is not None:
        raise Unsupported("key_padding_mask")
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
        raise Unsupported("separate k/v sizes, bias_k/bias_v or "
                          "add_zero_attn")
    need = _arg(args, kw, 4, "need_weights", True)
    mask = _arg(args, kw, 5, "attn_mask")
    average = _arg(args, kw, 6, "average_attn_weights", True)
    blk = L.block
    q_in, k_in, v_in = (L.tensor(_arg(args, kw, i, n))
                        for i, n in enumerate(("query", "key", "value")))
    if len(q_in.shape) != 3:
        raise Unsupported("an unbatched (2-D) query")
    if not m.batch_first:
        q_in, k_in, v_in = (blk.transpose(t, [1, 0, 2])
                            for t in (q_in, k_in, v_in))
    e, h = m.embed_dim, m.num_heads
    d = e // h
    b, sq, sk = q_in.shape[0], q_in.shape[1], k_in.shape[1]
    w = L.get_attr_param(node.target, "in_proj_weight")
    bias = L.get_attr_param(node.target, "in_proj_bias") \
        if m.in_proj_bias is not None else None
    proj = []
    for i, t in enumerate((q_in, k_in, v_in)):
        wi = blk.slice(w, [i * e, 0], [(i + 1) * e, e])
        bi = blk.slice(bias, [i * e], [(i + 1) * e]) if bias else None
        proj.append(_linear(L, t, wi, bi))
    q = _heads(L, blk.binary("multiply", proj[0], 1.0 / math.sqrt(d)),
               b, sq, h, d)
    k = _heads(L, proj[1], b, sk, h, d)
    v = _heads(L, proj[2], b, sk, h, d)
    scores = blk.dot(q, k, [3], [3], [0, 1], [0, 1])  # [B, H, Sq, Sk]
    if mask is not None:
        mask = L.tensor(mask)
        if len(mask.shape) == 3:  # [B * H, Sq, Sk]
            mask = blk.reshape(mask, (b, h, sq, sk))
        if mask.dtype == PRED:
            scores = blk.select(mask, float("-inf"), scores)
        else:
            scores = blk.binary("add", scores, mask)
    probs = _softmax(L, scores, -1)
    out = blk.dot(probs, v, [3], [2], [0, 1], [0, 1])  # [B, H, Sq, D]
    out = blk.reshape(blk.transpose(out, [0, 2, 1, 3]), (b, sq, e))
    opath = node.target + ".out_proj"
    out = _linear(L, out, L.get_attr_param(opath, "weight"),
                  L.get_attr_param(opath, "bias")
                  if m.out_proj.bias is not None else None)
    if not m.batch_first:
        out = blk.transpose(out, [1, 0, 2])
    weights = None
    if need:
        weights = probs
        if average:
            weights = blk.binary("divide", blk.reduce(probs, [1]), float(h))
    return [out, weights]


def _embedding(L, ids, weight):
    """weight[ids] as one-hot(ids) @ weight: exact (each output sums one
    product by 1 and zeros), and no gather op is needed."""
    blk = L.block
    ids = L.tensor(ids)
    if ids.dtype == F32:
        raise Unsupported("an embedding of float values (the ids must be "
                          "an integer input: export with integer ids)")
    vocab = weight.shape[0]
    shape = ids.shape + (vocab,)
    column = blk.reshape(blk.convert(ids, F32), ids.shape + (1,))
    onehot = blk.compare("EQ", blk.broadcast(column, shape),
                         blk.emit("iota", [], {"shape": list(shape),
                                               "dimension": len(ids.shape)},
                                  shape, F32))
    return blk.dot(blk.convert(onehot, F32), weight, [len(ids.shape)], [0])


@_module(torch.nn.Embedding)
def _m_embedding(L, node, m, args, kw):
    if m.max_norm is not None:
        raise Unsupported("max_norm (renormalises the weight in place)")
    return _embedding(L, args[0], L.get_attr_param(node.target, "weight"))


@_func("embedding")
def _f_embedding(L, node, a, kw):
    if _arg(a, kw, 3, "max_norm") is not None:
        raise Unsupported("max_norm")
    return _embedding(L, a[0], L.tensor(_arg(a, kw, 1, "weight")))


# ---- functions and methods ---------------------------------------------------

@_func("linear")
def _f_linear(L, node, a, kw):
    return _linear(L, a[0], L.tensor(_arg(a, kw, 1, "weight")),
                   _opt_tensor(L, _arg(a, kw, 2, "bias")))


def _opt_tensor(L, t):
    return None if t is None else L.tensor(t)


@_func("layer_norm")
def _f_layer_norm(L, node, a, kw):
    shape = _arg(a, kw, 1, "normalized_shape")
    return _layer_norm(L, a[0], _opt_tensor(L, _arg(a, kw, 2, "weight")),
                       _opt_tensor(L, _arg(a, kw, 3, "bias")),
                       _arg(a, kw, 4, "eps", 1e-5), len(shape))


@_func("dropout")
def _f_dropout(L, node, a, kw):
    if _arg(a, kw, 2, "training", True) and _arg(a, kw, 1, "p", 0.5) > 0:
        raise Unsupported("dropout with training=True")
    return L.tensor(a[0])


@_func("relu")
def _f_relu(L, node, a, kw):
    return _relu(L, a[0])


@_func("gelu")
def _f_gelu(L, node, a, kw):
    return _gelu(L, a[0], kw.get("approximate", "none"))


@_func("silu")
def _f_silu(L, node, a, kw):
    return _silu(L, a[0])


@_func("softmax", "log_softmax")
def _f_softmax(L, node, a, kw):
    if _arg(a, kw, 2, "dtype") not in (None, torch.float32):
        raise Unsupported("softmax with a dtype")
    return _softmax(L, a[0], _arg(a, kw, 1, "dim"),
                    log=_canon(node) == "log_softmax")


_UNARY = {"neg": "negate", "exp": "exponential", "log": "log",
          "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
          "sigmoid": "logistic", "erf": "erf", "abs": "abs", "sin": "sine",
          "cos": "cosine", "floor": "floor", "ceil": "ceil",
          "log1p": "log-plus-one", "expm1": "exponential-minus-one",
          "sign": "sign", "logical_not": "not", "invert": "not"}


def _unary_fn(op):
    def fn(L, node, a, kw):
        return L.block.unary(op, L.tensor(a[0]))
    return fn


for _n, _op in _UNARY.items():
    _FUNCS[_n] = _unary_fn(_op)

_BINARY = {"add": "add", "iadd": "add", "sub": "subtract",
           "isub": "subtract", "mul": "multiply", "imul": "multiply",
           "truediv": "divide", "div": "divide", "itruediv": "divide",
           "maximum": "maximum", "minimum": "minimum", "pow": "power",
           "and_": "and", "or_": "or", "logical_and": "and",
           "logical_or": "or"}


def _binary_fn(op, reverse=False):
    def fn(L, node, a, kw):
        x, y = a[0], _arg(a, kw, 1, "other")
        if reverse:
            x, y = y, x
        alpha = kw.get("alpha")
        if alpha is not None and alpha != 1:
            y = L.block.binary("multiply", y if not isinstance(
                y, torch.Tensor) else L.tensor(y), float(alpha))
        if isinstance(x, torch.Tensor):
            x = L.tensor(x)
        if isinstance(y, torch.Tensor):
            y = L.tensor(y)
        if op == "power" and isinstance(y, (int, float)) and y == 2:
            x = L.tensor(x)
            return L.block.binary("multiply", x, x)
        if op == "divide":
            if isinstance(x, V) and x.dtype != F32:
                x = L.block.convert(x, F32)
            if isinstance(y, int):
                y = float(y)
        if op == "power" and isinstance(y, int):
            y = float(y)
        return L.block.binary(op, x, y)
    return fn


for _n, _op in _BINARY.items():
    _FUNCS[_n] = _binary_fn(_op)
_FUNCS["rsub"] = _binary_fn("subtract", reverse=True)
_FUNCS["radd"] = _binary_fn("add", reverse=True)
_FUNCS["rmul"] = _binary_fn("multiply", reverse=True)
_FUNCS["rtruediv"] = _binary_fn("divide", reverse=True)

_COMPARE = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT",
            "ge": "GE"}


def _compare_fn(direction):
    def fn(L, node, a, kw):
        x, y = a[0], a[1]
        x = L.tensor(x) if isinstance(x, torch.Tensor) else x
        y = L.tensor(y) if isinstance(y, torch.Tensor) else y
        return L.block.compare(direction, x, y)
    return fn


for _n, _d in _COMPARE.items():
    _FUNCS[_n] = _compare_fn(_d)


@_func("matmul", "bmm", "mm")
def _f_matmul(L, node, a, kw):
    blk = L.block
    x, y = L.tensor(a[0]), L.tensor(_arg(a, kw, 1, "other"))
    out = L.out_shape(node)
    if len(x.shape) == 1:
        x = blk.reshape(x, (1,) + x.shape)
    if len(y.shape) == 1:
        y = blk.reshape(y, y.shape + (1,))
    if len(y.shape) == 2:
        r = blk.dot(x, y, [len(x.shape) - 1], [0])
        return blk.reshape(r, out)
    batch = tuple(out[:-2]) if len(out) >= 2 else ()
    full = tuple(int(d) for d in torch.broadcast_shapes(x.shape[:-2],
                                                         y.shape[:-2]))
    x = blk.broadcast(x, full + x.shape[-2:])
    y = blk.broadcast(y, full + y.shape[-2:])
    k = len(full)
    r = blk.dot(x, y, [k + 1], [k], list(range(k)), list(range(k)))
    del batch
    return blk.reshape(r, out)


@_func("einsum")
def _f_einsum(L, node, a, kw):
    raise Unsupported("einsum (write it as matmul)")


def _reshape_to(L, node, a, kw):
    return L.block.reshape(L.tensor(a[0]), L.out_shape(node))


for _n in ("view", "reshape", "flatten", "unsqueeze", "squeeze",
           "view_as", "reshape_as", "unflatten"):
    _FUNCS[_n] = _reshape_to


def _identity(L, node, a, kw):
    return L.tensor(a[0])


for _n in ("contiguous", "clone", "detach"):
    _FUNCS[_n] = _identity


@_func("to", "float", "type_as", "type")
def _f_to(L, node, a, kw):
    out = node.meta["hs_value"]
    return L.block.convert(L.tensor(a[0]), _dtype(out))


@_func("bool")
def _f_bool(L, node, a, kw):
    return L.block.convert(L.tensor(a[0]), PRED)


@_func("long", "int")
def _f_long(L, node, a, kw):
    return L.block.convert(L.tensor(a[0]), S32)


@_func("expand", "expand_as", "broadcast_to")
def _f_expand(L, node, a, kw):
    return L.block.broadcast(L.tensor(a[0]), L.out_shape(node))


@_func("permute")
def _f_permute(L, node, a, kw):
    x = L.tensor(a[0])
    dims = a[1:] if len(a) > 2 or isinstance(a[1], int) else a[1]
    if "dims" in kw:
        dims = kw["dims"]
    return L.block.transpose(x, [_norm_dim(d, len(x.shape)) for d in dims])


@_func("transpose", "swapaxes")
def _f_transpose(L, node, a, kw):
    x = L.tensor(a[0])
    r = len(x.shape)
    d0, d1 = _norm_dim(a[1], r), _norm_dim(a[2], r)
    perm = list(range(r))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return L.block.transpose(x, perm)


@_func("t")
def _f_t(L, node, a, kw):
    x = L.tensor(a[0])
    return L.block.transpose(x, list(range(len(x.shape)))[::-1])


def _dims_arg(d, rank):
    if d is None:
        return list(range(rank))
    if isinstance(d, int):
        return [_norm_dim(d, rank)]
    return [_norm_dim(e, rank) for e in d]


@_func("sum", "mean")
def _f_reduce(L, node, a, kw):
    x = L.tensor(a[0])
    dims = _dims_arg(_arg(a, kw, 1, "dim"), len(x.shape))
    if x.dtype != F32:
        x = L.block.convert(x, F32)
    r = L.block.reduce(x, dims)
    if _canon(node) == "mean":
        n = 1
        for d in dims:
            n *= x.shape[d]
        r = L.block.binary("divide", r, float(n))
    return L.block.reshape(r, L.out_shape(node))


@_func("amax", "max", "amin", "min")
def _f_max(L, node, a, kw):
    x = L.tensor(a[0])
    name = _canon(node)
    d = _arg(a, kw, 1, "dim")
    if isinstance(d, (V, torch.Tensor)):
        return L.block.binary("maximum" if "max" in name else "minimum",
                              x, L.tensor(d))
    if name in ("max", "min") and d is not None:
        raise Unsupported(f"{name}(dim) returns indices; use amax/amin")
    dims = _dims_arg(d, len(x.shape))
    r = L.block.reduce(x, dims, "max" if "max" in name else "min")
    return L.block.reshape(r, L.out_shape(node))


@_func("var", "std")
def _f_var(L, node, a, kw):
    blk, x = L.block, L.tensor(a[0])
    dims = _dims_arg(_arg(a, kw, 1, "dim"), len(x.shape))
    correction = kw.get("correction")
    if correction is None:
        unbiased = kw.get("unbiased", a[2] if len(a) > 2 and
                          isinstance(a[2], bool) else True)
        correction = 1 if unbiased else 0
    n = 1
    for d in dims:
        n *= x.shape[d]
    keep = [1 if i in dims else s for i, s in enumerate(x.shape)]
    mean = blk.reshape(blk.binary("divide", blk.reduce(x, dims), float(n)),
                       keep)
    xc = blk.binary("subtract", x, mean)
    v = blk.binary("divide", blk.reduce(blk.binary("multiply", xc, xc),
                                        dims), float(n - correction))
    if _canon(node) == "std":
        v = blk.unary("sqrt", v)
    return blk.reshape(v, L.out_shape(node))


@_func("masked_fill")
def _f_masked_fill(L, node, a, kw):
    x = L.tensor(a[0])
    mask = L.tensor(a[1])
    value = a[2]
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        value = float(value)
    value = L.tensor(value) if isinstance(value, (V, torch.Tensor)) else \
        float(value)
    return L.block.select(mask, value, x)


@_func("where")
def _f_where(L, node, a, kw):
    if len(a) != 3:
        raise Unsupported("where with one argument")
    c = L.tensor(a[0])
    x, y = (L.tensor(t) if isinstance(t, (V, torch.Tensor)) else float(t)
            for t in a[1:])
    return L.block.select(c, x, y)


@_func("triu", "tril")
def _f_triu(L, node, a, kw):
    blk, x = L.block, L.tensor(a[0])
    k = _arg(a, kw, 1, "diagonal", 0)
    r = len(x.shape)
    rows = blk.emit("iota", [], {"shape": list(x.shape[-2:]),
                                 "dimension": 0}, x.shape[-2:], F32)
    cols = blk.emit("iota", [], {"shape": list(x.shape[-2:]),
                                 "dimension": 1}, x.shape[-2:], F32)
    diff = blk.binary("subtract", cols, rows)
    keep = blk.compare("GE" if _canon(node) == "triu" else "LE", diff,
                       float(k))
    del r
    return blk.select(keep, x, 0.0 if x.dtype == F32 else 0)


@_func("cat", "concat")
def _f_cat(L, node, a, kw):
    vs = [L.tensor(t) for t in a[0]]
    vs = [v for v in vs if 0 not in v.shape] or vs[:1]
    d = _norm_dim(_arg(a, kw, 1, "dim", 0), len(vs[0].shape))
    return L.block.concatenate(vs, d)


@_func("stack")
def _f_stack(L, node, a, kw):
    vs = [L.tensor(t) for t in a[0]]
    d = _norm_dim(_arg(a, kw, 1, "dim", 0), len(vs[0].shape) + 1)
    vs = [L.block.reshape(v, v.shape[:d] + (1,) + v.shape[d:]) for v in vs]
    return L.block.concatenate(vs, d)


def _split_at(L, x, sizes, d):
    outs, lo = [], 0
    for s in sizes:
        start = [0] * len(x.shape)
        limit = list(x.shape)
        start[d], limit[d] = lo, lo + s
        outs.append(L.block.slice(x, start, limit))
        lo += s
    return outs


@_func("chunk", "split", "split_with_sizes", "tensor_split", "unbind")
def _f_split(L, node, a, kw):
    x = L.tensor(a[0])
    outs = node.meta["hs_value"]
    name = _canon(node)
    if name == "unbind":
        d = _norm_dim(_arg(a, kw, 1, "dim", 0), len(x.shape))
    else:
        d = _norm_dim(_arg(a, kw, 2, "dim", 0), len(x.shape))
    sizes = [o.shape[d] if name != "unbind" else 1 for o in outs]
    parts = _split_at(L, x, sizes, d)
    return [L.block.reshape(p, tuple(o.shape)) for p, o in zip(parts, outs)]


@_func("getitem")
def _f_getitem(L, node, a, kw):
    x, idx = a[0], a[1]
    if isinstance(x, (list, tuple)):
        r = x[idx]
        return r
    if not isinstance(x, (V, torch.Tensor)):
        raise Unsupported(f"indexing a {type(x).__name__}")
    x = L.tensor(x)
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(isinstance(i, (V, torch.Tensor, list)) for i in idx):
        raise Unsupported("indexing with a tensor (gather)")
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    expanded = []
    for i in idx:
        if i is Ellipsis:
            expanded += [slice(None)] * (len(x.shape) - n_real)
        else:
            expanded.append(i)
    start, limit, stride = [], [], []
    d = 0
    for i in expanded:
        if i is None:
            continue
        size = x.shape[d]
        if isinstance(i, int):
            j = i + size if i < 0 else i
            start.append(j)
            limit.append(j + 1)
            stride.append(1)
        else:
            lo, hi, st = i.indices(size)
            if st <= 0:
                raise Unsupported("a negative step")
            start.append(lo)
            limit.append(max(lo, hi))
            stride.append(st)
        d += 1
    while d < len(x.shape):
        start.append(0)
        limit.append(x.shape[d])
        stride.append(1)
        d += 1
    y = L.block.slice(x, start, limit, stride)
    return L.block.reshape(y, L.out_shape(node))


@_func("zeros_like", "ones_like", "full_like", "new_zeros", "new_ones",
       "new_full")
def _f_like(L, node, a, kw):
    t = node.meta["hs_value"]
    return L.tensor(t, node.name)


@_func("arange")
def _f_arange(L, node, a, kw):
    out = node.meta["hs_value"]
    nums = [x for x in a if isinstance(x, (int, float))]
    start, step = (0, 1) if len(nums) < 2 else (nums[0], 1)
    if len(nums) >= 3:
        step = nums[2]
    start, step = kw.get("start", start), kw.get("step", step)
    blk = L.block
    v = blk.emit("iota", [], {"shape": [out.shape[0]], "dimension": 0},
                 (out.shape[0],), F32)
    if step != 1:
        v = blk.binary("multiply", v, float(step))
    if start != 0:
        v = blk.binary("add", v, float(start))
    return blk.convert(v, _dtype(out))


@_func("full", "ones", "zeros", "empty_like")
def _f_full(L, node, a, kw):
    out = node.meta["hs_value"]
    if out.numel() and not bool((out == out.reshape(-1)[0]).all()):
        raise Unsupported("uninitialised values")
    return L.tensor(out, node.name)


@_func("outer", "ger")
def _f_outer(L, node, a, kw):
    x, y = L.tensor(a[0]), L.tensor(a[1])
    blk = L.block
    return blk.binary("multiply", blk.reshape(x, x.shape + (1,)),
                      blk.reshape(y, (1,) + y.shape))


@_func("size", "dim", "getattr", "numel")
def _f_meta(L, node, a, kw):
    return node.meta["hs_value"]  # a Python value on the example


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


def export(module, example_input, *, loop="unrolled", name=None,
           seed=0, device=None, train=None, residuals=None):
    """The model JSON (a dict) of `module` applied to `example_input`.

    Parameters and buffers keep the module's state_dict names and op_names
    its module paths; scan_layers calls become repeats that hloscope
    traces as scans when loop="scan". The module is put in eval mode
    (dropout is the identity). Raises ExportError listing every op it
    cannot lower with its module path and count."""
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
    if example_input.dim() not in (2, 3):
        raise ExportError(
            f"the model format takes a 2-D or 3-D input ([batch, features] "
            f"or [batch, seq, features]), got {list(example_input.shape)}")
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
        for p in blk.get("params", {}):
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
    if device:
        model["device"] = device
    if train:
        model["train"] = train
    if residuals:
        model["residuals"] = residuals
    return model
