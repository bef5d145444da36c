"""gradcheck / gradgradcheck: compare autograd's gradients with finite differences.

For each real component of each output (real and imaginary parts separately for
complex outputs) the analytic row of the Jacobian comes from one backward pass;
the numerical one perturbs each real component of each input (real and imaginary
parts for complex inputs) by +-eps.  Complex inputs use PyTorch's convention:
the gradient of a real L is dL/dRe(x) + i dL/dIm(x).
"""
import numpy as np

from .._core.tensor import Tensor, wrap
from .backward import grad as _grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytic and numerical gradients disagree."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,) if not isinstance(x, list) else tuple(x)


def _outputs(func, inputs):
    out = func(*inputs)
    return [o for o in _as_tuple(out) if isinstance(o, Tensor)]


def _real_components(arr):
    """Views of the real parameters of an array: (flat_view, is_imag_part) pairs."""
    if arr.dtype.kind == "c":
        return [(arr.real, False), (arr.imag, True)]
    return [(arr, False)]


def _numerical(func, inputs, wrt, eps):
    """Numerical d(out component)/d(input component), as {(i, part): array[n_out_comp, n_in]}."""
    base = _outputs(func, inputs)
    ncomp = sum(o.numel() * (2 if o.dtype.is_complex else 1) for o in base)
    jac = {}
    for i in wrt:
        x = inputs[i]._data
        for part, (view, is_imag) in enumerate(_real_components(x)):
            flat = view.reshape(-1) if view.flags.c_contiguous else None
            n = view.size
            J = np.zeros((ncomp, n))
            idx = list(np.ndindex(view.shape))
            for k in range(n):
                pos = idx[k]
                orig = view[pos].copy()
                view[pos] = orig + eps
                plus = _flat_out(_outputs(func, inputs))
                view[pos] = orig - eps
                minus = _flat_out(_outputs(func, inputs))
                view[pos] = orig
                J[:, k] = (plus - minus) / (2 * eps)
            jac[(i, part)] = J
            _ = flat
    return jac, ncomp


def _flat_out(outs):
    parts = []
    for o in outs:
        a = o._data.astype(np.complex128 if o.dtype.is_complex else np.float64)
        if a.dtype.kind == "c":
            parts.append(np.stack([a.real.reshape(-1), a.imag.reshape(-1)], 1).reshape(-1))
        else:
            parts.append(a.reshape(-1))
    return np.concatenate(parts) if parts else np.zeros(0)


def _analytical(func, inputs, wrt, ncomp):
    outs = _outputs(func, inputs)
    jac = {}
    for i in wrt:
        x = inputs[i]._data
        for part in range(2 if x.dtype.kind == "c" else 1):
            jac[(i, part)] = np.zeros((ncomp, x.size))
    row = 0
    for o in outs:
        comps = 2 if o.dtype.is_complex else 1
        for k in range(o.numel()):
            for c in range(comps):
                if not o._requires_grad:
                    row += 1
                    continue
                v = np.zeros(o.shape, dtype=o.dtype.np)
                v.reshape(-1)[k] = 1 if c == 0 else 1j
                gs = _grad([o], [inputs[i] for i in wrt], grad_outputs=[wrap(v)],
                           retain_graph=True, allow_unused=True)
                for i, g in zip(wrt, gs):
                    if g is None:
                        continue
                    ga = g._data.reshape(-1)
                    if inputs[i].dtype.is_complex:
                        jac[(i, 0)][row] = ga.real
                        jac[(i, 1)][row] = ga.imag
                    else:
                        jac[(i, 0)][row] = ga.real if ga.dtype.kind == "c" else ga
                row += 1
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check gradients computed via small finite differences against analytical ones,
    for inputs that are floating point or complex with ``requires_grad=True``."""
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in wrt:
        if inputs[i].dtype.np not in (np.float64, np.complex128):
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          f"point or complex. This check will likely fail if all the inputs are "
                          f"not of double precision floating point or complex.", UserWarning,
                          stacklevel=2)
    num, ncomp = _numerical(func, inputs, wrt, eps)
    ana = _analytical(func, inputs, wrt, ncomp)
    for key in num:
        n, a = num[key], ana[key]
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            i, part = key
            msg = (f"Jacobian mismatch for output 0 with respect to input {i}"
                   f"{' (imaginary part)' if part else ''},\nnumerical:{n}\nanalytical:{a}\n")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second-order gradients: gradcheck of the backward pass of ``func``."""
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outs:
            r = rng.standard_normal(o.shape)
            if o.dtype.is_complex:
                r = r + 1j * rng.standard_normal(o.shape)
            # a 0-dim draw is a NumPy scalar, not an array: backends store arrays only
            g = wrap(np.asarray(r, dtype=o.dtype.np))
            g.requires_grad_(True)
            grad_outputs.append(g)
    grad_outputs = list(_as_tuple(grad_outputs))
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    n_in = len(inputs)

    def first_order(*args):
        xs, gos = args[:n_in], args[n_in:]
        o = [t for t in _as_tuple(func(*xs)) if isinstance(t, Tensor) and t.requires_grad]
        gs = _grad(o, [xs[i] for i in wrt], grad_outputs=list(gos)[:len(o)], create_graph=True,
                   allow_unused=True)
        return tuple(g for g in gs if g is not None)
    return gradcheck(first_order, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
