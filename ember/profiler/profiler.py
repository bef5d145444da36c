"""``torch.profiler.profile``: the autograd profiler driven by a step schedule.

Each ``step()`` asks the schedule what to do with the next step (skip, warm up,
record, record and hand the trace to ``on_trace_ready``); the transitions
between those actions start and stop recording as torch's profiler does, and
every step is wrapped in a ``ProfilerStep#N`` range when a schedule is given.
"""
import enum
import gzip
import json
import os
import socket
import time
import warnings

from ..autograd import profiler as _prof
from ..autograd.profiler import ProfilerActivity, record_function
from ..autograd.profiler_util import chrome_trace

__all__ = ["profile", "schedule", "ProfilerAction", "tensorboard_trace_handler",
           "supported_activities", "_KinetoProfile"]


class ProfilerAction(enum.Enum):
    """Profiler actions that can be taken at the specified intervals."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities():
    """Returns a set of supported profiler tracing activities (CPU, and CUDA when a CUDA
    backend is registered)."""
    from .. import cuda
    acts = {ProfilerActivity.CPU}
    if cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """Returns a callable that can be used as profiler ``schedule`` argument. The profiler
    will skip the first ``skip_first`` steps, then wait for ``wait`` steps, then do the
    warmup for the next ``warmup`` steps, then do the active recording for the next
    ``active`` steps and then repeat the cycle starting with ``wait`` steps. The optional
    number of cycles is specified with the ``repeat`` parameter, the zero value means that
    the cycles will continue until the profiling is finished.

    ``skip_first_wait`` non-zero skips the first ``wait`` phase (the first cycle starts
    warming up right after ``skip_first``).
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        pos = step - skip_first + (wait if skip_first_wait else 0)
        if repeat > 0 and pos >= repeat * cycle:
            return ProfilerAction.NONE
        phase = pos % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False,
                              use_python_export=False):
    """Outputs tracing files to directory of ``dir_name``, which can then be handed to
    TensorBoard's profiler plugin as logdir.  Files are named
    ``{worker_name}.{time in ns}.pt.trace.json[.gz]``; ``worker_name`` defaults to
    ``{hostname}_{pid}``."""

    def handler_fn(prof):
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


def _check_activities(activities):
    if activities is None:
        return {ProfilerActivity.CPU}
    acts = set()
    for a in activities:
        if isinstance(a, dict):  # {activity: [filters]}
            acts.update(a)
        else:
            acts.add(a)
    for a in acts:
        if not isinstance(a, ProfilerActivity):
            raise TypeError(f"activities must be ProfilerActivity values, got {a!r}")
    missing = acts - supported_activities()
    if ProfilerActivity.CUDA in missing:  # torch's words, which programs' logs carry
        warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=3)
        missing.discard(ProfilerActivity.CUDA)
    if missing:
        warnings.warn(f"Profiler activities {sorted(a.name for a in missing)} are not "
                      f"available in ember on this machine and will be ignored: only "
                      f"{sorted(a.name for a in supported_activities())} are recorded",
                      stacklevel=3)
    return acts


class _KinetoProfile:
    """Low-level profiler: ``start``/``stop`` recording; the events and their exports."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.activities = _check_activities(activities)
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.profiler = None
        self.preset_metadata = {}
        self.metadata = {}
        self._recording = False

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        if self.profiler is None or not self.acc_events:
            self.profiler = _prof.profile(
                use_cpu=ProfilerActivity.CPU in self.activities,
                record_shapes=self.record_shapes, with_flops=self.with_flops,
                profile_memory=self.profile_memory, with_stack=self.with_stack,
                with_modules=self.with_modules, acc_events=self.acc_events,
                custom_trace_id_callback=self.custom_trace_id_callback)
        self.profiler._prepare_trace()

    def start_trace(self):
        if self.execution_trace_observer:
            self.execution_trace_observer.start()
        self.profiler._start_trace()
        self._recording = True

    def stop_trace(self):
        if self.execution_trace_observer:
            self.execution_trace_observer.stop()
        if self.profiler is not None and self._recording:
            self._recording = False
            self.profiler.__exit__(None, None, None)

    def _events_or_raise(self):
        if self.profiler is None or self.profiler.function_events is None:
            raise AssertionError("the profiler has no finished trace yet (call stop() or "
                                 "leave the profile context first)")
        return self.profiler.function_events

    def export_chrome_trace(self, path):
        """Exports the collected trace in Chrome JSON format (``.gz`` paths are gzipped)."""
        trace = chrome_trace(self._events_or_raise(), base_ns=self.profiler._base_ns)
        trace.update({"traceName": path, "profile_memory": int(self.profile_memory),
                      "record_shapes": int(self.record_shapes),
                      "host_name": socket.gethostname()})
        if self.profiler.trace_id:
            trace["trace_id"] = self.profiler.trace_id
        trace.update(self.preset_metadata)
        trace.update(self.metadata)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt") as f:
            json.dump(trace, f)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Save stack traces to a file (``frame;frame;... value`` lines, for flame
        graphs); needs ``with_stack=True``."""
        self._events_or_raise()
        return self.profiler.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """Averages events, grouping them by operator name and (optionally) input shapes,
        stack and overload name."""
        self._events_or_raise()
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def events(self):
        """Returns the list of unaggregated profiler events."""
        return self._events_or_raise()

    def add_metadata(self, key, value):
        """Adds a user defined metadata with a string key and a string value into the
        trace file."""
        self.metadata[key] = value

    def add_metadata_json(self, key, value):
        """Adds a user defined metadata with a string key and a valid json value into the
        trace file."""
        self.metadata[key] = json.loads(value)

    def preset_metadata_json(self, key, value):
        """Preset a user defined metadata when the profiler is not started and added into
        the trace file later."""
        self.preset_metadata[key] = json.loads(value)

    def toggle_collection_dynamic(self, enable, activities):
        """Toggle collection of activities on/off at any point of collection."""
        if self.profiler is not None:
            self.profiler.toggle_collection_dynamic(enable, activities)

    def get_trace_id(self):
        """Returns the current trace ID."""
        return None if self.profiler is None else self.profiler.trace_id

    def set_custom_trace_id_callback(self, callback):
        """Sets a callback to be called when a new trace ID is generated."""
        self.custom_trace_id_callback = callback


