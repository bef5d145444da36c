"""Instruction counts under valgrind's callgrind (Timer.collect_callgrind).

The statement runs in a fresh interpreter under ``valgrind --tool=callgrind``
with collection off; a tiny C helper (compiled on first use from valgrind's own
``callgrind.h``) switches collection on just around the statement loop and
dumps one profile per repeat, so only the statement's instructions (plus a
constant loop overhead, measured by the ``pass`` baseline) are counted.
"""
import collections
import dataclasses
import enum
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from . import common

__all__ = ["FunctionCount", "FunctionCounts", "CallgrindStats", "CopyIfCallgrind"]


class FunctionCount(NamedTuple):
    count: int
    function: str


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class FunctionCounts:
    """Container for manipulating Callgrind results: tuple-like indexing,
    ``+``/``-`` to combine or diff, ``*`` to scale, ``denoise``, ``filter``
    and ``transform``."""
    _data: Tuple[FunctionCount, ...]
    inclusive: bool
    truncate_rows: bool = True
    _linewidth: Optional[int] = None  # None: the usual 80 columns

    def __iter__(self):
        yield from self._data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, item):
        # decided by the index, not the result: a FunctionCount is a tuple too
        if isinstance(item, slice):
            return FunctionCounts(self._data[item], self.inclusive, truncate_rows=False)
        return self._data[item]

    def __repr__(self) -> str:
        count_len = max((len(str(c)) + int(c < 0) for c, _ in self), default=0)
        fn_len = max((self._linewidth or 80) - count_len - 4, 40)
        lines = []
        for c, fn in self:
            if len(fn) > fn_len:
                left = (fn_len - 5) // 2
                fn = fn[:left] + " ... " + fn[-(fn_len - left - 5):]
            lines.append(f"  {c:>{count_len}}  {fn}")
        if self.truncate_rows and len(lines) > 18:
            lines = lines[:9] + ["...".rjust(count_len + 2)] + lines[-9:]
        if not self.inclusive:
            lines += ["", f"Total: {self.sum()}"]
        return "\n".join([object.__repr__(self)] + lines)

    def __add__(self, other: "FunctionCounts") -> "FunctionCounts":
        return self._merge(other, lambda c: c)

    def __sub__(self, other: "FunctionCounts") -> "FunctionCounts":
        return self._merge(other, lambda c: -c)

    def __mul__(self, other) -> "FunctionCounts":
        return self._from_dict({fn: int(c * other) for c, fn in self._data}, self.inclusive)

    def transform(self, map_fn: Callable[[str], str]) -> "FunctionCounts":
        """Apply ``map_fn`` to every function name (equal names are summed)."""
        counts: Dict[str, int] = collections.defaultdict(int)
        for c, fn in self._data:
            counts[map_fn(fn)] += c
        return self._from_dict(counts, self.inclusive)

    def filter(self, filter_fn: Callable[[str], bool]) -> "FunctionCounts":
        """Keep only the entries whose function name passes ``filter_fn``."""
        return FunctionCounts(tuple(i for i in self if filter_fn(i.function)), self.inclusive)

    def sum(self) -> int:
        return sum(c for c, _ in self)

    def denoise(self) -> "FunctionCounts":
        """Drop CPython's dict lookups of names, whose counts jitter run to run."""
        return self.filter(lambda fn: "dictobject.c:lookdict_unicode" not in fn)

    def _merge(self, other: "FunctionCounts", sign) -> "FunctionCounts":
        if self.inclusive != other.inclusive:
            raise AssertionError("Cannot merge inclusive and exclusive counts.")
        counts: Dict[str, int] = collections.defaultdict(int)
        for c, fn in self:
            counts[fn] += c
        for c, fn in other:
            counts[fn] += sign(c)
        return self._from_dict(counts, self.inclusive)

    @staticmethod
    def _from_dict(counts: Dict[str, int], inclusive: bool) -> "FunctionCounts":
        data = sorted((FunctionCount(c, fn) for fn, c in counts.items() if c), reverse=True)
        return FunctionCounts(tuple(data), inclusive)


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class CallgrindStats:
    """Callgrind results collected by Timer: ``counts()``, ``stats()``,
    ``delta(other)`` and ``as_standardized()``."""
    task_spec: common.TaskSpec
    number_per_run: int
    built_with_debug_symbols: bool
    baseline_inclusive_stats: FunctionCounts
    baseline_exclusive_stats: FunctionCounts
    stmt_inclusive_stats: FunctionCounts
    stmt_exclusive_stats: FunctionCounts
    stmt_callgrind_out: Optional[str]

    def __repr__(self) -> str:
        base = self.baseline_exclusive_stats
        threads = self.task_spec.num_threads
        return "\n".join([
            object.__repr__(self), self.task_spec.summarize(),
            f"  {'':>25}All{'':>10}Noisy symbols removed",
            f"    Instructions: {self.counts(denoise=False):>12}{'':>15}"
            f"{self.counts(denoise=True):>12}",
            f"    Baseline:     {base.sum():>12}{'':>15}{base.denoise().sum():>12}",
            f"{self.number_per_run} runs per measurement, {threads} "
            f"thread{'s' if threads > 1 else ''}"])

    def stats(self, inclusive: bool = False) -> FunctionCounts:
        """Per-function counts; ``inclusive`` counts include callees (as callgrind)."""
        return self.stmt_inclusive_stats if inclusive else self.stmt_exclusive_stats

    def counts(self, *, denoise: bool = False) -> int:
        """Total number of instructions executed by the ``number`` runs of stmt."""
        stats = self.stmt_exclusive_stats
        return (stats.denoise() if denoise else stats).sum()

    def delta(self, other: "CallgrindStats", inclusive: bool = False) -> FunctionCounts:
        """Per-function difference ``self - other``."""
        return self.stats(inclusive=inclusive) - other.stats(inclusive=inclusive)

    def as_standardized(self) -> "CallgrindStats":
        """Strip build-path prefixes and library names from function names so
        profiles from differently located builds diff cleanly."""
        rules = [(re.compile(r"^.+build/\.\./"), "build/../"),
                 (re.compile(r"^.+/" + re.escape("build/aten/")), "build/aten/"),
                 (re.compile(r"^.+/" + re.escape("Python/")), "Python/"),
                 (re.compile(r"^.+/" + re.escape("Objects/")), "Objects/"),
                 (re.compile(r"^.+/" + re.escape("site-packages/")), "site-packages/"),
                 (re.compile(r"\s\[.+\]$"), "")]

        def strip(stats: FunctionCounts) -> FunctionCounts:
            for pattern, repl in rules:
                stats = stats.transform(lambda fn: pattern.sub(repl, fn))
            return stats

        return CallgrindStats(
            task_spec=self.task_spec, number_per_run=self.number_per_run,
            built_with_debug_symbols=self.built_with_debug_symbols,
            baseline_inclusive_stats=strip(self.baseline_inclusive_stats),
            baseline_exclusive_stats=strip(self.baseline_exclusive_stats),
            stmt_inclusive_stats=strip(self.stmt_inclusive_stats),
            stmt_exclusive_stats=strip(self.stmt_exclusive_stats),
            stmt_callgrind_out=None)  # renamed symbols no longer match the raw file


