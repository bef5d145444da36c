"""Dynamic shapes for ``ember.export``: `Dim`, `dims` and the ``dynamic_shapes`` argument.

``dynamic_shapes`` says, per input, which dimensions may vary: a dict keyed by the
forward's argument names or a tuple in argument order (torch's two forms), each entry a
dict ``{dim: Dim}`` or a tuple with one entry per dimension (``None`` or ``Dim.STATIC`` for
a static dim).  Nested inputs take nested specs of the same structure.  A `Dim` has a name
and a range; the same `Dim` object on two dimensions says they are equal; ``2 * dx`` (a
derived dim) says a dimension is always twice ``dx``.  ``Dim.AUTO`` lets export decide
(dynamic unless the program specialises it) and ``Dim.DYNAMIC`` asks for dynamic and fails
if the program specialises it, as ``Dim("name")`` does.
"""
import enum
import re
import inspect

from .._core.tensor import Tensor
from .._dynamo.exc import UserError
from ..func import _pytree

__all__ = ["Dim", "dims", "DerivedDim", "ShapesCollection", "AdditionalInputs",
           "refine_dynamic_shapes_from_suggested_fixes"]

_INT_MAX = INT_OO = 2 ** 63 - 1


class _DimHint(enum.Enum):
    AUTO = "auto"
    STATIC = "static"
    DYNAMIC = "dynamic"

    def __repr__(self):
        return f"Dim.{self.name}"

    def __call__(self, min=None, max=None):
        """``Dim.AUTO(min=2, max=64)``: the hint with a range (torch 2.6+)."""
        return _RangedHint(self, min, max)


class _RangedHint:
    __slots__ = ("hint", "min", "max")

    def __init__(self, hint, min, max):
        self.hint, self.min, self.max = hint, min, max

    def __repr__(self):
        return f"{self.hint!r}(min={self.min}, max={self.max})"


class Dim:
    """A named symbolic dimension with the range ``[min, max]`` (torch.export.Dim).

    ``Dim.AUTO``, ``Dim.STATIC`` and ``Dim.DYNAMIC`` are hints instead of names (see the
    module docstring).  ``a * dim + b`` makes a `DerivedDim`."""
    AUTO = _DimHint.AUTO
    STATIC = _DimHint.STATIC
    DYNAMIC = _DimHint.DYNAMIC

    def __init__(self, name, *, min=None, max=None):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Dim name must be a valid identifier, got {name!r}")
        lo = 0 if min is None else int(min)
        hi = _INT_MAX if max is None else int(max)
        if hi < 2:
            raise ValueError(f"Dim {name!r}: max must be at least 2 (sizes 0 and 1 are "
                             f"specialized), got {hi}")
        if lo > hi:
            raise ValueError(f"Dim {name!r}: min ({lo}) must not exceed max ({hi})")
        self.__name__ = name
        self.min = lo
        self.max = hi

    def __repr__(self):
        if self.min == 0 and self.max == _INT_MAX:
            return f"Dim({self.__name__!r})"
        return f"Dim({self.__name__!r}, min={self.min}, max={self.max})"

    def __mul__(self, k):
        return self._derive(k, 0)

    __rmul__ = __mul__

    def __add__(self, k):
        return self._derive(1, k)

    __radd__ = __add__

    def __sub__(self, k):
        return self._derive(1, -k)

    def _derive(self, a, b):
        if type(a) is not int or type(b) is not int:
            raise TypeError(
                f"a derived Dim is an integer linear function of its root (a * {self.__name__} "
                f"+ b with ints a, b), got {a!r} and {b!r}")
        return DerivedDim(self, a, b)


class DerivedDim:
    """``a * root + b``: a dimension that is a linear function of another `Dim`."""

    def __init__(self, root, a, b):
        if isinstance(root, DerivedDim):
            a, b, root = a * root.a, a * root.b + b, root.root
        if a < 1:
            raise ValueError(f"a derived Dim must grow with its root, got {a} * {root.__name__}")
        self.root, self.a, self.b = root, a, b
        self.__name__ = _affine_text(root.__name__, a, b)

    def __repr__(self):
        return self.__name__

    def __mul__(self, k):
        return Dim._derive(self, k, 0)

    __rmul__ = __mul__

    def __add__(self, k):
        return Dim._derive(self, 1, k)

    __radd__ = __add__

    def __sub__(self, k):
        return Dim._derive(self, 1, -k)

    _derive = Dim._derive

    def value(self, root_value):
        return self.a * root_value + self.b

    @property
    def min(self):
        return self.value(self.root.min)

    @property
    def max(self):
        return self.value(self.root.max) if self.root.max != _INT_MAX else _INT_MAX


def _affine_text(name, a, b):
    s = name if a == 1 else f"{a}*{name}"
    return s if b == 0 else f"{s} + {b}" if b > 0 else f"{s} - {-b}"


