"""Activation checkpointing (``torch.utils.checkpoint``): run a function without keeping
its intermediate tensors, and run it again during backward to get its gradients.

Both variants are one `ember.autograd.Function` here.  Its forward runs ``function``
under ``no_grad`` while a dispatch mode notes every tensor requiring grad that the
function reads without receiving it as an argument (module parameters, closed-over
tensors); those become extra inputs of the Function, so gradients reach them.  Its
backward re-runs ``function`` with grad enabled, the RNG state of the forward restored
and detached stand-ins for all those tensors, and differentiates the recomputed outputs
with respect to the stand-ins.

``use_reentrant`` keeps torch's observable differences: passed implicitly it warns and
means True; with True, keyword arguments are rejected and outputs carry no gradient
unless an argument requires grad (torch warns "None of the inputs have
requires_grad=True"); with False, keyword arguments are accepted and parameters get
gradients whatever the arguments.  Unlike torch's reentrant variant, ember's also works
under ``autograd.grad`` and ``backward(inputs=...)``.
"""
import contextlib
import warnings

from .._core.dispatch import DispatchMode
from .._core.random import fork_rng, get_rng_state, set_rng_state
from .._core.state import STATE
from .._core.tensor import Tensor
from ..autograd import Function, enable_grad, no_grad
from ..autograd import grad as _autograd_grad

from ._selective_checkpoint import (SAC_IGNORED_OPS, CheckpointPolicy,  # noqa: F401
                                    SelectiveCheckpointContext,
                                    create_selective_checkpoint_contexts)

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn",
           "detach_variable", "check_backward_validity", "CheckpointFunction",
           "CheckpointPolicy", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "SAC_IGNORED_OPS", "get_device_states", "set_device_states",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled", "GraphExecGroup"]


class CheckpointError(RuntimeError):
    """The recomputed forward differs from the original one (see ``determinism_check``)."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Detached copies of the tensors in ``inputs`` keeping their ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for x in inputs:
        if not isinstance(x, Tensor):
            out.append(x)
            continue
        y = x.detach()
        y.requires_grad_(x.requires_grad)
        out.append(y)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=3)


class _Capture(DispatchMode):
    """Notes the tensors requiring grad that operators receive (under no_grad, only tensors
    from outside the checkpointed function can require grad)."""

    def __init__(self, skip):
        self.skip = skip
        self.found = {}

    def __ember_dispatch__(self, op, args, kwargs):
        for a in args:
            if isinstance(a, Tensor) and a._requires_grad and id(a) not in self.skip:
                self.found.setdefault(id(a), a)
        return op(*args, **kwargs)


class _Substitute(DispatchMode):
    """Hands operators detached stand-ins for the captured tensors, so the recomputed graph
    ends at the stand-ins and differentiating it never enters the graph outside."""

    def __init__(self, subs):
        self.subs = subs

    def __ember_dispatch__(self, op, args, kwargs):
        subs = self.subs
        return op(*[subs.get(id(a), a) if isinstance(a, Tensor) else a for a in args],
                  **kwargs)


def _flatten(out):
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _flatten(o)]
    return []


def _rebuild(out, it):
    if isinstance(out, Tensor):
        return next(it)
    if isinstance(out, (tuple, list)):
        r = [_rebuild(o, it) for o in out]
        return tuple(r) if isinstance(out, tuple) else r
    if isinstance(out, dict):
        return {k: _rebuild(v, it) for k, v in out.items()}
    return out


class _Run:
    """What the Function's backward needs: the call, its RNG state and its outputs."""

    def __init__(self, function, args, kwargs, preserve, recompute_ctx, check):
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.rng_state = get_rng_state() if preserve else None
        self.recompute_ctx = recompute_ctx
        self.check = check
        self.outputs = None


