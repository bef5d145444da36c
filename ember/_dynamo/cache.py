"""The compiled graphs of one compiled function, by key, and automatic dynamic shapes.

`FunctionCache.lookup` finds the compiled graph of a pending trace by its key
(`ember._dynamo.graph_key`).  On a miss it looks for a graph of the same skeleton (the
same program, other sizes or numbers): what differs is marked dynamic (sizes become
symbols, numbers graph inputs) and the key is made again, so the changed dimensions
recompile once as symbolic and later sizes reuse that graph.  Every compile after the
first is explained in one line (``EMBER_LOGS=recompiles``).
"""
import warnings

from . import config, logs
from .backends.common import AotBackend
from .exc import BackendCompilerFailed
from .graph_build import build_graph_module
from .graph_key import spec_of
from .symbolic import SymInt

__all__ = ["FunctionCache", "Entry"]


class RunEagerly(Exception):
    """No compiled graph fits and none may be compiled now (stance eager_on_recompile)."""


class Entry:
    """One compiled graph: ``run(inputs)`` -> output tensors, in ``spec.outputs`` order."""
    __slots__ = ("spec", "run", "gm", "aot", "hits", "needs_grad")

    def __init__(self, spec, gm, run, aot=None, needs_grad=False):
        self.spec = spec
        self.gm = gm
        self.run = run
        self.aot = aot
        self.hits = 0
        self.needs_grad = needs_grad


