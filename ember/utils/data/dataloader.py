"""DataLoader: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` each worker is a real process with its own index queue;
results come back on one queue and are yielded in sampler order (or as they arrive
with ``in_order=False``).  A worker's exception is re-raised in the main process with
the worker's traceback, as torch does: the failed batch is skipped and the iterator
stays usable, so a program may catch the error and go on iterating (or start a new
iterator).  A worker that dies (killed, segfault) raises a RuntimeError instead of
hanging, and ``timeout`` bounds the wait for any batch.

Workers are shut down on every exit path: exhaustion, ``break`` (the iterator is
dropped), an exception in the main process, garbage collection of the iterator, and
interpreter exit (a ``weakref.finalize``, which also runs at exit, stops the workers of
iterators still alive, and workers do not wait to flush results nobody reads), so an
uncaught exception never leaves the process hanging at exit.
"""
import itertools
import multiprocessing
import os
import queue
import time
import warnings
import weakref
from typing import Generic

from . import _worker
from ._collate import default_collate, default_convert
from .dataset import IterableDataset, T_co
from .fetch import create_fetcher
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _draw_seed

__all__ = ["DataLoader", "get_worker_info"]

get_worker_info = _worker.get_worker_info
_POLL = 1.0  # seconds between liveness checks while waiting for a batch
_JOIN_TIMEOUT = 5.0  # seconds a worker gets to exit before it is terminated


def _shutdown_workers(owner_pid, workers, index_queues, result_queue, done_event):
    """Stop ``workers`` and close the queues.  Run by a ``weakref.finalize`` of the
    iterator: it holds the queues strongly, so when the iterator dies in a reference
    cycle the queues' own finalizers (which stop their feeder threads) cannot run
    first and swallow the stop messages; ``finalize`` also runs it at interpreter exit."""
    if os.getpid() != owner_pid:
        return  # a forked copy of the registry: the workers belong to the parent
    try:
        done_event.set()  # workers skip the indices still queued
        for iq in index_queues:
            try:
                iq.put(None)
            except (OSError, ValueError, RuntimeError):  # closed, or at interpreter exit
                pass
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for w in workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
        for w in workers:
            if w.is_alive():
                w.terminate()
                w.join(timeout=1.0)
            if w.is_alive():
                w.kill()
                w.join(timeout=1.0)
    finally:
        for q in index_queues + [result_queue]:
            q.cancel_join_thread()
            q.close()


class _DatasetKind:
    """How a DataLoader reads its dataset: by index (map-style) or by iterating it."""
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        return create_fetcher(kind, dataset, auto_collation, collate_fn, None, drop_last)


def _cpu_count():
    """The logical CPUs this process may run on (its affinity set where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0))
        except Exception:  # noqa: BLE001 - fall back to the machine's count
            pass
    return os.cpu_count()


class DataLoader(Generic[T_co]):
    """Combines a dataset and a sampler, and provides an iterable over the dataset
    (``torch.utils.data.DataLoader``)."""

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        """A start-method name ("fork", "spawn", "forkserver") or a multiprocessing context
        for the workers; only with ``num_workers > 0``."""
        if multiprocessing_context is not None:
            if self.num_workers <= 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process "
                                 f"loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(multiprocessing_context, str):
                valid = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid:
                    raise ValueError(f"multiprocessing_context option should specify a valid "
                                     f"start method in {valid!r}, but got "
                                     f"multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context "
                                f"object or a string specifying the start method, but got "
                                f"multiprocessing_context={multiprocessing_context}")
        self._multiprocessing_context = multiprocessing_context

    def check_worker_number_rationality(self):
        """Warns when this loader would start more worker processes than the CPUs it may
        use (torch's check, run when the workers start)."""
        if not self.num_workers:
            return
        suggest = _cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        cpuset = "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
        advice = (f"Our suggested max number of worker in current system is {suggest}{cpuset}, "
                  f"which is smaller than what this DataLoader is going to create."
                  if suggest is not None else
                  "DataLoader is not able to compute a suggested max number of worker in "
                  "current system.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {advice} Please be aware that excessive worker creation might get "
                      f"DataLoader running slow or even freeze, lower the worker number to "
                      f"avoid potential slowness/freeze if necessary.", stacklevel=2)

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            self._dataset_kind = _DatasetKind.Map
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            _warn_pin_memory(self)
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                _warn_pin_memory(self)
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        _warn_pin_memory(self)
        return _MultiProcessIter(self)

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


def _warn_pin_memory(loader):
    # as each new torch iterator does: pinning needs an accelerator, and the device is the
    # current accelerator whatever pin_memory_device says
    from ...accelerator import is_available
    if loader.pin_memory and loader.pin_memory_device:
        warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as "
                      f"the device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                      stacklevel=3)
    if loader.pin_memory and not is_available():
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                      "device pinned memory won't be used.", stacklevel=2)


class _InfiniteConstantSampler:
    def __iter__(self):
        while True:
            yield None


def _base_seed(loader):
    # torch draws it for every new iterator, single-process too, so the global stream
    # advances the same whether or not workers are used
    return _draw_seed(loader.generator)


class _BaseDataLoaderIter:
    """The base of a DataLoader's iterators (torch's name: libraries annotate or test with it,
    torch_geometric's loaders among them)."""


