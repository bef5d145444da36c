"""ember.profiler (``torch.profiler``): operator-level CPU profiling.

Every operator call under a running `profile` is an event with its timings
(named as torch names it, ``aten::mm``), its input shapes (``record_shapes``),
the memory it allocates and frees (``profile_memory``) and its Python source
location (``with_stack``); backward nodes and ``record_function`` ranges nest the
calls made inside them.  ``key_averages().table()`` prints torch's summary
table, ``export_chrome_trace`` writes a trace chrome://tracing and Perfetto load,
and ``schedule`` with ``step()`` records chosen steps of a training loop.
"""
from ..autograd.profiler import ProfilerActivity, kineto_available, record_function
from ..autograd.profiler_util import DeviceType
from ._execution_trace import ExecutionTraceObserver
from .profiler import (ProfilerAction, _KinetoProfile, profile, schedule,  # noqa: F401
                       supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "kineto_available", "DeviceType",
           "record_function", "ExecutionTraceObserver"]
