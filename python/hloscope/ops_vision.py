"""The vision lowerings of hloscope.export (torchvision's ResNets and
MobileNets): convolution, batch norm with running statistics, max,
average and adaptive (average and max, to any size) pooling, ReLU6 /
hardtanh, hardswish and hardsigmoid. Each becomes the graph op torch_xla
lowers it to (`convolution` with dim_labels bf01_oi01->bf01,
`batch-norm-inference`, `reduce-window`), so the HLO looks like
torch_xla's. Adaptive pooling to a size that does not divide the input,
which torch_xla sends back to the CPU, is one reduce-window where its
bins are one sliding window (7 to 3) and slices and reduces elsewhere.
Registered in ops.py's tables on import (ops.py imports this module
last)."""
import torch

from .ops import Unsupported, _arg, _func, _module


def _pair(v):
    if isinstance(v, (list, tuple)):
        if len(v) != 2:
            raise Unsupported(f"a 2-D window given as {list(v)}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _nchw(x):
    if len(x.shape) != 4:
        raise Unsupported(f"a {len(x.shape)}-D input (the vision ops take "
                          "NCHW, 4-D)")


def _conv(L, node, x, w, b, stride, padding, dilation, groups):
    x = L.tensor(x)
    _nchw(x)
    w = L.tensor(w)
    if isinstance(padding, str):
        if padding != "valid":
            raise Unsupported(f"padding={padding!r} (give the sizes)")
        padding = 0
    ph, pw = _pair(padding)
    attrs = {"window_strides": list(_pair(stride)),
             "padding_low": [ph, pw], "padding_high": [ph, pw],
             "rhs_dilation": list(_pair(dilation))}
    if groups != 1:
        attrs["feature_group_count"] = int(groups)
    y = L.block.emit("convolution", [x, w], attrs, L.out_shape(node), x.dtype)
    if b is not None:
        c = y.shape[1]
        y = L.block.binary("add", y, L.block.reshape(L.tensor(b),
                                                     (1, c, 1, 1)))
    return y


@_module(torch.nn.Conv2d)
def _m_conv2d(L, node, m, args, kw):
    if m.padding_mode != "zeros":
        raise Unsupported(f"padding_mode={m.padding_mode!r}")
    w = L.module_state(node.target, "weight")
    b = L.module_state(node.target, "bias") if m.bias is not None else None
    return _conv(L, node, args[0], w, b, m.stride, m.padding, m.dilation,
                 m.groups)


@_func("conv2d")
def _f_conv2d(L, node, a, kw):
    return _conv(L, node, a[0], _arg(a, kw, 1, "weight"),
                 _arg(a, kw, 2, "bias"), _arg(a, kw, 3, "stride", 1),
                 _arg(a, kw, 4, "padding", 0), _arg(a, kw, 5, "dilation", 1),
                 _arg(a, kw, 6, "groups", 1))


def batch_norm_2d(L, node, m, x):
    """Eval mode with running statistics as torch_xla lowers it: one
    batch-norm-inference (feature_index 1) on the module's weight, bias,
    running_mean and running_var; None when the module has no affine
    weight (ops.py decomposes that case)."""
    if not m.affine:
        return None
    x = L.tensor(x)
    state = [L.module_state(node.target, n)
             for n in ("weight", "bias", "running_mean", "running_var")]
    return L.block.emit("batch-norm-inference", [x] + state,
                        {"epsilon": float(m.eps), "feature_index": 1},
                        x.shape, x.dtype)


def _reduce_window(L, x, reducer, sizes, strides, pads=None):
    """reduce-window over the last len(sizes) axes of x, each padded by
    pads on both sides (none by default); (value, attrs)."""
    pads = list(pads or [0] * len(sizes))
    lead = [1] * (len(x.shape) - len(sizes))
    attrs = {"window_dimensions": lead + list(sizes),
             "window_strides": lead + list(strides),
             "padding_low": [0] * len(lead) + pads,
             "padding_high": [0] * len(lead) + pads, "reducer": reducer}
    shape = x.shape[:len(lead)] + tuple(
        (n + 2 * p - k) // s + 1 for n, k, s, p in
        zip(x.shape[len(lead):], sizes, strides, pads))
    return L.block.emit("reduce-window", [x], attrs, shape, x.dtype), attrs


def _window(L, x, reducer, kernel, stride, padding, dilation=1):
    x = L.tensor(x)
    _nchw(x)
    if _pair(dilation) != (1, 1):
        raise Unsupported("a dilated pooling window")
    return _reduce_window(
        L, x, reducer, _pair(kernel),
        _pair(stride if stride not in (None, [], ()) else kernel),
        _pair(padding))


def _no_ceil(L, node, x, kernel, stride, padding, ceil_mode):
    """ceil_mode is refused unless it changes nothing on this input."""
    if not ceil_mode:
        return
    n = L.tensor(x).shape[2:]
    k, s, p = _pair(kernel), _pair(stride or kernel), _pair(padding)
    floor = [(n[d] + 2 * p[d] - k[d]) // s[d] + 1 for d in range(2)]
    if list(L.out_shape(node)[2:]) != floor:
        raise Unsupported("ceil_mode=True")


def _max_pool(L, node, x, kernel, stride, padding, dilation, ceil_mode,
              return_indices):
    if return_indices:
        raise Unsupported("return_indices=True")
    _no_ceil(L, node, x, kernel, stride, padding, ceil_mode)
    return _window(L, x, "max", kernel, stride, padding, dilation)[0]


@_module(torch.nn.MaxPool2d)
def _m_maxpool(L, node, m, args, kw):
    return _max_pool(L, node, args[0], m.kernel_size, m.stride, m.padding,
                     m.dilation, m.ceil_mode, m.return_indices)


@_func("max_pool2d", "max_pool2d_with_indices")
def _f_maxpool(L, node, a, kw):
    return _max_pool(L, node, a[0], _arg(a, kw, 1, "kernel_size"),
                     _arg(a, kw, 2, "stride"), _arg(a, kw, 3, "padding", 0),
                     _arg(a, kw, 4, "dilation", 1),
                     _arg(a, kw, 5, "ceil_mode", False),
                     _arg(a, kw, 6, "return_indices", False))


def _avg_pool(L, node, x, kernel, stride, padding, ceil_mode,
              count_include_pad, divisor):
    if divisor:
        raise Unsupported("divisor_override")
    _no_ceil(L, node, x, kernel, stride, padding, ceil_mode)
    total, attrs = _window(L, x, "add", kernel, stride, padding)
    kh, kw = _pair(kernel)
    if count_include_pad or _pair(padding) == (0, 0):
        return L.block.binary("divide", total, float(kh * kw))
    # The number of elements of each window that are not padding: the
    # same window summed over ones (a constant the compiler folds).
    ones = L.block.const(1.0, L.tensor(x).shape)
    count = L.block.emit("reduce-window", [ones], attrs, total.shape,
                         total.dtype)
    return L.block.binary("divide", total, count)


@_module(torch.nn.AvgPool2d)
def _m_avgpool(L, node, m, args, kw):
    return _avg_pool(L, node, args[0], m.kernel_size, m.stride, m.padding,
                     m.ceil_mode, m.count_include_pad, m.divisor_override)


@_func("avg_pool2d")
def _f_avgpool(L, node, a, kw):
    return _avg_pool(L, node, a[0], _arg(a, kw, 1, "kernel_size"),
                     _arg(a, kw, 2, "stride"), _arg(a, kw, 3, "padding", 0),
                     _arg(a, kw, 4, "ceil_mode", False),
                     _arg(a, kw, 5, "count_include_pad", True),
                     _arg(a, kw, 6, "divisor_override"))


def adaptive_bins(n, out):
    """PyTorch's adaptive pooling windows along one axis of size n: bin i
    covers [floor(i*n/out), ceil((i+1)*n/out)), so when out does not
    divide n the bins differ in size and may overlap (and repeat when
    out > n)."""
    return [(i * n // out, -(-(i + 1) * n // out)) for i in range(out)]


def _uniform(bins):
    """(size, stride) when the bins are one window moving by a fixed
    stride, i.e. one reduce-window covers them exactly; else None."""
    size = bins[0][1] - bins[0][0]
    stride = bins[1][0] - bins[0][0] if len(bins) > 1 else size
    if stride < 1:
        return None
    for i, (s, e) in enumerate(bins):
        if s != i * stride or e - s != size:
            return None
    return size, stride


def _pool_bins(L, x, axis, bins, reducer, mean):
    """x pooled along one axis over bins that no single window covers:
    one slice per bin, reduced (a bin of one element is its slice), and
    the bins concatenated in order. The mean divides each bin by its own
    length; over two axes the two divisions make 1/(kh*kw)."""
    blk, pieces = L.block, []
    for s, e in bins:
        start = [0] * len(x.shape)
        limit = list(x.shape)
        start[axis], limit[axis] = s, e
        p = blk.slice(x, start, limit)
        if e - s > 1:
            keep = p.shape[:axis] + (1,) + p.shape[axis + 1:]
            p = blk.reshape(blk.reduce(p, [axis], reducer), keep)
            if mean:
                p = blk.binary("divide", p, float(e - s))
        pieces.append(p)
    return blk.concatenate(pieces, axis)


def _adaptive(L, node, x, reducer, mean):
    """Adaptive pooling of the last two axes (NCHW or CHW) to the node's
    output size (any size: an int, a pair, None entries keep the input's),
    with PyTorch's bins (adaptive_bins). To 1x1 it is a reduce over height
    and width, as torch_xla lowers ResNet's and MobileNet's; when the bins
    of both axes are uniform (8x8 to 2x2, 7x7 to 3x3) one reduce-window;
    otherwise each axis by itself (pooling a rectangle is pooling its rows,
    then its columns): a reduce-window along an axis whose bins are
    uniform, per-bin slices along one whose are not."""
    x = L.tensor(x)
    if len(x.shape) not in (3, 4):
        raise Unsupported(f"a {len(x.shape)}-D input (adaptive pooling "
                          "takes NCHW or CHW)")
    r = len(x.shape)
    out = tuple(L.out_shape(node)[-2:])
    blk = L.block
    if out == (1, 1):
        y = blk.reduce(x, [r - 2, r - 1], reducer)
        if mean:
            y = blk.binary("divide", y, float(x.shape[-2] * x.shape[-1]))
        return blk.reshape(y, x.shape[:-2] + (1, 1))
    bins = [adaptive_bins(n, o) for n, o in zip(x.shape[-2:], out)]
    uniform = [_uniform(b) for b in bins]
    if all(uniform):
        (kh, sh), (kw, sw) = uniform
        y = _reduce_window(L, x, reducer, (kh, kw), (sh, sw))[0]
        return blk.binary("divide", y, float(kh * kw)) if mean else y
    for axis, b, u in zip((r - 2, r - 1), bins, uniform):
        if u == (1, 1):
            continue  # the identity along this axis
        if u:
            sizes, strides = [1, 1], [1, 1]
            sizes[axis - r + 2], strides[axis - r + 2] = u
            x = _reduce_window(L, x, reducer, sizes, strides)[0]
            if mean:
                x = blk.binary("divide", x, float(u[0]))
        else:
            x = _pool_bins(L, x, axis, b, reducer, mean)
    return x


@_module(torch.nn.AdaptiveAvgPool2d)
def _m_adaptive_avg(L, node, m, args, kw):
    return _adaptive(L, node, args[0], "add", True)


@_func("adaptive_avg_pool2d")
def _f_adaptive_avg(L, node, a, kw):
    return _adaptive(L, node, a[0], "add", True)


@_func("adaptive_max_pool2d", "adaptive_max_pool2d_with_indices")
def _f_adaptive_max(L, node, a, kw):
    """F.adaptive_max_pool2d, which nn.AdaptiveMaxPool2d calls (torch.fx
    records the function, with return_indices as a keyword)."""
    if _arg(a, kw, 2, "return_indices", False):
        raise Unsupported("return_indices=True")
    return _adaptive(L, node, a[0], "max", False)


def _clamp(L, x, lo, hi):
    x = L.tensor(x)
    if lo is not None:
        x = L.block.binary("maximum", x, float(lo))
    if hi is not None:
        x = L.block.binary("minimum", x, float(hi))
    return x


@_module(torch.nn.ReLU6, torch.nn.Hardtanh)
def _m_hardtanh(L, node, m, args, kw):
    return _clamp(L, args[0], m.min_val, m.max_val)


@_func("relu6")
def _f_relu6(L, node, a, kw):
    return _clamp(L, a[0], 0.0, 6.0)


@_func("hardtanh")
def _f_hardtanh(L, node, a, kw):
    return _clamp(L, a[0], _arg(a, kw, 1, "min_val", -1.0),
                  _arg(a, kw, 2, "max_val", 1.0))


@_func("clamp", "clip", "clamp_")
def _f_clamp(L, node, a, kw):
    lo, hi = _arg(a, kw, 1, "min"), _arg(a, kw, 2, "max")
    if isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor):
        raise Unsupported("clamp with tensor bounds")
    return _clamp(L, a[0], lo, hi)


def _hardswish(L, x):
    """x * relu6(x + 3) / 6 in PyTorch's order of operations."""
    x = L.tensor(x)
    r = _clamp(L, L.block.binary("add", x, 3.0), 0.0, 6.0)
    return L.block.binary("divide", L.block.binary("multiply", x, r), 6.0)


def _hardsigmoid(L, x):
    x = L.tensor(x)
    r = _clamp(L, L.block.binary("add", x, 3.0), 0.0, 6.0)
    return L.block.binary("divide", r, 6.0)


def _activation(cls, name, fn):
    """Files fn(L, x) under module class cls and function name."""
    _module(cls)(lambda L, node, m, args, kw: fn(L, args[0]))
    _func(name)(lambda L, node, a, kw: fn(L, a[0]))


_activation(torch.nn.Hardswish, "hardswish", _hardswish)
_activation(torch.nn.Hardsigmoid, "hardsigmoid", _hardsigmoid)


@_module(torch.nn.Flatten)
def _m_flatten(L, node, m, args, kw):
    return L.block.reshape(L.tensor(args[0]), L.out_shape(node))


@_module(torch.nn.Dropout2d)
def _m_dropout2d(L, node, m, args, kw):
    if m.training and m.p > 0:
        raise Unsupported("dropout in training mode")
    return L.tensor(args[0])

