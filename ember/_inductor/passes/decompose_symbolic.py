"""Decompose a node into primitives that hold for every call (part of pass 1).

A decomposition is Python over concrete tensors, so it is traced twice: on zeros at the
example's sizes, and on other values at other sizes for each symbol (larger ones); a
static node is traced on two sets of values at the same sizes.  The two recordings must be the
same program; an int param that differs between them is a size, and is replaced by the
symbolic size (an input or output dim, or a product of adjacent dims) that takes both
values.  The new nodes' metadata comes from each op's shape rule run on the symbolic
input metadata.  Anything else that differs (a constant built from the sizes, a param no
size explains, a param read off the input values) leaves the node whole: it then runs its
eager kernel."""
import operator

import numpy as np

from ..._core.meta import TensorMeta, as_dtype
from ..._core.op import Op
from ..._core.tensor import Tensor, wrap
from .. import sizes as _sizes
from .classify import is_node
from .record import Recorder

__all__ = ["decompose_symbolic", "CannotGeneralize"]


class CannotGeneralize(Exception):
    pass


# ops whose output shape depends on the values: params after them would hold the
# stand-ins' sizes
DATA_DEPENDENT = {"nonzero", "unique", "unique_consecutive", "bincount", "histogram"}


def _flat(a):
    if isinstance(a, (list, tuple)):
        return [y for x in a for y in _flat(x)]
    if isinstance(a, dict):
        return [y for x in a.values() for y in _flat(x)]
    return [a]


def _symints(node):
    """Every symbolic size the node's inputs, output and params carry."""
    out = []
    for a in _flat(node.args) + _flat(node.kwargs):
        if is_node(a) and isinstance(a.meta.get("val"), TensorMeta):
            out.extend(a.meta["val"].shape)
        elif getattr(a, "expr", None) is not None:
            out.append(a)
    v = node.meta.get("val")
    for m in (v if isinstance(v, tuple) else (v,)):
        if isinstance(m, TensorMeta):
            out.extend(m.shape)
    return [d for d in out if getattr(d, "expr", None) is not None]


def _envs(node):
    syms = {}
    used = set()
    for d in _symints(node):
        s = _sizes.size(d)
        if isinstance(s, _sizes.Sym):
            used |= _sizes.symbols_of(s)
            if str(s).isidentifier():
                syms[str(s)] = int(d)
    if not used <= set(syms):
        raise CannotGeneralize("a symbol no input size binds")
    env_b = {k: v + 3 + i for i, (k, v) in enumerate(sorted(syms.items()))}
    return syms, env_b


def _at(v, env):
    if getattr(v, "expr", None) is not None:
        return _sizes.evaluate(_sizes.size(v), env)
    if isinstance(v, (list, tuple)):
        return type(v)(_at(x, env) for x in v)
    return v


def _standin(shape, dtype, pattern):
    """Zeros, or (``pattern``) a fixed pattern of small values: a decomposition whose
    program changes between the two read its input values (one_hot's class count)."""
    if not pattern:
        return np.zeros(shape, dtype=dtype)
    k = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 2
    if dtype.kind == "f":
        return np.asarray(0.5 + 0.25 * k).astype(dtype)  # 0-d arithmetic gives a scalar
    return np.asarray(k).astype(dtype)


