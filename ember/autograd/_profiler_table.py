"""The text table of profiler events, laid out as torch's ``EventList.table`` lays it out.

Columns are right-aligned, 12 characters wide (the name column fits the longest
name, at most ``max_name_column_width``), separated by two spaces, between dashed
rules; percentages are shares of the summed self CPU time.
"""
import math

from .profiler_util import _format_memory, _format_time, _format_time_share

__all__ = ["build_table"]

_WIDTH = 12
_SPACING = 2
_FLOP_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _time(us, default, unit):
    if unit == "s":
        return f"{us / 1e6:.3f}s"
    if unit == "ms":
        return f"{us / 1e3:.3f}ms"
    if unit == "us":
        return f"{us:.3f}us"
    return default


def _trim_path(path, width):
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


class _Layout:
    def __init__(self):
        self.fmt = ""
        self.sep = ""
        self.length = -_SPACING

    def add(self, width, align=">"):
        self.fmt += "{: " + align + str(width) + "}" + " " * _SPACING
        self.sep += "-" * width + " " * _SPACING
        self.length += width + _SPACING


def build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                profile_memory=False, top_level_events_only=False, time_unit=None):
    """The summary table of ``events`` (FunctionEvents or FunctionEventAvgs) as a string."""
    if len(events) == 0:
        return ""
    has_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    has_overload = any(e.overload_name is not None and len(e.overload_name) > 0 for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)

    name_w = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_w = min(shapes_w, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack is not None and len(e.stack) > 0]
    src_w = None
    if stacks:
        src_w = max(len(f) for s in stacks for f in s) + 4
        if max_src_column_width is not None:
            src_w = min(src_w, max_src_column_width)

    headers = ["Name"] + (["Overload Name"] if has_overload else []) + [
        "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    with_node_id = any(e.node_id != -1 for e in events)
    if with_node_id:
        headers.append("Node ID")

    lay = _Layout()
    lay.add(name_w)
    if has_overload:
        lay.add(name_w)
    for _ in headers[1 + has_overload:]:
        lay.add(_WIDTH)
    if has_shapes:
        headers.append("Input Shapes")
        lay.add(shapes_w)
    if stacks:
        headers.append("Source Location")
        lay.add(src_w, "<")
    flops_scale = None
    if with_flops:
        raw = [e.flops for e in events if e.flops and e.flops > 0]
        if raw:
            lg = max(0, min(math.log10(min(raw)) / 3, float(len(_FLOP_UNITS) - 1)))
            flops_scale = 10 ** (math.floor(lg) * -3.0)
            headers.append(f"Total {_FLOP_UNITS[int(lg)]}")
            lay.add(_WIDTH)

    total_self = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * lay.length, header]
    if top_level_events_only:
        lines += ["=" * lay.length, "This report only display top-level ops statistics"]
    lines += [lay.sep, lay.fmt.format(*headers), lay.sep]

    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        e.self_cpu_percent = _format_time_share(e.self_cpu_time_total, total_self)
        e.total_cpu_percent = 0 if e.is_async else _format_time_share(e.cpu_time_total,
                                                                      total_self)
        row = [name]
        if has_overload:
            ov = e.overload_name or ""
            if max_name_column_width is not None and len(ov) >= max_name_column_width - 3:
                ov = ov[:max_name_column_width - 3] + "..."
            row.append(ov)
        row += [e.self_cpu_percent,
                _time(e.self_cpu_time_total, e.self_cpu_time_total_str, time_unit),
                e.total_cpu_percent,
                _time(e.cpu_time_total, e.cpu_time_total_str, time_unit),
                _time(e.cpu_time, e.cpu_time_str, time_unit)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if with_node_id:
            row.append(e.node_id)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if flops_scale is not None:
            row.append("--" if not e.flops or e.flops <= 0 else f"{e.flops * flops_scale:8.3f}")
        if stacks:
            row.append(_trim_path(e.stack[0], src_w) if e.stack else "")
        lines.append(lay.fmt.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for frame in (e.stack or [])[1:]:
                lines.append(lay.fmt.format(*(blank + [_trim_path(frame, src_w)])))
            lines.append(lay.fmt.format(*(blank + [""])))
    lines.append(lay.sep)
    lines.append("Self CPU time total: "
                 + _time(total_self, _format_time(total_self), time_unit))
    return "".join(line + "\n" for line in lines)
