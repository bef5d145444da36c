"""``jit.trace`` and ``jit.trace_module``: record the ops a function runs on example inputs.

As in torch, the function runs for real on the example inputs while every op is recorded
(see `Recorder`; not ``ember.export``, which refuses the data-dependent Python branches a
trace must freeze, and does not run the ops for real); sizes are static and Python control flow is frozen to the path the
example took -- except in scripted code the traced function calls: an ``if`` on a tensor
there keeps both branches as a ``cond`` node, as torch keeps scripted control flow in a
trace (`ember.jit._trace_cond`).  The result is a `TopLevelTracedModule` (modules) or
`ScriptFunction` (functions) that runs the recorded program, with ``graph``, ``code`` and
``save``.

``check_trace`` (default True) reruns the recorded program on the example inputs, or on
each of ``check_inputs``, and compares with the Python function: a difference on the
example inputs (a nondeterministic op) is a `TracerWarning`, as in torch; on other
``check_inputs`` (the trace froze control flow that depends on them) it raises
`TracingCheckError`.
"""
import inspect
import warnings

from .._core.random import get_rng_state, set_rng_state
from .._core.tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ._recorder import Recorder
from ._script_module import ModuleState, ProgramMethod, ScriptFunction, TopLevelTracedModule
from ._state import recording, tracing
from ._tree import flatten

__all__ = ["trace", "trace_module", "TracerWarning", "TracingCheckError"]


class TracerWarning(Warning):
    """Warns where a trace may not generalise to other inputs (torch.jit.TracerWarning)."""

    @staticmethod
    def ignore_lib_warnings():
        warnings.filterwarnings("ignore", category=TracerWarning, module="ember.(?!jit)")


class TracingCheckError(Exception):
    """The traced program disagrees with the Python function (torch.jit.TracingCheckError)."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n" + graph_diff_error
        if tensor_compare_error is not None:
            self.message += tensor_compare_error
        super().__init__(self.message)


def _traceable(x):
    if isinstance(x, Tensor):
        return True
    if isinstance(x, (tuple, list)):
        return all(_traceable(v) for v in x)
    if isinstance(x, dict):
        return all(_traceable(v) for v in x.values())
    return False


def _type_name(x):
    """TorchScript's name of ``x``'s type (``Tuple[Tensor, int]``), as torch's errors say."""
    if isinstance(x, Tensor):
        return "Tensor"
    if isinstance(x, tuple):
        return "Tuple[" + ", ".join(_type_name(v) for v in x) + "]"
    if isinstance(x, list):
        return f"List[{_type_name(x[0]) if x else 'Tensor'}]"
    if isinstance(x, dict):
        k, v = next(iter(x.items())) if x else ("", None)
        return f"Dict[{type(k).__name__}, {_type_name(v) if x else 'Tensor'}]"
    return type(x).__name__


def _check_traceable(x):
    if not _traceable(x):
        raise RuntimeError(f"Type '{_type_name(x)}' cannot be traced. Only Tensors and (possibly "
                           f"nested) Lists, Dicts, and Tuples of Tensors can be traced")


def _check_output(x):
    if not _traceable(x):
        raise RuntimeError(f"Only tensors, lists, tuples of tensors, or dictionary of tensors can "
                           f"be output from traced functions; got {_type_name(x)}")


def _arg_names(fn, n):
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:n]]
    return names + [f"input_{i}" for i in range(len(names), n)]


def _as_args(example, is_kwarg, fn):
    """The positional arguments of one example (a tensor, a tuple, or a dict of kwargs)."""
    if is_kwarg:
        if not isinstance(example, dict):
            raise RuntimeError(f"example_kwarg_inputs must be a dict, got "
                               f"{type(example).__name__}")
        sig = inspect.signature(fn)
        bound = sig.bind(**example)
        bound.apply_defaults()
        return tuple(bound.arguments.values())
    if isinstance(example, Tensor):
        return (example,)
    if isinstance(example, list):
        return tuple(example)
    if not isinstance(example, tuple):
        raise RuntimeError(f"example_inputs must be a tuple of inputs (or a single Tensor), got "
                           f"{type(example).__name__}")
    return example


def _has_dict(x):
    if isinstance(x, dict):
        return True
    return isinstance(x, (tuple, list)) and any(_has_dict(v) for v in x)


def _record(call, args, params, buffers, input_names, strict=True):
    """Run ``call(*args)`` under a Recorder; the program and the eager outputs."""
    _check_traceable(tuple(args))
    flat_in = []
    in_spec = flatten(tuple(args), flat_in)
    rec = Recorder(flat_in, params, buffers)
    with tracing(), recording(rec), rec:
        out = call(*args)
    _check_output(out)
    if strict and _has_dict(out):
        raise RuntimeError("Encountering a dict at the output of the tracer might cause the "
                           "trace to be incorrect, this is only valid if the container structure "
                           "does not change based on the module's inputs. Consider using a "
                           "constant container instead (e.g. for `list`, use a `tuple` instead. "
                           "for `dict`, use a `NamedTuple` instead). If you absolutely need this "
                           "and know the side effects, pass strict=False to trace() to allow "
                           "this behavior.")
    flat_out = []
    out_spec = flatten(out, flat_out)
    names = _flat_input_names(args, input_names)
    program = rec.build(len(flat_in), names, params, buffers, flat_out, in_spec, out_spec)
    return program, out


def _flat_input_names(args, input_names):
    names = []
    for a, n in zip(args, input_names):
        flat = []
        flatten(a, flat)
        names += [n] if len(flat) == 1 and isinstance(a, Tensor) else \
            [f"{n}_{i}" for i in range(len(flat))]
    return names


