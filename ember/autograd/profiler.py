"""The autograd profiler (``torch.autograd.profiler``).

While a `profile` runs, a dispatch mode on ember's mode stack times every
operator call (named as torch names it, ``aten::add``), and the autograd engine
lets it time each backward node (``autograd::engine::evaluate_function:
MulBackward0`` around ``MulBackward0`` around the ops of its derivative).
``record_function`` ranges nest the calls made inside them as children, so each
event has a total time and a self time (total minus its children's).  With no
profiler running nothing is recorded and the dispatcher's fast path is untouched.

Remote events (an RPC peer's operator events, recorded there by its own
profiler and sent back as `FunctionEvent.to_dict` records) join the running
profile through `_Recorder.add_remote_events`, nested under the local event of
the call that caused them.
"""
import enum
import functools
import itertools
import os
import sys
import threading
import time
import warnings
import weakref

import numpy as np

from .._core.dispatch import DispatchMode
from .._core.overrides import overridable
from .._core.state import STATE
from .._core.tensor import Tensor, wrap
from ..ops.op_namespaces import define_overload
from .profiler_util import (DeviceType, EventList, FunctionEvent, MEMORY_EVENT_NAME,
                            MemRecordsAcc, chrome_trace)

__all__ = ["profile", "record_function", "emit_nvtx", "FunctionEvent", "EventList",
           "DeviceType", "ProfilerActivity", "kineto_available", "MEMORY_EVENT_NAME",
           "MemRecordsAcc", "EnforceUnique", "KinetoStepTracker", "parse_nvprof_trace",
           "load_nvprof"]


class ProfilerActivity(enum.Enum):
    """The kinds of activity a profiler can record (``torch.profiler.ProfilerActivity``)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def kineto_available():
    """ember's profiler is its own (no Kineto library): False."""
    return False


# ---- names ----------------------------------------------------------------------------

# ember operators whose aten name differs from "aten::" + the ember name
_ATEN_NAMES = {"max_dim": "max", "min_dim": "min", "median_dim": "median",
               "bernoulli_scalar": "bernoulli", "normal_tensor": "normal",
               "cross_entropy_loss": "cross_entropy_loss", "native_dropout": "native_dropout",
               "_flash_attention": "_scaled_dot_product_flash_attention_for_cpu",
               "_flash_attention_backward": "_scaled_dot_product_flash_attention_for_cpu_backward",
               "im2col": "im2col", "col2im": "col2im", "adaptive_max_pool":
               "adaptive_max_pool2d", "max_pool_backward": "max_pool2d_with_indices_backward",
               "_to_copy": "_to_copy", "_to_device": "_to_copy", "_reshape_copy": "_reshape_copy"}


def _aten_name(op, params):
    name = op.name
    inplace = hasattr(op, "base")
    base = name[:-1] if inplace else name
    if base in ("max_pool", "avg_pool", "avg_pool_backward"):
        ks = params.get("ks")
        n = len(ks) if isinstance(ks, (tuple, list)) else 2
        aten = f"{base[:8]}{n}d" + ("_with_indices" if params.get("need_idx") else "") + \
            base[8:]
    else:
        aten = _ATEN_NAMES.get(base, base)
    return "aten::" + aten + ("_" if inplace else "")


