"""Building one `graph` block of hloscope's model JSON: named params, HLO-
level ops with their shapes tracked here (the exporter needs them to
broadcast and to check what it emits), and each op's module scope."""
import math
import re

# The model format's element types (docs/MODEL_FORMAT.md, graph ops).
F32, S32, PRED = "f32", "s32", "pred"
# The lowest and highest finite f32: -inf / inf in PyTorch masks become
# these (JSON has no infinities); softmax turns the lowest into exactly 0.
F32_MAX = 3.4028234663852886e38


class V:
    """A value of the block: the name an op or param defines, its shape
    and element type."""
    __slots__ = ("name", "shape", "dtype", "block")

    def __init__(self, name, shape, dtype, block):
        self.name, self.shape, self.dtype, self.block = (
            name, tuple(int(d) for d in shape), dtype, block)

    def __repr__(self):
        return f"V({self.name}, {list(self.shape)}, {self.dtype})"


def _ident(s):
    s = re.sub(r"[^A-Za-z0-9_]", "_", s)
    if not s or s[0].isdigit():
        s = "v_" + s
    return s[:56]


def broadcast_shapes(*shapes):
    r = max(len(s) for s in shapes)
    out = []
    for i in range(r):
        ds = {s[i - (r - len(s))] for s in shapes if i >= r - len(s)}
        ds.discard(1)
        if len(ds) > 1:
            raise ValueError(f"shapes {[list(s) for s in shapes]} do not "
                             "broadcast")
        out.append(ds.pop() if ds else 1)
    return tuple(out)


