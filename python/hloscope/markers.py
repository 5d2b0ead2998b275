"""scan_layers, scan, place_to_host and place_to_device as torch_xla spells
them (torch_xla.experimental.scan_layers.scan_layers,
torch_xla.experimental.scan.scan, and the placement annotations of
torch_xla.experimental.stablehlo_custom_call).

In plain PyTorch they run eagerly. While hloscope.export traces a module
they become single nodes of the fx graph (the tracer's proxies are seen
here), which the exporter lowers to a `repeat` (scan_layers), a graph op
`scan` whose body is fn traced once (scan), and `place_to_host` /
`place_to_device` graph ops; "loop" says whether hloscope traces the first
two as `while` loops or unrolled.
"""
import torch
import torch.fx


class ScanLayersError(ValueError):
    """The layers given to scan_layers are not copies of one structure."""


def _is_proxy(t):
    return isinstance(t, torch.fx.Proxy)


def _describe(layers):
    """(names, shapes, class) of each layer, for the structure check."""
    out = []
    for layer in layers:
        sd = layer.state_dict()
        out.append((type(layer), [(k, tuple(v.shape), v.dtype)
                                  for k, v in sd.items()]))
    return out


def check_layers(layers):
    """Raises ScanLayersError naming the first layer and parameter that
    differ from layer 0 (torch_xla requires the same structure)."""
    layers = list(layers)
    if not layers:
        raise ScanLayersError("scan_layers needs at least one layer")
    for i, layer in enumerate(layers):
        if not isinstance(layer, torch.nn.Module):
            raise ScanLayersError(f"layer {i} is a {type(layer).__name__}, "
                                  "not a torch.nn.Module")
    desc = _describe(layers)
    cls0, p0 = desc[0]
    for i, (cls, p) in enumerate(desc[1:], start=1):
        if cls is not cls0:
            raise ScanLayersError(
                f"layer {i} is a {cls.__name__}, layer 0 a {cls0.__name__}")
        names0 = [n for n, _, _ in p0]
        names = [n for n, _, _ in p]
        if names != names0:
            missing = [n for n in names0 if n not in names]
            extra = [n for n in names if n not in names0]
            what = (f"lacks '{missing[0]}'" if missing else
                    f"has '{extra[0]}' that layer 0 lacks" if extra else
                    "orders its parameters differently")
            raise ScanLayersError(f"layer {i} {what}")
        for (n, s0, d0), (_, s, d) in zip(p0, p):
            if s != s0 or d != d0:
                raise ScanLayersError(
                    f"layer {i} parameter '{n}' has shape {list(s)} "
                    f"{d}, layer 0 has {list(s0)} {d0}")
    return layers


def _scan_layers_node(x, *, layers):
    """The fx node of a scan_layers call: `layers` are module paths. Run by
    the exporter's interpreter (eagerly, layer by layer)."""
    raise RuntimeError("only hloscope.export evaluates scan_layers nodes")


def scan_layers(layers, input_data, partition_fn=None):
    """Applies layers in order to input_data, each layer's output the next
    one's input: torch_xla.experimental.scan_layers.scan_layers. The layers
    must be the same structure (same class, parameter names and shapes)."""
    layers = check_layers(layers)
    if _is_proxy(input_data):
        tracer = input_data.tracer
        paths = tuple(tracer.path_of_module(m) for m in layers)
        return tracer.create_proxy("call_function", _scan_layers_node,
                                   (input_data,), {"layers": paths})
    x = input_data
    for layer in layers:
        x = layer(x)
    return x


def scan(fn, init, xs):
    """torch_xla.experimental.scan.scan: fn(carry, x) -> (carry, y) over the
    leading axis of xs; returns (final carry, ys stacked along axis 0).
    init, xs and the ys may be tensors or (nested) tuples/lists of them.

    While hloscope.export traces a module, a call on traced values becomes
    one node of the fx graph (its target keeps fn), which the exporter
    lowers to a graph op "scan" with fn traced once as its body."""
    leaves = _tree_leaves(xs)
    if not leaves:
        raise ValueError("scan needs at least one tensor in xs")
    proxies = [t for t in _tree_leaves(init) + leaves if _is_proxy(t)]
    if not proxies:
        return _scan_eager(fn, init, xs)

    def scan_node(init, xs):
        return _scan_eager(fn, init, xs)
    scan_node.__name__ = "scan"  # the node's name and its label in errors
    scan_node.hs_scan_fn = fn
    return proxies[0].tracer.create_proxy("call_function", scan_node,
                                          (init, xs), {})


def scan_fn_of(target):
    """The fn of a scan node's target (scan above), or None."""
    return getattr(target, "hs_scan_fn", None)


def _scan_eager(fn, init, xs):
    leaves = _tree_leaves(xs)
    lengths = {t.shape[0] for t in leaves}
    if len(lengths) != 1:
        raise ValueError(f"scan: the tensors of xs have different leading "
                         f"lengths {sorted(lengths)}")
    n = lengths.pop()
    carry, ys = init, []
    for i in range(n):
        carry, y = fn(carry, _tree_map(lambda t: t[i], xs))
        ys.append(y)
    return carry, _tree_stack(ys)


def _tree_leaves(t):
    if isinstance(t, (list, tuple)):
        return [leaf for e in t for leaf in _tree_leaves(e)]
    return [t] if t is not None else []


def _tree_map(f, t):
    if isinstance(t, (list, tuple)):
        return type(t)(_tree_map(f, e) for e in t)
    return f(t) if t is not None else None


def _tree_stack(ys):
    first = ys[0]
    if isinstance(first, (list, tuple)):
        return type(first)(_tree_stack([y[i] for y in ys])
                           for i in range(len(first)))
    if first is None:
        return None
    return torch.stack(ys, 0)


def _place_to_host_node(t):
    return t


def _place_to_device_node(t):
    return t


def place_to_host(t):
    """Marks t to live in host memory (identity in eager PyTorch; a
    place_to_host op in the export, which the offload pass honours)."""
    if _is_proxy(t):
        return t.tracer.create_proxy("call_function", _place_to_host_node,
                                     (t,), {})
    return t


def place_to_device(t):
    """Brings a tensor marked with place_to_host back to device memory."""
    if _is_proxy(t):
        return t.tracer.create_proxy("call_function", _place_to_device_node,
                                     (t,), {})
    return t
