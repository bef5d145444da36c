"""Measurement repr and Compare tables: golden text against torch.utils.benchmark
for the same fixed raw times."""
import itertools

import numpy as np
import pytest
import torch.utils.benchmark as tb
from torch.utils.benchmark.utils import common as tc

from ember.utils.benchmark import Compare, Measurement, TaskSpec, common


def pair(number, raw, **spec):
    spec.setdefault("stmt", "x + y")
    spec.setdefault("setup", "pass")
    return (Measurement(number, list(raw), TaskSpec(**spec)),
            tc.Measurement(number, list(raw), tc.TaskSpec(**spec)))


def body(m):
    return repr(m).split("\n", 1)[1]  # without the '<... object at 0x...>' line


def noisy_raw(rng, spread, n):
    return rng.uniform(1e-9, 10.0) * 10.0 ** rng.integers(-8, 0) * (1 + rng.normal(0, spread, n))


def test_measurement_repr_and_statistics_match_torch():
    rng = np.random.default_rng(0)
    specs = [dict(), dict(label="add", sub_label="float", description="n=4"),
             dict(stmt="y = x * 2\nz = y + 1", sub_label="two lines", setup="x = 1\ny = 2"),
             dict(stmt="f(x)", setup="x = 3", num_threads=4)]
    for spec, n, spread in itertools.product(specs, [1, 2, 3, 4, 9, 40], [0.0, 0.05, 0.2, 0.6]):
        raw = np.abs(noisy_raw(rng, spread, n)) + 1e-12
        number = int(rng.integers(1, 10000))
        e, t = pair(number, raw, **spec)
        assert body(e) == body(t)
        assert e.significant_figures == t.significant_figures
        assert e.has_warnings == t.has_warnings
        assert e.median == pytest.approx(t.median, rel=1e-12)
        assert e.mean == pytest.approx(t.mean, rel=1e-12)
        assert e.iqr == pytest.approx(t.iqr, rel=1e-9, abs=1e-300)
        assert e.title == t.title and e.as_row_name == t.as_row_name


def test_measurement_repr_literal():
    m = Measurement(100, [5.73e-4, 4.01e-4, 6.26e-4, 5.5e-4],
                    TaskSpec("x + y", "pass", label="Broadcasting add", description="4x8"))
    # sorted times 4.01 5.5 5.73 6.26 us: quartiles by linear interpolation
    assert body(m) == ("Broadcasting add\n4x8\n  Median: 5.62 us\n"
                       "  IQR:    0.73 us (5.13 to 5.86)\n"
                       "  4 measurements, 100 runs per measurement, 1 thread\n"
                       "  WARNING: Interquartile range is 13.1% of the median measurement.\n"
                       "           This could indicate system fluctuation.")


def test_helpers_match_torch():
    rng = np.random.default_rng(1)
    for x in np.concatenate([10.0 ** np.arange(-10, 3), rng.uniform(0, 1, 50) *
                             10.0 ** rng.integers(-10, 3, 50)]).tolist():
        assert common.select_unit(x) == tc.select_unit(x)
        for n in (1, 2, 3, 4):
            assert common.trim_sigfig(x, n) == tc.trim_sigfig(x, n)


def test_merge_groups_replicates():
    a = Measurement(10, [1.0, 2.0], TaskSpec("f()", "pass", label="L"))
    b = Measurement(5, [1.0], TaskSpec("f()", "pass", label="L"))
    c = Measurement(1, [3.0], TaskSpec("g()", "pass", label="L"))
    merged = Measurement.merge([a, b, c])
    assert [m.stmt for m in merged] == ["f()", "g()"]
    assert merged[0].number_per_run == 1 and merged[0].raw_times == [0.1, 0.2, 0.2]
    assert merged[0].metadata is None


def _grid(rng, labels, threads, subs, descs, envs=(None,), drop=0.0):
    out = []
    for label, thr, env, sub, desc in itertools.product(labels, threads, envs, subs, descs):
        if rng.uniform() < drop:
            continue
        raw = np.abs(noisy_raw(rng, rng.choice([0.01, 0.15, 0.4]), int(rng.integers(3, 30))))
        out.append(pair(int(rng.integers(1, 1000)), raw + 1e-12, label=label, sub_label=sub,
                        description=desc, num_threads=thr, env=env))
    return out


LAYOUTS = {
    "labels_threads": dict(labels=["add", "mul"], threads=[1, 4], subs=["float", "int"],
                           descs=["n=1", "n=1024"]),
    "one_cell": dict(labels=["relu"], threads=[1], subs=[None], descs=["x"]),
    "envs": dict(labels=["conv"], threads=[1, 2], subs=["a", "bb", "ccc"], descs=["d1", "d2"],
                 envs=["master", "branch"]),
    "holes": dict(labels=["L1", "L2"], threads=[1, 2, 8], subs=["s1", "s2", "s3"],
                  descs=["c1", "c2", "c3"], drop=0.3),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("options", ["", "trim", "trim+warn", "color", "row+trim+warn"])
def test_compare_matches_torch(layout, options):
    rng = np.random.default_rng(abs(hash((layout, options))) % 2 ** 32)
    pairs = _grid(rng, **LAYOUTS[layout])
    # replicates of one task are merged before display
    pairs += [pair(7, [pairs[0][0].raw_times[0] * 1.1], **{
        f: getattr(pairs[0][0].task_spec, f) for f in
        ("stmt", "setup", "label", "sub_label", "description", "env", "num_threads")})]
    ours, theirs = Compare([p[0] for p in pairs]), tb.Compare([p[1] for p in pairs])
    for c in (ours, theirs):
        if "trim" in options:
            c.trim_significant_figures()
        if "warn" in options:
            c.highlight_warnings()
        if "color" in options:
            c.colorize()
        if "row" in options:
            c.colorize(rowwise=True)
    assert str(ours) == str(theirs)


def test_compare_literal_and_print(capsys):
    ms = [Measurement(1, [t * 1e-6] * 5, TaskSpec("f(x)", "pass", label="op", sub_label=s,
                                                    description=d))
          for s, d, t in [("float", "n=1", 1.5), ("float", "n=64", 12.25), ("int", "n=1", 2.0)]]
    c = Compare(ms)
    expected = ("[----------- op -----------]\n"
                "             |  n=1  |  n=64\n"
                "1 threads: -----------------\n"
                "      float  |  1.5  |  12.2\n"
                "      int    |  2.0  |      \n"
                "\n"
                "Times are in microseconds (us).\n")
    assert str(c) == expected
    c.print()
    assert capsys.readouterr().out == expected + "\n"
    with pytest.raises(ValueError, match="Measurement"):
        Compare([1.0])


def test_compare_without_description_or_env():
    # torch fails on these (len(None)); ember renders a blank header / 'Unspecified env'
    a = Measurement(1, [1e-3] * 3, TaskSpec("f()", "pass", env="A"))
    b = Measurement(1, [2e-3] * 3, TaskSpec("g()", "pass"))
    text = str(Compare([a, b]))
    assert "(A)" in text and "(Unspecified env)" in text
    assert text.splitlines()[1].strip() == "|"
