"""Compare: a grouped text table of many Measurements."""
import collections
import enum
from typing import List, Optional

import numpy as np

from . import common

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(x: float) -> int:
    return int(np.ceil(common.log10_f32(x)))


class _Column:
    """Number formatting shared by every cell of one description column."""

    def __init__(self, grouped, time_scale, trim, highlight):
        self.grouped = grouped  # per thread-section, the column's cells (None = empty)
        flat = [m for g in grouped for m in g if m is not None]
        self._scale = time_scale
        self._trim = trim
        self._highlight = highlight and any(m.has_warnings for m in flat)
        digits = [_leading_digits(m.median / time_scale) for m in flat]
        unit_digits = max(digits)
        decimals = (min(max(m.significant_figures - d, 0) for d, m in zip(digits, flat))
                    if trim else 1)
        width = unit_digits + decimals + (1 if decimals else 0)
        self._fmt = f"{{:>{width}.{decimals}f}}{{:>{7 if self._highlight else 0}}}"

    def cell(self, m: Optional[common.Measurement]) -> str:
        if m is None:
            return " " * len(self._num(1, 1, None))
        spread = m.iqr / m.median if m.has_warnings else None
        return self._num(m.median / self._scale, m.significant_figures, spread)

    def _num(self, value, sigfigs, spread):
        if self._trim:
            value = common.trim_sigfig(value, sigfigs)
        flag = f" (! {spread * 100:.0f}%)" if self._highlight and spread is not None else ""
        return self._fmt.format(value, flag)


def _color(segment: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE * 2
    return segment


def _env_name(env) -> str:
    return "Unspecified env" if env is None else env


class _Table:
    """One label's table: rows (num_threads, env, row name), columns by description."""

    def __init__(self, results, colorize, trim, highlight):
        if len({r.label for r in results}) != 1:
            raise AssertionError("All results must share the same label")
        self.results, self.colorize, self.highlight = results, colorize, highlight
        self.label = results[0].label
        self.unit, self.scale = common.select_unit(min(r.median for r in results))

        def row_key(m):
            return m.num_threads, m.env, m.as_row_name

        # stable sort on (threads, env) keeps statement order inside a section
        self.row_keys = sorted(common.ordered_unique(row_key(m) for m in results),
                               key=lambda k: (k[0], k[1] is not None, k[1] or ""))
        self.col_keys = common.ordered_unique(m.description for m in results)
        rpos = {k: i for i, k in enumerate(self.row_keys)}
        cpos = {k: j for j, k in enumerate(self.col_keys)}
        self.cells = [[None] * len(self.col_keys) for _ in self.row_keys]
        for m in results:
            self.cells[rpos[row_key(m)]][cpos[m.description]] = m

        # thread sections: a row group starts wherever num_threads changes
        self.sections, self.row_section = [], []
        prior = None
        for (threads, _, _), row in zip(self.row_keys, self.cells):
            if threads != prior:
                self.sections.append([])
                prior = threads
            self.sections[-1].append(row)
            self.row_section.append(len(self.sections) - 1)
        self.columns = [_Column([tuple(r[j] for r in sec) for sec in self.sections],
                                self.scale, trim, highlight)
                        for j in range(len(self.col_keys))]

    def _row_strings(self):
        envs = {_env_name(m.env) for m in self.results}
        render_env = len(envs) > 1
        env_len = max(len(e) for e in envs) if render_env else 0
        out, prior_threads, prior_env = [], None, ""
        for (threads, env, name), row in zip(self.row_keys, self.cells):
            if threads != prior_threads:
                prior_threads, prior_env = threads, ""
            show_env = render_env and env != prior_env
            prefix = (f"({_env_name(env)})" if show_env else "").ljust(env_len + 4)
            out.append(["  " + prefix + name] + [c.cell(m) for c, m in zip(self.columns, row)])
            prior_env = env
        return out

    def _best(self, i, row):
        if self.colorize == Colorize.ROWWISE:
            best = min(m.median for m in row if m is not None)
            return [best] * len(row)
        if self.colorize == Colorize.COLUMNWISE:
            sec = self.row_section[i]
            return [min((m.median for m in col.grouped[sec] if m is not None), default=None)
                    for col in self.columns]
        return [None] * len(row)

    def render(self) -> str:
        header = [""] + [str(k) if k is not None else "" for k in self.col_keys]
        body = self._row_strings()
        ncols = max(len(r) for r in [header] + body)
        rows = [r + [""] * (ncols - len(r)) for r in [header] + body]
        widths = [max(len(c) for c in col) for col in zip(*rows)]
        lines = ["  |  ".join(c.center(w) for c, w in zip(rows[0], widths))]
        width = len(lines[0])
        for i, (strings, (threads, _, _), row) in enumerate(zip(rows[1:], self.row_keys,
                                                                self.cells)):
            if i == 0 or self.row_keys[i - 1][0] != threads:
                lines.append(f"{threads} threads: ".ljust(width, "-"))
            parts = [strings[0].ljust(widths[0])]
            for s, w, m, best in zip(strings[1:], widths[1:], row, self._best(i, row)):
                s = s.center(w)
                if self.colorize != Colorize.NONE and m is not None and best is not None:
                    s = _color(s, m.median, best)
                parts.append(s)
            lines.append("  |  ".join(parts))
        warned = self.highlight and any(m.has_warnings for m in self.results)
        title = f" {self.label or ''} ".center(width - 2, "-")
        note = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
                if warned else "")
        return (f"[{title}]\n" + "\n".join(lines) + "\n\n"
                f"Times are in {common.unit_to_english(self.unit)}s ({self.unit}).\n" + note)


class Compare:
    """Helper class for displaying the results of many measurements in a
    formatted table.

    Tables are grouped by ``label``; rows are ``sub_label`` (or ``stmt``) in
    sections by ``num_threads`` (and ``env``); columns are ``description``.
    Replicates of the same task are merged. Print with :meth:`print` or ``str``.
    """

    def __init__(self, results: List[common.Measurement]) -> None:
        self._results: List[common.Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results) -> None:
        """Append results to already stored ones (all must be Measurements)."""
        results = list(results)
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Enables trimming of significant figures when building the formatted table."""
        self._trim_significant_figures = True

    def colorize(self, rowwise=False) -> None:
        """Colorize formatted table (columnwise by default)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Enables warning highlighting when building formatted table."""
        self._highlight_warnings = True

    def print(self) -> None:
        """Print formatted table"""
        print(str(self))

    def _render(self):
        by_label = collections.defaultdict(list)
        for m in common.Measurement.merge(self._results):
            by_label[m.label].append(m)
        return [_Table(group, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for group in by_label.values()]
