"""TaskSpec and Measurement: what was timed, and the statistics of its times."""
import collections
import contextlib
import dataclasses
import sys
import textwrap
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # below this a timer cannot resolve anything
# iqr / median thresholds for flagging a noisy measurement
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """Container for information used to define a Timer (except globals)."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: Optional[str] = None
    sub_label: Optional[str] = None
    description: Optional[str] = None
    env: Optional[str] = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """Best effort attempt at a string label for the measurement."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        paren = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{paren}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The TaskSpec part of the repr of Measurement and CallgrindStats."""
        sections = [s for s in (self.title, self.description or "", self.setup_str()) if s]
        return "\n".join(s + "\n" if "\n" in s else s for s in sections)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def _f32(x):
    # torch computes these display helpers on default-dtype (float32) tensors;
    # doing the same keeps unit and digit choices identical at the boundaries.
    return np.float32(x)


def log10_f32(x) -> float:
    """log10 of float32(x), correctly rounded to float32 (NumPy's float32 log10
    can be an ulp off, which moves exact powers of ten across unit boundaries)."""
    return float(np.float32(np.log10(np.float64(np.float32(x)))))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The result of a Timer measurement.

    Stores one or more replicate times of a statement (``raw_times``, each the
    time of ``number_per_run`` executions) and derives robust statistics.
    """
    number_per_run: int
    raw_times: List[float]
    task_spec: TaskSpec
    metadata: Optional[Dict[Any, Any]] = None  # reserved for user payloads

    def __post_init__(self) -> None:
        self._sorted_times: tuple = ()
        self._warnings: tuple = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        # TaskSpec fields read through (m.label, m.num_threads, ...)
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> List[float]:
        """Per-execution times: each raw time divided by ``number_per_run``."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """Rough number of trustworthy significant figures of the median.

        Uses the interquartile points only (robust to tails) and z = 1.645 for a
        90% confidence interval; clamped to [1, 4].
        """
        self._lazy_init()
        n = len(self._sorted_times)
        lo, hi = n // 4, int(np.ceil(_f32(3 * n / 4)))
        inner = np.asarray(self._sorted_times[lo:hi], dtype=np.float32)
        std = float(inner.std()) if inner.size else float("nan")
        sqrt_n = float(np.sqrt(_f32(inner.size)))
        ci = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        figures = int(np.floor(log10_f32(self._median / ci)))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        arr = np.asarray(self._sorted_times, dtype=np.float64)
        self._median = float(np.quantile(arr, 0.5))
        self._mean = float(arr.mean())
        self._p25 = float(np.quantile(arr, 0.25))
        self._p75 = float(np.quantile(arr, 0.75))

        def warn(msg: str) -> None:
            rel_iqr = self.iqr / self.median * 100
            self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                               f"of the median measurement.\n           {msg}",)

        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            warn("This suggests significant environmental influence.")
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            warn("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """True when iqr / median is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> Optional[str]:
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._p25 / scale:.2f} to {self._p75 / scale:.2f})")
        threads = self.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} "
                     f"{threads} thread{'s' if threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable["Measurement"]) -> List["Measurement"]:
        """Merge replicates of the same TaskSpec into one Measurement each.

        Times are extrapolated to ``number_per_run=1``; metadata is dropped
        (it may differ between replicates).
        """
        groups: Dict[TaskSpec, List[float]] = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec, metadata=None)
                for spec, times in groups.items()]


def select_unit(t: float):
    """(unit, scale) that shows ``t`` seconds as an O(1) number."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(log10_f32(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """Trim ``x`` to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(np.ceil(log10_f32(abs(x))))
    scale = 10 ** (magnitude - n)
    return float(np.round(_f32(x / scale)) * _f32(scale))


def ordered_unique(elements: Iterable[Any]) -> List[Any]:
    return list(dict.fromkeys(elements))


def ember_namespace():
    """The ``ember`` package, which timed statements see as ``ember`` and ``torch``.  Looked
    up rather than imported: this package is a layer below ``ember/__init__.py``, which has
    always finished loading by the time a Timer is made."""
    return sys.modules[__name__.split(".", 1)[0]]


@contextlib.contextmanager
def set_torch_threads(n: int):
    """Limit NumPy/BLAS/OpenMP (and ember's own, when it has one) thread pools to
    ``n`` inside the block, restoring the previous sizes afterwards."""
    from threadpoolctl import threadpool_limits
    from ..._core.threads import get_num_threads, set_num_threads
    prior = get_num_threads()
    limits = threadpool_limits(limits=n)
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(prior)
        limits.restore_original_limits()
