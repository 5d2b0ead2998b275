"""Tracing a module for export: torch.fx's symbolic trace, or, when the
forward's control flow needs values (an `if` on a tensor, a size), a
concrete trace that evaluates every node as it is recorded. Either way
each node gets `hs_module` (the module path it was recorded in) and
`hs_value` (its value on the example input), which the lowering reads for
shapes and for Python values (sizes, slices)."""
import torch
import torch.fx

from . import markers

# torch.nn modules kept as fx leaves because the exporter lowers them as a
# whole (with their parameters' state_dict names); every other module is
# traced through, so its functional code is lowered op by op.
LEAF_MODULES = (
    torch.nn.Linear, torch.nn.LayerNorm, torch.nn.Embedding,
    torch.nn.Dropout, torch.nn.Identity, torch.nn.ReLU, torch.nn.GELU,
    torch.nn.SiLU, torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.Softmax,
    torch.nn.MultiheadAttention, torch.nn.Conv2d, torch.nn.BatchNorm1d,
    torch.nn.BatchNorm2d,
    torch.nn.MaxPool2d, torch.nn.AvgPool2d, torch.nn.AdaptiveAvgPool2d,
)


class _Tracer(torch.fx.Tracer):
    def __init__(self):
        super().__init__()
        self._stack = []

    def is_leaf_module(self, m, qualname):
        return isinstance(m, LEAF_MODULES)

    def call_module(self, m, forward, args, kwargs):
        self._stack.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._stack.pop()

    def create_node(self, *a, **k):
        n = super().create_node(*a, **k)
        n.meta["hs_module"] = self._stack[-1] if self._stack else ""
        return n


def _module_value(root, target):
    """root's attribute at a dotted path, read from the modules' own dicts:
    while fx traces, Module.__getattr__ is patched to record get_attr
    nodes, and going through it would record (and recurse) again."""
    v = root
    for part in target.split("."):
        if isinstance(v, torch.nn.Module):
            d = object.__getattribute__(v, "__dict__")
            for table in ("_parameters", "_buffers", "_modules"):
                if part in d.get(table, {}):
                    v = d[table][part]
                    break
            else:
                v = object.__getattribute__(v, part)
        else:
            v = getattr(v, part)
    return v


def _run_scan_layers(root, x, layers):
    for path in layers:
        x = root.get_submodule(path)(x)
    return x


def _eval_node(root, node, env):
    """The value of node given its inputs' values (env: node -> value)."""
    def get(n):
        # Tensor constants are recorded by create_node, not create_proxy.
        if n not in env and n.op == "get_attr":
            env[n] = _module_value(root, n.target)
            n.meta["hs_value"] = env[n]
        return env[n]
    args = torch.fx.node.map_arg(node.args, get)
    kwargs = torch.fx.node.map_arg(node.kwargs, get)
    if node.op == "get_attr":
        return _module_value(root, node.target)
    if node.op == "call_function":
        if node.target is markers._scan_layers_node:
            return _run_scan_layers(root, args[0], kwargs["layers"])
        return node.target(*args, **kwargs)
    if node.op == "call_method":
        return getattr(args[0], node.target)(*args[1:], **kwargs)
    if node.op == "call_module":
        return root.get_submodule(node.target)(*args, **kwargs)
    raise RuntimeError(f"cannot evaluate a {node.op} node")


def _is_python_value(v):
    if isinstance(v, (bool, int, float, torch.Size, torch.dtype)):
        return True
    if isinstance(v, tuple) and v and all(isinstance(e, int) for e in v):
        return True
    return False


class _unpatched:
    """While fx traces, Module.__call__ and __getattr__ record nodes;
    evaluating a node on real tensors needs the originals back."""

    def __enter__(self):
        from torch.fx import _symbolic_trace as st
        self.saved = (torch.nn.Module.__call__, torch.nn.Module.__getattr__)
        torch.nn.Module.__call__ = st._orig_module_call
        torch.nn.Module.__getattr__ = st._orig_module_getattr

    def __exit__(self, *exc):
        torch.nn.Module.__call__, torch.nn.Module.__getattr__ = self.saved