def dims(*names, min=None, max=None):
    """One `Dim` per name, all with the range ``[min, max]`` (torch.export.dims)."""
    return tuple(Dim(n, min=min, max=max) for n in names)


class ShapesCollection:
    """Dynamic shapes keyed by the tensors themselves (torch.export.ShapesCollection):
    ``sc[x] = {0: batch}``; ``dynamic_shapes(m, args, kwargs)`` gives the nested form."""

    def __init__(self):
        self._shapes = {}

    def __setitem__(self, t, shape):
        if not isinstance(t, Tensor):
            raise ValueError(f"ShapesCollection keys are tensors, got {type(t).__name__}")
        self._shapes[id(t)] = (t, shape)

    def __getitem__(self, t):
        return self._shapes.setdefault(id(t), (t, {}))[1]

    def dynamic_shapes(self, m, args, kwargs=None):
        def spec(x):
            if isinstance(x, Tensor):
                return self._shapes.get(id(x), (x, None))[1]
            if isinstance(x, (tuple, list)):
                return type(x)(spec(v) for v in x)
            if isinstance(x, dict):
                return {k: spec(v) for k, v in x.items()}
            return None
        out = spec(tuple(args))
        if kwargs:
            return _named(m, out, spec(dict(kwargs)))
        return out


class AdditionalInputs:
    """Dynamic shapes inferred from more example inputs (torch.export.AdditionalInputs):
    ``add(args, kwargs)`` each representative input; a dimension (or int input) whose size
    differs from the export example's in any of them is ``Dim.DYNAMIC``, one that never
    differs is static.  Export then checks that the program accepts every added input
    (`verify`).  Beyond torch's inference nothing is guessed: a non-int value that differs
    is an error."""

    def __init__(self):
        self._examples = []

    def add(self, args, kwargs=None):
        if type(args) is not tuple:
            raise AssertionError(f"Representative args {args} must be a tuple")
        if kwargs is not None and type(kwargs) is not dict:
            raise AssertionError(f"Representative kwargs {kwargs} must be None or a dict")
        self._examples.append((args, kwargs))

    def dynamic_shapes(self, m, args, kwargs=None):
        """The ``dynamic_shapes`` (a dict by argument name) that the example ``args``/
        ``kwargs`` and the added inputs imply."""
        def shapes(x):
            if isinstance(x, Tensor):
                return tuple(int(s) for s in x.shape)
            if isinstance(x, (tuple, list)):
                return type(x)(shapes(v) for v in x)
            if isinstance(x, dict):
                return {k: shapes(v) for k, v in x.items()}
            return x
        trees = [_named(m, tuple(shapes(a)), shapes(dict(k or {})))
                 for a, k in [(args, kwargs), *self._examples]]
        return _merge(trees[0], trees[1:])

    def verify(self, ep):
        """Check that ``ep``'s module accepts each added input (shapes, dtypes, ranges);
        raises as a call would, without running the program."""
        epm = ep.module()
        for args, kwargs in self._examples:
            epm._user_inputs(epm._program_for_mode(), args, kwargs or {})


_FIX_DIM = re.compile(r"^Dim\('(\w+)'(?:,\s*min=(\d+))?(?:,\s*max=(\d+))?\)$")
_FIX_REL = re.compile(r"^(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*)(?:\s*([+-])\s*(\d+))?$")


def _suggested_fixes(msg):
    """``{dim name: int | Dim | (a, root name, b)}`` from the "Suggested fix(es)" lines of
    an export error (ember's inline form, torch's block form)."""
    lines = []
    if "Suggested fixes:" in msg:
        lines = msg.split("Suggested fixes:", 1)[1].strip().splitlines()
    lines += [ln.split("Suggested fix:", 1)[1] for ln in msg.splitlines()
              if "Suggested fix:" in ln]
    fixes = {}
    for line in lines:
        line = re.sub(r"\s*(#.*|\(or .*\))$", "", line.strip())
        if " = " not in line:
            continue
        name, expr = (x.strip() for x in line.split(" = ", 1))
        m = _FIX_DIM.match(expr)
        if re.fullmatch(r"-?\d+", expr):
            fixes[name] = int(expr)
        elif m:
            fixes[name] = Dim(m.group(1), min=None if m.group(2) is None else int(m.group(2)),
                              max=None if m.group(3) is None else int(m.group(3)))
        elif (m := _FIX_REL.match(expr)):
            b = int(m.group(4) or 0) * (-1 if m.group(3) == "-" else 1)
            fixes[name] = (int(m.group(1) or 1), m.group(2), b)
        else:
            raise ValueError(f"refine_dynamic_shapes_from_suggested_fixes: cannot read the "
                             f"suggested fix {line!r}")
    if not fixes:
        raise UserError("Suggested fixes not found in error message given to "
                        "refine_dynamic_shapes_from_suggested_fixes()")
    return fixes


