"""Building blocks shared by the built-in optimizers.

Every optimizer's update is a fused operator (`ember.ops.optim`, and `ember.ops.lbfgs`
for LBFGS's vector work): one dispatch per parameter group, visible to dispatch modes,
which bumps the version counter of every tensor it writes, so that autograd's
saved-tensor checks see the change.  With ``differentiable=True`` the same operator's
decomposition runs instead, recorded by autograd (`ember.ops.optim.recorded_step`), its
hyper-parameters possibly tensors.  State tensors are created by the factory operators;
no optimizer touches a raw array.
"""
from collections import namedtuple

from .._core import dtype as _dt
from .._core.number_args import number_arg
from .._core.tensor import Tensor
from ..ops.creation import full as _full, zeros_like as _zeros_like
from ..sparse._coo import _REGISTERED as SPARSE_MADE  # set by the first sparse tensor
from .optimizer import Optimizer, _in_grad_mode, _run_closure

__all__ = []


def scalar(x):
    """A Python number from a float or a one-element Tensor (lr, betas)."""
    return x.item() if isinstance(x, Tensor) else x


class NumberArg(namedtuple("NumberArg", "key op_arg index when modes")):
    """A hyper-parameter that torch's single-tensor step passes to a Number argument of an
    op (``op_arg``: "addcdiv_ value"): ``group[key]`` (its element ``index`` when a tuple),
    under ``when(group)``; ``modes``: "d" where torch passes a number computed from it (a
    tensor requiring grad only with ``differentiable=True``: under no_grad the result does
    not require grad), "dn" where it passes the tensor itself, "n" where its
    differentiable step takes another route."""
    __slots__ = ()

    def __new__(cls, key, op_arg, index=None, when=None, modes="d"):
        return super().__new__(cls, key, op_arg, index, when, modes)


def refuse_number_tensors(group, number_args):
    """torch's TypeError for a hyper-parameter tensor that requires grad reaching a Number
    argument (``addcdiv_(..., value=-lr)``): torch's argument parser takes a 0-dim tensor
    for a number only when it does not require grad.  ``number_args``: `NumberArg`s in the
    order torch's update reaches them; none applies to a group without gradients.  Raised
    before the update writes anything (torch's step has written the first parameter's
    state by then).  The foreach and fused paths (other ops, other messages) are not
    checked."""
    for key, op_arg, index, when, modes in number_args:  # runs every step: kept lean
        x = group[key] if index is None else group[key][index]
        if not isinstance(x, Tensor) or not x.requires_grad or \
                ("d" if group["differentiable"] else "n") not in modes:
            continue
        if (when is None or when(group)) and not (group.get("foreach") or group.get("fused")) \
                and any(p._grad is not None for p in group["params"]):
            op, arg = op_arg.split()
            raise TypeError(f"{op}(): argument '{arg}' must be Number, not Tensor")


def fill_value(x):
    """A state buffer's fill value (Rprop's lr, Adagrad's initial_accumulator_value) as
    torch's ``full_like(p, x)`` takes it: a number, or a 0-dim tensor that does not require
    grad (torch's TypeError otherwise)."""
    return number_arg(x, "full_like", "fill_value", 2)


def l2_decay_arg(modes="dn"):
    """The `NumberArg` of torch's L2 weight decay, ``grad.add(param, alpha=weight_decay)``
    (not when ``decoupled_weight_decay``)."""
    return NumberArg("weight_decay", "add alpha", modes=modes, when=lambda group: (
        scalar(group["weight_decay"]) != 0 and not group.get("decoupled_weight_decay")))


def fold_weight_decay(group, params, grads, weight_decay):
    """torch's differentiable SGD and Adam add a ``weight_decay`` tensor that requires grad
    into each gradient in place (``grad.addcmul_(param.clone(), weight_decay)``: the
    user's ``p.grad`` changes), except under ``maximize``, where the negated copy takes it.
    Does the same; returns the weight decay left for the update to apply."""
    if not (isinstance(weight_decay, Tensor) and weight_decay.requires_grad and
            group["differentiable"]) or group["maximize"]:
        return weight_decay
    for p, g in zip(params, grads):
        g.addcmul_(p.clone(), weight_decay)
    return 0


def step_tensor(value=0.0):
    """A 0-dim step counter: float64 when that is the default dtype, else float32."""
    d = _dt.float64 if _dt.get_default_dtype() is _dt.float64 else _dt.float32
    return _full((), value, dtype=d)


def zeros_like(p, fill=0):
    """A state buffer shaped like param ``p`` (its dtype and device), filled with ``fill``."""
    return _zeros_like(p) if not fill else _full(p.shape, fill, dtype=p.dtype, device=p.device)


