"""``ExecutionTraceObserver``: the operator graph of a run, in the Chakra execution-trace
JSON schema torch writes (``schema``, ``pid``, ``time``, ``start_ts``, ``nodes``,
``finish_ts``).

Every operator call and ``record_function`` range is a node: its id, name, its
parent in ``ctrl_deps`` (ranges and calls open when it started; the thread node at
the top, under the process node), its inputs and outputs (values, shapes, types,
strides; a tensor's value is ``[tensor id, storage id, offset, numel, itemsize,
device]``, so data dependencies between nodes can be followed) and torch's
attributes.  ember operators have no TorchScript schemas: ``op_schema`` is empty.
"""
import gzip
import json
import os
import threading
import time
import weakref

from .._core.dispatch import DispatchMode
from .._core.tensor import Tensor
from ..autograd import profiler as _prof

__all__ = ["ExecutionTraceObserver"]

SCHEMA = "1.1.1-chakra.0.0.4"
_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
               "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
               "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
               "bool": "bool", "complex64": "c10::complex<float>",
               "complex128": "c10::complex<double>"}


class _Node:
    __slots__ = ("id", "name", "parent", "inputs", "outputs", "rf_id", "seq_id", "scope",
                 "tid")


class _ETMode(DispatchMode):
    def __init__(self, obs):
        self.obs = obs

    def __ember_dispatch__(self, op, args, kwargs):
        obs = self.obs
        node = obs._open(_prof._aten_name(op, kwargs), scope=0)
        node.inputs = obs._values(list(args) + list(kwargs.values()))
        try:
            out = op(*args, **kwargs)
        finally:
            obs._close(node)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        node.outputs = obs._values(outs)
        fn = getattr(outs[0], "grad_fn", None) if outs else None
        node.seq_id = getattr(fn, "seq", -1) if fn is not None else -1
        return out