def _affine(a, root, b):
    if isinstance(root, int):
        return a * root + b
    return root if (a, b) == (1, 0) else root * a + b


def refine_dynamic_shapes_from_suggested_fixes(msg, dynamic_shapes):
    """``dynamic_shapes`` with the fixes an export error suggests applied
    (torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes): a Dim fixed
    to an int becomes that int, one given a new range the new Dim, one tied to another
    dim that dim (or ``a * dim + b``); derived dims follow their root."""
    fixes = _suggested_fixes(str(msg))
    by_name = {}

    def collect(spec):
        if isinstance(spec, dict):
            for v in spec.values():
                collect(v)
        elif isinstance(spec, (tuple, list)):
            for v in spec:
                collect(v)
        elif isinstance(spec, DerivedDim):
            by_name.setdefault(spec.root.__name__, spec.root)
        elif isinstance(spec, Dim):
            by_name.setdefault(spec.__name__, spec)
    collect(dynamic_shapes)
    roots = {f[1] for f in fixes.values() if type(f) is tuple}
    for k in fixes:
        if k not in by_name and k not in roots:
            raise AssertionError(f"shape_fixes key {k!r} not found in name_to_dim or roots")
    new = {}

    def fixed(name):
        if name not in new:
            f = fixes.get(name, by_name.get(name))
            if type(f) is tuple:
                a, root, b = f
                f = _affine(a, fixed(root), b)
            new[name] = f
        return new[name]

    def apply(spec):
        if isinstance(spec, dict):
            return {k: apply(v) for k, v in spec.items()}
        if isinstance(spec, (tuple, list)):
            return type(spec)(apply(v) for v in spec)
        if isinstance(spec, DerivedDim):
            return _affine(spec.a, fixed(spec.root.__name__), spec.b)
        if isinstance(spec, Dim):
            return fixed(spec.__name__)
        return spec
    return apply(dynamic_shapes)


def _merge(v, others):
    if not all(type(v) is type(o) for o in others):
        raise ValueError(f"The following inputs were found to have differing types, so they "
                         f"cannot be marked as dynamic: {(v,) + tuple(others)}.")
    if isinstance(v, dict):
        if any(list(o) != list(v) for o in others):
            raise ValueError(f"The additional inputs name other arguments than the example: "
                             f"{list(v)} against {[list(o) for o in others]}")
        return {k: _merge(v[k], [o[k] for o in others]) for k in v}
    if isinstance(v, (tuple, list)):
        if any(len(o) != len(v) for o in others):
            raise ValueError(f"The following inputs were found to have differing lengths "
                             f"(tensor ranks or sequence lengths), so they cannot be marked "
                             f"as dynamic: {(v,) + tuple(others)}.")
        return type(v)(_merge(x, [o[i] for o in others]) for i, x in enumerate(v))
    if isinstance(v, int) and not isinstance(v, bool):
        return None if all(o == v for o in others) else Dim.DYNAMIC
    if not all(o == v for o in others):
        raise ValueError(f"The following inputs were found to have differing values, but they "
                         f"cannot be marked as dynamic: {(v,) + tuple(others)}.")
    return None


def _named(m, positional, keyword):
    names = _argument_names(m, len(positional), keyword)
    d = dict(zip(names, positional))
    d.update(keyword)
    return d


def _argument_names(m, n_args, kwargs):
    given = getattr(m, "_forward_arg_names", None)   # a program's module(): the original's
    if given is not None and len(given) >= n_args:
        return list(given[:n_args])
    fn = getattr(m, "_fn", None) or (m.forward if hasattr(m, "forward") else m)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"args_{i}" for i in range(n_args)]
    names = []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            names.extend(f"{p.name}_{i}" for i in range(n_args - len(names)))
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    while len(names) < n_args:
        names.append(f"args_{len(names)}")
    return names[:n_args]


class DimSpec:
    """What export makes of one input dimension: ``kind`` "static", "auto" or "dynamic";
    ``dim`` the `Dim`/`DerivedDim` (None for hints); ``min``/``max`` its range."""
    __slots__ = ("kind", "dim", "min", "max")

    def __init__(self, kind, dim=None, min=0, max=_INT_MAX):
        self.kind, self.dim, self.min, self.max = kind, dim, min, max