class FunctionCache:
    """Compiled graphs and dynamic marks of one compiled function (or module)."""

    def __init__(self, name, backend, backend_name, dynamic=None, fullgraph=False,
                 options=None):
        self.name = name
        self.backend = backend
        self.backend_name = backend_name
        self.dynamic = dynamic
        self.fullgraph = fullgraph
        self.options = options or {}
        self.entries = {}
        self.by_skeleton = {}
        self.dynamic_leaves = set()
        self.static_leaves = set()
        self.dynamic_scalars = {}   # skeleton -> numbers (by position) made graph inputs
        self.compiles_at = {}       # graph position in a call -> graphs compiled there
        self.compiles = 0
        self.warned_limit = False
        self.recompile_reasons = []
        self.by_ordinal = {}   # n -> the spec of the last graph compiled as a call's n-th
        self.signatures = set()     # argument signatures of calls that ran compiled
        self.called = False         # whether a call came (set_stance eager_then_compile)
        # ember._dynamo.replay: how to skip the Python, one plan per guard set seen (at
        # most cache_size_limit), the one made or hit last first
        self.replay_plans = []
        self.replay_failures = 0    # calls found not replayable (recording stops at 8)
        self.replay_reason = None   # why the last one was not

    def reset(self):
        self.entries.clear()
        self.by_skeleton.clear()
        self.dynamic_leaves.clear()
        self.static_leaves.clear()
        self.dynamic_scalars.clear()
        self.compiles_at.clear()
        self.compiles = 0
        self.recompile_reasons.clear()
        self.by_ordinal.clear()
        self.signatures.clear()
        self.replay_plans.clear()
        self.replay_failures = 0
        self.replay_reason = None

    @property
    def replay_plan(self):
        """The replay plan made or hit last (None before any)."""
        return self.replay_plans[0] if self.replay_plans else None

    # ---- lookup --------------------------------------------------------------------
    def lookup(self, trace, outputs, session):
        spec = spec_of(trace, outputs, self)
        e = self.entries.get(spec.key)
        if e is not None:
            e.hits += 1
            return e, spec
        reason = None
        prev = self.by_skeleton.get(spec.skeleton)
        if prev:
            reason = self._generalise(prev[-1].spec, spec, trace)
            if reason is not None and reason[1]:
                spec = spec_of(trace, outputs, self)
                e = self.entries.get(spec.key)
                if e is not None:
                    e.hits += 1
                    return e, spec
        ordinal = session.graph_ordinal
        last = self.by_ordinal.get(ordinal)
        if last is not None and config.STANCE[0] in ("fail_on_recompile",
                                                     "eager_on_recompile"):
            if config.STANCE[0] == "fail_on_recompile":
                raise RuntimeError(f"Detected recompile when torch.compile stance is "
                                   f"'fail_on_recompile' (function {self.name}: "
                                   f"{_diff_reason(spec, last, session)})")
            raise RunEagerly()
        if last is not None or prev:
            self._explain(trace, spec, prev[-1].spec if prev else last, reason, session)
        e = self._compile(trace, spec, session)
        self.by_ordinal[ordinal] = spec
        self.compiles_at[ordinal] = self.compiles_at.get(ordinal, 0) + 1
        self.entries[spec.key] = e
        self.by_skeleton.setdefault(spec.skeleton, []).append(e)
        return e, spec

    def _generalise(self, old, new, trace):
        """Mark what varies between specs ``old`` and ``new`` (same skeleton) dynamic.
        Returns (description, whether any mark was added)."""
        changed = []
        added = False
        # at cache_size_limit what varies is generalised even with automatic dynamic shapes
        # off: more static graphs would only keep coming (dynamic=False still never)
        at_limit = self.compiles_at.get(trace.session.graph_ordinal, 0) >= \
            config.cache_size_limit
        auto = self.dynamic is not False and (config.automatic_dynamic_shapes or at_limit)
        for lf, v in new.leaf_values.items():
            ov = old.leaf_values.get(lf)
            if ov is not None and ov != v:
                what = f"size {lf[2]} of {trace.session.arg_name(lf[1])}" if lf[0] == "a" \
                    else f"the int argument {trace.session.int_name(lf[1])}"
                changed.append(f"{what} changed from {ov} to {v}")
                if auto and lf not in self.dynamic_leaves and \
                        lf not in trace.session.static_leaves:
                    self.dynamic_leaves.add(lf)
                    added = True
                    logs.log("dynamic", f"{what} is dynamic from now on (was {ov}, now {v})")
        if auto and not (config.specialize_int and config.specialize_float):
            for n, (a, b) in enumerate(zip(old.scalar_values, new.scalar_values)):
                if type(a) is not type(b) or a == b or a != a:
                    continue
                if isinstance(b, SymInt):
                    continue  # a size: generalised through its leaf
                if (type(b) is int and config.specialize_int) or \
                        (type(b) is float and config.specialize_float):
                    continue
                changed.append(f"Python number #{n} passed to an op changed from {a!r} to {b!r}")
                marks = self.dynamic_scalars.setdefault(new.skeleton, set())
                if n not in marks:
                    marks.add(n)
                    added = True
        if changed and added:
            return "; ".join(changed) + " (now dynamic)", True
        return ("; ".join(changed) or None), False

    def _explain(self, trace, spec, old, reason, session):
        """Say in one line why graph number ``session.graph_ordinal`` of this call is
        compiled again (``old``: the spec compiled there before)."""
        if isinstance(reason, tuple):
            reason = reason[0]
        if reason is None:
            names = session.input_names(trace, spec)
            session.last_input_names = {n: names.get(k) for n, k in enumerate(spec.inputs)}
            reason = _diff_reason(spec, old, session)
        self.recompile_reasons.append(reason)
        where = f" (graph {session.graph_ordinal + 1} of the call)" if session.graph_ordinal \
            else ""
        logs.log("recompiles", f"Recompiling function {self.name}{where}: {reason}")
        n = self.compiles_at.get(session.graph_ordinal, 0)
        if n >= config.cache_size_limit and not self.warned_limit:
            self.warned_limit = True
            summary = "; ".join(dict.fromkeys(self.recompile_reasons))[:2000]
            where = f"graph {session.graph_ordinal + 1} of " if session.graph_ordinal else ""
            warnings.warn(f"ember.compile: {where}{self.name} has been compiled {n + 1} "
                          f"times (config.cache_size_limit={config.cache_size_limit}). "
                          f"{_AT_LIMIT[self.dynamic is False]}; what still recompiles: "
                          f"{summary}. ember keeps compiling rather than falling back to "
                          f"eager.", RuntimeWarning, stacklevel=4)

    # ---- compile -------------------------------------------------------------------
    def _compile(self, trace, spec, session):
        from .aot_autograd import compile_aot
        needs_grad = any(trace.value_rg[j] for j in spec.outputs)
        names = session.input_names(trace, spec)
        backend, backend_name = self.backend, self.backend_name
        if config.FORCE_BACKEND[0] is not None:  # set_stance(force_backend=...)
            from .backends import lookup_backend
            backend = lookup_backend(config.FORCE_BACKEND[0])
            backend_name = getattr(config.FORCE_BACKEND[0], "__name__",
                                   config.FORCE_BACKEND[0])
        aot = needs_grad and isinstance(backend, AotBackend)
        gm = build_graph_module(trace, spec, grad_nodes=needs_grad and not aot,
                                input_names=names, computed_sizes=True)
        gm.meta["ember_needs_grad"] = needs_grad  # whether it runs with autograd
        lv = trace.session.leaf_values
        example = [trace.inputs[k] for k in spec.inputs] + \
                  [lv[lf] for _, lf in spec.size_inputs] + \
                  [trace.scalars[p] for p in spec.scalar_inputs]
        self.compiles += 1
        session.stats_graph(gm)
        logs.log("graph_code", f"captured graph of {self.name}:\n{gm.code}")
        try:
            if aot:
                run, aot_info = compile_aot(gm, example, backend, trace, spec)
                return Entry(spec, gm, run, aot_info, needs_grad)
            run = backend(gm, example)
        except Exception as e:
            if isinstance(e, (BackendCompilerFailed,)) or not callable(backend):
                raise
            raise BackendCompilerFailed(backend_name, e) from e
        src = getattr(run, "__ember_source__", None)
        if src is not None:
            logs.log("output_code", f"output code of {self.name}:\n{src}")
        return Entry(spec, gm, run, None, needs_grad)


