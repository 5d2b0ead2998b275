"""torch_models.py - the torch.nn equivalent of a hloscope model description.

    import torch_models as tm
    desc = tm.load_json("tests/reference/models/decoder.json")
    model = tm.build(desc)                     # a torch.nn.Module
    tm.load_params(model, "DUMP/params")       # strict: names and shapes
    x = tm.load_input("DUMP/input.npy")
    y = model.double()(x.double())

Module names follow docs/MODEL_FORMAT.md (DESIGN.md, "Model description"):
after expanding `repeat`, top-level block k owns `layers.k.<name>`, and block
i of a sequential owns `<prefix>.<i>.<name>`, so model.state_dict() keys are
exactly the names hloscope writes to DIR/params/<name>.npy.

Runs with Debian's python3-torch 1.13 (/usr/bin/python3); numpy only
otherwise. `graph` blocks (op-level teaching blocks) are not modelled.
"""

import json
import math
import os

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------

ACTIVATIONS = ("relu", "gelu", "silu", "tanh", "sigmoid")


def activation(name):
    """A fresh activation module; gelu is the exact (erf) form."""
    if name == "relu":
        return nn.ReLU()
    if name == "gelu":
        return nn.GELU(approximate="none")
    if name == "silu":
        return nn.SiLU()
    if name == "tanh":
        return nn.Tanh()
    if name == "sigmoid":
        return nn.Sigmoid()
    raise ValueError("unknown activation %r" % (name,))


def activation_fn(name):
    """The functional form of an activation (for mlp)."""
    return {
        "relu": F.relu,
        "gelu": lambda t: F.gelu(t, approximate="none"),
        "silu": F.silu,
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
    }[name]


class Softmax(nn.Module):
    def __init__(self, axis):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        return torch.softmax(x, dim=self.axis)

    def extra_repr(self):
        return "axis=%d" % self.axis