def dense_grads(params, refuse=None):
    """The gradients of ``params`` as the dense update kernels read them.  A sparse COO
    gradient (``Embedding(sparse=True)``) is densified: its unstored entries are zeros, which
    the update of SGD and Adagrad leaves as torch's sparse update does.  ``refuse``: torch's
    RuntimeError message for an option that does not take sparse gradients."""
    grads = [p._grad for p in params]
    for i, g in enumerate(grads):
        if getattr(g, "is_sparse", False):
            if refuse:
                raise RuntimeError(refuse)
            grads[i] = g.to_dense()
    return grads


class ArrayOptimizer(Optimizer):
    """Base of the built-in optimizers: ``step`` runs the closure, then
    ``_update_group`` for every parameter group."""

    # torch's refusal of a sparse gradient ("{}": the class name); None where it is taken
    _sparse_refused = "{} does not support sparse gradients"
    # whether torch's foreach path of this optimizer records autograd (only SGD's does):
    # the others refuse foreach=True with differentiable=True at the step
    _foreach_autograd = False
    # hyper-parameters that torch's step passes to a Number argument (`NumberArg`s, in the
    # order its update reaches them): a tensor requiring grad there is torch's TypeError
    _number_args = ()

    def step(self, closure=None):
        """Perform a single optimization step.

        Args:
            closure (Callable, optional): A closure that reevaluates the model
                and returns the loss.
        """
        loss = _run_closure(closure)
        for group in self.param_groups:
            if SPARSE_MADE[0] and self._sparse_refused is not None:  # no cost until then
                self._refuse_sparse(group)
            if self._number_args:
                refuse_number_tensors(group, self._number_args)
            if group.get("differentiable"):
                self._recorded_update(group)
            else:
                self._update_group(group)
        return loss

    def _recorded_update(self, group):
        """``differentiable=True``: the update with grad mode on throughout, as torch's
        step runs it (under ``no_grad`` too); the fused operators run their recorded form
        (`ember.ops.optim.recorded_step`)."""
        if group.get("foreach") and not self._foreach_autograd and \
                any(p._grad is not None for p in group["params"]):
            raise AssertionError("_foreach ops don't support autograd")
        _in_grad_mode(True, self._update_group, group)

    def __setstate__(self, state):
        # groups pickled by older versions may lack newer options: fill them from defaults
        super().__setstate__(state)
        for group in self.param_groups:
            for k, v in self.defaults.items():
                group.setdefault(k, v)

    def _update_group(self, group):
        raise NotImplementedError

    def _refuse_sparse(self, group):
        for p in group["params"]:
            if getattr(p._grad, "is_sparse", False):
                raise RuntimeError(self._sparse_refused.format(type(self).__name__))

    def _live(self, group, init):
        """(param, state) for the params of ``group`` that have a gradient; ``init(p, state)``
        fills an empty state first."""
        state = self.state
        out = []
        for p in group["params"]:
            if p._grad is None:
                continue
            st = state[p]
            if not st:
                init(p, st)
            out.append((p, st))
        if out and group.get("capturable"):
            self._check_capturable(group, out)
        return out

    # torch's capturable refusal, (single-tensor path, foreach path): what it names, and
    # whether its list of devices has xla
    _capturable_names = ("params and state_steps", "params and state_steps")
    _capturable_xla = (True, False)

    def _check_capturable(self, group, live):
        """torch's step refuses ``capturable=True`` for tensors off the devices CUDA graphs
        capture (after creating the state, as here)."""
        supported = ["cuda", "xpu", "hpu", "privateuseone"]
        foreach = bool(group.get("foreach")) and not group.get("differentiable")
        if self._capturable_xla[foreach]:
            supported.append("xla")
        if any(p.device.type not in supported for p, _ in live):
            raise AssertionError(f"If capturable=True, {self._capturable_names[foreach]} must "
                                 f"be on supported devices: {supported}.")


def check_range(name, value, lo=0.0, hi=None, lo_open=False, hi_open=True, msg=None):
    """Raise torch's ``ValueError`` for an out-of-range hyper-parameter."""
    v = scalar(value) if not isinstance(value, Tensor) or value.numel() == 1 else value
    bad = (v <= lo) if lo_open else (v < lo)
    if hi is not None:
        bad = bad or ((v >= hi) if hi_open else (v > hi))
    if bad:
        raise ValueError(msg or f"Invalid {name}: {value}")


def check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check_range("learning rate", lr)


def check_args(lr, eps=None, betas=None, weight_decay=None):
    """torch's checks, in torch's order: lr, eps, betas, weight_decay."""
    check_lr(lr)
    if eps is not None:
        check_range("epsilon value", eps)
    if betas is not None:
        check_betas(betas)
    if weight_decay is not None:
        check_range("weight_decay value", weight_decay)


def check_betas(betas):
    check_range("beta", betas[0], 0.0, 1.0,
                msg=f"Invalid beta parameter at index 0: {betas[0]}")
    check_range("beta", betas[1], 0.0, 1.0,
                msg=f"Invalid beta parameter at index 1: {betas[1]}")


def check_fused(fused, foreach, differentiable):
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