class Serialization(enum.Enum):
    PICKLE = 0
    EMBER = 1


def _allowed_types():
    from ...nn.modules.module import Module
    return {Serialization.PICKLE: (str, bytes, bool, int, float, complex),
            Serialization.EMBER: (Module,)}


class CopyIfCallgrind:
    """Marks a global that may be replaced by a deserialized copy in the
    callgrind subprocess (builtins by pickle, Modules by ember.save)."""

    def __init__(self, value: Any, *, setup: Optional[str] = None) -> None:
        for method, types in _allowed_types().items():
            if isinstance(value, types):
                self._value, self._setup, self._serialization = value, setup, method
                break
        else:
            names = "\n".join(t.__name__ for ts in _allowed_types().values() for t in ts)
            raise ValueError(f"Unsupported type: {type(value)}\n`collect_callgrind` restricts "
                             f"globals to the following types:\n{textwrap.indent(names, '  ')}")

    @property
    def value(self) -> Any:
        return self._value

    @property
    def setup(self) -> Optional[str]:
        return self._setup

    @property
    def serialization(self) -> Serialization:
        return self._serialization

    @staticmethod
    def unwrap_all(globals: Dict[str, Any]) -> Dict[str, Any]:
        return {k: (v.value if isinstance(v, CopyIfCallgrind) else v) for k, v in globals.items()}


