"""ember.profiler / ember.autograd.profiler against torch's: recorded op names, nesting,
self vs total time, memory, shapes, Chrome traces, schedules and their action sequences."""
import json
import os
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.profiler as eprof
from ember._core.state import STATE
from ember.autograd import profiler as eaprof
from ember.autograd.profiler_util import FunctionEvent

A = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
B = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
W = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)


def inputs(lib):
    """Inputs made before profiling (torch would record the copies of tensor())."""
    return (lib.tensor(A), lib.tensor(B), lib.tensor(W),
            lib.tensor(A).requires_grad_(), lib.tensor(B).requires_grad_())


def program(lib, t):
    a, b, w = t[:3]
    c = lib.add(a, b)
    d = c * b
    e = lib.relu(d)
    f = lib.exp(e)
    g = lib.matmul(f, w)
    g.add_(1.0)
    return g.sum()


def run(lib, fn, **kw):
    t = inputs(lib)
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kw) as p:
        fn(lib, t)
    return p


def top_level(prof):
    return [e.name for e in prof.events() if e.cpu_parent is None]


def tree(evts):
    """(name, children) for the top-level events, recursively."""
    return [(e.name, tree(e.cpu_children)) for e in evts]


def test_op_names_match_torch():
    pe, pt = run(ember, program), run(torch, program)
    assert top_level(pe) == top_level(pt) == [
        "aten::add", "aten::mul", "aten::relu", "aten::exp", "aten::matmul", "aten::add_",
        "aten::sum"]


def test_record_function_nesting_and_self_time():
    def fn(lib, t):
        a, b = t[:2]
        with lib.profiler.record_function("outer"):
            c = a + b
            with lib.profiler.record_function("inner"):
                d = lib.relu(c)
                lib.exp(d)
            c * d

    pe, pt = run(ember, fn), run(torch, fn)
    te = tree([e for e in pe.events() if e.cpu_parent is None])
    tt = tree([e for e in pt.events() if e.cpu_parent is None])
    want = [("outer", [("aten::add", []), ("inner", [("aten::relu", []), ("aten::exp", [])]),
                       ("aten::mul", [])])]
    assert te == want
    # torch also lists the kernels its ops call (aten::clamp_min under relu): compare the tree
    # down to the level ember records
    assert [(n, [c for c, _ in ch]) for n, ch in tt] == [(n, [c for c, _ in ch]) for n, ch in te]
    outer = [e for e in pe.events() if e.name == "outer"][0]
    kids = sum(c.cpu_time_total for c in outer.cpu_children)
    assert outer.cpu_time_total >= kids > 0
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - kids)
    for e in pe.events():
        assert e.time_range.start <= e.time_range.end
        if e.cpu_parent is not None:
            assert e.cpu_parent.time_range.start <= e.time_range.start
            assert e.time_range.end <= e.cpu_parent.time_range.end
    assert pe.events().self_cpu_time_total == pytest.approx(
        sum(e.self_cpu_time_total for e in pe.events()))
    total = sum(e.cpu_time_total for e in pe.events() if e.cpu_parent is None)
    assert pe.events().self_cpu_time_total == pytest.approx(total)


def test_record_function_as_decorator():
    @ember.profiler.record_function("deco")
    def f(x):
        return x * 2

    x = ember.tensor(A)  # creation is an operator too: outside the profiled region
    with ember.profiler.profile() as p:
        f(x)
    names = [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in p.events()]
    assert names == [("deco", None), ("aten::mul", "deco")]


def test_backward_events_match_torch():
    def fn(lib, t):
        a, b = t[3:]
        y = (a * b).exp().sum()
        y.backward()

    pe, pt = run(ember, fn), run(torch, fn)

    def nodes(p):
        return [e.name for e in p.events() if e.name.startswith("autograd::engine")]
    assert nodes(pe) == nodes(pt) == [
        "autograd::engine::evaluate_function: SumBackward0",
        "autograd::engine::evaluate_function: ExpBackward0",
        "autograd::engine::evaluate_function: MulBackward0",
        "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
        "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"]
    for e in pe.events():
        if e.name.startswith("autograd::engine"):
            (inner,) = e.cpu_children
            assert inner.name == e.name.split(": ")[1]
            # the derivative's ops run inside the node
            assert all(c.name.startswith("aten::") for c in inner.cpu_children)
    mul_bw = [e for e in pe.events() if e.name == "MulBackward0"][0]
    assert len(mul_bw.cpu_children) >= 2  # grad * b and grad * a
    # forward ops and backward nodes are linked by sequence number, as in torch
    fwd_mul = [e for e in pe.events() if e.name == "aten::mul" and e.cpu_parent is None][0]
    assert fwd_mul.sequence_nr == mul_bw.sequence_nr >= 0