class RMSNorm(nn.Module):
    """x * rsqrt(mean(x^2, -1, keepdim) + eps) * weight (torch 1.13 has no
    nn.RMSNorm)."""

    def __init__(self, features, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        ms = x.pow(2).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(ms + self.eps) * self.weight

    def extra_repr(self):
        return "%d, eps=%g" % (self.weight.shape[0], self.eps)


def norm(kind, features, eps=None):
    """layernorm (eps 1e-5 by default) or rmsnorm (eps 1e-6 by default)."""
    if kind == "layernorm":
        return nn.LayerNorm(features, eps=1e-5 if eps is None else eps)
    if kind == "rmsnorm":
        return RMSNorm(features, 1e-6 if eps is None else eps)
    raise ValueError("unknown norm %r" % (kind,))


class MLP(nn.Module):
    """gated:     down(act(gate(x)) * up(x))
    not gated: down(act(up(x)))
    gate_proj/up_proj: [hidden, features], down_proj: [features, hidden], no
    bias."""

    def __init__(self, features, hidden, act="silu", gated=True):
        super().__init__()
        self.gated = gated
        self.act_name = act
        self.act = activation_fn(act)
        if gated:
            self.gate_proj = nn.Linear(features, hidden, bias=False)
        self.up_proj = nn.Linear(features, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, features, bias=False)

    def forward(self, x):
        if self.gated:
            h = self.act(self.gate_proj(x)) * self.up_proj(x)
        else:
            h = self.act(self.up_proj(x))
        return self.down_proj(h)

    def extra_repr(self):
        return "activation=%s, gated=%s" % (self.act_name, self.gated)


class Attention(nn.Module):
    """Multi-head self-attention over [batch, seq, features]:
    q,k,v = x W^T split into `heads` heads of head_dim = features / heads
    (feature f belongs to head f // head_dim), scores = q k^T / sqrt(head_dim),
    causal mask (key j visible from query i iff j <= i), softmax over keys,
    heads concatenated back, then o_proj. No biases."""

    def __init__(self, features, heads, causal=True):
        super().__init__()
        if features % heads != 0:
            raise ValueError("heads (%d) must divide features (%d)" % (heads, features))
        self.heads = heads
        self.causal = causal
        self.q_proj = nn.Linear(features, features, bias=False)
        self.k_proj = nn.Linear(features, features, bias=False)
        self.v_proj = nn.Linear(features, features, bias=False)
        self.o_proj = nn.Linear(features, features, bias=False)

    def forward(self, x):
        b, s, f = x.shape
        h = self.heads
        d = f // h

        def split(t):  # [b, s, f] -> [b, h, s, d]
            return t.reshape(b, s, h, d).transpose(1, 2)

        q = split(self.q_proj(x))
        k = split(self.k_proj(x))
        v = split(self.v_proj(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
        if self.causal:
            visible = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~visible, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        o = torch.matmul(p, v).transpose(1, 2).reshape(b, s, f)
        return self.o_proj(o)

    def extra_repr(self):
        return "heads=%d, causal=%s" % (self.heads, self.causal)


class Decoder(nn.Module):
    """Pre-norm decoder layer:
        h   = x + attn(input_norm(x))
        out = h + mlp(post_norm(h))
    causal attention, gated silu mlp; norms with their default eps."""

    def __init__(self, features, heads, hidden, norm_kind="rmsnorm"):
        super().__init__()
        self.input_norm = norm(norm_kind, features)
        self.attn = Attention(features, heads, causal=True)
        self.post_norm = norm(norm_kind, features)
        self.mlp = MLP(features, hidden, "silu", gated=True)

    def forward(self, x):
        h = x + self.attn(self.input_norm(x))
        return h + self.mlp(self.post_norm(h))


class Sequential(nn.Sequential):
    """Children named 0, 1, ... like nn.Sequential."""


class Model(nn.Module):
    """layers.0, layers.1, ... applied in order."""

    def __init__(self, blocks):
        super().__init__()
        self.layers = nn.ModuleList(blocks)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# ---------------------------------------------------------------------------
# Description -> modules
# ---------------------------------------------------------------------------

def load_json(path):
    with open(path) as f:
        return json.load(f)


def expand(blocks):
    """Expands {"repeat": N, "block": B} into N copies of B."""
    out = []
    for b in blocks:
        if "repeat" in b:
            out.extend([b["block"]] * int(b["repeat"]))
        else:
            out.append(b)
    return out


def build_block(b, shape):
    """Returns (module, output shape) for block description b applied to an
    input of `shape` (a list: [batch, features] or [batch, seq, features])."""
    t = b["type"]
    f = shape[-1]
    if t == "linear":
        out = int(b["features"])
        return nn.Linear(f, out, bias=bool(b.get("bias", True))), shape[:-1] + [out]
    if t in ACTIVATIONS:
        return activation(t), shape
    if t == "softmax":
        return Softmax(int(b.get("axis", -1))), shape
    if t == "layernorm":
        return nn.LayerNorm(f, eps=float(b.get("eps", 1e-5))), shape
    if t == "rmsnorm":
        return RMSNorm(f, float(b.get("eps", 1e-6))), shape
    if t == "mlp":
        return MLP(f, int(b["hidden"]), b.get("activation", "silu"),
                   bool(b.get("gated", True))), shape
    if t == "attention":
        if len(shape) != 3:
            raise ValueError("attention needs a [batch, seq, features] input")
        return Attention(f, int(b["heads"]), bool(b.get("causal", True))), shape
    if t == "decoder":
        if len(shape) != 3:
            raise ValueError("decoder needs a [batch, seq, features] input")
        return Decoder(f, int(b["heads"]), int(b["hidden"]),
                       b.get("norm", "rmsnorm")), shape
    if t == "sequential":
        mods = []
        for sub in expand(b["blocks"]):
            m, shape = build_block(sub, shape)
            mods.append(m)
        return Sequential(*mods), shape
    if t == "graph":
        raise NotImplementedError("graph blocks have no torch reference")
    raise ValueError("unknown block type %r" % (t,))


def has_graph(desc):
    """Whether the description uses a `graph` block (not modelled here)."""
    def walk(blocks):
        for b in expand(blocks):
            if b.get("type") == "graph":
                return True
            if b.get("type") == "sequential" and walk(b.get("blocks", [])):
                return True
        return False
    return walk(desc.get("layers", []))


def build(desc):
    """The torch.nn.Module of a model description (a dict); float32."""
    shape = [int(d) for d in desc["input"]["shape"]]
    mods = []
    for b in expand(desc["layers"]):
        m, shape = build_block(b, shape)
        mods.append(m)
    return Model(mods)


def output_shape(desc):
    shape = [int(d) for d in desc["input"]["shape"]]
    for b in expand(desc["layers"]):
        _, shape = build_block(b, shape)
    return shape


# ---------------------------------------------------------------------------
# Loading hloscope's dump
# ---------------------------------------------------------------------------

def read_params(params_dir):
    """{state_dict name: np.ndarray} from DIR/params/<name>.npy."""
    out = {}
    if os.path.isdir(params_dir):
        for fn in sorted(os.listdir(params_dir)):
            if fn.endswith(".npy"):
                out[fn[:-4]] = np.load(os.path.join(params_dir, fn))
    return out


def load_params(model, params_dir):
    """Copies DIR/params/*.npy into model's state_dict. Strict: the set of
    names must equal the state_dict keys and every shape must match; raises
    ValueError listing every difference otherwise."""
    arrays = read_params(params_dir)
    sd = model.state_dict()
    problems = []
    for k in sorted(set(sd) - set(arrays)):
        problems.append("missing in dump: %s %s" % (k, list(sd[k].shape)))
    for k in sorted(set(arrays) - set(sd)):
        problems.append("unexpected in dump: %s %s" % (k, list(arrays[k].shape)))
    for k in sorted(set(sd) & set(arrays)):
        if list(sd[k].shape) != list(arrays[k].shape):
            problems.append("shape of %s: dump %s, torch %s"
                            % (k, list(arrays[k].shape), list(sd[k].shape)))
        elif arrays[k].dtype != np.float32:
            problems.append("dtype of %s: %s, expected float32" % (k, arrays[k].dtype))
    if problems:
        raise ValueError("parameters do not match the torch model:\n  "
                         + "\n  ".join(problems))
    new = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}
    model.load_state_dict(new, strict=True)
    return arrays


def load_input(path):
    return torch.from_numpy(np.ascontiguousarray(np.load(path)))


# ---------------------------------------------------------------------------
# The documented generator (hs_model.h), to check dumps independently
# ---------------------------------------------------------------------------

_M64 = (1 << 64) - 1


def _splitmix64_int(z):
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _splitmix64_np(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _fnv1a64(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h ^= c
        h = (h * 0x100000001B3) & _M64
    return h


def fill_uniform(seed, stream, lo, hi, n):
    """hs_model_fill_uniform in numpy: n float32 values in [lo, hi).

    splitmix64 here is the whole step (add the golden gamma, then mix), as
    in engine/src/model/params.c; element i mixes key + (i + 1) * gamma,
    i.e. splitmix64(key + i * gamma)."""
    key = _splitmix64_int(_splitmix64_int(seed & _M64) ^ _fnv1a64(stream))
    with np.errstate(over="ignore"):
        i = np.arange(0, n, dtype=np.uint64)
        bits = _splitmix64_np(np.uint64(key) + i * np.uint64(0x9E3779B97F4A7C15))
    u = (bits >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)
    lo32, hi32 = np.float32(lo), np.float32(hi)
    return (lo32 + (hi32 - lo32) * u).astype(np.float32)


def expected_params(model, seed):
    """{state_dict name: np.ndarray} as hloscope draws them (hs_model.h):
    Linear weight and bias U(-1/sqrt(in), 1/sqrt(in)) from the stream named
    after the parameter (PyTorch's default bounds), norm weights ones,
    norm biases zeros."""
    out = {}
    for prefix, mod in model.named_modules():
        pre = prefix + "." if prefix else ""
        if isinstance(mod, nn.Linear):
            bound = float(np.float32(1.0 / math.sqrt(mod.in_features)))
            for pname, p in mod.named_parameters(recurse=False):
                name = pre + pname
                out[name] = fill_uniform(seed, name, -bound, bound,
                                         p.numel()).reshape(tuple(p.shape))
        elif isinstance(mod, (nn.LayerNorm, RMSNorm)):
            for pname, p in mod.named_parameters(recurse=False):
                fill = np.ones if pname == "weight" else np.zeros
                out[pre + pname] = fill(tuple(p.shape), dtype=np.float32)
    return out
