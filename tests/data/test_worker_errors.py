"""DataLoader after a worker error, as torch 2.13 behaves: the error is re-raised in the main
process with the worker's traceback (the type rebuilt as torch rebuilds it), the failed
batch is skipped and iteration can go on, or a new iterator can be made; workers are shut
down on every exit path, interpreter exit included."""
import gc
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch.utils.data as tdata

import ember.utils.data as edata

LIBS = {"torch": tdata, "ember": edata}


class FailsAt:
    """Plain map-style dataset (usable by both libraries): sample i is [i]; ``bad`` raise."""

    def __init__(self, n, bad, exc=ValueError):
        self.n, self.bad, self.exc = n, set(bad), exc

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.bad:
            raise self.exc(f"bad sample {i}")
        return np.array([i, os.getpid()])


class TwoArgError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


class MessageError(Exception):
    message = "x"

    def __init__(self, message):
        super().__init__(message)


class RaisesCustom:
    def __init__(self, exc):
        self.exc = exc

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            raise self.exc
        return np.array([i])


def _next_error(it):
    """``next(it)``'s exception as (type, text), holding no traceback: a kept traceback
    would keep the iterator (and its workers) alive in a reference cycle."""
    try:
        next(it)
    except Exception as e:  # noqa: BLE001 - returned for comparison
        return type(e), str(e)
    raise AssertionError("next() did not raise")


def _outcomes(it, limit=50):
    """Drive ``it`` to the end, catching worker errors: a list of batches (as lists of
    sample ids) and ('error', type name, 'bad sample k' seen) entries."""
    out = []
    for _ in range(limit):
        try:
            b = next(it)
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001 - recorded for comparison
            msg = str(e)
            out.append(("error", type(e).__name__,
                        [w for w in msg.split() if w.isdigit()][-1:] if "bad sample" in msg
                        else None))
            continue
        out.append(np.asarray(b)[:, 0].tolist())
    raise AssertionError("iterator did not end")


@pytest.mark.parametrize("num_workers", [0, 2])
def test_iteration_goes_on_after_a_worker_error_like_torch(num_workers):
    got = {}
    for name, lib in LIBS.items():
        dl = lib.DataLoader(FailsAt(12, {5, 9}), batch_size=2, num_workers=num_workers)
        got[name] = _outcomes(iter(dl))
    assert got["ember"] == got["torch"]
    assert got["ember"] == [[0, 1], [2, 3], ("error", "ValueError", ["5"]), [6, 7],
                            ("error", "ValueError", ["9"]), [10, 11]]


def test_a_new_iterator_after_an_error_starts_over_like_torch():
    for name, lib in LIBS.items():
        dl = lib.DataLoader(FailsAt(6, {2}), batch_size=2, num_workers=2)
        it = iter(dl)
        assert np.asarray(next(it))[:, 0].tolist() == [0, 1]
        typ, text = _next_error(it)
        assert typ is ValueError and "bad sample 2" in text
        if name == "torch":
            # abandoned in a reference cycle, torch's iterator takes 10 s to stop its workers
            assert [np.asarray(b)[:, 0].tolist() for b in it] == [[4, 5]]
        del it
        assert _outcomes(iter(dl)) == [[0, 1], ("error", "ValueError", ["2"]), [4, 5]], name


def test_persistent_workers_survive_an_error_into_the_next_epoch():
    got = {}
    for name, lib in LIBS.items():
        dl = lib.DataLoader(FailsAt(6, {3}), batch_size=2, num_workers=2,
                            persistent_workers=True)
        got[name] = [_outcomes(iter(dl)) for _ in range(2)]
    assert got["ember"] == got["torch"] == [[[0, 1], ("error", "ValueError", ["3"]), [4, 5]]] * 2