def test_record_shapes_match_torch():
    def fn(lib, t):
        a = t[0]
        lib.relu(a)
        lib.exp(a[2:])
        lib.matmul(a, t[2])

    pe, pt = run(ember, fn, record_shapes=True), run(torch, fn, record_shapes=True)

    def shapes(p):
        return {e.name: e.input_shapes for e in p.events()
                if e.name in ("aten::relu", "aten::exp", "aten::matmul")}
    assert shapes(pe) == shapes(pt) == {"aten::relu": [[3, 4]], "aten::exp": [[1, 4]],
                                        "aten::matmul": [[3, 4], [4, 5]]}
    table = pe.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in table and "[[3, 4], [4, 5]]" in table


def test_profile_memory_matches_torch():
    def fn(lib, t):
        a, b = t[:2]
        with lib.profiler.record_function("alloc_and_free"):
            c = a + b
            d = lib.exp(c)
            del c
        return d

    pe, pt = run(ember, fn, profile_memory=True), run(torch, fn, profile_memory=True)

    def mem(p):
        return {e.name: (e.cpu_memory_usage, e.self_cpu_memory_usage) for e in p.events()
                if e.name in ("alloc_and_free", "aten::add", "aten::exp")}
    # 48 bytes each for the two 3x4 float32 results, and c freed inside the range
    assert mem(pe) == mem(pt) == {"alloc_and_free": (48, -48), "aten::add": (48, 48),
                                  "aten::exp": (48, 48)}
    table = pe.key_averages().table()
    assert "CPU Mem" in table and "Self CPU Mem" in table and "-48 B" in table


def test_key_averages_counts_and_totals():
    def fn(lib, t):
        a = t[0]
        for _ in range(3):
            a = a + 1
        lib.relu(a)

    pe, pt = run(ember, fn), run(torch, fn)
    ce = {e.key: e.count for e in pe.key_averages()}
    ct = {e.key: e.count for e in pt.key_averages()}
    assert ce["aten::add"] == ct["aten::add"] == 3
    assert ce["aten::relu"] == ct["aten::relu"] == 1
    avg = [e for e in pe.key_averages() if e.key == "aten::add"][0]
    adds = [e for e in pe.events() if e.name == "aten::add"]
    assert avg.cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in adds))
    assert avg.cpu_time == pytest.approx(avg.cpu_time_total / 3)
    tot = pe.events().total_average()
    assert tot.key == "Total" and tot.count == len(pe.events())


def test_table_layout_matches_torch():
    pe, pt = run(ember, program), run(torch, program)
    le = pe.key_averages().table(sort_by="cpu_time_total", row_limit=3).splitlines()
    lt = pt.key_averages().table(sort_by="cpu_time_total", row_limit=3).splitlines()
    import re

    def cells(line):
        return re.split(r"\s{2,}", line.strip())
    # same columns, and every column after the name is 12 wide, as torch's
    assert cells(le[1]) == cells(lt[1])
    assert le[0].split()[1:] == lt[0].split()[1:] == ["-" * 12] * 6
    assert le[0] == le[2] and len(le[0]) == len(le[1])
    assert len(le) == 3 + 3 + 2
    assert le[-1].startswith("Self CPU time total: ")
    rows = [ln.split() for ln in le[3:6]]
    times = [r[4] for r in rows]  # CPU total, sorted descending
    parse = {"us": 1, "ms": 1e3, "s": 1e6}

    def us(s):
        for u in ("us", "ms", "s"):
            if s.endswith(u):
                return float(s[:-len(u)]) * parse[u]
    assert [us(t) for t in times] == sorted((us(t) for t in times), reverse=True)
    sums = sum(float(r[1].rstrip("%")) for r in
               (ln.split() for ln in pe.key_averages().table().splitlines()[3:-2]))
    assert sums == pytest.approx(100.0, abs=0.1)
    assert "ms" in pe.key_averages().table(time_unit="ms").splitlines()[3]
    top = pe.key_averages().table(top_level_events_only=True)
    assert "This report only display top-level ops statistics" in top