class profile(_KinetoProfile):
    """Profiler context manager.

    Args:
        activities (iterable): activity groups to use in profiling (``ProfilerActivity.CPU``;
            device activities need that device's backend).
        schedule (Callable): takes step (int) as a single parameter and returns
            ``ProfilerAction`` value that specifies the profiler action to perform at each
            step.
        on_trace_ready (Callable): callable invoked at the end of each profiling cycle
            (e.g. ``tensorboard_trace_handler(dir_name)``).
        record_shapes (bool): save information about operator's input shapes.
        profile_memory (bool): track tensor memory allocation/deallocation.
        with_stack (bool): record source information (file and line number) for the ops.
        with_flops (bool): estimate the FLOPs of matrix products.
        with_modules (bool): accepted for compatibility.
        acc_events (bool): accumulate events across multiple profiling cycles.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None,
                 execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            activities = set(activities or ()) | ({ProfilerActivity.CPU, ProfilerActivity.CUDA}
                                                  if use_cuda else {ProfilerActivity.CPU})
        super().__init__(activities=activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events, custom_trace_id_callback=custom_trace_id_callback)
        self.post_processing_timeout_s = post_processing_timeout_s
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = self._checked(self.schedule(self.step_num))
        A = ProfilerAction
        prep, start, stop, ready = (self.prepare_trace, self.start_trace, self.stop_trace,
                                    self._trace_ready)

        def warn(msg):
            return lambda: warnings.warn(msg, stacklevel=4)
        # (previous action, next action) -> what to do; None is the exit of the profile
        self.action_map = {
            (A.NONE, A.NONE): [], (A.NONE, A.WARMUP): [prep],
            (A.NONE, A.RECORD): [prep, start], (A.NONE, A.RECORD_AND_SAVE): [prep, start],
            (A.WARMUP, A.NONE): [warn("Incorrect schedule: WARMUP followed by NONE"),
                                 start, stop],
            (A.WARMUP, A.WARMUP): [], (A.WARMUP, A.RECORD): [start],
            (A.WARMUP, A.RECORD_AND_SAVE): [start],
            (A.RECORD, A.NONE): [warn("Incorrect schedule: RECORD followed by NONE"), stop],
            (A.RECORD, A.WARMUP): [warn("Incorrect schedule: RECORD followed by WARMUP"),
                                   stop],
            (A.RECORD, A.RECORD): [], (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [stop, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [stop, ready, prep],
            (A.RECORD_AND_SAVE, A.RECORD): [stop, ready, prep, start],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [stop, ready, prep, start],
            (A.WARMUP, None): [start, stop], (A.RECORD, None): [stop, ready],
            (A.RECORD_AND_SAVE, None): [stop, ready],
        }

    @staticmethod
    def _checked(action):
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler "
                             "and must not be returned by a user-provided schedule")
        return action

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self):
        self._close_step()
        self._transit_action(self.current_action, None)

    def step(self):
        """Signals the profiler that the next profiling step has started."""
        self._close_step()
        prev = self.current_action
        action = self._checked(self.schedule(self.step_num + 1))
        self.step_num += 1
        self.current_action = action
        self._transit_action(prev, action)
        self._open_step()

    def _open_step(self):
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _close_step(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action), ()):
            action()