def test_worker_error_message_carries_the_worker_traceback():
    dl = edata.DataLoader(FailsAt(4, {1}), batch_size=1, num_workers=1)
    it = iter(dl)
    next(it)
    typ, msg = _next_error(it)
    assert typ is ValueError
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\n"
                          "Original Traceback (most recent call last):")
    assert "in __getitem__" in msg and "ValueError: bad sample 1" in msg
    assert np.asarray(next(it))[0, 0] == 2  # and the iterator goes on


@pytest.mark.parametrize("exc", [KeyError("missing key"), TwoArgError(1, 2),
                                 MessageError("with message"), IndexError("i")])
def test_exception_types_are_rebuilt_as_torch_rebuilds_them(exc):
    seen = {}
    for name, lib in LIBS.items():
        dl = lib.DataLoader(RaisesCustom(exc), batch_size=1, num_workers=1)
        it = iter(dl)
        next(it)
        typ, text = _next_error(it)
        seen[name] = (typ, text.startswith(f"Caught {type(exc).__name__} in DataLoader "
                                           f"worker process 0."), len(text) > 200)
        assert [np.asarray(b).tolist() for b in it] == [[[2]], [[3]]]  # ends: workers stop
    assert seen["ember"] == seen["torch"]


def test_in_order_false_yields_every_batch_and_the_error():
    dl = edata.DataLoader(FailsAt(10, {4}), batch_size=2, num_workers=2, in_order=False)
    out = _outcomes(iter(dl))
    assert ("error", "ValueError", ["4"]) in out
    assert sorted(x for b in out if isinstance(b, list) for x in b) == [0, 1, 2, 3, 6, 7, 8, 9]


# ---- workers shut down on every exit path ---------------------------------------------

def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # an unreaped zombie has exited


def _wait_gone(pids, seconds=15):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def _worker_pids(it):
    return [w.pid for w in it.workers]


def test_break_out_of_the_loop_stops_the_workers():
    dl = edata.DataLoader(FailsAt(1000, set()), batch_size=4, num_workers=2)
    pids = None
    for i, _ in enumerate(it := iter(dl)):
        pids = _worker_pids(it)
        if i == 1:
            break
    del it
    assert pids and _wait_gone(pids)


def test_exception_in_the_main_process_then_dropping_the_iterator_stops_the_workers():
    dl = edata.DataLoader(FailsAt(1000, set()), batch_size=4, num_workers=2)

    def consume():
        it = iter(dl)
        consume.pids = _worker_pids(it)
        for _ in it:
            raise ArithmeticError("main process failed")
    with pytest.raises(ArithmeticError):
        consume()
    assert _wait_gone(consume.pids)


def test_garbage_collected_iterator_stops_its_workers():
    dl = edata.DataLoader(FailsAt(1000, set()), batch_size=4, num_workers=2)
    it = iter(dl)
    next(it)
    pids = _worker_pids(it)
    it.cycle = it  # a reference cycle: only the cyclic collector frees it
    del it
    gc.collect()
    assert _wait_gone(pids)


_EXIT_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import ember.utils.data as edata

    class Big:
        def __len__(self):
            return 100000
        def __getitem__(self, i):
            return np.full(100000, i, dtype=np.float32)  # batches fill the result pipe

    it = iter(edata.DataLoader(Big(), batch_size=16, num_workers=2))
    next(it)
    print(" ".join(str(w.pid) for w in it.workers), flush=True)
    import time
    print(time.time(), flush=True)
    raise ValueError("uncaught in the main process")
""")


@pytest.mark.slow
def test_uncaught_exception_with_running_workers_exits_promptly():
    p = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT], capture_output=True, text=True,
                       timeout=60)
    exited = time.time()
    assert p.returncode == 1 and "ValueError: uncaught in the main process" in p.stderr
    pid_line, raised_at = p.stdout.split("\n")[:2]
    pids = [int(x) for x in pid_line.split()]
    assert len(pids) == 2 and _wait_gone(pids)
    # from the raise to the end of the process: no waiting on workers or their pipes
    assert exited - float(raised_at) < 4.0