def test_chrome_trace(tmp_path):
    def fn(lib, t):
        a = t[3]
        with lib.profiler.record_function("block"):
            (a * 2).sum().backward()

    pe = run(ember, fn, record_shapes=True, profile_memory=True)
    path = tmp_path / "trace.json"
    pe.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert isinstance(trace["traceEvents"], list)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["name"] for e in complete) == sorted(e.name for e in pe.events())
    by_id = {e["args"]["External id"]: e for e in complete}
    for ev in pe.events():
        t = by_id[ev.id]
        assert t["ts"] == pytest.approx(ev.time_range.start)
        assert t["dur"] == pytest.approx(ev.cpu_time_total) and t["dur"] >= 0
        assert isinstance(t["pid"], int) and isinstance(t["tid"], int)
    cats = {e["name"]: e["cat"] for e in complete}
    assert cats["block"] == "user_annotation" and cats["aten::mul"] == "cpu_op"
    assert by_id[[e for e in pe.events() if e.name == "aten::mul"][0].id]["args"][
        "Input Dims"] == [[3, 4], []]
    assert any(e["ph"] == "i" and e["name"] == "[memory]" for e in trace["traceEvents"])
    assert trace["record_shapes"] == 1 and trace["profile_memory"] == 1
    # gzip when asked, as torch does for .gz paths
    pe.export_chrome_trace(str(tmp_path / "trace.json.gz"))
    import gzip
    with gzip.open(tmp_path / "trace.json.gz", "rt") as f:
        assert len(json.load(f)["traceEvents"]) == len(trace["traceEvents"])


def test_with_stack_and_export_stacks(tmp_path):
    def fn(lib, t):
        a = t[0]
        return lib.exp(a)  # the source line the stack must name

    pe = run(ember, fn, with_stack=True)
    (exp,) = [e for e in pe.events() if e.name == "aten::exp"]
    assert exp.stack[0].startswith(__file__ + "(") and exp.stack[0].endswith(": fn")
    assert not any("/ember/" in f and "tests" not in f for f in exp.stack)
    table = pe.key_averages(group_by_stack_n=1).table()
    assert "Source Location" in table
    out = tmp_path / "stacks.txt"
    pe.export_stacks(str(out))
    lines = out.read_text().splitlines()
    assert lines and all(ln.rsplit(" ", 1)[1].isdigit() for ln in lines)
    assert any(ln.split(";")[-1].rsplit(" ", 1)[0] == exp.stack[0] for ln in lines)
    with pytest.raises(ValueError):
        pe.export_stacks(str(out), metric="bogus")


def test_with_flops():
    pe = run(ember, program, with_flops=True)
    (mm,) = [e for e in pe.events() if e.name == "aten::matmul"]
    assert mm.flops == 2 * 3 * 4 * 5
    assert "Total FLOPs" in pe.key_averages().table()


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2,
                                active=1, repeat=2), dict(wait=2, warmup=1, active=3, repeat=1,
                                skip_first=3), dict(wait=3, warmup=1, active=1, skip_first=2,
                                skip_first_wait=1)])
def test_schedule_matches_torch(kw):
    se, st = eprof.schedule(**kw), torch.profiler.schedule(**kw)
    assert [se(i).name for i in range(30)] == [st(i).name for i in range(30)]


def test_schedule_validation():
    for bad in (dict(wait=-1, warmup=1, active=1), dict(wait=0, warmup=1, active=0),
                dict(wait=0, warmup=1, active=1, repeat=-1)):
        with pytest.raises(AssertionError) as te:
            torch.profiler.schedule(**bad)
        with pytest.raises(AssertionError) as ee:
            eprof.schedule(**bad)
        assert str(ee.value) == str(te.value)
    with pytest.warns(UserWarning, match="warmup"):
        eprof.schedule(wait=1, warmup=0, active=1)


