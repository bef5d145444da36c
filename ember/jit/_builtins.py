"""The smaller ``torch.jit`` functions: ``fork``/``wait``, ``isinstance``,
``script_if_tracing``, ``optimized_execution``, ``set_fusion_strategy``, ``export_opnames``,
and the ``Error``/``ScriptWarning`` classes."""
import contextlib
import functools

from ..futures import Future
from ._state import is_tracing
from ._types import matches

__all__ = ["fork", "wait", "isinstance", "script_if_tracing", "optimized_execution",
           "set_fusion_strategy", "export_opnames", "Error", "ScriptWarning", "Future"]

_builtin_isinstance = isinstance


class Error(Exception):
    """An error raised while running a TorchScript program (torch.jit.Error)."""


class ScriptWarning(Warning):
    """A warning from the TorchScript frontend (torch.jit.ScriptWarning)."""


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` and return a `Future` of its result
    (torch.jit.fork).  As in torch's eager mode, the call runs at once, in this thread;
    an exception it raises is stored in the future and raised by `wait`."""
    fut = Future()
    try:
        fut.set_result(func(*args, **kwargs))
    except Exception as e:  # delivered by wait(), as torch does
        fut.set_exception(e)
    return fut


def wait(future):
    """The result of a `fork` (torch.jit.wait)."""
    return future.wait()


def isinstance(obj, target_type):
    """Whether ``obj`` has the TorchScript type ``target_type``, container element types
    included (``jit.isinstance(x, List[Tensor])``), as torch.jit.isinstance checks."""
    return matches(obj, target_type)


def script_if_tracing(fn):
    """Compile ``fn`` with ``jit.script`` when it is called during ``jit.trace``; otherwise
    call it as Python (torch.jit.script_if_tracing).  ember's tracer records the ops the
    function runs either way."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not is_tracing():
            return fn(*args, **kwargs)
        from ._script import script
        return script(fn)(*args, **kwargs)
    wrapper.__original_fn = fn
    wrapper.__script_if_tracing_wrapper = True
    return wrapper


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """Context manager for TorchScript's profiling executor (torch.jit.optimized_execution).
    ember runs programs as they are, with no executor optimisations to switch, so the
    block runs unchanged; the argument is checked as torch checks it."""
    if not _builtin_isinstance(should_optimize, bool):
        raise TypeError(f"optimized_execution() expects a bool, got "
                        f"{type(should_optimize).__name__}")
    yield


_FUSION_STRATEGY = [("STATIC", 2), ("DYNAMIC", 10)]


def set_fusion_strategy(strategy):
    """Record the fusion strategy (torch.jit.set_fusion_strategy): a list of
    ``("STATIC" | "DYNAMIC", depth)`` pairs; returns the previous one.  ember's programs
    are not fused by an executor (``ember.compile`` fuses), so it only records it."""
    global _FUSION_STRATEGY
    for item in strategy:
        if not (_builtin_isinstance(item, tuple) and len(item) == 2 and
                item[0] in ("STATIC", "DYNAMIC") and type(item[1]) is int):
            raise RuntimeError(f"Expected strategy type of STATIC or DYNAMIC with a depth, "
                               f"got {item!r}")
    old, _FUSION_STRATEGY = _FUSION_STRATEGY, list(strategy)
    return old


def export_opnames(m):
    """The names of the operators the programs of ScriptModule ``m`` call, as the lite
    interpreter would run them (``ember::add``, ...; torch gives ``aten::`` names)."""
    from .mobile import _export_operator_list
    return sorted(_export_operator_list(m))