def _shapes(args):
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stack():
    """The Python call stack, innermost first, without ember's own frames, as torch
    formats it (``file.py(12): fn``)."""
    out = []
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(_EMBER_DIR):
            out.append(f"{code.co_filename}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return out


def _matmul_flops(name, args):
    """Multiply-adds x 2 of the matrix products, as torch's ``with_flops`` counts them."""
    try:
        if name in ("aten::matmul", "aten::mm", "aten::bmm"):
            a, b = args[0].shape, args[1].shape
        elif name == "aten::linear":
            a, b = args[0].shape, tuple(reversed(args[1].shape))
        elif name == "aten::addmm":
            a, b = args[1].shape, args[2].shape
        else:
            return 0
    except (AttributeError, IndexError):
        return 0
    if len(a) == 0 or len(b) == 0:
        return 0
    k = a[-1]
    rows = 1
    for s in a[:-1]:
        rows *= s
    cols = b[-1] if len(b) > 1 else 1
    return 2 * rows * k * cols


# ---- recording ------------------------------------------------------------------------

_ACTIVE = None  # the running _Recorder (one profiler at a time, as torch's)
# other observers of record_function ranges (the execution-trace observer): objects with
# range_begin(name) -> token and range_end(token)
_RANGE_LISTENERS = []


def _now_us():
    return time.perf_counter_ns() / 1000.0


class _Open:
    """One range while it is recorded: cheap to make on every operator call; the
    `FunctionEvent` objects are built once the profile ends."""
    __slots__ = ("id", "name", "thread", "start", "end", "shapes", "stack", "seq", "kind",
                 "parent", "mem", "flops")


class _Recorder:
    """Collects the events of one profiling session."""

    def __init__(self, record_shapes, profile_memory, with_stack, with_flops):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.events = []      # _Open records, in start order
        self.remote = []      # (FunctionEvent, local parent _Open or None)
        self.open = {}        # thread ident -> stack of open records
        self.ids = itertools.count(1)
        self.recording = True
        self.base_ns = time.time_ns()
        self.t0 = _now_us()
        self.finalizers = []

    def begin(self, name, shapes=None, stack=None, sequence_nr=-1, kind="op"):
        tid = threading.get_ident()
        st = self.open.get(tid)
        if st is None:
            st = self.open[tid] = []
        o = _Open()
        o.id = next(self.ids)
        o.name = name
        o.thread = threading.get_native_id()
        o.shapes = shapes
        o.stack = stack
        o.seq = sequence_nr
        o.kind = kind
        o.parent = st[-1] if st else None
        o.mem = None
        o.flops = None
        o.end = 0.0
        st.append(o)
        self.events.append(o)
        o.start = _now_us() - self.t0
        return o

    def end(self, o):
        o.end = _now_us() - self.t0
        st = self.open.get(threading.get_ident())
        if st and st[-1] is o:
            st.pop()
        elif st and o in st:
            st.remove(o)

    def memory(self, o, nbytes):
        if o.mem is None:
            o.mem = []
        o.mem.append((_now_us() - self.t0, nbytes))

    def track_outputs(self, o, op, args, out):
        """Record the bytes the op's outputs allocate, and their release later."""
        if hasattr(op, "base") or op.view:
            return
        outs = out if isinstance(out, (tuple, list)) else (out,)
        ins = [a._data for a in args if isinstance(a, Tensor)]
        for t in outs:
            if not isinstance(t, Tensor) or t._base is not None:
                continue
            d = t._data
            if any(d is a for a in ins):
                continue
            n = int(getattr(d, "nbytes", 0))
            if n == 0:
                continue
            self.memory(o, n)
            try:
                self.finalizers.append(weakref.finalize(d, self._freed, n))
            except TypeError:
                pass  # an array type without weak references: allocations only

    def _freed(self, nbytes):
        if not self.recording:
            return
        st = self.open.get(threading.get_ident())
        if st:
            self.memory(st[-1], -nbytes)

    def add_remote_events(self, records, node_id, parent=None):
        """Join events recorded by worker ``node_id`` (`FunctionEvent.to_dict` records,
        times relative to that worker's profile) under ``parent`` (default: the innermost
        open local range), shifted to start where ``parent`` starts."""
        remote = FunctionEvent.from_dicts(records)
        if not remote:
            return []
        if parent is None:
            st = self.open.get(threading.get_ident())
            parent = st[-1] if st else None
        shift = (parent.start if parent is not None else 0.0) - \
            min(e.time_range.start for e in remote)
        for e in remote:
            e.id = next(self.ids)
            e.time_range.start += shift
            e.time_range.end += shift
            e.is_remote = True
            e.node_id = node_id
            e._kind = "op"
            e._memory_records = []
            self.remote.append((e, parent if e.cpu_parent is None else None))
        return remote

    def finish(self):
        """Close what is still open and return the FunctionEvents, children linked to
        parents and memory totalled."""
        self.recording = False
        for f in self.finalizers:
            f.detach()  # releases after the profile are not its business, nor is the recorder
        self.finalizers = []
        end = _now_us() - self.t0
        for st in self.open.values():
            for o in st:
                o.end = end
        self.open.clear()
        made = {}
        events = []
        for o in self.events:
            name, trace_name = o.name, None
            if name.startswith("ProfilerStep#"):
                # steps aggregate under one name; the trace keeps each step's own
                name, trace_name = "ProfilerStep*", o.name
            e = FunctionEvent(o.id, name, o.thread, o.start, o.end, input_shapes=o.shapes,
                              stack=o.stack, sequence_nr=o.seq,
                              fwd_thread=o.thread if o.seq >= 0 else None, flops=o.flops,
                              trace_name=trace_name)
            e._kind = o.kind
            e._memory_records = o.mem or []
            if o.parent is not None:
                p = made[id(o.parent)]
                e.cpu_parent = p
                p.cpu_children.append(e)
            made[id(o)] = e
            events.append(e)
        for e, parent in self.remote:
            if parent is not None:
                p = made[id(parent)]
                e.cpu_parent = p
                p.cpu_children.append(e)
            events.append(e)
        if self.profile_memory:
            for e in reversed(events):  # children before parents
                e.cpu_memory_usage = sum(n for _, n in e._memory_records) + \
                    sum(c.cpu_memory_usage for c in e.cpu_children)
        self.events = []
        return events


_NAMES = {}  # op -> aten name, for the ops whose name does not depend on their params


class _ProfilerMode(DispatchMode):
    """The dispatch mode that times every operator call into a `_Recorder`."""

    def __init__(self, recorder):
        self.rec = recorder

    def __ember_dispatch__(self, op, args, kwargs):
        rec = self.rec
        if not rec.recording:
            return op(*args, **kwargs)
        name = _NAMES.get(op)
        if name is None:
            name = _aten_name(op, kwargs)
            if "pool" not in op.name:
                _NAMES[op] = name
        o = rec.begin(name, _shapes(args) if rec.record_shapes else None,
                      _user_stack() if rec.with_stack else None)
        try:
            out = op(*args, **kwargs)
            if rec.profile_memory:
                rec.track_outputs(o, op, args, out)
        finally:
            rec.end(o)
        if rec.with_flops:
            o.flops = _matmul_flops(name, args)
        if STATE.grad_enabled:
            first = out[0] if isinstance(out, (tuple, list)) and out else out
            fn = getattr(first, "grad_fn", None)
            if fn is not None and getattr(fn, "seq", None) is not None:
                o.seq = fn.seq
        return out

    def __ember_node__(self, node, fn, args):
        """Time ``fn(*args)``, the evaluation of backward node ``node`` (called by the
        engine)."""
        rec = self.rec
        if not rec.recording:
            return fn(*args)
        name = type(node).__name__
        if name == "AccumulateGrad":
            name = "torch::autograd::AccumulateGrad"
            grads = args[1:2]
        else:
            grads = args[0]
        seq = getattr(node, "seq", -1)
        outer = rec.begin("autograd::engine::evaluate_function: " + name, [], sequence_nr=seq,
                          kind="backward")
        inner = rec.begin(name, _shapes(grads) if rec.record_shapes else None,
                          sequence_nr=seq, kind="backward")
        try:
            return fn(*args)
        finally:
            rec.end(inner)
            rec.end(outer)


def _start(recorder):
    global _ACTIVE
    if _ACTIVE is not None:
        raise RuntimeError("Profiler is already enabled: ember runs one profiler at a time "
                           "(exit the running profile first).")
    mode = _ProfilerMode(recorder)
    mode.__enter__()
    _ACTIVE = recorder
    return mode


def _stop(mode):
    global _ACTIVE
    mode.__exit__(None, None, None)
    if _ACTIVE is mode.rec:
        _ACTIVE = None
    return mode.rec.finish()


def _active_recorder():
    """The recorder of the running profiler, or None (for RPC and record_function)."""
    return _ACTIVE


# ---- public API -----------------------------------------------------------------------

class profile:
    """Context manager that manages autograd profiler state and holds a summary of results.

    Args:
        enabled (bool, optional): Setting this to False makes this context manager a no-op.
        use_device (str, optional): the device to profile besides the CPU (ember records
            CPU activity only; a device without a registered backend is refused).
        record_shapes (bool, optional): record the shapes of each operator's inputs.
        with_flops (bool, optional): estimate the FLOPs of matrix products.
        profile_memory (bool, optional): track the bytes operators allocate and free.
        with_stack (bool, optional): record the Python source location of each op.
        with_modules (bool, optional): accepted for compatibility.
        acc_events (bool, optional): accumulate events across successive profiling cycles.
        post_processing_timeout_s, activity_filters: accepted for compatibility (events are
            ready when the profile exits; only CPU activity is recorded).

    Example:
        >>> x = ember.randn((1, 1), requires_grad=True)
        >>> with ember.autograd.profiler.profile() as prof:
        ...     y = x ** 2
        ...     y.backward()
        >>> print(prof.key_averages().table(sort_by="self_cpu_time_total"))
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):
        self.enabled = enabled
        self.function_events = None
        if not enabled:
            return
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        _check_device(use_device)
        self.use_device = use_device
        self.use_cuda = use_device == "cuda"
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.record_shapes |= self.with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self._old_function_events = None
        self.entered = False
        self._mode = None
        self.trace_id = ""
        self._base_ns = 0

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start_trace()
        return self

    def _prepare_trace(self):
        self.entered = True

    def _start_trace(self):
        self.entered = True
        rec = _Recorder(self.record_shapes, self.profile_memory, self.with_stack,
                        self.with_flops)
        self._base_ns = rec.base_ns
        self._mode = _start(rec)
        if self.custom_trace_id_callback is not None:
            self.trace_id = self.custom_trace_id_callback()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return
        events = _stop(self._mode) if self._mode is not None else []
        self._mode = None
        self.entered = False
        if self.function_events and self.acc_events:
            self._old_function_events = self.function_events
        self.function_events = EventList(events, use_device=self.use_device,
                                         profile_memory=self.profile_memory,
                                         with_flops=self.with_flops)
        self.function_events._tree_built = True
        if self.acc_events and self._old_function_events:
            self.function_events[:0] = self._old_function_events
        return False

    def toggle_collection_dynamic(self, enabled, activities):
        """Pause (``enabled=False``) or resume collecting events mid-profile."""
        if self._mode is not None and ProfilerActivity.CPU in activities:
            self._mode.rec.recording = bool(enabled)

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def _ensure_function_events(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        return self._ensure_function_events().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        """Export the events as a Chrome trace JSON file (chrome://tracing, Perfetto)."""
        import json
        trace = chrome_trace(self._ensure_function_events(), base_ns=self._base_ns)
        if self.trace_id:
            trace["trace_id"] = self.trace_id
        with open(path, "w") as f:
            json.dump(trace, f)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        events = self._ensure_function_events()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return events.export_stacks(path, metric)

    export_stacks.__doc__ = EventList.export_stacks.__doc__

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._ensure_function_events().key_averages(
            group_by_input_shape, group_by_stack_n, group_by_overload_name)

    key_averages.__doc__ = EventList.key_averages.__doc__

    def total_average(self):
        return self._ensure_function_events().total_average()

    total_average.__doc__ = EventList.total_average.__doc__

    @property
    def self_cpu_time_total(self):
        """Returns total time spent on CPU (the sum of all self times across all events)."""
        return self._ensure_function_events().self_cpu_time_total


def _check_device(use_device):
    if use_device in (None, "cpu"):
        return
    from .._core import device as _device
    if use_device not in _device._BACKENDS:
        raise RuntimeError(f"profile(use_device={use_device!r}): no {use_device!r} backend is "
                           f"registered with ember, so there is no {use_device} activity to "
                           f"record; profile the CPU with use_device=None")


class _ContextDecorator:
    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with self.__class__(*self._ctor_args):
                return func(*args, **kwargs)
        return wrapped


class record_function(_ContextDecorator):
    """Context manager/function decorator that adds a label to a code block/function
    when running the autograd profiler; the operators run inside become its children.

    Args:
        name (str): Label assigned to the block of code.
        args (str, optional): extra information, kept with the event.
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._ctor_args = (name, args)
        self.run_callbacks_on_exit = True
        self.record = None
        self._rec = None

    def __enter__(self):
        rec = _ACTIVE
        if rec is not None and rec.recording:
            self._rec = rec
            self.record = rec.begin(self.name, [] if rec.record_shapes else None,
                                    kind="annotation")
        self._tokens = [(lst, lst.range_begin(self.name)) for lst in _RANGE_LISTENERS] \
            if _RANGE_LISTENERS else None
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.run_callbacks_on_exit:
            return
        if self.record is not None:
            self._rec.end(self.record)
        for lst, token in self._tokens or ():
            lst.range_end(token)

    def _call_end_callbacks_on_future(self, fut):
        """End the range when future ``fut`` completes (async work such as RPC); returns a
        future that completes after it."""
        if not self.run_callbacks_on_exit:
            raise RuntimeError("_call_end_callbacks_on_future can only be called once.")
        self.run_callbacks_on_exit = False
        ev, rec = self.record, self._rec

        def done(f):
            if ev is not None:
                ev.end = _now_us() - rec.t0
            return f.wait() if hasattr(f, "wait") else f
        if ev is not None:
            st = rec.open.get(threading.get_ident())
            if st and ev in st:
                st.remove(ev)  # stays open until the future completes, off the stack
        return fut.then(done) if hasattr(fut, "then") else done(fut)


# torch.ops.profiler: record_function as operators, so a traced graph can open and close a
# range (pytorch/examples fx/profiling_tracer.py records them with a custom Tracer)
def _record_function_enter_new(name, args=None):
    rf = record_function(name, args)
    rf.__enter__()
    return rf


def _record_function_enter(name, args=None):
    # the legacy form hands back a tensor standing for the open range
    handle = wrap(np.empty(0, dtype=np.uint8))
    handle._record_function = _record_function_enter_new(name, args)
    return handle


def _record_function_exit(handle):
    rf = handle._record_function if isinstance(handle, Tensor) else handle
    rf.__exit__(None, None, None)


_record_function_enter_new = overridable(_record_function_enter_new)
_record_function_enter = overridable(_record_function_enter)
_record_function_exit = overridable(_record_function_exit)
define_overload("profiler::_record_function_enter", "default",
                "profiler::_record_function_enter(str name, str? args=None) -> Tensor",
                _record_function_enter)
define_overload("profiler::_record_function_enter_new", "default",
                "profiler::_record_function_enter_new(str name, str? args=None) -> "
                "__torch__.torch.classes.profiler._RecordFunction", _record_function_enter_new)
define_overload("profiler::_record_function_exit", "default",
                "profiler::_record_function_exit(Tensor handle) -> ()", _record_function_exit)
define_overload("profiler::_record_function_exit", "_RecordFunction",
                "profiler::_record_function_exit._RecordFunction("
                "__torch__.torch.classes.profiler._RecordFunction handle) -> ()",
                _record_function_exit)


class emit_nvtx:
    """Make every autograd operation emit an NVTX range (for nvprof / Nsight).

    NVTX needs CUDA: without a registered CUDA backend entering it raises, as torch
    without CUDA does."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("NVTX annotation context manager is not reentrant")
        from .._core.device import _BACKENDS  # what ember.cuda.is_available() reads
        if "cuda" not in _BACKENDS:
            raise AssertionError("Torch not compiled with CUDA enabled (ember has no 'cuda' "
                                 "backend registered, so there is no NVTX to emit ranges to)")
        raise RuntimeError("emit_nvtx: the registered 'cuda' backend provides no NVTX ranges")

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.entered = False
        return False


class EnforceUnique:
    """Raises an error if a key is seen more than once."""

    def __init__(self):
        self.seen = set()

    def see(self, *key):
        """Observe a key and raise an error if it is seen multiple times."""
        if key in self.seen:
            raise RuntimeError("duplicate key: " + str(key))
        self.seen.add(key)


_NVPROF_MARKERS = """
    SELECT start.id AS marker_id, start.name, start.timestamp AS start_time,
           end.timestamp AS end_time
    FROM CUPTI_ACTIVITY_KIND_MARKER AS start INNER JOIN CUPTI_ACTIVITY_KIND_MARKER AS end
         ON start.id = end.id
    WHERE start.name != 0 AND end.name = 0
"""
_NVPROF_KERNELS = """
    SELECT start.id AS marker_id, start.name, start.timestamp, end.timestamp,
           runtime._id_ AS runtime_id, runtime.cbid, runtime.start AS runtime_start,
           runtime.end AS runtime_end, kernel.start AS kernel_start,
           kernel.end AS kernel_end, kernel.name AS kernel_name
    FROM CUPTI_ACTIVITY_KIND_MARKER AS start
         INNER JOIN CUPTI_ACTIVITY_KIND_MARKER AS end ON start.id = end.id
         INNER JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS runtime
             ON (start.timestamp < runtime.start AND runtime.end < end.timestamp)
         INNER JOIN CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL AS kernel
             ON kernel.correlationId = runtime.correlationId
"""


def parse_nvprof_trace(path):
    """The ranges (NVTX markers, as ``emit_nvtx`` writes them) of an nvprof SQLite trace
    as FunctionEvents, each with the CUDA kernels launched inside it, in start order.
    Names are read as stored (torch demangles C++ symbol names; marker names are plain)."""
    import sqlite3
    conn = sqlite3.connect(path)
    try:
        conn.row_factory = sqlite3.Row
        strings = {r["id"]: r["value"]
                   for r in conn.execute("SELECT _id_ as id, value FROM StringTable")}
        functions, by_id = [], {}
        unique = EnforceUnique()
        for row in conn.execute(_NVPROF_MARKERS):
            unique.see(row["marker_id"])
            evt = FunctionEvent(id=row["marker_id"], node_id=0, name=strings[row["name"]],
                                start_us=row["start_time"], end_us=row["end_time"], thread=0)
            functions.append(evt)
            by_id[evt.id] = evt
        unique = EnforceUnique()
        for row in conn.execute(_NVPROF_KERNELS):
            unique.see(row["marker_id"], row["runtime_id"])
            if row["cbid"] != 211:  # cudaLaunchKernel (CUDA >= 9.2)
                raise AssertionError(f"Expected cbid to be 211, but got {row['cbid']}")
            by_id[row["marker_id"]].append_kernel(row["kernel_name"], 0,
                                                  row["kernel_end"] - row["kernel_start"])
    finally:
        conn.close()
    functions.sort(key=lambda evt: evt.time_range.start)
    return functions


def load_nvprof(path):
    """Open an nvprof trace file and parse its autograd annotations into an EventList."""
    return EventList(parse_nvprof_trace(path))


class KinetoStepTracker:
    """Counts the training steps that different requesters (the profiler's ``step()``,
    an optimizer hook) report, so the profiler's step number advances once per step
    however many of them report it: the global step is the largest requester count."""

    _step_dict = {}
    _current_step = 0

    @classmethod
    def init_step_count(cls, requester):
        """Initialize for a given requester."""
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester):
        """Remove a given requester; returns whether it was registered."""
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester):
        """Increments the step count for the requester; returns the global step count."""
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls):
        """Get the latest step for any requester."""
        return cls._current_step
