"""``ember.futures``: the `Future` type of asynchronous results (``torch.futures``).

Collectives with ``async_op=True`` hand one out through ``Work.get_future()``; DDP
communication hooks return one; RPC uses them for remote results.  A Future is
thread-safe: one thread may complete it while others wait on it.

A producer whose result only appears once something drives it (an MPI request that
must be waited on, for instance) passes that driver as ``_waiter``: `wait` calls it
when the Future is not yet done, so nothing hangs waiting on progress that nobody makes.
"""
import threading
from typing import Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

_PENDING = object()
T = TypeVar("T")


class Future(Generic[T]):
    """Wrapper around an asynchronous execution: a value that is set once, later.

    Args:
        devices: accepted for torch compatibility; ember's CPU futures ignore it.
    """

    def __init__(self, *, devices=None, _waiter=None):
        self._cond = threading.Condition(threading.Lock())
        self._result = _PENDING
        self._exception = None
        self._callbacks = []
        self._waiter = _waiter
        self._devices = list(devices) if devices else []

    # ---- inspection --------------------------------------------------------------
    def done(self):
        """Returns True if this Future is completed (with a value or an exception)."""
        with self._cond:
            return self._result is not _PENDING or self._exception is not None

    def wait(self):
        """Blocks until the value of this Future is ready and returns it.

        Raises the exception the Future was completed with, if any."""
        if not self.done() and self._waiter is not None:
            waiter, self._waiter = self._waiter, None
            waiter()
        with self._cond:
            while self._result is _PENDING and self._exception is None:
                self._cond.wait()
            if self._exception is not None:
                raise self._exception
            return self._result

    def value(self):
        """Obtains the value of an already-completed Future (raising its exception, if any).

        Call it only after `wait` returned or inside a callback given to `then`."""
        with self._cond:
            if self._exception is not None:
                raise self._exception
            if self._result is _PENDING:
                raise RuntimeError("Future.value() called on a Future that is not completed yet; "
                                   "call wait() first")
            return self._result

    # ---- completion --------------------------------------------------------------
    def _complete(self, result, exception):
        with self._cond:
            if self._result is not _PENDING or self._exception is not None:
                raise RuntimeError("Future can only be marked completed once.")
            if exception is not None:
                self._exception = exception
            else:
                self._result = result
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def set_result(self, result):
        """Sets the result of this Future, marking it completed and running its callbacks.

        A Future can only be completed once."""
        self._complete(result, None)

    def set_exception(self, result):
        """Completes this Future with an exception; `wait` and `value` will raise it."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    # ---- chaining ----------------------------------------------------------------
    def add_done_callback(self, callback):
        """Runs ``callback(fut)`` once this Future completes (inline if it already has).

        Unlike `then`, no new Future is made; exceptions in ``callback`` are not captured."""
        with self._cond:
            if self._result is _PENDING and self._exception is None:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback):
        """Returns a new Future holding ``callback(self)``, run once this Future completes.

        An exception raised by ``callback`` (or held by this Future and re-raised by
        ``value()`` inside it) completes the returned Future with that exception."""
        child = Future(_waiter=self.wait if self._waiter is not None else None)

        def run(fut):
            try:
                out = callback(fut)
            except BaseException as e:  # noqa: BLE001 - the child Future carries it
                child.set_exception(e)
            else:
                child.set_result(out)

        self.add_done_callback(run)
        return child

    def __repr__(self):
        if self._exception is not None:
            return f"Future(exception={self._exception!r})"
        if self._result is _PENDING:
            return "Future(pending)"
        return f"Future(value={self._result!r})"


def collect_all(futures):
    """Collects the given Futures into one that completes when all of them have,
    with the list of those Futures as its value."""
    futures = list(futures)
    out = Future(_waiter=lambda: [_wait_quietly(f) for f in futures])
    if not futures:
        out.set_result([])
        return out
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.set_result(futures)

    for f in futures:
        f.add_done_callback(one_done)
    return out


def _wait_quietly(fut):
    try:
        fut.wait()
    except BaseException:  # noqa: BLE001 - collect_all reports per-Future results
        pass


def wait_all(futures):
    """Waits for all the given Futures and returns the list of their values,
    raising the first exception met."""
    return [f.wait() for f in collect_all(futures).wait()]