class _nothing:
    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


class _ConcreteTracer(_Tracer):
    """Evaluates each node on the example input as it is recorded, so the
    forward's Python control flow can ask for values (bool, iteration)."""

    def __init__(self, examples):
        super().__init__()
        self._examples = list(examples)  # one per placeholder, in order
        self._env = {}

    def create_proxy(self, kind, target, args, kwargs, name=None,
                     type_expr=None, proxy_factory_fn=None):
        p = super().create_proxy(kind, target, args, kwargs, name, type_expr,
                                 proxy_factory_fn)
        node = p.node
        if node.op == "placeholder":
            value = self._examples.pop(0) if self._examples else \
                node.args[0] if node.args else None
        else:
            # Only a module call (or the layers of scan_layers, scan's fn)
            # goes through the patched Module methods; swapping them back
            # costs a type-cache flush, so functions and methods skip it.
            needs = node.op == "call_module" or \
                node.target is markers._scan_layers_node or \
                markers.scan_fn_of(node.target) is not None
            with torch.no_grad(), (_unpatched() if needs else _nothing()):
                value = _eval_node(self.root, node, self._env)
        self._env[node] = value
        node.meta["hs_value"] = value
        if node.op in ("call_function", "call_method") and \
                node.target is not getattr and _is_python_value(value):
            # Sizes and numbers are the example's: the forward's Python
            # code (torch.arange(seq), b, s, d = x.shape) sees them as
            # they are, and the export is specialised to the input shape.
            return value
        return p

    def to_bool(self, obj):
        return bool(obj.node.meta["hs_value"])

    def iter(self, obj):
        n = len(obj.node.meta["hs_value"])
        return iter([obj[i] for i in range(n)])


def _proxy_iter(self):
    """torch.fx.Proxy.__iter__ with the calling instruction found by its
    offset: torch 1.13 indexes dis.get_instructions by f_lasti // 2, which
    Python 3.11's inline caches break (`a, b = x.chunk(2)` then fails with
    an IndexError)."""
    import dis
    import inspect
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


class _fixed_proxy_iter:
    def __enter__(self):
        self.saved = torch.fx.Proxy.__iter__
        torch.fx.Proxy.__iter__ = _proxy_iter

    def __exit__(self, *exc):
        torch.fx.Proxy.__iter__ = self.saved


def trace(module, example):
    """example: the forward's input, or a tuple of them (one per argument,
    as a scan body takes its carries and slices)."""
    with _fixed_proxy_iter():
        return _trace(module, example if isinstance(example, tuple)
                      else (example,))


def _trace(module, examples):
    """(GraphModule, how) with hs_module and hs_value on every node; how is
    "symbolic" or "concrete"."""
    how = "symbolic"
    try:
        graph = _Tracer().trace(module)
    except (torch.fx.proxy.TraceError, TypeError, RuntimeError) as e:
        how = "concrete: " + str(e).splitlines()[0][:200]
        tracer = _ConcreteTracer(examples)
        graph = tracer.trace(module)
        gm = torch.fx.GraphModule(module, graph)
        _fill_outputs(graph, tracer._env)
        return gm, how
    gm = torch.fx.GraphModule(module, graph)
    env = {}
    given = list(examples)
    with torch.no_grad():
        for node in graph.nodes:
            if node.op == "placeholder":
                env[node] = given.pop(0) if given else node.args[0] \
                    if node.args else None
            elif node.op == "output":
                env[node] = torch.fx.node.map_arg(node.args[0],
                                                  lambda n: env[n])
            else:
                env[node] = _eval_node(module, node, env)
            node.meta["hs_value"] = env[node]
    return gm, how


def _fill_outputs(graph, env):
    for node in graph.nodes:
        if node.op == "output":
            node.meta["hs_value"] = torch.fx.node.map_arg(
                node.args[0], lambda n: env[n])
        elif node.op == "placeholder" and node not in env:
            node.meta["hs_value"] = node.args[0] if node.args else None