class CheckpointFunction(Function):
    """The recomputing Function (inputs: the run record, then every tensor it depends on)."""

    @staticmethod
    def forward(ctx, run, *tensors):
        ctx.run = run
        ctx.save_for_backward(*tensors)
        return tuple(run.outputs)

    @staticmethod
    def backward(ctx, *grads):
        run = ctx.run
        tensors = ctx.saved_tensors
        n_explicit = sum(isinstance(a, Tensor) for a in run.args)
        higher = STATE.grad_enabled  # create_graph: the gradients must link to the originals
        if higher:
            detached, captured = tuple(tensors[:n_explicit]), tuple(tensors[n_explicit:])
            subs = contextlib.nullcontext()
        else:
            detached = detach_variable(tuple(tensors[:n_explicit]))
            captured = detach_variable(tuple(tensors[n_explicit:]))
            subs = _Substitute({id(t): c for t, c in zip(tensors[n_explicit:], captured)})
        it = iter(detached)
        args = [next(it) if isinstance(a, Tensor) else a for a in run.args]
        rng = fork_rng() if run.rng_state is not None else contextlib.nullcontext()
        with rng, enable_grad(), run.recompute_ctx, subs:
            if run.rng_state is not None:
                set_rng_state(run.rng_state)
            out = run.function(*args, **run.kwargs)
        outs = _flatten(out)
        if run.check and [(tuple(o.shape), o.dtype) for o in outs] != run.check:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values have different metadata than "
                f"during the original forward pass: {run.check} vs "
                f"{[(tuple(o.shape), o.dtype) for o in outs]}")
        pairs = [(o, g) for o, g in zip(outs, grads) if o._requires_grad and g is not None]
        targets = list(detached) + list(captured)
        wanted = [t for t in targets if isinstance(t, Tensor) and t._requires_grad]
        result = {}
        if pairs and wanted:
            got = _autograd_grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                                 allow_unused=True, create_graph=higher, retain_graph=higher)
            result = {id(t): g for t, g in zip(wanted, got)}
        return (None,) + tuple(result.get(id(t)) if isinstance(t, Tensor) else None
                               for t in targets)


def _run_checkpointed(function, args, kwargs, preserve, reentrant, context_fn, check):
    fwd_ctx, recompute_ctx = context_fn()
    run = _Run(function, args, kwargs, preserve, recompute_ctx, None)
    explicit = [a for a in args if isinstance(a, Tensor)]
    capture = _Capture({id(a) for a in explicit})
    with no_grad(), fwd_ctx, capture:
        out = function(*args, **kwargs)
    outs = _flatten(out)
    run.check = [(tuple(o.shape), o.dtype) for o in outs] if check else None
    tracked = STATE.grad_enabled and outs and (
        any(a.requires_grad for a in explicit) or
        (not reentrant and capture.found))
    if not tracked:
        return out
    run.outputs = outs
    linked = CheckpointFunction.apply(run, *explicit, *capture.found.values())
    return _rebuild(out, iter(linked))


_DEFAULT_DETERMINISM = "default"


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM, debug=False, early_stop=True, **kwargs):
    """Checkpoint a model or part of the model: ``function(*args, **kwargs)`` keeps no
    intermediate tensors; they are recomputed during backward.  Gradients equal those of
    the plain call (the RNG state of the forward is restored for the recomputation unless
    ``preserve_rng_state=False``)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        check_backward_validity(args)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    return _run_checkpointed(function, args, kwargs, preserve, use_reentrant, context_fn,
                             determinism_check == "default" and not use_reentrant)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a sequential model: split ``functions`` into ``segments`` chunks and
    checkpoint every chunk but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve "
            "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)


# ---- device RNG states and process-wide settings -------------------------------------------

def get_device_states(*args):
    """The ids of the non-CPU devices of the tensors in ``args`` and their RNG states (what
    checkpoint restores for the recomputation besides the CPU generator's).  ember's random
    numbers come from the CPU generator on every device, so there are none: ``([], [])``."""
    return [], []


def set_device_states(devices, states, *, device_type=None):
    """Sets the RNG states of ``devices`` (from `get_device_states`; none in ember)."""
    if list(devices) or list(states):
        raise RuntimeError("set_device_states: ember has no per-device generators (its random "
                           "numbers come from the CPU generator on every device)")


_SETTINGS = {"early_stop": True, "debug": None}


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Context manager that sets whether checkpoint should stop recomputation early (once
    every needed tensor is recomputed); ember's recomputation reruns the whole function
    either way, so only the setting is kept."""
    prev = _SETTINGS["early_stop"]
    _SETTINGS["early_stop"] = enable
    try:
        yield
    finally:
        _SETTINGS["early_stop"] = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Context manager that sets whether checkpoint should print additional debug information
    when running (None: defer to each call's ``debug``)."""
    prev = _SETTINGS["debug"]
    _SETTINGS["debug"] = enabled
    try:
        yield
    finally:
        _SETTINGS["debug"] = prev


class GraphExecGroup:
    """Checkpointed regions met by backward calls under the same instance recompute at most
    once, even over several backward calls (non-overlapping regions of the graph).  ember
    recomputes a region within the backward call that reaches it, so a group only needs to
    be entered and left; groups cannot be nested."""
    _current = None

    def __enter__(self):
        if GraphExecGroup._current is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside "
                               f"group {GraphExecGroup._current}")
        GraphExecGroup._current = self
        return self

    def __exit__(self, *args):
        GraphExecGroup._current = None
