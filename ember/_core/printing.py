"""``repr`` of tensors, formatted like PyTorch's.

Floats share one format across the tensor: integers-valued floats print as
``1.``, otherwise 4 decimals fixed, switching to scientific notation when the
ratio of largest to smallest magnitude is large; long tensors are summarized
with ``...`` (threshold 1000, 3 edge items), as ``torch.set_printoptions`` sets.
"""
import numpy as np

from . import dtype as _dt
from .meta_device import MetaArray

__all__ = ["tensor_repr", "tensor_body", "set_printoptions"]

_OPTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set options for printing (same meaning as ``torch.set_printoptions``)."""
    if profile == "default":
        _OPTS.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "short":
        _OPTS.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        _OPTS.update(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80)
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            _OPTS[k] = v
    _OPTS["sci_mode"] = sci_mode


class _Formatter:
    """One format for all elements: width from the nonzero finite values (as torch does),
    integer-valued floats as ``1.``, scientific notation for wide magnitude ranges."""

    def __init__(self, values):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci = False
        self.width = 1
        self.p = p = _OPTS["precision"]
        if not self.floating:
            for v in values.reshape(-1).tolist():
                self.width = max(self.width, len(str(v)))
            return
        v = values.reshape(-1).astype(np.float64)
        nz = v[np.isfinite(v) & (v != 0)]
        if nz.size == 0:
            if _OPTS["sci_mode"] is not None:
                self.sci = _OPTS["sci_mode"]
            return
        mag = np.abs(nz)
        mx, mn = float(mag.max()), float(mag.min())
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        if self.int_mode:
            self.sci = mx / mn > 1000.0 or mx > 1.0e8
            strs = [f"{x:.{p}e}" for x in nz] if self.sci else [f"{x:.0f}." for x in nz]
        else:
            self.sci = mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4
            strs = [f"{x:.{p}e}" if self.sci else f"{x:.{p}f}" for x in nz]
        self.width = max(self.width, max(len(x) for x in strs))
        if _OPTS["sci_mode"] is not None:
            self.sci = _OPTS["sci_mode"]

    def _fmt(self, v):
        if not self.floating:
            return str(v)
        if self.sci:
            return f"{v:.{self.p}e}"
        if self.int_mode:
            return f"{v:.0f}" + ("" if np.isnan(v) or np.isinf(v) else ".")
        return f"{v:.{self.p}f}"

    def format(self, v):
        if not self.floating:
            s = str(v.item() if hasattr(v, "item") else v)
        else:
            s = self._fmt(float(v))
        return s.rjust(self.width)


def _summarize(a, edge):
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * edge:
        idx = list(range(edge)) + list(range(a.shape[0] - edge, a.shape[0]))
        a = a[idx]
    return np.stack([_summarize(x, edge) for x in a]) if a.ndim > 1 else a


def _fmt_array(a, fmt, indent, summarize, edge):
    if a.ndim == 0:
        return fmt.format(a)
    if a.ndim == 1:
        items = [fmt.format(v) for v in a]
        if summarize and a.shape[0] > 2 * edge:
            items = items[:edge] + [" ..."] + items[-edge:]
        per_line = max(1, (_OPTS["linewidth"] - indent) // fmt.item_width)
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = list(range(a.shape[0]))
    parts = []
    if summarize and a.shape[0] > 2 * edge:
        rows = rows[:edge] + [None] + rows[-edge:]
    for r in rows:
        parts.append("..." if r is None else _fmt_array(a[r], fmt, indent + 1, summarize, edge))
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


class _RealFormat:
    def __init__(self, shown):
        self.f = _Formatter(shown.reshape(-1))
        self.item_width = self.f.width + 2

    def format(self, v):
        return self.f.format(v)


class _ComplexFormat:
    """Real and imaginary parts each get their own formatter, as in torch."""

    def __init__(self, shown):
        self.re = _Formatter(shown.real.astype(np.float64).reshape(-1))
        self.im = _Formatter(shown.imag.astype(np.float64).reshape(-1))
        self.item_width = self.re.width + 2 + self.im.width + 1

    def format(self, v):
        r = self.re.format(v.real)
        i = (self.im.format(v.imag) + "j").lstrip()
        return r + i if i[0] in "+-" else r + "+" + i


def tensor_body(t, indent, a=None):
    """The values of (non-meta) tensor ``t`` (``a``: its values on the host, when already
    there) as its repr prints them, continuation lines indented by ``indent`` (torch's
    ``_tensor_str``)."""
    a = _host(t) if a is None else a
    d = t.dtype
    vals = a
    if d in (_dt.float16, _dt.bfloat16) or d.name.startswith("float8"):
        vals = a.astype(np.float32)
    summarize = a.size > _OPTS["threshold"]
    edge = _OPTS["edgeitems"]
    shown = _summarize(vals, edge) if summarize else vals
    if a.size == 0:
        return "[]"
    fmt = (_ComplexFormat if d.is_complex else _RealFormat)(shown)
    return _fmt_array(vals, fmt, indent, summarize, edge)


def _host(t):
    a = t._data
    return a if type(a) is np.ndarray else np.asarray(a.get() if hasattr(a, "get") else a)


def tensor_repr(t, prefix="tensor("):
    if type(t._data) is MetaArray:
        return _meta_repr(t, prefix)
    a = _host(t)
    d = t.dtype
    indent = len(prefix)
    body = tensor_body(t, indent, a)
    suffix = []
    default_dtypes = (_dt.get_default_dtype(), _dt.int64, _dt.bool, _dt.default_complex_dtype())
    if a.size == 0 and a.shape != (0,):
        suffix.append(f"size={tuple(a.shape)}")
    if d not in default_dtypes:
        suffix.append(f"dtype={d}")
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    return _joined(t, prefix + body, suffix, indent)


def _meta_repr(t, prefix):
    """torch's form for tensors without values: ``tensor(..., device='meta', size=(2, 3))``."""
    suffix = [f"device='{t.device}'", f"size={tuple(t.shape)}"]
    if t.dtype is not _dt.get_default_dtype():
        suffix.append(f"dtype={t.dtype}")
    return _joined(t, prefix + "...", suffix, len(prefix))


def _joined(t, s, suffix, indent=7):
    """``s`` with the suffixes (and autograd's) appended as torch does: a suffix that would
    pass the line width starts a new line, indented to the opening parenthesis."""
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        suffix.append("requires_grad=True")
    parts = [s]
    line = len(s) - s.rfind("\n") + 1  # torch's count (one more than the line's length)
    for x in suffix:
        if line + len(x) + 2 > _OPTS["linewidth"]:
            parts.append(",\n" + " " * indent + x)
            line = indent + len(x)
        else:
            parts.append(", " + x)
            line += len(x) + 2
    return "".join(parts) + ")"
