"""grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian (``torch.func``).

Reverse-mode transforms run ember's autograd engine on fresh differentiable
aliases of the chosen arguments; forward-mode ones use
``ember.autograd.forward_ad``; Jacobians vmap a vjp or a jvp over the basis.
They compose: ``vmap(grad(f))``, ``jacfwd(jacrev(f))``, ``grad(grad(f))``.
The backward pass keeps its graph (``create_graph``) whenever an enclosing
transform or an input may differentiate through it.
"""
import functools

from .._core.state import STATE
from .._core.tensor import Tensor
from ..autograd import forward_ad as fwAD
from ..autograd.backward import grad as _autograd_grad
from ._pytree import tree_flatten, tree_unflatten
from ._vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]

_DEPTH = [0]      # nesting of reverse-mode transforms (decides create_graph)
_ALL_DEPTH = [0]  # nesting of all transforms (the outermost detaches its results)


def _detach_keep_tangent(t):
    if not isinstance(t, Tensor) or not t._requires_grad:
        return t
    d = t.detach()
    if t._fw_tangent is not None:
        d._fw_tangent = t._fw_tangent
    return d


def _transform(wrapper):
    """Mark ``wrapper`` as a transform: the outermost one hands back results without
    autograd history when none of its inputs required grad (the history only linked the
    transforms' internal differentiable aliases)."""
    @functools.wraps(wrapper)
    def call(*args, **kwargs):
        _ALL_DEPTH[0] += 1
        try:
            out = wrapper(*args, **kwargs)
        finally:
            _ALL_DEPTH[0] -= 1
        if _ALL_DEPTH[0] == 0 and not any(isinstance(x, Tensor) and x._requires_grad
                                          for x in tree_flatten((args, kwargs))[0]):
            leaves, spec = tree_flatten(out)
            out = tree_unflatten([_detach_keep_tangent(x) for x in leaves], spec)
        return out
    return call


def _fname(f):
    return getattr(f, "__name__", repr(f))


def _alias(x):
    """A differentiable stand-in for ``x`` whose gradient we can ask for."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"Expected tensors as differentiable arguments, got {type(x)}")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    if x._requires_grad:
        return x.view_as(x)  # stays connected to the outer computation
    a = x.detach()._set_requires_grad(True)
    if x._fw_tangent is not None:
        a._fw_tangent = x._fw_tangent  # forward-over-reverse: keep the tangent
    return a


def _argnums_tuple(argnums, n, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{name}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: "
                               f"{type(a)}")
        if not -n <= a < n:
            raise RuntimeError(f"Got argnums={a}, but only {n} positional inputs")
    return tuple(a % n for a in nums)


def _prepare(args, argnums, name):
    nums = _argnums_tuple(argnums, len(args), name)
    args = list(args)
    flat_all, specs = [], []
    for i in nums:
        flat, spec = tree_flatten(args[i])
        flat = [_alias(x) for x in flat]
        args[i] = tree_unflatten(flat, spec)
        flat_all.append(flat)
        specs.append(spec)
    return args, nums, flat_all, specs


def _needs_graph(flat_lists):
    return STATE.grad_enabled and (_DEPTH[0] > 1 or any(
        x.grad_fn is not None for fl in flat_lists for x in fl))


def grad_and_value(func, argnums=0, has_aux=False):
    """Like ``grad`` but also returns the value of ``func``: ``(grad, value)``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _DEPTH[0] += 1
        prev = STATE.grad_enabled
        STATE.grad_enabled = True
        try:
            args, nums, flats, specs = _prepare(args, argnums, "grad_and_value")
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should "
                                       "be a tuple: (output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe you "
                                   f"wanted to use the vjp or jacrev APIs instead?")
            leaves = [x for fl in flats for x in fl]
            create = _needs_graph(flats) or prev and _DEPTH[0] > 1
            if out._requires_grad:
                gs = _autograd_grad(out, leaves, allow_unused=True, create_graph=create,
                                    materialize_grads=True)
            else:
                gs = [x.detach() * 0 for x in leaves]
            it = iter(gs)
            grads = [tree_unflatten([next(it) for _ in fl], sp) for fl, sp in zip(flats, specs)]
            g = grads[0] if isinstance(argnums, int) else tuple(grads)
            value = out if create else out.detach()
            return (g, (value, aux)) if has_aux else (g, value)
        finally:
            STATE.grad_enabled = prev
            _DEPTH[0] -= 1
    return _transform(wrapper)