def _record(node, env, pattern=False):
    from ...fx import Graph
    g = Graph()
    rec = Recorder(g, {})
    inputs = []

    def conv(a):
        if is_node(a):
            m = a.meta["val"]
            shape = tuple(_sizes.evaluate(_sizes.size(d), env) for d in m.shape)
            t = wrap(_standin(shape, m.dtype.np, pattern))
            p = g.placeholder(f"in{len(inputs)}")
            inputs.append(a)
            rec.bind(t, p)
            return t
        if isinstance(a, (list, tuple)):
            return type(a)(conv(x) for x in a)
        return _at(a, env)
    args = conv(node.args)
    kwargs = {k: conv(v) for k, v in node.kwargs.items()}
    from ... import autograd
    with np.errstate(all="ignore"), autograd.no_grad():
        with rec:
            out = node.target.decomp(*args, **kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if not all(isinstance(o, Tensor) for o in outs):
        raise CannotGeneralize("an output that is not a tensor")
    result = [rec.node_of(o) for o in outs]
    return g, inputs, result, isinstance(out, (tuple, list))


def _candidates(node):
    """The symbolic sizes a param may be: every dim, and product of adjacent dims, of the
    node's inputs and outputs."""
    shapes = []
    for a in _flat(node.args) + _flat(node.kwargs):
        if is_node(a) and isinstance(a.meta.get("val"), TensorMeta):
            shapes.append(a.meta["val"].shape)
    v = node.meta.get("val")
    shapes += [m.shape for m in (v if isinstance(v, tuple) else (v,)) if isinstance(m, TensorMeta)]
    out = []
    for shape in shapes:
        for i in range(len(shape)):
            acc = 1
            for j in range(i, len(shape)):
                acc = _sizes.mul(acc, _sizes.size(shape[j]))
                if isinstance(acc, _sizes.Sym) and acc not in out:
                    out.append(acc)
                    out.append(_sizes.add(acc, -1))  # var's n - 1
    return out


def _generalize(va, vb, cands, env_a, env_b, cls):
    if isinstance(va, tuple) and isinstance(vb, tuple) and len(va) == len(vb):
        return type(va)(_generalize(a, b, cands, env_a, env_b, cls) for a, b in zip(va, vb))
    if isinstance(va, list) and isinstance(vb, list) and len(va) == len(vb):
        return [_generalize(a, b, cands, env_a, env_b, cls) for a, b in zip(va, vb)]
    if isinstance(va, np.ndarray) or isinstance(vb, np.ndarray):
        if isinstance(va, np.ndarray) and isinstance(vb, np.ndarray) and \
                va.shape == vb.shape and np.array_equal(va, vb, equal_nan=True):
            return va
        raise CannotGeneralize("a constant that depends on the sizes")
    if type(va) is int and type(vb) is int and va != vb:
        for s in cands:
            if _sizes.evaluate(s, env_a) == va and _sizes.evaluate(s, env_b) == vb:
                return cls(va, str(s))
        raise CannotGeneralize(f"no size explains the param {va} / {vb}")
    if type(va) is not type(vb):
        raise CannotGeneralize("params of different types")
    if isinstance(va, float) and va != vb and not (va != va and vb != vb):
        raise CannotGeneralize("a float param that depends on the sizes")
    if not isinstance(va, float) and not is_node(va) and va != vb:
        raise CannotGeneralize("a param that depends on the sizes")
    return va


def _meta_args(a, metas):
    if is_node(a):
        return metas[a]
    if isinstance(a, (list, tuple)):
        return type(a)(_meta_args(x, metas) for x in a)
    return a


def decompose_symbolic(graph, node):
    """Replace ``node`` by its generalised decomposition, or raise `CannotGeneralize`."""
    env_a, env_b = _envs(node)
    syms = _symints(node)
    cls = type(syms[0]) if syms else None
    ga, ins_a, outs_a, multi = _record(node, env_a)
    gb, _, outs_b, _ = _record(node, env_b, pattern=True)
    na = [n for n in ga.nodes if n.op == "call_function"]
    if any(getattr(n.target, "name", None) in DATA_DEPENDENT for n in na):
        raise CannotGeneralize("an op with a data-dependent shape")
    nb = [n for n in gb.nodes if n.op == "call_function"]
    if len(na) != len(nb) or any(a.target is not b.target for a, b in zip(na, nb)):
        raise CannotGeneralize("the decomposition's ops depend on the sizes")
    pos_a = {n: i for i, n in enumerate(ga.nodes)}
    pos_b = {n: i for i, n in enumerate(gb.nodes)}
    if [pos_a[o] for o in outs_a] != [pos_b[o] for o in outs_b]:
        raise CannotGeneralize("the outputs depend on the sizes")
    cands = _candidates(node)
    phs = [n for n in ga.nodes if n.op == "placeholder"]
    metas = {p: x.meta["val"] for p, x in zip(phs, ins_a)}
    plan = []
    for a, b in zip(na, nb):
        def same_nodes(x, y):
            if is_node(x) or is_node(y):
                if not (is_node(x) and is_node(y) and pos_a[x] == pos_b[y]):
                    raise CannotGeneralize("the dataflow depends on the sizes")
                return x
            if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and \
                    len(x) == len(y):
                return type(x)(same_nodes(p, q) for p, q in zip(x, y))
            return _generalize(x, y, cands, env_a, env_b, cls)
        args = same_nodes(tuple(a.args), tuple(b.args))
        kwargs = {k: same_nodes(a.kwargs[k], b.kwargs.get(k)) for k in a.kwargs}
        if set(a.kwargs) != set(b.kwargs):
            raise CannotGeneralize("params depend on the sizes")
        if a.target is operator.getitem:
            meta = metas[args[0]][args[1]]
        elif (isinstance(a.target, Op) and a.target.name == "tensor") or not syms:
            meta = a.meta["val"]  # static: the recording's own metadata
        else:
            try:
                rule = a.target.shape(*_meta_args(args, metas), **kwargs)
            except Exception as e:  # noqa: BLE001
                raise CannotGeneralize(f"shape rule of {a.target}: {e}") from None
            if a.target.n_out == 1:
                meta = TensorMeta(rule[0], as_dtype(rule[1]))
            else:
                meta = tuple(TensorMeta(sh, as_dtype(dt)) for sh, dt in rule)
            want = a.meta["val"]
            got = meta if isinstance(meta, tuple) else (meta,)
            exp = want if isinstance(want, tuple) else (want,)
            for g_, w_ in zip(got, exp):
                if tuple(_sizes.evaluate(_sizes.size(d), env_a) for d in g_.shape) != \
                        tuple(int(d) for d in w_.shape) or g_.dtype != w_.dtype:
                    raise CannotGeneralize(f"shape rule of {a.target} disagrees")
        metas[a] = meta
        plan.append((a, args, kwargs, meta))
    new = {p: x for p, x in zip(phs, ins_a)}
    with graph.inserting_before(node):
        for a, args, kwargs, meta in plan:
            def sub(x):
                if is_node(x):
                    return new[x]
                if isinstance(x, (list, tuple)):
                    return type(x)(sub(y) for y in x)
                return x
            n = graph.call_function(a.target, sub(args), {k: sub(v) for k, v in kwargs.items()})
            n.meta["val"] = meta
            new[a] = n
    repl = [new[o] for o in outs_a]
    if multi:
        for u in list(node.users):
            if u.target is not operator.getitem:
                raise CannotGeneralize("multi-output node used other than by getitem")
            u.replace_all_uses_with(repl[u.args[1]])
            graph.erase_node(u)
    else:
        node.replace_all_uses_with(repl[0])
    graph.erase_node(node)

