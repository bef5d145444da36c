"""torch.autograd.profiler.parse_nvprof_trace / load_nvprof on an nvprof-format SQLite trace
(NVTX markers, runtime launches, kernels), against torch reading the same file."""
import sqlite3

import pytest

import ember

import torch


def _trace(path, cbid=211, duplicate=False):
    c = sqlite3.connect(path)
    c.executescript("""
        CREATE TABLE StringTable(_id_ INTEGER, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(id INTEGER, name INTEGER, timestamp INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER, cbid INTEGER, start INTEGER,
                                                 end INTEGER, correlationId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(start INTEGER, end INTEGER,
                                                           name INTEGER, correlationId INTEGER);
    """)
    c.executemany("INSERT INTO StringTable VALUES (?, ?)",
                  [(1, "aten::add"), (2, "aten::mm"), (3, "gemm_kernel"), (4, "add_kernel")])
    markers = [(7, 2, 100), (7, 0, 400), (5, 1, 10), (5, 0, 90)]
    if duplicate:
        markers += [(5, 1, 11), (5, 0, 91)]
    c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (?, ?, ?)", markers)
    c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)",
                  [(1, cbid, 20, 30, 11), (2, cbid, 150, 160, 12), (3, cbid, 200, 210, 13)])
    c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL VALUES (?, ?, ?, ?)",
                  [(40, 65, 4, 11), (170, 250, 3, 12), (260, 300, 3, 13)])
    c.commit()
    c.close()


def _summary(events):
    return [(e.id, e.name, e.time_range.start, e.time_range.end, list(e.kernels))
            for e in events]


def test_parse_and_load_match_torch(tmp_path):
    p = str(tmp_path / "trace.nvvp")
    _trace(p)
    t = torch.autograd.profiler.parse_nvprof_trace(p)
    e = ember.autograd.profiler.parse_nvprof_trace(p)
    assert _summary(e) == _summary(t)
    assert [k for ev in e for k in ev.kernels] == [(4, 0, 25), (3, 0, 80), (3, 0, 40)]
    lt, le = torch.autograd.profiler.load_nvprof(p), ember.autograd.profiler.load_nvprof(p)
    assert isinstance(le, ember.autograd.profiler.EventList)
    assert _summary(le) == _summary(lt)


@pytest.mark.parametrize("kw", [dict(cbid=13), dict(duplicate=True)])
def test_errors_match_torch(tmp_path, kw):
    p = str(tmp_path / "bad.nvvp")
    _trace(p, **kw)
    with pytest.raises(Exception) as t:
        torch.autograd.profiler.parse_nvprof_trace(p)
    with pytest.raises(type(t.value)) as e:
        ember.autograd.profiler.parse_nvprof_trace(p)
    assert str(e.value) == str(t.value)
