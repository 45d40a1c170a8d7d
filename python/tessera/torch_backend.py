"""torch.compile(model, backend="tessera"): Tessera as a PyTorch 2 backend.

Dynamo hands the backend an FX graph of torch-level calls (conv2d,
batch_norm, relu, pooling, linear, cat, ...) whose placeholders are the
module's parameters and buffers and the user's inputs. The backend freezes
the parameters and buffers into constants (as Inductor's freezing does: the
model is for inference), cuts the graph into the parts Tessera converts and
the nodes it does not (graph breaks, run by eager PyTorch between Tessera's
parts), and compiles each part into a Tessera module.

    model = torchvision.models.resnet18().eval()
    fast = torch.compile(model, backend="tessera", mode="default")  # or reduce-overhead, max-autotune
    with torch.no_grad():
        y = fast(x)                     # compiles on the first call
    tessera.explain(model, x)           # the graph breaks and the kernels

A model on a CUDA device runs there: each part compiled for the GPU
(options={"cuda_target": "cuda -arch=sm_90"}; default "cuda", the GPU
present), its tensors passed through DLPack, never through host memory.

options={"records": LOG} builds with tuning records, {"threads": N} sets the
threads, {"autotune_minutes": M} max-autotune's budget (torch.compile takes
mode or options: {"mode": "max-autotune", ...} gives both). fullgraph=True
makes any graph break an error naming the node. {"quantize": "int8"} computes
the convolutions in int8 (as `tessera compile --quantize int8`), calibrated
on {"calibrate": N seeded samples (default 8) or an .npy of inputs} by
{"calibration": "min-max" | "percentile" | "kl-entropy"}; fixed shapes only.
"""
import copy
import operator

import numpy as np
import torch
import torch.nn.functional as F
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.shape_prop import ShapeProp

from . import _tessera


class GraphBreakError(_tessera.Error):
    """fullgraph=True and a node Tessera cannot compile."""