class GraphBlock:
    def __init__(self, input_shape, input_dtype=F32):
        self.params = {}
        self.ops = []
        self.names = {"x"}
        self._next = {}
        self.constants = {}  # (shape, dtype, bytes) -> V, see tensor()
        self.scope = ""
        self.x = V("x", input_shape, input_dtype, self)

    # ---- names and params ----
    def input(self, name, shape, dtype):
        """Another input of the block (a scan body's carries and slices)."""
        self.names.add(name)
        return V(name, shape, dtype, self)

    def fresh(self, base):
        """A new name of the block (a scan op's outputs)."""
        return self._fresh(base)

    def _fresh(self, base):
        base = _ident(base)
        # A counter per base keeps naming linear in the number of ops.
        k = self._next.get(base, 1)
        name = base if k == 1 else f"{base}_{k}"
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self._next[base] = k + 1
        self.names.add(name)
        return name

    def param(self, name, shape, init=None, values=None):
        """A param named by its state_dict path (or a constant's name)."""
        if name in self.params:
            return self.params[name][1]
        spec = {"shape": list(shape)}
        if values is not None:
            spec["values"] = values
        elif init and init != "uniform":
            spec["init"] = init
        v = V(name, shape, F32, self)
        self.names.add(name)
        self.params[name] = (spec, v)
        return v

    def mark(self):
        """A point to roll back to (rollback) when a lowering gives up."""
        return (len(self.ops), set(self.params))

    def rollback(self, mark):
        n, params = mark
        del self.ops[n:]
        for k in set(self.params) - params:
            del self.params[k]

    # ---- ops ----
    def emit(self, op, args, attrs, shape, dtype, base=None):
        name = self._fresh(base or op)
        o = {"name": name, "op": op, "args": [a.name for a in args]}
        if attrs:
            o["attrs"] = attrs
        if self.scope is not None:  # None: the default (a scan body's loop)
            o["scope"] = self.scope
        self.ops.append(o)
        return V(name, shape, dtype, self)

    def to_json(self, output):
        if not self.ops:
            return None
        blk = {"type": "graph"}
        if self.params:
            blk["params"] = {k: spec for k, (spec, _) in self.params.items()}
        blk["ops"] = self.ops
        blk["output"] = output.name
        return blk

    # ---- helpers that keep shapes ----
    def const(self, value, shape=(), dtype=F32):
        value = float(value)
        if math.isnan(value):
            raise ValueError("a NaN constant cannot be exported")
        value = max(-F32_MAX, min(F32_MAX, value))
        if dtype == PRED:
            value = 1.0 if value else 0.0
        v = self.emit("constant", [], {"value": value, "shape": list(shape)},
                      shape, F32, "c")
        return self.convert(v, dtype)

    def convert(self, v, dtype):
        if v.dtype == dtype:
            return v
        return self.emit("convert", [v], {"type": dtype}, v.shape, dtype)

    def reshape(self, v, shape):
        shape = tuple(int(d) for d in shape)
        if v.shape == shape:
            return v
        return self.emit("reshape", [v], {"shape": list(shape)}, shape,
                         v.dtype)

    def broadcast(self, v, shape):
        """numpy broadcasting of v to shape, as an explicit HLO broadcast
        (size-1 dimensions are dropped first)."""
        shape = tuple(int(d) for d in shape)
        if v.shape == shape:
            return v
        lead = len(shape) - len(v.shape)
        keep = [i for i, d in enumerate(v.shape)
                if not (d == 1 and shape[lead + i] != 1)]
        if len(keep) != len(v.shape):
            v = self.reshape(v, [v.shape[i] for i in keep])
        return self.emit("broadcast", [v],
                         {"shape": list(shape),
                          "dimensions": [lead + i for i in keep]},
                         shape, v.dtype)

    def transpose(self, v, perm):
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return v
        return self.emit("transpose", [v], {"dimensions": perm},
                         [v.shape[p] for p in perm], v.dtype)

    def slice(self, v, start, limit, stride=None):
        shape = [max(0, -(-(hi - lo) // st)) for lo, hi, st in
                 zip(start, limit, stride or [1] * len(start))]
        if list(start) == [0] * len(start) and list(limit) == list(v.shape) \
                and (stride is None or all(s == 1 for s in stride)):
            return v
        attrs = {"start": list(start), "limit": list(limit)}
        if stride and any(s != 1 for s in stride):
            attrs["stride"] = list(stride)
        return self.emit("slice", [v], attrs, shape, v.dtype)

    def unary(self, op, v):
        v = self.convert(v, F32) if op not in ("negate", "abs", "not",
                                               "sign") else v
        return self.emit(op, [v], None, v.shape, v.dtype)

    def _promote(self, values, dtype, out):
        """values (V or Python numbers) as operands of one type and shape."""
        return [self.broadcast(self.convert(x, dtype), out)
                if isinstance(x, V) else self.const(x, out, dtype)
                for x in values]

    @staticmethod
    def _common_type(values):
        """numpy-like promotion over pred < s32 < f32 (Python floats are
        f32, ints s32, bools pred)."""
        types = {x.dtype if isinstance(x, V) else
                 PRED if isinstance(x, bool) else
                 S32 if isinstance(x, int) else F32 for x in values}
        for t in (F32, S32, PRED):
            if t in types:
                return t
        return F32

    @staticmethod
    def _out_shape(values):
        return broadcast_shapes(*[x.shape for x in values
                                  if isinstance(x, V)])

    def binary(self, op, a, b, dtype=None):
        """Element-wise with numpy broadcasting; a and b are values or
        Python numbers; mixed types promote to f32."""
        out = self._out_shape((a, b))
        dtype = dtype or self._common_type((a, b))
        return self.emit(op, self._promote((a, b), dtype, out), None, out,
                         dtype)

    def compare(self, direction, a, b):
        out = self._out_shape((a, b))
        ops = self._promote((a, b), self._common_type((a, b)), out)
        return self.emit("compare", ops, {"direction": direction}, out, PRED)

    def select(self, cond, a, b):
        out = self._out_shape((cond, a, b))
        dtype = self._common_type((a, b))
        ops = [self.broadcast(self.convert(cond, PRED), out)]
        ops += self._promote((a, b), dtype, out)
        return self.emit("select", ops, None, out, dtype)

    def reduce(self, v, dims, reducer="add"):
        dims = sorted(set(int(d) for d in dims))
        if not dims:
            return v
        shape = [d for i, d in enumerate(v.shape) if i not in dims]
        attrs = {"dimensions": dims}
        if reducer != "add":
            attrs["reducer"] = reducer
        return self.emit("reduce", [v], attrs, shape, v.dtype)

    def dot(self, a, b, lc, rc, lb=(), rb=()):
        shape = [a.shape[i] for i in lb]
        shape += [d for i, d in enumerate(a.shape) if i not in lc and
                  i not in lb]
        shape += [d for i, d in enumerate(b.shape) if i not in rc and
                  i not in rb]
        attrs = {"lhs_contracting_dims": list(lc),
                 "rhs_contracting_dims": list(rc)}
        if lb:
            attrs["lhs_batch_dims"] = list(lb)
            attrs["rhs_batch_dims"] = list(rb)
        a, b = self.convert(a, F32), self.convert(b, F32)
        return self.emit("dot", [a, b], attrs, shape, F32)

    def concatenate(self, vs, dim):
        shape = list(vs[0].shape)
        shape[dim] = sum(v.shape[dim] for v in vs)
        dtype = F32 if any(v.dtype == F32 for v in vs) else vs[0].dtype
        vs = [self.convert(v, dtype) for v in vs]
        if len(vs) == 1:
            return vs[0]
        return self.emit("concatenate", vs, {"dimension": dim}, shape, dtype)

    def placement(self, op, v):
        return self.emit(op, [v], None, v.shape, v.dtype)