def grad(func, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``func`` with respect to the inputs at ``argnums``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return _transform(wrapper)


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns one gradient per primal."""
    outer = any(isinstance(x, Tensor) and x._requires_grad for x in tree_flatten(primals)[0])
    _DEPTH[0] += 1
    prev = STATE.grad_enabled
    STATE.grad_enabled = True
    try:
        flat, spec = tree_flatten(tuple(primals))
        flat = [_alias(x) for x in flat]
        out = func(*tree_unflatten(flat, spec))
        aux = None
        if has_aux:
            out, aux = out
        oflat, ospec = tree_flatten(out)
        create = _needs_graph([flat]) or prev and _DEPTH[0] > 1
    finally:
        STATE.grad_enabled = prev
        _DEPTH[0] -= 1

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        cflat, cspec = tree_flatten(cotangents)
        if cspec != ospec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{cspec}, primal output: {ospec}")
        pairs = [(o, c) for o, c in zip(oflat, cflat) if o._requires_grad]
        cg = create if create_graph is None else create_graph
        cg = cg or STATE.grad_enabled and any(isinstance(c, Tensor) and c._requires_grad
                                              for c in cflat) or _DEPTH[0] > 0
        if not pairs:
            gs = [x.detach() * 0 for x in flat]
        else:
            gs = _autograd_grad([o for o, _ in pairs], flat, grad_outputs=[c for _, c in pairs],
                                retain_graph=True, create_graph=cg, allow_unused=True,
                                materialize_grads=True)
        if _ALL_DEPTH[0] == 0 and not outer:
            gs = [_detach_keep_tangent(g) for g in gs]
        return tree_unflatten(list(gs), spec)
    value = out if create else tree_unflatten([_detach_keep_tangent(o) for o in oflat], ospec)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


@_transform
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)`` by forward-mode AD."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be "
                           "tuples")
    pflat, pspec = tree_flatten(tuple(primals))
    tflat, tspec = tree_flatten(tuple(tangents))
    if pspec != tspec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure.")
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(pflat, tflat)]
        out = func(*tree_unflatten(duals, pspec))
        aux = None
        if has_aux:
            out, aux = out
        oflat, ospec = tree_flatten(out)
        prims, tans = [], []
        for o in oflat:
            p, t = fwAD.unpack_dual(o)
            prims.append(p)
            tans.append(t if t is not None else p * 0)
    res = (tree_unflatten(prims, ospec), tree_unflatten(tans, ospec))
    return res + (aux,) if has_aux else res


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` computes J @ tangents."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def _basis(n, like):
    from ..ops.creation import eye
    return eye(n, dtype=like.dtype, device=like.device)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` w.r.t. the inputs at ``argnums``, by reverse-mode AD (vmapped
    vjps over the output basis)."""
    @functools.wraps(func)
    def wrapper(*args):
        nums = _argnums_tuple(argnums, len(args), "jacrev")

        def partial(*diff):
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return func(*full)
        r = vjp(partial, *[args[i] for i in nums], has_aux=has_aux)
        out, vjp_fn = r[0], r[1]
        oflat, ospec = tree_flatten(out)
        in_flat = [tree_flatten(args[i])[0] for i in nums]
        per_out = []
        for k, o in enumerate(oflat):
            n = o.numel()
            basis = _basis(n, o).reshape((n,) + tuple(o.shape))

            def one(v, k=k):
                cot = [v if j == k else oo.detach() * 0 for j, oo in enumerate(oflat)]
                return vjp_fn(tree_unflatten(cot, ospec))
            rows = vmap(one, chunk_size=chunk_size)(basis)
            grads = []
            for gi, i in zip(rows, nums):
                gflat, gspec = tree_flatten(gi)
                shaped = [g.reshape(tuple(o.shape) + tuple(g.shape[1:])) for g in gflat]
                grads.append(tree_unflatten(shaped, gspec))
            per_out.append(grads[0] if isinstance(argnums, int) else tuple(grads))
        _ = in_flat
        jac = tree_unflatten(per_out, ospec)
        return (jac, r[2]) if has_aux else jac
    return _transform(wrapper)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` w.r.t. the inputs at ``argnums``, by forward-mode AD (vmapped
    jvps over the input basis)."""
    @functools.wraps(func)
    def wrapper(*args):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        prims = [args[i] for i in nums]
        pflat, pspec = tree_flatten(tuple(prims))
        sizes = [p.numel() for p in pflat]
        total = sum(sizes)
        basis = _basis(total, pflat[0])
        tangents = []
        off = 0
        for p, n in zip(pflat, sizes):
            tangents.append(basis[:, off:off + n].reshape((total,) + tuple(p.shape)))
            off += n

        def partial(*diff):
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return func(*full)

        def push(*tans):
            r = jvp(partial, tuple(prims), tuple(tree_unflatten(list(tans), pspec)),
                    has_aux=has_aux)
            return r[1] if not has_aux else (r[1], r[2])
        cols = vmap(push, randomness=randomness)(*tangents)
        aux = None
        if has_aux:
            cols, aux = cols
            aux = tree_flatten(aux)[0]
            aux = tree_unflatten([a[0] for a in aux], tree_flatten(cols[1] if False else aux)[1]) \
                if False else None
        oflat, ospec = tree_flatten(cols)
        per_out = []
        for c in oflat:
            moved = c.movedim(0, -1)  # (*out_shape, total)
            pieces = []
            off = 0
            for p, n in zip(pflat, sizes):
                pieces.append(moved[..., off:off + n].reshape(tuple(moved.shape[:-1]) +
                                                              tuple(p.shape)))
                off += n
            per_out.append(pieces[0] if isinstance(argnums, int) else tuple(pieces))
        jac = tree_unflatten(per_out, ospec)
        return (jac, aux) if has_aux else jac
    return _transform(wrapper)


def hessian(func, argnums=0):
    """The Hessian of scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)