def _schedule_run(lib, kw, steps, **extra):
    cycles = []

    def ready(p):
        names = [e.name for e in p.events() if e.name == "ProfilerStep*"]
        cycles.append((p.step_num, names, sum(e.name == "aten::mul" for e in p.events())))
    x = lib.tensor(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(schedule=lib.profiler.schedule(**kw), on_trace_ready=ready,
                                  **extra) as p:
            for _ in range(steps):
                x * 2
                p.step()
    return cycles


@pytest.mark.parametrize("kw,steps", [(dict(wait=1, warmup=1, active=2), 10),
                                      (dict(wait=1, warmup=1, active=2, repeat=1), 10),
                                      (dict(wait=0, warmup=0, active=3), 7),
                                      (dict(wait=2, warmup=1, active=1, skip_first=1), 9)])
def test_profile_step_cycles_match_torch(kw, steps):
    assert _schedule_run(ember, kw, steps) == _schedule_run(torch, kw, steps)


def test_acc_events_accumulates_cycles():
    kw = dict(wait=0, warmup=1, active=1)
    got = _schedule_run(ember, kw, 6, acc_events=True)
    assert [c[2] for c in got] == [1, 2, 3]


def test_tensorboard_trace_handler(tmp_path):
    with ember.profiler.profile(schedule=ember.profiler.schedule(wait=0, warmup=1, active=1),
                                on_trace_ready=eprof.tensorboard_trace_handler(
                                    str(tmp_path), worker_name="w0")) as p:
        for _ in range(4):
            ember.tensor(A) + 1
            p.step()
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(".pt.trace.json")
                                   for f in files)
    for f in files:
        names = [e["name"] for e in json.loads((tmp_path / f).read_text())["traceEvents"]]
        assert "aten::add" in names


def test_autograd_profiler_api():
    x = ember.tensor(A, requires_grad=True)
    p = eaprof.profile(record_shapes=True)
    with pytest.raises(RuntimeError, match="didn't finish"):
        p.key_averages()
    with p:
        y = (x ** 2).sum()
        y.backward()
    assert p.self_cpu_time_total == pytest.approx(p.function_events.self_cpu_time_total)
    assert "aten::pow" in p.table() and "PowBackward0" in str(p)
    assert isinstance(p.function_events[0], FunctionEvent)
    with pytest.raises(RuntimeError, match="not reentrant"):
        with p:
            with p:
                pass
    assert not STATE.intercept and eaprof._active_recorder() is None
    with eaprof.profile(enabled=False) as q:
        x * 2
    assert q.function_events is None


def test_no_cost_when_inactive():
    assert not STATE.modes and not STATE.intercept
    with ember.profiler.profile() as p:
        assert STATE.intercept
        with pytest.raises(RuntimeError, match="one profiler at a time"):
            with ember.autograd.profiler.profile():
                pass
    assert not STATE.modes and not STATE.intercept
    with ember.profiler.record_function("unprofiled"):
        ember.tensor(A) + 1  # no profiler: a no-op range
    assert [e.name for e in p.events()] == []


def test_toggle_collection_dynamic():
    x = ember.tensor(A)
    with ember.profiler.profile() as p:
        x + 1
        p.toggle_collection_dynamic(False, [ember.profiler.ProfilerActivity.CPU])
        x * 2
        p.toggle_collection_dynamic(True, [ember.profiler.ProfilerActivity.CPU])
        ember.exp(x)
    assert [e.name for e in p.events()] == ["aten::add", "aten::exp"]


def test_remote_events_join_local_profile():
    # events a peer recorded (shipped as plain dicts) nest under the local call's event
    x = ember.tensor(A)
    with ember.autograd.profiler.profile() as remote:
        with ember.profiler.record_function("udf"):
            x * 3
    records = [e.to_dict() for e in remote.function_events]
    json.dumps(records)  # plain data: can travel over any transport
    with ember.profiler.profile() as p:
        with ember.profiler.record_function("rpc_sync#udf(worker0 -> worker1)"):
            eaprof._active_recorder().add_remote_events(records, node_id=1)
    evs = p.events()
    call = [e for e in evs if e.name.startswith("rpc_sync")][0]
    (udf,) = call.cpu_children
    assert udf.name == "udf" and udf.is_remote and udf.node_id == 1
    assert [c.name for c in udf.cpu_children] == ["aten::mul"]
    assert udf.cpu_children[0].is_remote
    assert udf.time_range.start == pytest.approx(call.time_range.start)
    table = p.key_averages().table()
    assert "Node ID" in table
    keys = {(e.key, e.node_id) for e in p.key_averages()}
    assert ("aten::mul", 1) in keys


