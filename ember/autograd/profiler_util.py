"""Profiler events and their summaries (``torch.autograd.profiler_util``).

A `FunctionEvent` is one timed range on one thread: an operator call seen by the
dispatcher, a ``record_function`` range, or the evaluation of a backward node.
Events know their parent and children (the ranges open when they started), so
CPU time splits into total and self time as torch reports it.  An event is plain
data (`to_dict`/`from_dict`): events recorded by another process (an RPC peer)
can travel and join a local `EventList` as remote events (``node_id`` names the
worker, ``is_remote`` is set), which `key_averages`, `table` and the Chrome
trace then show next to the local ones.
"""
import bisect
import enum
import json
import os
from collections import defaultdict

__all__ = ["DeviceType", "FunctionEvent", "FunctionEventAvg", "EventList", "Interval",
           "MEMORY_EVENT_NAME", "OUT_OF_MEMORY_EVENT_NAME", "StringTable", "FormattedTimesMixin",
           "MemRecordsAcc"]

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"


class DeviceType(enum.IntEnum):
    """The kind of device an event ran on (``torch.profiler.DeviceType``)."""
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20

    def __repr__(self):
        return f"DeviceType.{self.name}"


class Interval:
    """A time range in microseconds."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        """Return the length of the interval."""
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start}, end={self.end})"


class StringTable(defaultdict):
    """A cache of demangled names (names here are never mangled: the identity)."""

    def __missing__(self, key):
        self[key] = key
        return key


class MemRecordsAcc:
    """Fast lookup of memory records by time: ``in_interval(start_us, end_us)`` yields the
    records whose timestamp lies in the interval.  Records are ``(ts_us, record)`` pairs."""

    def __init__(self, mem_records):
        self._mem_records = sorted(mem_records, key=lambda r: r[0])
        self._start_us = [r[0] for r in self._mem_records]

    def in_interval(self, start_us, end_us):
        """Return the records with ``start_us <= ts <= end_us``, in time order."""
        lo = bisect.bisect_left(self._start_us, start_us)
        hi = bisect.bisect_right(self._start_us, end_us)
        for i in range(lo, hi):
            yield self._mem_records[i]


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes * 1.0 / size:.2f} {unit}"
    return f"{nbytes} B"


class FormattedTimesMixin:
    """``*_str`` renderings of the time fields and per-call averages."""

    @property
    def cpu_time_total_str(self):
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self):
        return _format_time(self.self_cpu_time_total)

    @property
    def device_time_total_str(self):
        return _format_time(self.device_time_total)

    @property
    def self_device_time_total_str(self):
        return _format_time(self.self_device_time_total)

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def cpu_time_str(self):
        return _format_time(self.cpu_time)

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count

    @property
    def device_time_str(self):
        return _format_time(self.device_time)


class FunctionEvent(FormattedTimesMixin):
    """Profiling information about a single function (one timed range)."""

    def __init__(self, id, name, thread, start_us, end_us, overload_name=None, fwd_thread=None,
                 input_shapes=None, stack=None, scope=0, use_device=None, cpu_memory_usage=0,
                 device_memory_usage=0, is_async=False, is_remote=False, sequence_nr=-1,
                 node_id=-1, device_type=DeviceType.CPU, device_index=0, device_resource_id=None,
                 is_legacy=False, flops=None, trace_name=None, concrete_inputs=None,
                 kwinputs=None, is_user_annotation=False, is_python_function=False,
                 activity_type=None, metadata_json=None, flow_id=None, flow_type=None,
                 flow_start=None, external_id=0, linked_correlation_id=0, extra_meta=None,
                 structured_input_shapes=None, structured_input_strides=None,
                 input_dtypes=None, python_id=-1, python_parent_id=-1, python_module_id=-1):
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.kernels = []
        self.count = 1
        self.cpu_children = []
        self.cpu_parent = None
        self.input_shapes = input_shapes
        self.concrete_inputs = concrete_inputs
        self.kwinputs = kwinputs or {}
        self.stack = stack
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.device_resource_id = thread if device_resource_id is None else device_resource_id
        self.is_legacy = is_legacy
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.is_python_function = is_python_function
        self.activity_type = activity_type
        self.metadata_json = metadata_json
        self.flow_id = flow_id
        self.flow_type = flow_type
        self.flow_start = flow_start
        self.external_id = external_id
        self.linked_correlation_id = linked_correlation_id
        self.extra_meta = extra_meta
        self.structured_input_shapes = structured_input_shapes
        self.structured_input_strides = structured_input_strides
        self.input_dtypes = input_dtypes
        self.python_id = python_id
        self.python_parent_id = python_parent_id
        self.python_module_id = python_module_id
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1

    def append_kernel(self, name, device, duration):
        self.kernels.append((name, device, duration))

    def append_cpu_child(self, child):
        """Append a CPU child of type FunctionEvent (one that starts inside this range)."""
        if not isinstance(child, FunctionEvent):
            raise TypeError(f"expected a FunctionEvent, got {type(child).__name__}")
        if child.device_type != DeviceType.CPU:
            raise ValueError("only CPU events can be CPU children")
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        """Set the immediate CPU parent of type FunctionEvent."""
        if not isinstance(parent, FunctionEvent):
            raise TypeError(f"expected a FunctionEvent, got {type(parent).__name__}")
        self.cpu_parent = parent

    @property
    def self_cpu_memory_usage(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return 0

    @property
    def cpu_time_total(self):
        if self.device_type != DeviceType.CPU:
            return 0
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        return 0

    @property
    def self_device_time_total(self):
        return 0

    @property
    def key(self):
        return self.name

    def to_dict(self):
        """This event as plain data (for sending to another process); children are
        referred to by id."""
        return {"id": self.id, "name": self.name, "thread": self.thread,
                "start_us": self.time_range.start, "end_us": self.time_range.end,
                "overload_name": self.overload_name, "fwd_thread": self.fwd_thread,
                "input_shapes": self.input_shapes, "stack": self.stack, "scope": self.scope,
                "cpu_memory_usage": self.cpu_memory_usage, "is_async": self.is_async,
                "is_remote": self.is_remote, "sequence_nr": self.sequence_nr,
                "node_id": self.node_id, "flops": self.flops,
                "is_user_annotation": self.is_user_annotation,
                "parent": None if self.cpu_parent is None else self.cpu_parent.id}

    @classmethod
    def from_dicts(cls, dicts):
        """Rebuild events (and their parent/child links) from `to_dict` records."""
        events, by_id = [], {}
        for d in dicts:
            d = dict(d)
            parent = d.pop("parent", None)
            e = cls(**d)
            by_id[e.id] = e
            events.append((e, parent))
        for e, parent in events:
            p = by_id.get(parent)
            if p is not None:
                e.set_cpu_parent(p)
                p.append_cpu_child(e)
        return [e for e, _ in events]

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"node_id={self.node_id} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start} end_us={self.time_range.end} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} is_async={self.is_async} "
                f"is_remote={self.is_remote} seq_nr={self.sequence_nr} "
                f"is_legacy={self.is_legacy}>")


class FunctionEventAvg(FormattedTimesMixin):
    """Used to average stats over multiple FunctionEvent objects."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0
        self.device_time_total = 0
        self.self_cpu_time_total = 0
        self.self_device_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    def add(self, other):
        if self.key is None:
            # the first event added fixes the group's identity fields
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise TypeError(f"cannot add {type(other).__name__} to a FunctionEventAvg")
        if other.key != self.key:
            raise ValueError(f"cannot average events with different keys: {self.key!r} and "
                             f"{other.key!r}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events (for pretty-printing and summaries)."""

    def __init__(self, *args, **kwargs):
        use_device = kwargs.pop("use_device", None)
        profile_memory = kwargs.pop("profile_memory", False)
        with_flops = kwargs.pop("with_flops", False)
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = False

    def _build_tree(self):
        """Link children to parents by time containment on each thread (for events
        that were not linked when they were recorded)."""
        by_thread = defaultdict(list)
        for e in self:
            if e.cpu_parent is None and not e.is_async and e.device_type == DeviceType.CPU:
                by_thread[(e.thread, e.node_id)].append(e)
        for evs in by_thread.values():
            evs.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
            open_ = []
            for e in evs:
                while open_ and open_[-1].time_range.end <= e.time_range.start:
                    open_.pop()
                if open_ and e.time_range.end <= open_[-1].time_range.end and \
                        e not in open_[-1].cpu_children:
                    e.set_cpu_parent(open_[-1])
                    open_[-1].append_cpu_child(e)
                open_.append(e)
        self._tree_built = True

    @property
    def self_cpu_time_total(self):
        """Sum of self CPU time over all events."""
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """Print an EventList as a nicely formatted table.

        Args:
            sort_by (str, optional): attribute used to sort entries (``cpu_time``,
                ``cpu_time_total``, ``self_cpu_time_total``, ``cpu_memory_usage``,
                ``self_cpu_memory_usage``, ``count``, ...).
            top_level_events_only (bool, optional): only events without a parent.
            time_unit (str, optional): ``'s'``, ``'ms'`` or ``'us'`` for every time.

        Returns:
            A string containing the table.
        """
        from ._profiler_table import build_table
        return build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width,
                           profile_memory=self._profile_memory,
                           with_flops=self._with_flops,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Export an EventList as a Chrome tracing tools file (chrome://tracing,
        Perfetto)."""
        with open(path, "w") as f:
            json.dump(chrome_trace(self), f)

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write one line per stack, ``frame;frame;... value`` (outermost frame first,
        the flame-graph input format), weighted by ``metric`` in microseconds."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        attr = metric.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        with open(path, "w") as f:
            for e in self:
                if e.stack and len(e.stack) > 0:
                    value = getattr(e, attr)
                    if int(value) > 0:
                        f.write(";".join(reversed(e.stack)) + f" {int(value)}\n")

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """Average all function events over their keys.

        Args:
            group_by_input_shapes: group entries by (event name, input shapes) rather
                than just event name.
            group_by_stack_n: group by the top n stack frames as well.
            group_by_overload_name: group by the overload name as well.

        Returns:
            An EventList containing FunctionEventAvg objects.
        """
        if not self._tree_built:
            self._build_tree()
        stats = defaultdict(FunctionEventAvg)

        def key_of(e):
            k = [str(e.key), str(e.node_id), str(e.device_type), str(e.is_legacy),
                 str(e.is_user_annotation)]
            if group_by_overload_name:
                k.append(str(e.overload_name))
            if group_by_input_shapes:
                k.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                k += list(e.stack or ())[:group_by_stack_n]
            return tuple(k)

        for e in self:
            stats[key_of(e)].add(e)
        avg = EventList(stats.values(), use_device=self._use_device,
                        profile_memory=self._profile_memory, with_flops=self._with_flops)
        for e in avg:
            e.stack = (e.stack or [])[:group_by_stack_n]
            if not group_by_input_shapes:
                e.input_shapes = ""
            if not group_by_overload_name:
                e.overload_name = ""
        return avg

    def total_average(self):
        """Average all events: a FunctionEventAvg keyed ``Total``."""
        total = FunctionEventAvg()
        for e in self:
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
            total.cpu_memory_usage += e.cpu_memory_usage
            total.self_cpu_memory_usage += e.self_cpu_memory_usage
            total.count += e.count
        total.key = "Total"
        return total

    def __str__(self):
        return self.table()


def chrome_trace(events, metadata=None, base_ns=0):
    """The Chrome trace-event JSON object for ``events`` (complete events, ``ph: X``)."""
    pid = os.getpid()
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
            "args": {"name": "python"}},
           {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "ts": 0,
            "args": {"labels": "CPU"}}]
    threads = set()
    for e in events:
        if isinstance(e, FunctionEventAvg):
            raise TypeError("export_chrome_trace needs the events themselves, not their "
                            "key_averages()")
        e_pid = pid if e.node_id in (-1, None) or not e.is_remote else f"node {e.node_id}"
        threads.add((e_pid, e.thread))
        args = {"External id": e.id}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
            args["Fwd thread id"] = e.fwd_thread if e.fwd_thread is not None else 0
        if e.is_remote:
            args["Node id"] = e.node_id
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        out.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation or
                    getattr(e, "_kind", None) == "annotation" else "cpu_op",
                    "name": e.trace_name or e.name, "pid": e_pid, "tid": e.thread,
                    "ts": float(e.time_range.start), "dur": float(e.time_range.elapsed_us()),
                    "args": args})
        for ts, nbytes in getattr(e, "_memory_records", ()):
            out.append({"ph": "i", "cat": "cpu_instant_event", "s": "t",
                        "name": MEMORY_EVENT_NAME, "pid": e_pid, "tid": e.thread,
                        "ts": float(ts), "args": {"Bytes": int(nbytes), "Device Type": 0,
                                                  "Device Id": -1}})
    for p, t in sorted(threads, key=str):
        out.append({"ph": "M", "name": "thread_name", "pid": p, "tid": t, "ts": 0,
                    "args": {"name": f"thread {t}"}})
    trace = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
             "baseTimeNanoseconds": int(base_ns), "traceEvents": out}
    if metadata:
        trace.update(metadata)
    return trace