def _globals_loader(globals: Dict[str, Any], data_dir: str) -> str:
    """Write the wrapped globals to ``data_dir``; return the code that loads them."""
    from ...serialization import save
    ember = common.ember_namespace()
    lines = []
    for name, value in globals.items():
        if name in ("ember", "torch") :
            if value is not ember:
                raise ValueError(f"`collect_callgrind` does not support mocking out `{name}`.")
            continue
        if name == "__builtins__":
            continue
        if not isinstance(value, CopyIfCallgrind):
            raise ValueError("`collect_callgrind` requires that globals be wrapped in "
                             "`CopyIfCallgrind` so that serialization is explicit.")
        if value.setup is not None:
            lines.append(textwrap.dedent(value.setup))
        path = os.path.join(data_dir, name)
        if value.serialization == Serialization.PICKLE:
            with open(path, "wb") as f:
                pickle.dump(value.value, f)
            lines.append(f"with open({path!r}, 'rb') as _f:\n    {name} = pickle.load(_f)")
        else:
            save(value.value, path)
            lines.append(f"{name} = ember.load({path!r}, weights_only=False)")
    return "\n".join(lines)


_HELPER_C = """
#include <valgrind/callgrind.h>
int ember_cg_running(void) { return RUNNING_ON_VALGRIND; }
void ember_cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void ember_cg_toggle_and_dump(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS; }
"""


def check_available() -> None:
    """Raise a RuntimeError naming what collect_callgrind is missing."""
    missing = [c for c in ("valgrind", "callgrind_annotate") if shutil.which(c) is None]
    if missing:
        raise RuntimeError(
            f"Timer.collect_callgrind needs valgrind, but {', '.join(missing)} was not found "
            "on PATH. Install valgrind (for example `apt-get install valgrind`) to count "
            "instructions; wall-clock timing (blocked_autorange) works without it.")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        raise RuntimeError("Timer.collect_callgrind needs a C compiler (`cc`) to build its "
                           "small callgrind control helper; none was found on PATH.")


def _build_helper(workdir: str) -> str:
    src, lib = os.path.join(workdir, "cg_helper.c"), os.path.join(workdir, "cg_helper.so")
    with open(src, "w") as f:
        f.write(_HELPER_C)
    cc = shutil.which("cc") or shutil.which("gcc")
    proc = subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", lib, src],
                          capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError("Timer.collect_callgrind could not build its callgrind helper "
                           "(is valgrind's callgrind.h installed?):\n" + proc.stderr)
    return lib


def _unrolled(stmt: str, number: int, indent: int = 0) -> str:
    """``number`` copies of stmt, as a loop over blocks of 100 unrolled copies:
    a Python loop per statement would add many interpreter instructions."""
    block = 100
    loops = number // block
    loops = 0 if loops == 1 else loops
    rest = number - block * loops
    code = ""
    if loops:
        code += f"for _ in range({loops}):\n{textwrap.indent(chr(10).join([stmt] * block), '    ')}\n"
    if rest:
        code += "\n".join([stmt] * rest)
    return textwrap.indent(code or "pass", " " * indent)


_SCRIPT = """\
import sys
sys.path[:] = {sys_path!r}
import ctypes, gc, os, pickle, traceback

def _fail(msg):
    with open({error_log!r}, "w") as _f:
        _f.write(msg)
    sys.exit(1)

_cg = ctypes.CDLL({helper!r})
if not _cg.ember_cg_running():
    _fail("The callgrind script is not running under valgrind.")
try:
{import_ember}
{load_globals}
{setup}
    from threadpoolctl import threadpool_limits
    threadpool_limits({num_threads})
    for _ in range({warmup}):
{stmt}
except BaseException:
    _fail("stmt or setup failed:\\n" + traceback.format_exc())

gc.collect()
# pass 0 is unmeasured: it lets the interpreter specialize the unrolled code,
# which otherwise makes the first measured repeat ~1% dearer than the rest
for _rep in range({repeats} + 1):
    if _rep:
        _cg.ember_cg_toggle()
{blocked_stmt}
    if _rep:
        _cg.ember_cg_toggle_and_dump()
    gc.collect()
{baseline}
"""


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS")


def _uses_ember(task_spec: common.TaskSpec, globals: Dict[str, Any]) -> bool:
    code = "\n".join([task_spec.stmt, task_spec.setup] + [
        v.setup or "" for v in globals.values() if isinstance(v, CopyIfCallgrind)])
    return bool(re.search(r"\b(ember|torch)\b", code)) or any(
        isinstance(v, CopyIfCallgrind) and v.serialization == Serialization.EMBER
        for v in globals.values())