def _compare(expected, got, tolerance, where):
    fe, fg = [], []
    flatten(expected, fe)
    flatten(got, fg)
    for i, (a, b) in enumerate(zip(fe, fg)):
        a, b = a.detach(), b.detach()
        if a.shape != b.shape or a.dtype != b.dtype:
            return (f"Output nr {i + 1}. of the traced function has shape {list(b.shape)} and "
                    f"dtype {b.dtype}, the Python function's {list(a.shape)} and {a.dtype} "
                    f"({where})")
        if a.dtype.is_floating_point or a.dtype.is_complex:
            ok = bool((a - b).abs().le(tolerance + tolerance * b.abs()).all()) if a.numel() \
                else True
        else:
            ok = bool(a.eq(b).all()) if a.numel() else True
        if not ok:
            return (f"Output nr {i + 1}. of the traced function does not match the "
                    f"corresponding output of the Python function ({where})")
    return None


def _clone(x):
    if isinstance(x, Tensor):
        return x.detach().clone()
    if isinstance(x, (tuple, list)):
        return type(x)(_clone(v) for v in x)
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    return x


def _check(program, call, owner, example_args, rng_before, check_inputs, tolerance, kwarg, fn):
    """check_trace: the program against the Python function, rerun on the example inputs
    with the random state of the trace and the module's buffers restored afterwards (so
    checking leaves no trace), then on each of ``check_inputs``."""
    state = ModuleState(owner, write_buffers=False) if owner is not None else None
    rng_after = get_rng_state()
    saved = [(b, b.detach().clone()) for b in owner.buffers()] if owner is not None else []
    try:
        set_rng_state(rng_before)
        got = program(state, _clone(example_args))
        set_rng_state(rng_before)
        with tracing():
            expected = call(*_clone(example_args))
    finally:
        set_rng_state(rng_after)
        with no_grad():
            for b, v in saved:
                b.copy_(v)
    err = _compare(expected, got, tolerance, "on the example inputs")
    if err is not None:
        warnings.warn("Trace had nondeterministic nodes or diverged from the Python function. "
                      + err, TracerWarning, stacklevel=4)
    for inputs in check_inputs or ():
        args = _as_args(inputs, kwarg, fn)
        got = program(state, _clone(args))
        expected = call(*args)
        err = _compare(expected, got, tolerance, "on check_inputs")
        if err is not None:
            raise TracingCheckError(None, err)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-05, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Trace a function and return an executable ScriptFunction (or, for an ``nn.Module``,
    a `TopLevelTracedModule`) that runs the ops the function ran on ``example_inputs``.

    Tracing records only the operations on tensors for these inputs: control flow and
    Python values are frozen to what the example produced, and sizes are static.  Use
    ``jit.script`` where the program must follow data-dependent branches.

    Args:
        func: a function or ``nn.Module`` to trace.
        example_inputs: a tuple of example inputs (or a single Tensor, wrapped in a tuple).
        check_trace: rerun the recorded program on the examples and compare with Python.
        check_inputs: a list of input tuples to check the trace against as well.
        check_tolerance: the tolerance of those comparisons.
        strict: reject dicts among the outputs (their keys are frozen into the trace),
            as torch does; ``strict=False`` allows them.
        example_kwarg_inputs: the example as a dict of keyword arguments instead.
    """
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "ember.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be given to trace")
    kwarg = example_inputs is None
    example = example_kwarg_inputs if kwarg else example_inputs
    if isinstance(func, Module):
        return trace_module(func, {"forward": example}, None, check_trace,
                            [{"forward": c} for c in check_inputs] if check_inputs else None,
                            check_tolerance, strict, _force_outplace, _module_class,
                            example_inputs_is_kwarg=kwarg)
    if inspect.ismethod(func) and isinstance(func.__self__, Module):
        mod = func.__self__
        traced = trace_module(mod, {func.__name__: example}, None, check_trace,
                              [{func.__name__: c} for c in check_inputs] if check_inputs
                              else None, check_tolerance, strict, example_inputs_is_kwarg=kwarg)
        return getattr(traced, func.__name__)
    if not callable(func):
        raise RuntimeError(f"trace expects a function or an nn.Module, got {type(func).__name__}")
    args = _as_args(example, kwarg, func)
    names = _arg_names(func, len(args))
    rng = get_rng_state()
    program, out = _record(func, args, [], [], names, strict)
    if check_trace:
        _check(program, func, None, args, rng, check_inputs, check_tolerance, kwarg, func)
    method = ProgramMethod(getattr(func, "__name__", "forward"), program, names)
    return ScriptFunction(method, getattr(func, "__qualname__", method.name))


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-05, strict=True, _force_outplace=False, _module_class=None,
                 _compilation_unit=None, example_inputs_is_kwarg=False, _store_inputs=True):
    """Trace the methods of ``mod`` named in ``inputs`` (a dict: method name -> example
    inputs) and return a `TopLevelTracedModule` whose methods run the recorded programs.
    The module's parameters, buffers and submodules are shared with the result."""
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    params = list(mod.named_parameters())
    buffers = list(mod.named_buffers())
    methods = []
    for name, example in inputs.items():
        fn = getattr(mod, name)
        call = mod if name == "forward" else fn
        args = _as_args(example, example_inputs_is_kwarg, fn)
        names = _arg_names(fn, len(args))
        rng = get_rng_state()
        program, out = _record(call, args, params, buffers, names, strict)
        if check_trace:
            checks = [c[name] for c in check_inputs if name in c] if check_inputs else None
            _check(program, call, mod, args, rng, checks, check_tolerance,
                   example_inputs_is_kwarg, fn)
        methods.append(ProgramMethod(name, program, names))
    return TopLevelTracedModule._from_module(mod, methods)