def test_emit_nvtx_without_cuda_raises_like_torch():
    with pytest.raises(AssertionError):
        with torch.autograd.profiler.emit_nvtx():
            pass
    with pytest.raises(AssertionError, match="CUDA"):
        with ember.autograd.profiler.emit_nvtx():
            pass


def test_profiler_namespace_matches_torch():
    for name in ("profile", "schedule", "ProfilerAction", "ProfilerActivity",
                 "tensorboard_trace_handler", "record_function", "supported_activities"):
        assert hasattr(eprof, name)
    assert [a.name for a in eprof.ProfilerAction] == [a.name for a in torch.profiler.ProfilerAction]
    assert set(eprof.ProfilerActivity.__members__) == set(
        torch.profiler.ProfilerActivity.__members__)
    assert eprof.supported_activities() == {eprof.ProfilerActivity.CPU}


def test_optimizer_step_range_matches_torch():
    def fn(lib, t):
        p = lib.nn.Parameter(t[0].clone())
        opt = lib.optim.SGD([p], lr=0.1)
        p.grad = t[1]
        opt.step()

    def steps(p):
        return [e.name for e in p.events() if e.name.startswith("Optimizer.")]
    assert steps(run(ember, fn)) == steps(run(torch, fn)) == ["Optimizer.step#SGD.step"]


def test_helpers():
    u = eaprof.EnforceUnique()
    u.see("a", 1)
    with pytest.raises(RuntimeError, match="duplicate key"):
        u.see("a", 1)
    acc = eaprof.MemRecordsAcc([(5.0, "c"), (1.0, "a"), (3.0, "b")])
    assert list(acc.in_interval(1.0, 3.0)) == [(1.0, "a"), (3.0, "b")]
    t = eaprof.KinetoStepTracker
    t.init_step_count("x")
    base = t.current_step()
    assert t.increment_step("x") == base + 1
    assert t.erase_step_count("x") and not t.erase_step_count("x")


def test_execution_trace_matches_torch(tmp_path):
    def trace(lib, path):
        et = lib.profiler.ExecutionTraceObserver().register_callback(str(path))
        x = lib.tensor(A)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.profiler.profile(execution_trace_observer=et):
                with lib.profiler.record_function("blk"):
                    lib.exp(x + 1).relu()
        et.unregister_callback()
        return json.loads(path.read_text())

    te, tt = trace(ember, tmp_path / "e.json"), trace(torch, tmp_path / "t.json")
    assert te.keys() == tt.keys() and te["schema"] == tt["schema"]

    def graph(t):
        by_id = {n["id"]: n for n in t["nodes"]}
        keep = ("blk", "aten::add", "aten::exp", "aten::relu", "[pytorch|profiler|"
                "execution_trace|thread]", "[pytorch|profiler|execution_trace|process]")
        return sorted((n["name"], by_id[n["ctrl_deps"]]["name"]) for n in t["nodes"]
                      if n["name"] in keep), by_id
    (ge, be), (gt, bt) = graph(te), graph(tt)
    assert ge == gt
    for t, by_id in ((te, be), (tt, bt)):
        node = {n["name"]: n for n in t["nodes"]}
        # data flows by tensor id: add's output is exp's input, exp's output relu's input
        assert node["aten::add"]["outputs"]["values"][0][0] == \
            node["aten::exp"]["inputs"]["values"][0][0]
        assert node["aten::exp"]["outputs"]["values"][0][0] == \
            node["aten::relu"]["inputs"]["values"][0][0]
        assert node["aten::relu"]["inputs"]["shapes"] == [[3, 4]]
        assert node["aten::relu"]["inputs"]["types"] == ["Tensor(float)"]
        assert [a["name"] for a in node["aten::relu"]["attrs"]][:6] == \
            ["rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid"]
    assert not STATE.modes