def _arg(node, index, name, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _ints(value):
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


def _is_node(value):
    return isinstance(value, torch.fx.Node)


# Each entry: can(node) says whether Tessera takes this call as it is;
# convert(ctx, node) adds it to the graph and returns its node id.
def _conv2d_ok(n):
    return isinstance(_arg(n, 4, "padding", 0), (int, list, tuple))


def _conv2d(c, n):
    x = c.builder.conv2d(c.value(n.args[0]), c.value(n.args[1]), _ints(_arg(n, 3, "stride", 1)),
                         _ints(_arg(n, 4, "padding", 0)), _ints(_arg(n, 5, "dilation", 1)), int(_arg(n, 6, "groups", 1)),
                         n.name)
    bias = _arg(n, 2, "bias")
    return c.builder.bias_add(x, c.value(bias), 1, n.name + ".bias") if bias is not None else x


def _conv3d(c, n):
    def three(value):
        v = _ints(value)
        return v * 3 if len(v) == 1 else v
    x = c.builder.conv3d(c.value(n.args[0]), c.value(n.args[1]), three(_arg(n, 3, "stride", 1)),
                         three(_arg(n, 4, "padding", 0)), three(_arg(n, 5, "dilation", 1)), int(_arg(n, 6, "groups", 1)),
                         n.name)
    bias = _arg(n, 2, "bias")
    return c.builder.bias_add(x, c.value(bias), 1, n.name + ".bias") if bias is not None else x


def _embedding_ok(n):
    return _arg(n, 3, "max_norm") is None


def _embedding(c, n):
    """Rows of the table picked by the (integer) ids: take along axis 0."""
    return c.builder.take(c.value(n.args[1]), c.value(n.args[0]), 0, n.name)


def _interpolate_ok(n):
    x = _example(n.args[0]) if _is_node(n.args[0]) else None
    return (x is not None and x.dim() == 4 and _arg(n, 3, "mode", "nearest") in ("nearest", "bilinear")
            and not _arg(n, 6, "antialias", False))


def _interpolate(c, n):
    """nearest: the source pixel floor(dst * in / out); bilinear: PyTorch's
    half-pixel centres, or the corners aligned. A scale_factor given (and not
    recomputed) maps coordinates back by itself, as PyTorch does."""
    x = c.value(n.args[0])
    _, _, h, w = c.builder.shape(x)
    _, _, out_h, out_w = _shape_of_node(n)
    scale_h, scale_w = out_h / h, out_w / w
    factor = _arg(n, 2, "scale_factor")
    if factor is not None and not _arg(n, 5, "recompute_scale_factor", False):
        scale_h, scale_w = ([float(f) for f in factor] if isinstance(factor, (list, tuple)) else [float(factor)] * 2)
    if _arg(n, 3, "mode", "nearest") == "nearest":
        return c.builder.resize2d(x, out_h, out_w, scale_h, scale_w, "nearest", "asymmetric", "floor", n.name)
    coordinates = "align_corners" if _arg(n, 4, "align_corners", False) else "pytorch_half_pixel"
    return c.builder.resize2d(x, out_h, out_w, scale_h, scale_w, "linear", coordinates, "floor", n.name)


def _index_items(n):
    """x[index] as a list of per-item (kind, value): int, slice, None (a new
    axis) or Ellipsis; None when the index holds anything else (a tensor)."""
    index = n.args[1]
    items = list(index) if isinstance(index, tuple) else [index]
    for item in items:
        if not (item is None or item is Ellipsis or isinstance(item, int) or
                (isinstance(item, slice) and all(v is None or isinstance(v, int) for v in (item.start, item.stop, item.step)))):
            return None
    return items


def _reduce_ok(n):
    # A dtype to accumulate in is PyTorch's to honour.
    return _arg(n, 3, "dtype") is None and _is_node(n.args[0]) and _example(n.args[0]) is not None


def _reduce(op):
    """sum / mean / amax / amin over dims (every axis when none), keepdim or not."""
    def convert(c, n):
        dims = _arg(n, 1, "dim")
        axes = [] if dims is None else _ints(dims)
        return c.builder.reduce(op, c.value(n.args[0]), axes, bool(_arg(n, 2, "keepdim", False)), n.name)
    return convert


def _pieces(node):
    """The tensors, as traced, of a node that makes a tuple of them (split,
    chunk); None for any other node."""
    meta = node.meta.get("tensor_meta")
    value = meta if isinstance(meta, (list, tuple)) else node.meta.get("example_value", node.meta.get("val"))
    if isinstance(value, (list, tuple)) and value and all(hasattr(t, "shape") for t in value):
        return list(value)
    return None


def _split_ok(n):
    # Its pieces are read by indexing only, so the part that holds it holds them.
    return (_pieces(n) is not None and _is_node(n.args[0]) and _example(n.args[0]) is not None
            and all(u.target is operator.getitem for u in n.users))


def _split(c, n):
    """split / chunk: one strided slice per piece, of the traced sizes."""
    x = c.value(n.args[0])
    shape = c.builder.shape(x)
    dim = int(_arg(n, 2, "dim", 0)) % len(shape)
    ids, at = [], 0
    for i, piece in enumerate(_pieces(n)):
        begin, end = [0] * len(shape), list(shape)
        begin[dim], end[dim] = at, at + int(piece.shape[dim])
        ids.append(c.builder.strided_slice(x, begin, end, [1] * len(shape), f"{n.name}.{i}"))
        at = end[dim]
    return ids


def _getitem_ok(n):
    if not _is_node(n.args[0]):
        return False
    if _pieces(n.args[0]) is not None:
        return isinstance(n.args[1], int)  # a piece of a split
    return _example(n.args[0]) is not None and _index_items(n) is not None


def _getitem(c, n):
    """Basic indexing: the slices and integers as one strided slice, then the
    integers' axes dropped and None's axes added by a reshape to the traced
    shape. A piece of a split is that piece."""
    if _pieces(n.args[0]) is not None:
        return c.value(n.args[0])[n.args[1]]
    x = c.value(n.args[0])
    shape = c.builder.shape(x)
    items = _index_items(n)
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + [slice(None)] * (len(shape) - consumed) + items[at + 1:]
    items = [i for i in items if i is not None]
    items += [slice(None)] * (len(shape) - len(items))
    begin, end, step = [], [], []
    for size, item in zip(shape, items):
        if isinstance(item, int):
            b = item % size
            begin.append(b), end.append(b + 1), step.append(1)
        else:
            b, e, st = item.indices(size)
            if st <= 0 or e <= b:
                raise _tessera.Error(f"getitem: slice {item} of an axis of {size}")
            begin.append(b), end.append(e), step.append(st)
    y = x
    if begin != [0] * len(shape) or end != list(shape) or step != [1] * len(shape):
        y = c.builder.strided_slice(x, begin, end, step, n.name + ".slice")
    out = _shape_of_node(n)
    return c.builder.reshape(y, out, n.name) if c.builder.shape(y) != out else y


def _batch_norm_ok(n):
    return not _arg(n, 5, "training", False)


def _batch_norm(c, n):
    channels = c.builder.shape(c.value(n.args[0]))[1]
    weight, bias = _arg(n, 3, "weight"), _arg(n, 4, "bias")
    gamma = c.value(weight) if weight is not None else c.constant(n.name + ".gamma", np.ones(channels, np.float32))
    beta = c.value(bias) if bias is not None else c.constant(n.name + ".beta", np.zeros(channels, np.float32))
    return c.builder.batch_norm(c.value(n.args[0]), gamma, beta, c.value(n.args[1]), c.value(n.args[2]),
                                c.number(_arg(n, 7, "eps", 1e-5)), n.name)


def _max_pool_ok(n):
    return _ints(_arg(n, 4, "dilation", 1)) in ([1], [1, 1]) and not _arg(n, 6, "return_indices", False)


def _max_pool(c, n):
    kernel = _ints(n.args[1])
    stride = _arg(n, 2, "stride")
    return c.builder.max_pool2d(c.value(n.args[0]), kernel, _ints(stride) if stride else kernel,
                                _ints(_arg(n, 3, "padding", 0)), bool(_arg(n, 5, "ceil_mode", False)), n.name)


def _avg_pool_ok(n):
    return _arg(n, 6, "divisor_override") is None


def _avg_pool(c, n):
    kernel = _ints(n.args[1])
    stride = _arg(n, 2, "stride")
    return c.builder.avg_pool2d(c.value(n.args[0]), kernel, _ints(stride) if stride else kernel,
                                _ints(_arg(n, 3, "padding", 0)), bool(_arg(n, 4, "ceil_mode", False)),
                                bool(_arg(n, 5, "count_include_pad", True)), n.name)


def _linear(c, n):
    """dense over rows: a (..., K) input (a transformer's tokens) is made
    (rows, K) and the (rows, N) output given its leading axes back."""
    x = c.value(n.args[0])
    shape = c.builder.shape(x)
    if len(shape) != 2:
        x = c.builder.reshape(x, [int(np.prod(shape[:-1])), shape[-1]], n.name + ".rows")
    y = c.builder.dense(x, c.value(n.args[1]), n.name)
    bias = _arg(n, 2, "bias")
    if bias is not None:
        y = c.builder.bias_add(y, c.value(bias), 1, n.name + ".bias")
    if len(shape) != 2:
        y = c.builder.reshape(y, list(shape[:-1]) + [c.builder.shape(y)[1]], n.name + ".tokens")
    return y


def _layer_norm(c, n):
    x = c.value(n.args[0])
    row = _ints(n.args[1])
    rank = len(c.builder.shape(x))
    weight, bias = _arg(n, 2, "weight"), _arg(n, 3, "bias")
    scale = c.value(weight) if weight is not None else c.constant(n.name + ".scale", np.ones(row, np.float32))
    shift = c.value(bias) if bias is not None else c.constant(n.name + ".bias", np.zeros(row, np.float32))
    return c.builder.layer_norm(x, scale, shift, rank - len(row), c.number(_arg(n, 4, "eps", 1e-5)), n.name)


def _softmax(c, n):
    """Softmax over any axis: the kernels take the last, so another is moved
    last and back."""
    x = c.value(n.args[0])
    rank = len(c.builder.shape(x))
    dim = int(_arg(n, 1, "dim", -1)) % rank
    if dim == rank - 1:
        return c.builder.softmax(x, -1, n.name)
    perm = list(range(rank))
    perm[dim], perm[-1] = perm[-1], perm[dim]  # its own inverse
    moved = c.builder.softmax(c.builder.transpose(x, perm, n.name + ".to_last"), -1, n.name + ".softmax")
    return c.builder.transpose(moved, perm, n.name)


def _cat(c, n):
    """Concatenation; empty tensors (a key cache's first step) add nothing."""
    parts = [c.value(a) for a in n.args[0] if c.value(a) is not None]
    if len(parts) == 1:
        return parts[0]
    return c.builder.concat(parts, int(_arg(n, 1, "dim", 0)), n.name)


def _addmm_ok(n):
    return float(n.kwargs.get("beta", 1)) == 1.0 and float(n.kwargs.get("alpha", 1)) == 1.0


def _addmm(c, n):
    """bias + a @ b (GPT-2's Conv1D): dense over b transposed, the bias added."""
    b = c.value(n.args[2])
    y = c.builder.dense(c.value(n.args[1]), c.builder.transpose(b, [1, 0], n.name + ".bT"), n.name + ".mm")
    return c.builder.add(y, c.value(n.args[0]), n.name)


def _einsum_operands(n):
    """einsum(equation, a, b) or einsum(equation, [a, b])."""
    rest = n.args[1:]
    return list(rest[0]) if len(rest) == 1 and isinstance(rest[0], (list, tuple)) else list(rest)


def _flatten_ok(n):
    return int(_arg(n, 2, "end_dim", -1)) == -1


def _dropout_ok(n):
    return not _arg(n, 2, "training", True) if n.target is F.dropout else True


_RULES = {
    torch.conv2d: (_conv2d_ok, _conv2d),
    F.conv2d: (_conv2d_ok, _conv2d),
    F.batch_norm: (_batch_norm_ok, _batch_norm),
    F.relu: (None, lambda c, n: c.builder.relu(c.value(n.args[0]), n.name)),
    torch.relu: (None, lambda c, n: c.builder.relu(c.value(n.args[0]), n.name)),
    torch.relu_: (None, lambda c, n: c.builder.relu(c.value(n.args[0]), n.name)),
    F.relu6: (None, lambda c, n: c.builder.clip(c.value(n.args[0]), 0.0, 6.0, n.name)),
    F.hardtanh: (None, lambda c, n: c.builder.clip(c.value(n.args[0]), float(_arg(n, 1, "min_val", -1.0)),
                                                   float(_arg(n, 2, "max_val", 1.0)), n.name)),
    torch.sigmoid: (None, lambda c, n: c.builder.sigmoid(c.value(n.args[0]), n.name)),
    F.sigmoid: (None, lambda c, n: c.builder.sigmoid(c.value(n.args[0]), n.name)),
    F.hardswish: (None, lambda c, n: c.builder.add_node("hard_swish", n.name, [c.value(n.args[0])])),
    F.hardsigmoid: (None, lambda c, n: c.builder.hard_sigmoid(c.value(n.args[0]), 1.0 / 6.0, 0.5, n.name)),
    F.gelu: (lambda n: _arg(n, 1, "approximate", "none") in ("none", "tanh"),
             lambda c, n: c.builder.gelu(c.value(n.args[0]), _arg(n, 1, "approximate", "none"), n.name)),
    F.silu: (None, lambda c, n: c.builder.add_node("silu", n.name, [c.value(n.args[0])])),
    F.layer_norm: (lambda n: all(_arg(n, i, k) is None or _is_node(_arg(n, i, k)) for i, k in ((2, "weight"), (3, "bias"))),
                   _layer_norm),
    F.max_pool2d: (_max_pool_ok, _max_pool),
    F.avg_pool2d: (_avg_pool_ok, _avg_pool),
    F.adaptive_avg_pool2d: (lambda n: _ints(n.args[1]) in ([1], [1, 1]),
                            lambda c, n: c.builder.global_avg_pool2d(c.value(n.args[0]), n.name)),
    torch.flatten: (_flatten_ok, lambda c, n: c.builder.flatten(c.value(n.args[0]), int(_arg(n, 1, "start_dim", 0)), n.name)),
    F.linear: (None, _linear),
    torch._C._nn.linear: (None, _linear),
    torch.cat: (lambda n: isinstance(n.args[0], (list, tuple)), _cat),
    F.dropout: (_dropout_ok, lambda c, n: c.value(n.args[0])),
    F.softmax: (lambda n: _arg(n, 2, "_stacklevel", 3) is not None and _arg(n, 3, "dtype") is None, _softmax),
    torch.softmax: (lambda n: _arg(n, 2, "dtype") is None, _softmax),
}


def _shape_of_node(n):
    """The traced shape of the tensor node `n` makes (the target of a view,
    reshape or flatten, its -1 resolved)."""
    return [int(d) for d in _example(n).shape]


def _binary(op):
    """A binary of two tensors, or of a tensor and a number (a constant): a
    Python number, or one the graph computes from sizes (dynamic=True's
    1/sqrt(head size)), as traced."""
    def convert(c, n):
        a, b = n.args[0], n.args[1]
        ids = [c.value(v) if _is_node(v) and c.ids.get(v) is not None
               else c.constant(f"{n.name}.k{i}", np.array([c.number(v)], np.float32))
               for i, v in enumerate((a, b))]
        return c.builder.add_node(op, n.name, ids)
    return convert


def _binary_ok(n):
    return (len(n.args) == 2 and any(_is_node(a) for a in n.args) and
            all(_is_node(a) or isinstance(a, (int, float)) for a in n.args) and not n.kwargs)


def _matmul_ids(c, a, b, name):
    """a @ b for ranks 2 to 4 with NumPy's batch broadcasting, as batch_matmul
    (which takes B as (batch, N, K)): one B for all of A's batches, or as many."""
    sa, sb = c.builder.shape(a), c.builder.shape(b)
    if len(sa) < 2 or len(sb) < 2:
        raise _tessera.Error(f"matmul of shapes {sa} and {sb}: 1-D operands")
    m, k, cols = sa[-2], sa[-1], sb[-1]
    batch = list(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
    perm = list(range(len(sb)))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    bt = c.builder.transpose(b, perm, name + ".bT")
    batches, b_batches = int(np.prod(batch)), int(np.prod(sb[:-2]))
    if b_batches == 1:
        a3 = c.builder.reshape(a, [1, batches * m, k], name + ".a3")
        b3 = c.builder.reshape(bt, [1, cols, k], name + ".b3")
    elif int(np.prod(sa[:-2])) == batches and b_batches == batches:
        a3 = c.builder.reshape(a, [batches, m, k], name + ".a3")
        b3 = c.builder.reshape(bt, [batches, cols, k], name + ".b3")
    else:
        raise _tessera.Error(f"matmul of shapes {sa} and {sb}: batch axes that broadcast one operand over the other")
    return c.builder.reshape(c.builder.batch_matmul(a3, b3, name + ".bmm"), batch + [m, cols], name)


def _sdpa_ok(n):
    mask = _arg(n, 3, "attn_mask")
    float_mask = mask is None or (_is_node(mask) and _example(mask) is not None and _example(mask).dtype == torch.float32)
    return (float_mask and float(_arg(n, 4, "dropout_p", 0.0)) == 0.0 and not (mask is not None and _arg(n, 5, "is_causal", False))
            and not n.kwargs.get("enable_gqa", False))


def _sdpa(c, n):
    """softmax(q k^T * scale + mask) v, scale 1/sqrt(E) unless given; the mask
    an additive float tensor, or causal (query i sees keys 0..i, as
    PyTorch's lower-left triangle)."""
    q, k, v = (c.value(a) for a in n.args[:3])
    scale = _arg(n, 6, "scale")  # a number, or (dynamic=True) one the graph computes or takes
    scale = c.number(scale) if scale is not None else c.builder.shape(q)[-1] ** -0.5
    rank = len(c.builder.shape(k))
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    scores = _matmul_ids(c, q, c.builder.transpose(k, perm, n.name + ".kT"), n.name + ".scores")
    scores = c.builder.multiply(scores, c.constant(n.name + ".scale", np.array([scale], np.float32)), n.name + ".scaled")
    mask = _arg(n, 3, "attn_mask")
    if mask is not None:
        scores = c.builder.add(scores, c.value(mask), n.name + ".masked")
    elif _arg(n, 5, "is_causal", False):
        rows, cols = c.builder.shape(scores)[-2:]
        causal = np.where(np.tril(np.ones((rows, cols), bool)), 0.0, np.finfo(np.float32).min).astype(np.float32)
        scores = c.builder.add(scores, c.constant(n.name + ".causal", causal), n.name + ".masked")
    return _matmul_ids(c, c.builder.softmax(scores, -1, n.name + ".p"), v, n.name)


def _permute(c, n):
    dims = _ints(n.args[1:] if len(n.args) > 2 else n.args[1])
    return c.builder.transpose(c.value(n.args[0]), dims, n.name)


def _swap_axes(c, n):
    x = c.value(n.args[0])
    rank = len(c.builder.shape(x))
    d0, d1 = int(n.args[1]) % rank, int(n.args[2]) % rank
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return c.builder.transpose(x, perm, n.name)


_RULES.update({
    # add of two tensors, or of a tensor and a number (without torch.add's alpha)
    operator.add: (_binary_ok, _binary("add")), operator.iadd: (_binary_ok, _binary("add")),
    torch.add: (_binary_ok, _binary("add")),
    operator.mul: (_binary_ok, _binary("multiply")), torch.mul: (_binary_ok, _binary("multiply")),
    operator.sub: (_binary_ok, _binary("subtract")), torch.sub: (_binary_ok, _binary("subtract")),
    operator.truediv: (_binary_ok, _binary("divide")), torch.div: (_binary_ok, _binary("divide")),
    operator.pow: (_binary_ok, _binary("power")), torch.pow: (_binary_ok, _binary("power")),
    torch.matmul: (None, lambda c, n: _matmul_ids(c, c.value(n.args[0]), c.value(n.args[1]), n.name)),
    operator.matmul: (None, lambda c, n: _matmul_ids(c, c.value(n.args[0]), c.value(n.args[1]), n.name)),
    torch.bmm: (None, lambda c, n: _matmul_ids(c, c.value(n.args[0]), c.value(n.args[1]), n.name)),
    F.scaled_dot_product_attention: (_sdpa_ok, _sdpa),
    F.conv3d: (_conv2d_ok, _conv3d), torch.conv3d: (_conv2d_ok, _conv3d),
    F.embedding: (_embedding_ok, _embedding),
    torch.addmm: (_addmm_ok, _addmm),
    torch.einsum: (lambda n: isinstance(n.args[0], str) and all(_is_node(a) for a in _einsum_operands(n)),
                   lambda c, n: c.builder.einsum(n.args[0], [c.value(a) for a in _einsum_operands(n)], n.name)),
    F.interpolate: (_interpolate_ok, _interpolate),
    operator.getitem: (_getitem_ok, _getitem),
    torch.split: (_split_ok, _split), torch.chunk: (_split_ok, _split),
    torch.mean: (_reduce_ok, _reduce("reduce_mean")), torch.sum: (_reduce_ok, _reduce("reduce_sum")),
    torch.amax: (_reduce_ok, _reduce("reduce_max")), torch.amin: (_reduce_ok, _reduce("reduce_min")),
    torch.reshape: (None, lambda c, n: c.builder.reshape(c.value(n.args[0]), _shape_of_node(n), n.name)),
    torch.permute: (None, _permute),
    torch.transpose: (None, _swap_axes),
})

# Tensor methods (call_method nodes), by name.
_METHOD_RULES = {
    "view": (None, lambda c, n: c.builder.reshape(c.value(n.args[0]), _shape_of_node(n), n.name)),
    "reshape": (None, lambda c, n: c.builder.reshape(c.value(n.args[0]), _shape_of_node(n), n.name)),
    "flatten": (None, lambda c, n: c.builder.reshape(c.value(n.args[0]), _shape_of_node(n), n.name)),
    "permute": (None, _permute),
    "transpose": (None, _swap_axes),
    "contiguous": (lambda n: len(n.args) == 1 and not n.kwargs, lambda c, n: c.value(n.args[0])),
    "mul": (_binary_ok, _binary("multiply")),
    "add": (_binary_ok, _binary("add")),
    "sub": (_binary_ok, _binary("subtract")),
    "div": (_binary_ok, _binary("divide")),
    "pow": (_binary_ok, _binary("power")),
    "split": (_split_ok, _split),
    "mean": (_reduce_ok, _reduce("reduce_mean")),
    "sum": (_reduce_ok, _reduce("reduce_sum")),
    "amax": (_reduce_ok, _reduce("reduce_max")),
    "amin": (_reduce_ok, _reduce("reduce_min")),
    "chunk": (_split_ok, _split),
}


def _rule(node):
    if node.op == "call_function":
        return _RULES.get(node.target)
    if node.op == "call_method":
        return _METHOD_RULES.get(node.target)
    return None


# torch functions that are one of the registry's unary operators.
for _fn, _op in ((torch.tanh, "tanh"), (F.tanh, "tanh"), (torch.exp, "exp"), (torch.erf, "erf"), (torch.log, "log"),
                 (torch.sqrt, "sqrt"), (torch.reciprocal, "reciprocal"), (torch.neg, "negative"),
                 (operator.neg, "negative"), (torch.abs, "abs")):
    _RULES[_fn] = (None, lambda c, n, _op=_op: c.builder.add_node(_op, n.name, [c.value(n.args[0])]))


def _example(node):
    """The node's tensor as traced: its concrete shape (ShapeProp's
    tensor_meta, for dynamic=True) or Dynamo's example value; None when the
    node makes no tensor."""
    meta = node.meta.get("tensor_meta")
    if meta is not None and hasattr(meta, "shape"):
        return meta
    value = node.meta.get("example_value", node.meta.get("val"))
    return value if isinstance(value, torch.Tensor) else None


def _traced_value(node):
    """What the node made as traced: its tensor (_example), else the number
    the trace kept (meta "scalar", a size or a module's float); None otherwise."""
    example = _example(node)
    return example if example is not None else node.meta.get("scalar")


# Calls that read integer tensors (as the graph's integer inputs): the ids of an embedding.
_INTEGER_ARGS = {F.embedding: (0,)}
_INTEGER_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def _float32_ok(node):
    """Every tensor the node makes or reads is float32 (Tessera's type), but
    the integer ids some calls take."""
    integer = [node.args[i] for i in _INTEGER_ARGS.get(node.target, ()) if i < len(node.args)]
    if any(_example(a) is None or _example(a).dtype not in _INTEGER_DTYPES for a in integer):
        return False
    tensors = [_example(node)] + (_pieces(node) or []) + [_example(a) for a in node.all_input_nodes if a not in integer]
    return all(t is None or t.dtype == torch.float32 for t in tensors)


def supports(node):
    """Whether Tessera compiles this FX node; (False, reason) otherwise."""
    if node.op not in ("call_function", "call_method"):
        return False, f"{node.op} {node.target}"
    rule = _rule(node)
    if rule is None:
        return False, f"no Tessera operator for {getattr(node.target, '__name__', node.target)}"
    if rule[0] is not None and not rule[0](node):
        return False, f"{getattr(node.target, '__name__', node.target)} with these arguments"
    if _example(node) is None and _pieces(node) is None:
        return False, "makes no tensor (size arithmetic)"
    if not _float32_ok(node):
        return False, "not float32"
    return _converts_alone(node)


def _converts_alone(node):
    """Whether the node's rule builds it, shape inference included, with its
    inputs as placeholders of their traced shapes: whatever would fail in a
    part (a rank the operator lacks, say) is left to PyTorch instead, so the
    backend never fails a model that eager PyTorch runs."""
    examples = {a.name: _traced_value(a) for a in node.all_input_nodes}
    probe = _Converter("probe", examples)
    try:  # the inputs too: an empty tensor is no Tessera input
        for a in node.all_input_nodes:
            example = examples[a.name]
            probe.ids[a] = (probe.builder.input(a.name, [int(d) for d in example.shape], _is_integer(example))
                            if hasattr(example, "shape") and not _is_empty(example) else None)
            if _pieces(a) is not None:  # a split's pieces, as inputs
                probe.ids[a] = [probe.builder.input(f"{a.name}.{i}", [int(d) for d in t.shape])
                                for i, t in enumerate(_pieces(a))]
        _rule(node)[1](probe, node)
    except Exception as e:  # any reason at all: PyTorch runs it
        return False, f"{getattr(node.target, '__name__', node.target)}: {e}"
    return True, ""


def _is_empty(example):
    return any(int(d) == 0 for d in example.shape)


def _is_integer(example):
    return getattr(example, "dtype", None) in _INTEGER_DTYPES


class _Support(OperatorSupportBase):
    def is_node_supported(self, submodules, node):
        return supports(node)[0]


class _Converter:
    """Builds the Tessera graph of one part (a GraphModule of supported nodes)."""

    def __init__(self, name, examples):
        self.builder = _tessera.GraphBuilder()
        self.name = name
        self.examples = examples
        self.ids = {}

    def number(self, arg):
        """A scalar argument: a constant, or (dynamic=True, where Dynamo makes
        modules' floats graph inputs) the value the trace saw."""
        return float(self.examples[arg.name] if _is_node(arg) else arg)

    def constant(self, name, array):
        return self.builder.constant(name, np.ascontiguousarray(array, dtype=np.float32))

    def value(self, node):
        return self.ids[node]

    def convert(self, part, frozen):
        """`frozen[i]`: the constant value of placeholder i, or None for an
        input; `examples`: the traced tensors of the parent graph by node name
        (a part's placeholders take their parent nodes' names)."""
        placeholders = [n for n in part.graph.nodes if n.op == "placeholder"]
        self.inputs = []
        for i, p in enumerate(placeholders):
            if frozen[i] is not None:
                self.ids[p] = self.constant(p.name, frozen[i].detach().cpu().numpy())
            else:
                example = _example(p)
                if example is None:
                    example = self.examples.get(p.name)
                if not hasattr(example, "shape") or _is_empty(example):
                    # a scalar: read through number(), or ignored (momentum); an
                    # empty tensor: nothing to compute (rules skip None)
                    self.ids[p] = None
                    continue
                self.ids[p] = self.builder.input(p.name, [int(d) for d in example.shape], _is_integer(example))
                self.inputs.append(i)
        outputs = None
        for n in part.graph.nodes:
            if n.op in ("call_function", "call_method"):
                self.ids[n] = _rule(n)[1](self, n)
            elif n.op == "output":
                outputs = n.args[0]
        self.single = not isinstance(outputs, (list, tuple))
        outs = [outputs] if self.single else list(outputs)
        return self.builder.finish([self.ids[o] for o in outs], self.name)


class TesseraPart(torch.nn.Module):
    """One compiled part: torch tensors in, Tessera's module, torch tensors out
    (sharing memory with numpy both ways: no copies at the boundary)."""

    def __init__(self, part, frozen, examples, name, mode, options, at_shapes=None):
        super().__init__()
        self.part, self.name, self.fallback = part, name, None
        self.dynamic, self.failed_shapes = at_shapes is not None, set()
        self.threads = int(options.get("threads", 0))
        self.records = options.get("records")
        self.quantize = {"quantize": options.get("quantize", ""), "calibrate": str(options.get("calibrate", 8)),
                         "calibration": options.get("calibration", "min-max")}
        # CUDA tensors run the part compiled for the GPU, once per input shapes.
        self.cuda_target, self.gpu_modules = options.get("cuda_target", "cuda"), {}
        self.model_at = None
        try:
            converter = _Converter(name, examples)
            self.model = converter.convert(part, frozen)
            self.inputs, self.single = converter.inputs, converter.single
            if self.dynamic:
                self.model_at = at_shapes(part, frozen, name, self.inputs)
            # Through the jit in every mode: compiled on the first call, and kept
            # on disk, so a second process's first call loads instead of compiling.
            self.run = _tessera.jit(self.model, mode=mode, threads=self.threads, records=self.records,
                                    autotune_minutes=float(options.get("autotune_minutes", 10)),
                                    dynamic=self.dynamic, at_shapes=self.model_at, **self.quantize)
        except _tessera.Error as e:
            self._give_up(e)

    def kernels(self):
        """The part's kernels (compiles it again: for explain)."""
        if self.fallback is not None:
            return []
        return _tessera.compile(self.model, threads=self.threads, records=self.records, **self.quantize).kernels

    def _give_up(self, error):
        """A part Tessera cannot compile runs in PyTorch: the model still runs."""
        import warnings
        warnings.warn(f"tessera: part {self.name} runs in PyTorch: {error}")
        self.fallback = error

    def _runs_in_pytorch(self, args, shapes, why):
        import warnings
        warnings.warn(f"tessera: part {self.name} at input shapes {list(shapes)} runs in PyTorch: {why}")
        self.failed_shapes.add(shapes)
        return self.part(*args)

    def _forward_cuda(self, args):
        """CUDA tensors stay on the GPU: the part compiled for it (a GpuModule),
        its inputs copied on the device through DLPack, its outputs written
        into tensors PyTorch allocates there."""
        tensors = [args[i].detach().to(torch.float32).contiguous() for i in self.inputs]
        shapes = tuple(tuple(t.shape) for t in tensors)
        if shapes in self.failed_shapes:
            return self.part(*args)
        device = tensors[0].device
        module = self.gpu_modules.get(shapes)
        if module is None:
            if any(t.device != device for t in tensors) or (device.index or 0) != 0:
                return self._runs_in_pytorch(args, shapes, "Tessera runs on CUDA device 0 alone")
            built = tuple(tuple(shape) for _, shape in self.model.inputs)
            if shapes != built and self.model_at is None:
                return self._runs_in_pytorch(args, shapes, f"the part was converted at {list(built)}")
            try:
                model = self.model if shapes == built else self.model_at([list(s) for s in shapes])
                module = _tessera.compile(model, target=self.cuda_target, records=self.records)
            except _tessera.Error as e:
                return self._runs_in_pytorch(args, shapes, e)
            self.gpu_modules[shapes] = module
        outs = [torch.empty(shape, dtype=torch.float32, device=device) for _, shape in module.outputs]
        module(*tensors, out=outs)
        return outs[0] if self.single else tuple(outs)

    def forward(self, *args):
        if self.fallback is not None:
            return self.part(*args)
        if any(args[i].is_cuda for i in self.inputs):
            return self._forward_cuda(args)
        arrays = [args[i].detach().contiguous().numpy() for i in self.inputs]
        shapes = tuple(a.shape for a in arrays)
        if shapes in self.failed_shapes:
            return self.part(*args)
        if not hasattr(self, "compiled_once") or self.dynamic:  # the jit compiles on a first call, or a new shape
            try:
                out = self.run(*arrays)
            except _tessera.Error as e:
                if not hasattr(self, "compiled_once"):
                    self._give_up(e)
                else:  # dynamic: these shapes alone run in PyTorch
                    return self._runs_in_pytorch(args, shapes, e)
                return self.part(*args)
            self.compiled_once = True
        else:
            out = self.run(*arrays)
        if self.single:
            return torch.from_numpy(out)
        return tuple(torch.from_numpy(o) for o in out)


def _fullgraph(options):
    if "fullgraph" in options:
        return bool(options["fullgraph"])
    try:  # torch.compile(fullgraph=True) reaches backends only through Dynamo's translator
        from torch._dynamo.symbolic_convert import InstructionTranslator
        return bool(InstructionTranslator.current_tx().one_graph)
    except Exception:
        return False


def _frozen_placeholders(gm, example_inputs):
    """Placeholder name -> its value when it is a parameter or buffer (frozen),
    else None. By name: partitioning copies the graph's nodes."""
    frozen = {}
    for node, value in zip([n for n in gm.graph.nodes if n.op == "placeholder"], example_inputs):
        is_state = isinstance(value, torch.nn.Parameter) or "_parameters_" in node.name or "_buffers_" in node.name
        frozen[node.name] = value if is_state and isinstance(value, torch.Tensor) else None
    return frozen


def _constant_value(module, arg, frozen):
    """A part's argument as a constant: a frozen placeholder, or an attribute
    (Dynamo embeds parameters as get_attr nodes when Inductor's freezing is on)."""
    if not _is_node(arg):
        return None
    if arg.op == "get_attr":
        value = module
        for name in arg.target.split("."):
            value = getattr(value, name)
        return value if isinstance(value, torch.Tensor) else None
    return frozen.get(arg.name)


def partition(gm, example_inputs, mode="default", options=None, fullgraph=False, at_shapes=None):
    """The backend's work on one Dynamo graph: returns (module to run, breaks,
    parts). `at_shapes(part, frozen, name, inputs)`, for dynamic shapes,
    gives a function that builds the part at other input shapes."""
    options = dict(options or {})
    breaks = []
    for n in gm.graph.nodes:
        if n.op in ("call_function", "call_method", "call_module"):
            ok, why = supports(n)
            if not ok:
                breaks.append((n.name, why))
    if breaks and fullgraph:
        name, why = breaks[0]
        raise GraphBreakError(f"fullgraph=True, but Tessera cannot compile node '{name}' ({why})"
                              + (f" and {len(breaks) - 1} more" if len(breaks) > 1 else ""))
    frozen = _frozen_placeholders(gm, example_inputs)
    examples = {n.name: _traced_value(n) for n in gm.graph.nodes}
    partitioner = CapabilityBasedPartitioner(gm, _Support(), allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    parts = []
    for call in list(fused.graph.nodes):
        if call.op != "call_module" or not call.target.startswith("fused_"):
            continue
        part = getattr(fused, call.target)
        values = [_constant_value(fused, a, frozen) for a in call.args]
        compiled = TesseraPart(part, values, examples, call.target, mode, options, at_shapes)
        setattr(fused, call.target, compiled)
        parts.append(compiled)
    fused.recompile()
    return fused, breaks, parts


class _Trace(ShapeProp):
    """ShapeProp that also keeps the scalars the graph computes (meta "scalar")."""

    def run_node(self, n):
        result = super().run_node(n)
        if isinstance(result, (int, float, bool)):
            n.meta["scalar"] = result
        return result


class _Dynamic:
    """dynamic=True: Dynamo's graph has symbolic sizes, Tessera compiles
    concrete ones. The first call's shapes are traced with real tensors
    (ShapeProp), partitioned and compiled; each part is a dynamic jit that,
    once an input dimension is seen at a second size, compiles one artifact
    of buckets for a range of it (padding proven exact, or refused and
    compiled per shape). For that the part is rebuilt at other sizes: the
    symbols of Dynamo's sizes are bound from the part's input shapes, the
    graph's inputs resized to them and traced again. The nodes left to
    PyTorch run at the call's own sizes, never padded."""

    def __init__(self, gm, mode, options, fullgraph):
        self.gm, self.mode, self.options, self.fullgraph = gm, mode, options, fullgraph
        # Dynamo's traced values, sizes as symbols (the inputs it passes are real tensors)
        self.symbolic_by_name = {n.name: n.meta.get("example_value") for n in gm.graph.nodes}
        self.symbolic = [self.symbolic_by_name[n.name] for n in gm.graph.nodes if n.op == "placeholder"]
        self.forward, self.parts = None, []

    def __call__(self, *args):
        if self.forward is None:
            self.first_args, self.values = args, _bind(self.symbolic, args)
            module, _, self.parts = partition(self._traced(args), args, self.mode, self.options, self.fullgraph,
                                              self._at_shapes)
            self.forward = module.forward
        return self.forward(*args)

    def _traced(self, args):
        gm = torch.fx.GraphModule(self.gm, copy.deepcopy(self.gm.graph))
        with torch.no_grad():
            _Trace(gm).propagate(*args)
        return gm

    def _at_shapes(self, part, frozen, name, inputs):
        """For a part whose tensor inputs are its placeholders `inputs` (by
        index): their shapes -> the part's Tessera model at them."""
        placeholders = [n for n in part.graph.nodes if n.op == "placeholder"]

        def build(shapes):
            values = dict(self.values)
            for i, shape in zip(inputs, shapes):
                symbolic = self.symbolic_by_name.get(placeholders[i].name)
                if not isinstance(symbolic, torch.Tensor):
                    raise _tessera.Error(f"part {name}: input {placeholders[i].name} has no traced sizes")
                _bind_sizes(values, symbolic.shape, shape)
            args = [_resized(a, e, values) for a, e in zip(self.first_args, self.symbolic)]
            traced = {n.name: n for n in self._traced(args).graph.nodes}
            examples = {k: _traced_value(n) for k, n in traced.items()}
            kept = {n: n.meta for n in part.graph.nodes}
            try:  # the part's nodes read their shapes from meta: those of this trace, while converting
                for n in part.graph.nodes:
                    if n.name in traced:
                        n.meta = traced[n.name].meta
                model = _Converter(name, examples).convert(part, frozen)
            finally:
                for n, meta in kept.items():
                    n.meta = meta
            built = [list(shape) for _, shape in model.inputs]
            if built != [list(s) for s in shapes]:
                raise _tessera.Error(f"part {name} at input shapes {shapes} traces to {built}")
            return model
        return build


def _symbol_of(size):
    """The symbol a Dynamo size is (s0), or None (a number, or an expression of symbols)."""
    if isinstance(size, torch.SymInt) and getattr(size.node.expr, "is_Symbol", False):
        return size.node.expr
    return None


def _bind_sizes(values, symbolic_sizes, sizes):
    """values[symbol] = size for each symbolic size that is a bare symbol."""
    for symbolic, size in zip(symbolic_sizes, sizes):
        symbol = _symbol_of(symbolic)
        if symbol is not None:
            values[symbol] = int(size)


def _bind(symbolic, args):
    """Symbol -> its size in this call, from the graph's inputs."""
    values = {}
    for e, a in zip(symbolic, args):
        if isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor):
            _bind_sizes(values, e.shape, a.shape)
        else:
            _bind_sizes(values, [e], [a])
    return values


def _resized(arg, symbolic, values):
    """A graph input at the sizes `values` gives its symbols: a tensor's axes
    cut or padded by repeating their last entry (token ids stay valid ids),
    a size argument evaluated."""
    def size(s):
        return int(s.node.expr.xreplace(values)) if isinstance(s, torch.SymInt) else int(s)
    if isinstance(symbolic, torch.SymInt):
        return size(symbolic)
    if not isinstance(arg, torch.Tensor) or not isinstance(symbolic, torch.Tensor):
        return arg
    for axis, s in enumerate(symbolic.shape):
        want, have = size(s), arg.shape[axis]
        if want != have:
            if have == 0:
                raise _tessera.Error(f"an empty input axis cannot be resized to {want}")
            arg = arg.index_select(axis, torch.arange(want).clamp(max=have - 1))
    return arg


def _symbolic(gm, example_inputs):
    """Whether Dynamo traced the graph with symbolic sizes (dynamic=True, or a
    second shape seen): a size among the inputs, or in a placeholder's traced value."""
    values = list(example_inputs) + [n.meta.get("example_value") for n in gm.graph.nodes if n.op == "placeholder"]
    return any(isinstance(e, torch.SymInt) or (isinstance(e, torch.Tensor) and
                                               any(isinstance(d, torch.SymInt) for d in e.shape))
               for e in values)


def tessera_backend(gm, example_inputs, mode=None, options=None):
    options = dict(options or {})
    # torch.compile takes mode or options, not both: options={"mode": ...} carries both.
    mode = options.pop("mode", mode) or "default"
    fullgraph = _fullgraph(options)
    if _symbolic(gm, example_inputs):
        return _Dynamic(gm, mode, options, fullgraph)
    module, _, _ = partition(gm, example_inputs, mode, options, fullgraph)
    return module.forward


def _register():
    """backend="tessera" for a package used from its source tree. An installed
    one is found through its entry point (pyproject.toml), which torch loads
    and registers itself: registering here too would be a duplicate."""
    from importlib.metadata import entry_points

    if "tessera" in entry_points(group="torch_dynamo_backends").names:
        return
    try:
        from torch._dynamo.backends.registry import register_backend

        register_backend(compiler_fn=tessera_backend, name="tessera")
    except Exception:  # another registration of the name: torch.compile(backend=tessera_backend) still works
        pass


_register()


class Explanation:
    def __init__(self):
        self.graphs, self.breaks, self.kernels = 0, [], []

    def __str__(self):
        lines = [f"{self.graphs} graph(s) from Dynamo, {len(self.breaks)} Tessera graph break(s), "
                 f"{len(self.kernels)} Tessera kernel(s)"]
        lines += [f"  break: {name}: {why}" for name, why in self.breaks]
        lines += [f"  kernel: {k}" for k in self.kernels]
        return "\n".join(lines)

    __repr__ = __str__


def explain(model, *example_inputs):
    """Compiles `model` once with the tessera backend and lists the graph
    breaks (nodes left to eager PyTorch, with the reason) and Tessera's kernels."""
    result = Explanation()

    def recording_backend(gm, inputs, **kwargs):
        module, breaks, parts = partition(gm, inputs)
        result.graphs += 1
        result.breaks += breaks
        for p in parts:
            result.kernels += p.kernels()
        return module.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=recording_backend)(*example_inputs)
    torch._dynamo.reset()
    return result