class ExecutionTraceObserver:
    """Execution Trace Observer.

    ``register_callback(path)`` names the output file (``.gz`` is gzipped); between
    ``start()`` and ``stop()`` every operator call and ``record_function`` range is
    recorded, and ``stop()`` writes the trace.  Passed to
    ``ember.profiler.profile(execution_trace_observer=...)``, it runs while the profiler
    records.
    """

    def __init__(self):
        self._registered = False
        self._execution_trace_running = False
        self.output_file_path = None
        self.extra_resources_collection = False
        self._mode = None

    def __del__(self):
        try:
            self.unregister_callback()
        except Exception:  # interpreter shutdown
            pass

    @staticmethod
    def build_execution_trace_obs_from_env():
        """An observer writing to ``$PYTORCH_EXECUTION_TRACE_PATH`` (or a temporary file)
        when ``$ENABLE_PYTORCH_EXECUTION_TRACE`` is 1; otherwise None."""
        if os.environ.get("ENABLE_PYTORCH_EXECUTION_TRACE", "0") != "1":
            return None
        path = os.environ.get("PYTORCH_EXECUTION_TRACE_PATH")
        if not path:
            import tempfile
            fd, path = tempfile.mkstemp(prefix="ember_et_", suffix=".json")
            os.close(fd)
        return ExecutionTraceObserver().register_callback(path)

    def set_extra_resource_collection(self, val):
        """Collect extra resources (kernel sources) alongside the trace: ember has none to
        collect, the flag is kept."""
        self.extra_resources_collection = val

    def register_callback(self, output_file_path):
        """Set the output file; returns the observer."""
        if not self._registered:
            self.output_file_path = output_file_path
            self._registered = True
        return self

    def get_resources_dir(self):
        """The folder for resources next to the trace (``<trace name>_resources``)."""
        if not self.output_file_path:
            return None
        return self.get_resources_dir_for_et_path(self.output_file_path)

    @staticmethod
    def get_resources_dir_for_et_path(trace_path, create_dir=False):
        base = trace_path[:-3] if trace_path.endswith(".gz") else trace_path
        base = base[:-5] if base.endswith(".json") else base
        d = base + "_resources"
        if create_dir:
            os.makedirs(d, exist_ok=True)
        return d

    def unregister_callback(self):
        """Stop (writing the trace if it runs) and forget the output file."""
        if self._execution_trace_running:
            self.stop()
        self._registered = False

    @property
    def is_registered(self):
        return self._registered

    def is_running(self):
        return self._execution_trace_running

    def start(self):
        """Starts to capture."""
        if not self._registered or self._execution_trace_running:
            return
        self._nodes = []
        self._next_id = 3  # 1: the process node, 2: the first thread node
        self._rf_id = 1
        self._open_nodes = {}
        self._thread_nodes = {}
        self._tensor_ids = {}
        self._storage_ids = {}
        self._lock = threading.Lock()
        self._start_ts = time.perf_counter_ns() // 1000
        self._time = time.strftime("%Y-%m-%d %X")
        self._mode = _ETMode(self)
        self._mode.__enter__()
        _prof._RANGE_LISTENERS.append(self)
        self._execution_trace_running = True

    def stop(self):
        """Stops to capture, and writes the trace."""
        if not self._execution_trace_running:
            return
        self._mode.__exit__(None, None, None)
        self._mode = None
        if self in _prof._RANGE_LISTENERS:
            _prof._RANGE_LISTENERS.remove(self)
        self._execution_trace_running = False
        self._write()

    def get_output_file_path(self):
        """Returns the output file name or None."""
        return self.output_file_path

    def cleanup(self):
        """Calls unregister_callback() to make sure to finalize outputs."""
        self.unregister_callback()

    # ---- recording ------------------------------------------------------------------------
    def _thread_node(self):
        tid = threading.get_ident()
        n = self._thread_nodes.get(tid)
        if n is None:
            n = _Node()
            with self._lock:
                n.id = 2 if not self._thread_nodes else self._take_id()
            n.name, n.parent, n.inputs, n.outputs = \
                "[pytorch|profiler|execution_trace|thread]", 1, [], []
            n.rf_id, n.seq_id, n.scope, n.tid = 0, -1, 7, len(self._thread_nodes) + 1
            self._thread_nodes[tid] = n
            self._nodes.append(n)
        return n

    def _take_id(self):
        i = self._next_id
        self._next_id += 1
        return i

    def _open(self, name, scope):
        th = self._thread_node()
        stack = self._open_nodes.setdefault(threading.get_ident(), [])
        n = _Node()
        with self._lock:
            n.id = self._take_id()
            n.rf_id = self._rf_id
            self._rf_id += 1
        n.name, n.parent = name, stack[-1].id if stack else th.id
        n.inputs = n.outputs = []
        n.seq_id, n.scope, n.tid = -1, scope, th.tid
        stack.append(n)
        return n

    def _close(self, node):
        stack = self._open_nodes.get(threading.get_ident())
        if stack and node in stack:
            stack.remove(node)
        self._nodes.append(node)

    def range_begin(self, name):
        n = self._open(name, scope=7)
        return n

    def range_end(self, node):
        self._close(node)

    def _tensor_value(self, t):
        # keyed by object id, checked through a weak reference (tensors compare
        # elementwise, so they cannot be dictionary keys themselves)
        entry = self._tensor_ids.get(id(t))
        if entry is not None and entry[0]() is t:
            tid = entry[1]
        else:
            with self._lock:
                tid = self._take_id()
            self._tensor_ids[id(t)] = (weakref.ref(t), tid)
        root = t._base._data if t._base is not None else t._data
        key = id(root)
        sid = self._storage_ids.get(key)
        if sid is None:
            with self._lock:
                sid = self._storage_ids[key] = self._take_id()
        return [tid, sid, int(t.storage_offset()), int(t.numel()), int(t.element_size()),
                str(t.device)]

    def _values(self, items):
        vals, shapes, types, strides = [], [], [], []
        for a in items:
            if isinstance(a, Tensor):
                vals.append(self._tensor_value(a))
                shapes.append(list(a.shape))
                types.append(f"Tensor({_TYPE_NAMES.get(str(a.dtype).split('.')[-1], 'float')})")
                strides.append(list(a.stride()))
                continue
            shapes.append([])
            strides.append([])
            if a is None:
                vals.append("<None>")
                types.append("None")
            elif isinstance(a, bool):
                vals.append(a)
                types.append("Bool")
            elif isinstance(a, int):
                vals.append(a)
                types.append("Int")
            elif isinstance(a, float):
                vals.append(a)
                types.append("Double")
            elif isinstance(a, str):
                vals.append(a)
                types.append("String")
            elif isinstance(a, (tuple, list)) and all(isinstance(x, (int, float, bool))
                                                      for x in a):
                vals.append(list(a))
                types.append("GenericList[" + ",".join(
                    "Bool" if isinstance(x, bool) else "Int" if isinstance(x, int)
                    else "Double" for x in a) + "]")
            else:
                vals.append(str(a))
                types.append("String")
        return {"values": vals, "shapes": shapes, "types": types, "strides": strides}

    def _write(self):
        def io(x):
            return x if isinstance(x, dict) else \
                {"values": [], "shapes": [], "types": [], "strides": []}

        def attrs(n):
            return [{"name": "rf_id", "type": "uint64", "value": n.rf_id},
                    {"name": "fw_parent", "type": "uint64", "value": 0},
                    {"name": "seq_id", "type": "int64", "value": n.seq_id},
                    {"name": "scope", "type": "uint64", "value": n.scope},
                    {"name": "tid", "type": "uint64", "value": n.tid},
                    {"name": "fw_tid", "type": "uint64", "value": 0},
                    {"name": "op_schema", "type": "string", "value": ""},
                    {"name": "kernel_backend", "type": "string", "value": ""},
                    {"name": "kernel_file", "type": "string", "value": ""},
                    {"name": "tensor_range", "type": "string", "value": ""}]
        proc = _Node()
        proc.id, proc.name, proc.parent = 1, "[pytorch|profiler|execution_trace|process]", 1
        proc.inputs = proc.outputs = []
        proc.rf_id, proc.seq_id, proc.scope, proc.tid = 0, -1, 7, 0
        nodes = [{"id": n.id, "name": n.name, "ctrl_deps": n.parent, "inputs": io(n.inputs),
                  "outputs": io(n.outputs), "attrs": attrs(n)}
                 for n in [proc] + self._nodes]
        trace = {"schema": SCHEMA, "pid": os.getpid(), "time": self._time,
                 "start_ts": self._start_ts, "nodes": nodes,
                 "finish_ts": time.perf_counter_ns() // 1000}
        path = self.output_file_path
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt") as f:
            json.dump(trace, f)
