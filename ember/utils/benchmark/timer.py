"""Timer: timeit-style measurement with warm-up, replicates and a fixed thread count."""
import enum
import itertools
import linecache
import textwrap
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from . import common

__all__ = ["Timer", "timer", "Language"]

timer = time.perf_counter

_counter = itertools.count()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _indent(code: str, n: int) -> str:
    return textwrap.indent(code, " " * n)


class _StmtRunner:
    """Compiles ``setup`` + a loop of ``stmt`` into one function (as timeit does),
    registering the generated source with linecache so tracebacks show the
    statement's own lines."""

    def __init__(self, stmt: str, setup: str, timer_fn: Callable[[], float],
                 globals: Dict[str, Any]) -> None:
        for what, code in (("stmt", stmt), ("setup", setup)):
            compile(code, f"<timer {what}>", "exec")  # SyntaxError names the culprit early
        src = (f"def inner(_it, _timer):\n{_indent(setup or 'pass', 4)}\n"
               f"    _t0 = _timer()\n    for _i in _it:\n{_indent(stmt or 'pass', 8)}\n"
               f"    return _timer() - _t0\n")
        filename = f"<ember-timer-{next(_counter)}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        ns: Dict[str, Any] = {}
        exec(compile(src, filename, "exec"), globals, ns)
        self._inner = ns["inner"]
        self._timer = timer_fn

    def timeit(self, number: int) -> float:
        return self._inner(itertools.repeat(None, number), self._timer)