_AT_LIMIT = {False: "Sizes and numbers that vary are compiled as dynamic",
             True: "dynamic=False: sizes that vary stay static"}


def _diff_reason(new, old, session):
    """One line: what differs between two keys."""
    ops_n, ins_n = new.key[:2]
    ops_o, ins_o = old.key[:2]
    names = session.last_input_names or {}
    for k, (a, b) in enumerate(zip(ins_n, ins_o)):
        name = names.get(k) or f"input {k}"
        name = name[2:] if name.startswith("l_") else name
        if a[1] != b[1]:
            return f"{name}: dtype changed from {b[1]} to {a[1]}"
        if len(a[0]) != len(b[0]):
            return f"{name}: rank changed from {len(b[0])} to {len(a[0])}"
        if a[2] != b[2]:
            return f"{name}: requires_grad changed from {b[2]} to {a[2]}"
        if a[0] != b[0]:
            return f"{name}: shape changed from {list(b[0])} to {list(a[0])}"
    if len(ins_n) != len(ins_o):
        return f"the graph reads {len(ins_n)} tensors instead of {len(ins_o)}"
    for i, (a, b) in enumerate(zip(ops_n, ops_o)):
        if a[0] is not b[0]:
            return f"op {i} is {a[0].name} instead of {b[0].name} (the Python took another path)"
        if a[3] != b[3]:
            return f"grad mode changed from {b[3]} to {a[3]} at op {i} ({a[0].name})"
        if a[1] != b[1]:
            return f"the arguments of op {i} ({a[0].name}) changed"
        if a[2] != b[2]:
            return f"the params of op {i} ({a[0].name}) changed: {dict(b[2])} -> {dict(a[2])}"
    if len(ops_n) != len(ops_o):
        return f"the graph has {len(ops_n)} ops instead of {len(ops_o)}"
    return "the graph's outputs changed (other tensors are still referenced)"
