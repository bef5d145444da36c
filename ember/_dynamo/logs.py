"""What ember.compile reports, switched on by ``EMBER_LOGS`` or `set_logs`.

``EMBER_LOGS="recompiles,graph_breaks,output_code"`` (comma-separated): ``recompiles``
explains each recompile in one line, ``graph_breaks`` each graph break with the user's
file:line, ``output_code`` prints what the backend generated, ``graph_code`` the captured
graphs, ``dynamic`` each size made symbolic (``set_logs(dynamic=logging.DEBUG)``).
A component name (``dynamo``, ``aot``, ``inductor``, ``all``; a leading ``+`` is
allowed) switches on every artifact of that component.  Under ``ember.compat``
``TORCH_LOGS`` is read too.  `set_logs` is the in-process switch with torch's signature
(``torch._logging.set_logs`` resolves to it under compat); like torch's, each call
replaces the previous settings.  The variables are read again whenever they change, so a
program (or a test) may set them after ember is imported.

Lines go to ``sys.stderr`` as it is when the event happens, one line per event (a code
listing follows its line).
"""
import logging
import os
import sys

__all__ = ["enabled", "set_logs", "log", "ARTIFACTS"]

# the artifacts ember emits
ARTIFACTS = ("recompiles", "graph_breaks", "output_code", "graph_code", "dynamic")
# torch artifact names that mean one of ember's
_ALIASES = {"recompiles_verbose": "recompiles", "graph": "graph_code",
            "graph_code_verbose": "graph_code", "aot_graphs": "graph_code",
            "aot_joint_graph": "graph_code", "kernel_code": "output_code"}
# components: their artifacts
_COMPONENTS = {"all": ARTIFACTS, "dynamo": ("recompiles", "graph_breaks", "graph_code"),
               "aot": ("graph_code",), "inductor": ("output_code",), "dynamic": ("dynamic",)}
# torch's other switches: accepted so torch programs run; ember has nothing to say for them
_SILENT = frozenset((
    "autograd", "distributed", "c10d", "ddp", "fsdp", "dtensor", "onnx", "export", "bytecode",
    "ddp_graphs", "side_effects", "graph_sizes", "guards", "trace_source", "trace_call",
    "trace_bytecode", "schedule", "perf_hints", "pre_grad_graphs", "post_grad_graphs",
    "ir_pre_fusion", "ir_post_fusion", "onnx_diagnostics", "fusion", "overlap", "modules",
    "cudagraphs", "sym_node", "compiled_autograd", "compiled_autograd_verbose",
    "cudagraph_static_inputs", "benchmarking", "autotuning", "incremental",
    "graph_region_expansion", "inductor_metrics", "hierarchical_compile",
    "compute_dependencies", "caching"))

_SET = set()              # what set_logs switched on
_ENV = {}                 # variable -> (its text when parsed, the artifacts it names)
_READ_TORCH_LOGS = [False]  # ember.compat turns this on
_LOGGER = logging.getLogger("ember._dynamo")


class _StderrHandler(logging.Handler):
    """Writes to ``sys.stderr`` as it is at the time of the event (redirections and
    captured output see the lines)."""

    def emit(self, record):
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging never breaks the program
            self.handleError(record)


_HANDLER = _StderrHandler()
_HANDLER.setFormatter(logging.Formatter("[ember.compile] [__%(artifact)s] %(message)s"))
_LOGGER.addHandler(_HANDLER)
_LOGGER.setLevel(logging.INFO)
_LOGGER.propagate = False


def _parse(text):
    out = set()
    for part in (text or "").replace(" ", "").split(","):
        part = part.lstrip("+-")
        if part in _COMPONENTS:
            out.update(_COMPONENTS[part])
        elif part in ARTIFACTS:
            out.add(part)
        elif part in _ALIASES:
            out.add(_ALIASES[part])
    return out


def _from_env(var):
    text = os.environ.get(var, "")
    seen = _ENV.get(var)
    if seen is None or seen[0] != text:
        seen = _ENV[var] = (text, _parse(text))
    return seen[1]


def read_torch_logs(on=True):
    """Read ``TORCH_LOGS`` as well as ``EMBER_LOGS`` (what ``ember.compat.install`` does)."""
    _READ_TORCH_LOGS[0] = on


def enabled(artifact):
    """Whether ``artifact`` is switched on (by `set_logs` or the environment)."""
    if artifact in _SET or artifact in _from_env("EMBER_LOGS"):
        return True
    return _READ_TORCH_LOGS[0] and artifact in _from_env("TORCH_LOGS")


def set_logs(*, all=None, dynamo=None, aot=None, inductor=None, dynamic=None, **artifacts):
    """Switch what ember.compile reports (``torch._logging.set_logs``'s signature).

    Components take a log level: at ``logging.INFO`` or finer every artifact of the
    component is on.  Artifacts take a bool: ``recompiles``, ``graph_breaks``,
    ``output_code``, ``graph_code``; torch's names for the same things
    (``recompiles_verbose``, ``graph``, ``aot_graphs``, ``kernel_code``, ...) are accepted,
    and so are torch's other switches, which ember has nothing to report for.  Each call
    replaces the previous settings, as torch's does."""
    unknown = [k for k in artifacts
               if k not in ARTIFACTS and k not in _ALIASES and k not in _SILENT]
    if unknown:
        raise TypeError(f"set_logs() got an unexpected keyword argument {unknown[0]!r}; "
                        f"ember's artifacts are {list(ARTIFACTS)}")
    _SET.clear()
    for name, level in (("all", all), ("dynamo", dynamo), ("aot", aot),
                        ("inductor", inductor), ("dynamic", dynamic)):
        if level is not None and level <= logging.INFO:
            _SET.update(_COMPONENTS[name])
    for name, on in artifacts.items():
        if on and name not in _SILENT:
            _SET.add(_ALIASES.get(name, name))


def log(artifact, message):
    """Emit ``message`` under ``artifact`` if it is on: one line to stderr."""
    if enabled(artifact):
        _LOGGER.info("%s", message, extra={"artifact": artifact})
