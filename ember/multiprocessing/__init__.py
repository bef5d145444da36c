"""``ember.multiprocessing``: Python's multiprocessing plus tensor sharing (torch.multiprocessing).

Everything of the standard ``multiprocessing`` module is here (``Process``, ``Queue``,
``SimpleQueue``, ``Pool``, ``get_context``, ``set_start_method``, ...).  Importing this module
registers reducers so that tensors sent to other processes (Process arguments, queues,
pipes) travel through shared memory: the receiver sees, and makes, the same in-place updates
(``Tensor.share_memory_``, ``Module.share_memory``; hogwild training).  ``spawn`` and
``start_processes`` run a function in new processes, each started as its own ``mpiexec -n 1``
so the children can join one ember.distributed world; see `ember.multiprocessing.spawn`.
"""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403 - torch.multiprocessing re-exports it all

from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,
                    ProcessRaisedException, spawn, start_processes)

__all__ = list(_mp.__all__) + [
    "spawn", "start_processes", "ProcessContext", "ProcessException",
    "ProcessRaisedException", "ProcessExitedException", "set_sharing_strategy",
    "get_sharing_strategy", "get_all_sharing_strategies", "init_reductions"]

_STRATEGIES = {"file_system", "file_descriptor"}
_strategy = ["file_system"]


def get_all_sharing_strategies():
    """The sharing strategies: ember stores shared tensors as named files in /dev/shm
    ("file_system"); "file_descriptor" is accepted and behaves the same."""
    return set(_STRATEGIES)


def set_sharing_strategy(new_strategy):
    """Sets the strategy for sharing CPU tensors (one of `get_all_sharing_strategies`)."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"invalid sharing strategy {new_strategy!r}; expected one of "
                         f"{sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors."""
    return _strategy[0]


init_reductions()