def _dim_spec(entry, where):
    if entry is None or entry is Dim.STATIC:
        return DimSpec("static")
    if isinstance(entry, _RangedHint):
        kind = "static" if entry.hint is Dim.STATIC else entry.hint.value
        return DimSpec(kind, None, entry.min or 0, _INT_MAX if entry.max is None else entry.max)
    if entry is Dim.AUTO or entry is Dim.DYNAMIC:
        return DimSpec(entry.value)
    if isinstance(entry, (Dim, DerivedDim)):
        return DimSpec("dynamic", entry, entry.min, entry.max)
    if type(entry) is int:
        return DimSpec("static")
    raise ValueError(f"dynamic_shapes{where}: expected a Dim, Dim.AUTO/STATIC/DYNAMIC, an int "
                     f"or None for a dimension, got {entry!r}")


def input_dim_specs(mod, args, kwargs, dynamic_shapes, flat_inputs, flat_paths):
    """``{position in flat_inputs: {dim: DimSpec}}`` from ``dynamic_shapes`` (see the
    module docstring); every dimension not named is static."""
    out = {}
    if dynamic_shapes is None:
        return out
    if isinstance(dynamic_shapes, ShapesCollection):
        dynamic_shapes = dynamic_shapes.dynamic_shapes(mod, args, kwargs)
    if isinstance(dynamic_shapes, dict):
        names = _argument_names(mod, len(args), kwargs)
        by_name = dict(zip(names, args))
        by_name.update(kwargs or {})
        unknown = [k for k in dynamic_shapes if k not in by_name]
        if unknown:
            raise ValueError(
                f"dynamic_shapes names {unknown} that are not arguments of the exported "
                f"function; its arguments are {list(by_name)}. (When dynamic_shapes is a "
                f"dict, its keys must be the argument names of forward.)")
        specs = tuple(dynamic_shapes.get(n) for n in names) + \
            (({k: dynamic_shapes.get(k) for k in kwargs},) if kwargs else ())
        trees = tuple(args) + ((dict(kwargs),) if kwargs else ())
    elif isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) != len(args) + (1 if kwargs else 0) and \
                len(dynamic_shapes) != len(args):
            raise ValueError(
                f"dynamic_shapes has {len(dynamic_shapes)} entries but the exported function "
                f"takes {len(args)} positional inputs; give one spec per input")
        specs = tuple(dynamic_shapes)
        trees = tuple(args) + ((dict(kwargs),) if kwargs and len(specs) > len(args) else ())
    else:
        raise ValueError(f"dynamic_shapes must be a dict, a tuple or a list, got "
                         f"{type(dynamic_shapes).__name__}")
    position = {id(t): i for i, t in enumerate(flat_inputs)}
    for tree, spec in zip(trees, specs):
        _walk(tree, spec, position, flat_paths, out)
    return out


def _walk(tree, spec, position, paths, out):
    if spec is None:
        return
    if isinstance(tree, Tensor):
        i = position.get(id(tree))
        if i is None:
            return
        where = f" for input {paths[i]}"
        if isinstance(spec, dict):
            items = spec.items()
        elif isinstance(spec, (tuple, list)):
            if len(spec) != tree.ndim:
                raise ValueError(
                    f"dynamic_shapes{where}: a tuple spec needs one entry per dimension; the "
                    f"input has {tree.ndim} dimensions, the spec {len(spec)}")
            items = enumerate(spec)
        else:
            raise ValueError(f"dynamic_shapes{where}: expected a dict {{dim: Dim}} or a tuple "
                             f"per dimension, got {type(spec).__name__}")
        dims_ = out.setdefault(i, {})
        for d, entry in items:
            if not isinstance(d, int) or not -tree.ndim <= d < tree.ndim:
                raise ValueError(f"dynamic_shapes{where}: dimension {d!r} is out of range for "
                                 f"a tensor of {tree.ndim} dimensions")
            dims_[d % tree.ndim] = _dim_spec(entry, where)
        return
    node = _pytree._REGISTRY.get(type(tree))
    if node is not None:   # a registered dataclass: a list of its children's specs, as torch
        children = node[0](tree)[0]
        if not isinstance(spec, (tuple, list)):
            raise ValueError(f"Node type mismatch; expected {list}, but got {type(spec)}.")
        if len(spec) != len(children):
            raise ValueError(f"dynamic_shapes: expected {len(children)} specs for the fields "
                             f"of {type(tree).__name__}, got {len(spec)}")
        for t, s in zip(children, spec):
            _walk(t, s, position, paths, out)
        return
    if isinstance(tree, (tuple, list)):
        if not isinstance(spec, (tuple, list)) or len(spec) != len(tree):
            raise ValueError(f"dynamic_shapes: expected a {type(tree).__name__} of "
                             f"{len(tree)} specs to match the input, got {spec!r}")
        for t, s in zip(tree, spec):
            _walk(t, s, position, paths, out)
    elif isinstance(tree, dict):
        if not isinstance(spec, dict):
            raise ValueError(f"dynamic_shapes: expected a dict spec to match a dict input, got "
                             f"{spec!r}")
        for k, t in tree.items():
            _walk(t, spec.get(k), position, paths, out)

