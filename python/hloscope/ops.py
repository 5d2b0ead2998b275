"""The lowerings of hloscope.export: one function per torch.nn module kept
as an fx leaf (_MODULES, by class) and per function or Tensor method
(_FUNCS, by name: operator.add, torch.add and Tensor.add are "add"). Each
takes the lowering context L (export.py: L.block is the graph block being
built, L.tensor(x) a value of it, L.module_state a leaf's parameter,
L.out_shape the node's shape on the example), the fx node and its
arguments with tensors lowered, and returns the value (or a list of them).
Unsupported says why a node cannot be lowered."""
import math

import torch

from .graph import F32, PRED, S32, V


class Unsupported(Exception):
    pass


_DTYPES = {torch.float32: F32, torch.bool: PRED, torch.int64: S32,
           torch.int32: S32, torch.int16: S32, torch.int8: S32,
           torch.uint8: S32}


def _dtype(t):
    if t.dtype not in _DTYPES:
        raise Unsupported(f"element type {t.dtype} (export f32 modules)")
    return _DTYPES[t.dtype]


def _canon(node):
    """The name a lowering is filed under: a method's name, or a
    function's (operator.add and torch.add are both "add")."""
    if node.op == "call_method":
        return node.target
    return getattr(node.target, "__name__", None) or str(node.target)


def _norm_dim(d, rank):
    d = int(d)
    return d + rank if d < 0 else d


def _arg(args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


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
    w = L.module_state(node.target, "weight")
    b = L.module_state(node.target, "bias") if m.bias is not None else None
    return _linear(L, args[0], w, b)




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
    w = L.module_state(node.target, "weight") if m.weight is not None \
        else None
    b = L.module_state(node.target, "bias") if m.bias is not None else None
    return _layer_norm(L, args[0], w, b, m.eps, len(m.normalized_shape))


@_module(torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)
def _m_batchnorm(L, node, m, args, kw):
    """Eval mode: one batch-norm-inference (ops_vision.py), or without an
    affine weight (x - running_mean) * rsqrt(running_var + eps) * weight +
    bias over the channel axis 1, the statistics the module's own (its
    persistent buffers carry their values)."""
    if m.training or not m.track_running_stats:
        raise Unsupported("batch statistics (export needs eval mode with "
                          "running statistics)")
    y = batch_norm_2d(L, node, m, args[0])
    if y is not None:
        return y
    blk, x = L.block, L.tensor(args[0])
    per_channel = tuple(m.num_features if i == 1 else 1
                        for i in range(len(x.shape)))

    def channel(name):
        return blk.reshape(L.module_state(node.target, name), per_channel)

    inv = blk.unary("rsqrt", blk.binary("add", channel("running_var"),
                                        float(m.eps)))
    y = blk.binary("multiply", blk.binary("subtract", x,
                                          channel("running_mean")), inv)
    if m.affine:
        y = blk.binary("add", blk.binary("multiply", y, channel("weight")),
                       channel("bias"))
    return y


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
    w = L.module_state(node.target, "in_proj_weight")
    bias = L.module_state(node.target, "in_proj_bias") \
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
    out = _linear(L, out, L.module_state(opath, "weight"),
                  L.module_state(opath, "bias")
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
    return _embedding(L, args[0], L.module_state(node.target, "weight"))


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
    full = tuple(int(d) for d in torch.broadcast_shapes(x.shape[:-2],
                                                         y.shape[:-2]))
    x = blk.broadcast(x, full + x.shape[-2:])
    y = blk.broadcast(y, full + y.shape[-2:])
    k = len(full)
    r = blk.dot(x, y, [k + 1], [k], list(range(k)), list(range(k)))
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
    rows = blk.emit("iota", [], {"shape": list(x.shape[-2:]),
                                 "dimension": 0}, x.shape[-2:], F32)
    cols = blk.emit("iota", [], {"shape": list(x.shape[-2:]),
                                 "dimension": 1}, x.shape[-2:], F32)
    diff = blk.binary("subtract", cols, rows)
    keep = blk.compare("GE" if _canon(node) == "triu" else "LE", diff,
                       float(k))
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


# The vision lowerings register themselves in the tables above.
from .ops_vision import batch_norm_2d  # noqa: E402