class _SingleProcessIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        self.loader = loader
        self.sampler_iter = iter(loader._index_sampler)
        self._base_seed = _base_seed(loader)
        self.fetcher = create_fetcher(loader._dataset_kind, loader.dataset,
                                      loader._auto_collation, loader.collate_fn,
                                      loader.batch_size, loader.drop_last)
        self.yielded = 0

    def __iter__(self):
        return self

    def __next__(self):
        indices = next(self.sampler_iter)
        data = self.fetcher.fetch(indices)
        self.yielded += 1
        return data

    def __len__(self):
        return len(self.loader)


class _MultiProcessIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        loader.check_worker_number_rationality()
        self.loader = loader
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context("fork")
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self.num_workers = loader.num_workers
        self.prefetch = loader.prefetch_factor * loader.num_workers
        self.timeout = loader.timeout
        self.shutdown = False
        self.result_queue = ctx.Queue()
        self.done_event = ctx.Event()
        self.index_queues = []
        self.workers = []
        # filled as workers start: a half-built iterator still stops the ones it started
        self._finalizer = weakref.finalize(self, _shutdown_workers, os.getpid(), self.workers,
                                           self.index_queues, self.result_queue,
                                           self.done_event)
        # torch's order: the sampler iterator is made before the seed is drawn, and again
        # when the first epoch starts (a sampler whose __iter__ draws eagerly sees both)
        iter(loader._index_sampler)
        seed = self._base_seed = _base_seed(loader)
        try:
            for wid in range(self.num_workers):
                iq = ctx.Queue()
                iq.cancel_join_thread()  # never block exit on indices a dead worker won't read
                self.index_queues.append(iq)
                w = ctx.Process(
                    target=_worker.worker_loop,
                    args=(loader._dataset_kind, loader.dataset, iq, self.result_queue,
                          loader.collate_fn, loader._auto_collation, loader.batch_size,
                          loader.drop_last, seed + wid, loader.worker_init_fn, wid,
                          self.num_workers, os.getpid(), self.done_event),
                    daemon=True)
                w.start()
                self.workers.append(w)
            self._start_epoch(first=True)
        except BaseException:
            self._shutdown()
            raise

    def _start_epoch(self, first=False):
        self.sampler_iter = iter(self.loader._index_sampler)
        self.send_idx = 0
        self.rcvd_idx = 0
        self.task_info = {}       # idx -> worker id (removed once yielded)
        self.reorder = {}
        self.worker_active = [True] * self.num_workers
        self.worker_cycle = itertools.cycle(range(self.num_workers))
        if not first:
            for iq in self.index_queues:
                iq.put(_worker.ResumeIteration())
        for _ in range(self.prefetch):
            self._try_put_index()

    def _reset(self, loader):
        self.loader = loader
        self._start_epoch()

    def _try_put_index(self):
        try:
            indices = next(self.sampler_iter)
        except StopIteration:
            return
        for _ in range(self.num_workers):
            wid = next(self.worker_cycle)
            if self.worker_active[wid]:
                break
        else:
            return
        self.index_queues[wid].put((self.send_idx, indices))
        self.task_info[self.send_idx] = wid
        self.send_idx += 1

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def _get_result(self):
        start = time.monotonic()
        while True:
            try:
                return self.result_queue.get(timeout=_POLL if not self.timeout else
                                             min(_POLL, self.timeout))
            except queue.Empty:
                dead = [w for w in self.workers if not w.is_alive()]
                if dead:
                    self._shutdown()
                    pids = ", ".join(str(w.pid) for w in dead)
                    codes = ", ".join(str(w.exitcode) for w in dead)
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly "
                                       f"(exit code {codes})") from None
                if self.timeout and time.monotonic() - start > self.timeout:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds") \
                        from None

    def __next__(self):
        while True:
            while self.rcvd_idx < self.send_idx and self.rcvd_idx not in self.task_info:
                self.rcvd_idx += 1  # skipped (exhausted iterable worker)
            if self.rcvd_idx >= self.send_idx:
                if not self.loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            if self.rcvd_idx in self.reorder:
                data = self.reorder.pop(self.rcvd_idx)
                del self.task_info[self.rcvd_idx]
                self.rcvd_idx += 1
                self._try_put_index()
                return self._process(data)
            idx, data = self._get_result()
            if isinstance(data, _worker.IterableStop):
                self.worker_active[data.worker_id] = False
                del self.task_info[idx]
                continue
            if idx == self.rcvd_idx:
                del self.task_info[idx]
                self.rcvd_idx += 1
                self._try_put_index()
                return self._process(data)
            if not self.loader.in_order:
                del self.task_info[idx]  # a hole that the skip loop above steps over
                self._try_put_index()
                return self._process(data)
            self.reorder[idx] = data

    def _process(self, data):
        # torch's semantics: the failed batch is consumed (its index was advanced past),
        # the workers keep running, and the next call goes on with the next batch
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown(self):
        self.shutdown = True
        self._finalizer()  # runs once, whichever exit path comes first


# torch's names of the two iterators
_SingleProcessDataLoaderIter = _SingleProcessIter
_MultiProcessingDataLoaderIter = _MultiProcessIter