def collect(task_spec: common.TaskSpec, globals: Dict[str, Any], *, number: int,
            repeats: int, collect_baseline: bool, retain_out_file: bool):
    """Run ``task_spec`` under callgrind; one CallgrindStats per repeat."""
    check_available()
    workdir = tempfile.mkdtemp(prefix="ember_callgrind_")
    try:
        data_dir = os.path.join(workdir, "data")
        os.mkdir(data_dir)
        error_log = os.path.join(workdir, "error.txt")
        out = os.path.join(workdir, "callgrind.out")
        baseline = ("for _rep in range(2):\n    if _rep:\n        _cg.ember_cg_toggle()\n"
                    + _unrolled("pass", number, indent=4)
                    + "\n    if _rep:\n        _cg.ember_cg_toggle_and_dump()"
                    ) if collect_baseline else ""
        script = _SCRIPT.format(
            sys_path=[p for p in sys.path], error_log=error_log, helper=_build_helper(workdir),
            num_threads=task_spec.num_threads, import_ember=(
                # importing ember under valgrind takes tens of seconds: only when used
                "    import ember\n    torch = ember" if _uses_ember(task_spec, globals)
                else ""),
            load_globals=textwrap.indent(_globals_loader(globals, data_dir), "    "),
            setup=textwrap.indent(task_spec.setup or "pass", "    "),
            warmup=min(number, 10), stmt=textwrap.indent(task_spec.stmt, "        "),
            repeats=repeats, blocked_stmt=_unrolled(task_spec.stmt, number, indent=4),
            baseline=baseline)
        script_path = os.path.join(workdir, "timer_callgrind.py")
        with open(script_path, "w") as f:
            f.write(script)
        log = os.path.join(workdir, "valgrind.log")
        # thread pools of libraries loaded later (BLAS, OpenMP) start at num_threads
        env = dict(os.environ, **{v: str(task_spec.num_threads) for v in _THREAD_VARS})
        # string hashes (hence dict probe counts) are randomized per process:
        # a fixed seed makes repeated collections count the same instructions
        env.setdefault("PYTHONHASHSEED", "0")
        with open(log, "wb") as f:
            proc = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                 "--dump-line=yes", "--dump-instr=yes", "--instr-atstart=yes",
                 "--collect-atstart=no", sys.executable, script_path],
                stdout=f, stderr=subprocess.STDOUT, cwd=workdir, env=env)
        if proc.returncode:
            report = ""
            if os.path.exists(error_log):
                with open(error_log) as f:
                    report = f.read()
            if not report:
                with open(log, errors="replace") as f:
                    report = "Unknown error.\n" + f.read()[-4000:]
            raise RuntimeError(f"Failed to collect callgrind profile of stmt:\n"
                               f"{textwrap.indent(task_spec.stmt, '  ')}\n{report}")

        def read(i):
            if i == repeats and not collect_baseline:
                return FunctionCounts((), inclusive=True), FunctionCounts((), inclusive=False), None
            path = f"{out}.{i + 1}"  # callgrind numbers dumps from 1
            raw = None
            if retain_out_file:
                with open(path) as f:
                    raw = f.read()
            return _annotate(path, True, workdir), _annotate(path, False, workdir), raw

        *per_repeat, (base_inc, base_exc, _) = [read(i) for i in range(repeats + 1)]
        return tuple(CallgrindStats(
            task_spec=task_spec, number_per_run=number, built_with_debug_symbols=True,
            baseline_inclusive_stats=base_inc, baseline_exclusive_stats=base_exc,
            stmt_inclusive_stats=inc, stmt_exclusive_stats=exc, stmt_callgrind_out=raw)
            for inc, exc, raw in per_repeat)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


_TOTAL = re.compile(r"^([0-9,]+)\s+PROGRAM TOTALS")
_HEADER = re.compile(r"Ir\s+file:function")
_ENTRY = re.compile(r"^\s*([0-9,]+)\s+(.+:.+)$")


def _annotate(path: str, inclusive: bool, workdir: str) -> FunctionCounts:
    """Per-function counts of one callgrind dump, read through callgrind_annotate."""
    text = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
         "--threshold=100", "--show-percs=no", path],
        capture_output=True, text=True, check=True, cwd=workdir).stdout
    total, in_table, counts = None, False, []
    for line in text.splitlines():
        if total is None:
            m = _TOTAL.match(line)
            if m:
                total = int(m.group(1).replace(",", ""))
        elif not in_table:
            in_table = bool(_HEADER.match(line))
        else:
            m = _ENTRY.match(line)
            if m:
                ir = int(m.group(1).replace(",", ""))
                # callgrind adds top-level entries equal to the whole program's total
                if ir != total:
                    counts.append(FunctionCount(ir, m.group(2)))
            elif not re.match(r"-+", line):
                break
    if not in_table:
        raise RuntimeError(f"Failed to parse callgrind_annotate output for {path}")
    return FunctionCounts(tuple(sorted(counts, reverse=True)), inclusive=inclusive)