class Timer:
    """Helper class for measuring execution time of ember statements.

    Like ``timeit.Timer``, but it warms up, runs with a fixed thread-pool size
    (``num_threads``, default 1, restored afterwards), collects replicates and
    returns a :class:`Measurement`. ``label``, ``sub_label``, ``description``
    and ``env`` describe the measurement for :class:`Compare`.
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: Optional[Dict[str, Any]] = None,
                 label: Optional[str] = None, sub_label: Optional[str] = None,
                 description: Optional[str] = None, env: Optional[str] = None,
                 num_threads: int = 1, language=Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("ember's Timer measures Python statements only.")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most "
                             "likely this code can simply be moved to `setup`.")
        from .valgrind import CopyIfCallgrind
        ember = common.ember_namespace()
        # a copy: exec adds __builtins__, and the caller's dict must not change
        self._globals = dict(globals or {})
        # like torch's Timer, the framework is importable in stmt without globals;
        # 'torch' names ember too, so torch-written statements run unchanged
        self._globals.setdefault("ember", ember)
        self._globals.setdefault("torch", ember)
        self._language = Language.PYTHON

        stmt, setup = (self._tidy(s) for s in (stmt, setup))
        self._runner = _StmtRunner(stmt, setup, timer, CopyIfCallgrind.unwrap_all(self._globals))
        self._task_spec = common.TaskSpec(
            stmt=stmt, setup=setup, global_setup=global_setup, label=label,
            sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    @staticmethod
    def _tidy(code: str) -> str:
        # snippets written as indented block strings inside functions must not
        # IndentationError, and reprs read better without the leading newline
        code = textwrap.dedent(code)
        return (code[1:] if code[:1] == "\n" else code).rstrip()

    def _timeit(self, number: int) -> float:
        try:
            t = self._runner.timeit(number)
        except Exception as e:
            spec = self._task_spec
            note = f"while running Timer stmt:\n{_indent(spec.stmt, 2)}"
            if spec.setup and spec.setup != "pass":
                note += f"\nwith setup:\n{_indent(spec.setup, 2)}"
            if hasattr(e, "add_note"):
                e.add_note(note)
                raise
            raise RuntimeError(f"{type(e).__name__}: {e}\n{note}") from e
        # no real statement takes under a nanosecond; this also avoids dividing by 0
        return max(t, 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Execute ``stmt`` ``number`` times (after a short warm-up) and return
        one Measurement, like ``timeit.Timer.timeit``."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))  # warm-up
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> common.Measurement:
        """``repeat`` blocks of ``number`` runs each (defaults: 5 blocks, ``number`` chosen
        as by ``autorange``), as one Measurement with one raw time per block.

        Beyond PyTorch: torch's Timer raises NotImplementedError here; ember follows
        ``timeit.Timer.repeat`` but returns a Measurement (its ``raw_times`` are the
        per-block totals timeit would return)."""
        repeat = 5 if repeat == -1 else repeat
        if repeat < 1:
            raise ValueError(f"repeat must be positive, got {repeat}")
        with common.set_torch_threads(self._task_spec.num_threads):
            if number == -1:
                number = self._autorange_number(None)
            else:
                self._timeit(max(number // 100, 2))  # warm-up
            times = [self._timeit(number) for _ in range(repeat)]
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def autorange(self, callback=None) -> common.Measurement:
        """Run ``stmt`` 1, 2, 5, 10, 20, ... times until one block takes at least 0.2 s and
        return that block as a Measurement; ``callback(number, time_taken)`` sees each try.

        Beyond PyTorch: torch's Timer raises NotImplementedError here; ember follows
        ``timeit.Timer.autorange``."""
        with common.set_torch_threads(self._task_spec.num_threads):
            number, t = self._autorange_block(callback)
        return common.Measurement(number_per_run=number, raw_times=[t],
                                  task_spec=self._task_spec)

    def _autorange_block(self, callback):
        i = 1
        while True:
            for j in (1, 2, 5):
                number = i * j
                t = self._timeit(number)
                if callback:
                    callback(number, t)
                if t >= 0.2:
                    return number, t
            i *= 10

    def _autorange_number(self, callback):
        return self._autorange_block(callback)[0]

    def _measurement_loop(self, number: int, stop_hook: Callable[[List[float]], bool],
                          min_run_time: float, max_run_time: Optional[float] = None,
                          callback=None) -> List[float]:
        total, can_stop, times = 0.0, False, []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                dt = self._timeit(number)
                times.append(dt)
                total += dt
                if callback:
                    callback(number, dt)
                can_stop = stop_hook(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Grow the block size by 10x until the timer's own overhead is <= 0.01%
        of a block and a block takes >= min_run_time/1000 (doubles as warm-up)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = float(np.median([self._timeit(0) for _ in range(5)]))
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> common.Measurement:
        """Measure blocks of ``stmt`` until ``min_run_time`` seconds are spent.

        The block size is chosen by a warm-up so that timer overhead is
        negligible; each block gives one replicate of the Measurement.
        """
        number = self._estimate_block_size(min_run_time)
        times = self._measurement_loop(number, lambda times: True, min_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> common.Measurement:
        """Like blocked_autorange, but keeps measuring until iqr/median is below
        ``threshold`` (with more than 3 blocks and ``min_run_time`` spent) or
        ``max_run_time`` is reached."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times: List[float]) -> bool:
            return len(times) > 3 and common.Measurement(
                number_per_run=number, raw_times=times,
                task_spec=self._task_spec).meets_confidence(threshold=threshold)

        times = self._measurement_loop(number, stop_hook, min_run_time, max_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def collect_callgrind(self, number: int = 100, *, repeats: Optional[int] = None,
                          collect_baseline: bool = True, retain_out_file: bool = False):
        """Count the instructions ``stmt`` executes, under valgrind's callgrind.

        Instruction counts are deterministic up to small interpreter jitter, so
        they compare well on noisy machines. The statement runs in a fresh
        Python subprocess (same interpreter and sys.path); globals must be
        wrapped in :class:`CopyIfCallgrind`. Returns a :class:`CallgrindStats`,
        or a tuple of ``repeats`` of them.
        """
        from . import valgrind
        if repeats is not None and repeats < 1:
            raise ValueError("If specified, `repeats` must be >= 1")
        valgrind.check_available()
        # a faulty stmt fails here, quicker and clearer than inside valgrind
        self._timeit(1)
        result = valgrind.collect(self._task_spec, self._globals, number=number,
                                  repeats=repeats or 1, collect_baseline=collect_baseline,
                                  retain_out_file=retain_out_file)
        return result[0] if repeats is None else result
