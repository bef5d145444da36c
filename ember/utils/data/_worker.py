"""The DataLoader worker process: fetch batches for the indices the main process sends.

Runs in a child process.  Exceptions travel back as `ExceptionWrapper` (with the
worker's formatted traceback); the loop exits when it receives ``None`` or when
its parent process disappears.
"""
import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

__all__ = ["get_worker_info", "WorkerInfo", "ExceptionWrapper"]

_worker_info = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """Information about the current DataLoader worker process: ``id`` (0 to
    ``num_workers - 1``), ``num_workers``, the ``seed`` set for this worker, ``dataset``
    (this worker's copy of the dataset object), ``rng`` (an optional RNG state container,
    None) and ``worker_method`` ("multiprocessing")."""
    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    """Inside a DataLoader worker: its WorkerInfo (id, num_workers, seed, dataset); in the
    main process: None."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)  # KeyError would repr() the message
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)  # types whose first argument is not the text
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - exception types with unusual constructors
            raise RuntimeError(msg) from None
        try:
            raise exc
        finally:
            # a local naming the exception would tie it to its own traceback, and that
            # cycle would keep the DataLoader iterator (and its workers) alive until gc
            del exc


class KeyErrorMessage(str):
    def __repr__(self):
        return self


class IterableStop:
    """Sent by a worker whose IterableDataset iterator is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch."""


def worker_loop(dataset_kind, dataset, index_queue, data_queue, collate_fn, auto_collation,
                batch_size, drop_last, seed, init_fn, worker_id, num_workers, parent_pid,
                done_event=None):
    from .fetch import create_fetcher
    try:
        _serve(dataset_kind, dataset, index_queue, data_queue, collate_fn, auto_collation,
               batch_size, drop_last, seed, init_fn, worker_id, num_workers, parent_pid,
               done_event, create_fetcher)
    except KeyboardInterrupt:
        pass  # the main process gets it too, and shuts the workers down
    finally:
        # results nobody reads any more must not keep this process from exiting
        data_queue.cancel_join_thread()
        data_queue.close()


def _serve(dataset_kind, dataset, index_queue, data_queue, collate_fn, auto_collation,
           batch_size, drop_last, seed, init_fn, worker_id, num_workers, parent_pid,
           done_event, create_fetcher):
    global _worker_info
    random.seed(seed)
    from ..._core.random import manual_seed
    manual_seed(seed)
    # torch seeds NumPy's global stream with SeedSequence's 4-word state hashed from
    # (worker_id, base seed low/high words), so NumPy draws in a dataset match torch's too
    base = seed - worker_id
    np.random.seed(np.random.SeedSequence([worker_id, base & 0xFFFFFFFF, base >> 32, 0])
                   .generate_state(4))
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    init_error = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = create_fetcher(dataset_kind, dataset, auto_collation, collate_fn,
                                 batch_size, drop_last)
    except Exception:  # noqa: BLE001 - reported for the first batch request
        init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
    exhausted = False
    while True:
        try:
            r = index_queue.get(timeout=5.0)
        except queue.Empty:
            if os.getppid() != parent_pid or (done_event is not None and done_event.is_set()):
                return  # the main process died or is shutting down: do not linger
            continue
        if r is None or (done_event is not None and done_event.is_set()):
            return
        if isinstance(r, ResumeIteration):
            fetcher = create_fetcher(dataset_kind, dataset, auto_collation, collate_fn,
                                     batch_size, drop_last)
            exhausted = False
            continue
        idx, indices = r
        if init_error is not None:
            data_queue.put((idx, init_error))
            init_error = None
            continue
        if exhausted:
            data_queue.put((idx, IterableStop(worker_id)))
            continue
        try:
            data = fetcher.fetch(indices)
        except StopIteration:
            exhausted = True
            data = IterableStop(worker_id)
        except Exception:  # noqa: BLE001 - carried to the main process
            data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        data_queue.put((idx, data))
        del data
