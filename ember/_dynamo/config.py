"""Settings of ember.compile's capture (``ember._dynamo.config``, torch's names)."""
import contextlib
import sys
import types

# the first compile is static; a size seen to change is recompiled once as symbolic
automatic_dynamic_shapes = True
# with automatic_dynamic_shapes, sizes start static (False: symbolic from the first call,
# as dynamic=True, for functions compiled without a dynamic= of their own)
assume_static_by_default = True
# compiled graphs kept per compiled function before ember generalises what varies (marks
# it dynamic) and says so once; beyond torch, there is no fall back to eager at the limit
cache_size_limit = 8
# a Python number that changes between calls becomes a graph input after one recompile
# (True: every value of an int / a float compiles its own graph)
specialize_int = False
specialize_float = False
# raise at graph breaks instead of splitting the graph (fullgraph=True for every function)
error_on_graph_break = False

# Accepted so torch programs that set them run; they change nothing in ember:
# - capture_scalar_outputs / capture_dynamic_output_shape_ops: .item(), nonzero() and other
#   data-dependent results always run the pending graph (a graph break; with fullgraph=True
#   an Unsupported error, where torch with these set would keep capturing)
# - suppress_errors: a backend error is raised (BackendCompilerFailed); ember does not re-run
#   the Python eagerly, which would repeat its side effects
# - accumulated_cache_size_limit, verbose: nothing to limit or to print beyond the logs
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
suppress_errors = False
accumulated_cache_size_limit = 256
verbose = False
# later calls whose guards match run the compiled graph without the Python, when the Python
# that ran during capture is provably free of side effects (ember._dynamo.replay)
replay = True


def patch(arg1=None, arg2=None, **changes):
    """Change settings for a block or a function, as torch's ``config.patch``:
    ``with config.patch(cache_size_limit=2):``, ``@config.patch("verbose", True)`` or
    ``config.patch({"verbose": True})``; the previous values come back afterwards."""
    if isinstance(arg1, str):
        changes[arg1] = arg2
    elif isinstance(arg1, dict):
        changes.update(arg1)
    elif arg1 is not None:
        raise TypeError("config.patch: give a name and a value, a dict, or keywords")
    changes = {_ALIASES.get(k, k): v for k, v in changes.items()}
    here = globals()
    for name in changes:
        if name.startswith("_") or name not in here or \
                not isinstance(here[name], (bool, int, float, str, type(None))):
            raise AttributeError(f"ember._dynamo.config has no setting {name!r}")
    return _Patch(changes)


class _Patch(contextlib.ContextDecorator):
    def __init__(self, changes):
        self.changes = changes
        self.saved = []

    def __enter__(self):
        here = globals()
        self.saved.append({k: here[k] for k in self.changes})
        here.update(self.changes)
        return self

    def __exit__(self, *exc):
        globals().update(self.saved.pop())
        return False


# torch's newer names for the same settings
_ALIASES = {"recompile_limit": "cache_size_limit",
            "accumulated_recompile_limit": "accumulated_cache_size_limit"}


class _ConfigModule(types.ModuleType):
    """This module, with torch's newer names as aliases (reads and writes)."""

    def __getattr__(self, name):
        if name in _ALIASES:
            return getattr(self, _ALIASES[name])
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __setattr__(self, name, value):
        super().__setattr__(_ALIASES.get(name, name), value)


sys.modules[__name__].__class__ = _ConfigModule

# capture every fused optimizer update (optimizer.step()) as one functional graph node (the
# fused kernel on copies of what it writes; its decomposition for code generators), so a
# compiled step has one graph more; off by default: an update of gradients an eager
# backward() made gains nothing from a graph (measured on the MLP step of
# benchmarks/compile_capture.py).  Updates of gradients a recorded backward() made
# (capture_backward) are captured either way: they complete the training step's graph
capture_optimizer_updates = False

# ``loss.backward()`` on a loss of the pending graph is recorded into that graph (its vjps,
# and the accumulation into .grad), and the optimizer update that reads those gradients is
# recorded with it, so a compiled training step is one graph the replay fast path can run
# (ember._dynamo.step_backward); False: backward() ends the graph and the engine runs it
capture_backward = True

# the stance of torch.compiler.set_stance, shared by the call path and the cache
STANCE = ["default"]
# set_stance("default", force_backend=...): the backend graphs compiled from now on use
FORCE_BACKEND = [None]
