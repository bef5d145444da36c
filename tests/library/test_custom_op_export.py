"""Custom ops through ember.export: one node in the program, saved by qualified name, loaded
in a fresh process once the defining module is imported again."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import ember

LIB = textwrap.dedent('''
    import ember

    @ember.library.custom_op("exlib::shift", mutates_args=())
    def shift(x: ember.Tensor, by: float) -> ember.Tensor:
        print("shift called!")
        return x + by

    @shift.register_fake
    def _(x, by):
        return ember.empty_like(x)
''')


class _Model(ember.nn.Module):
    def forward(self, x):
        return ember.ops.exlib.shift(ember.sin(x), 1.5) * 2


def _run(code, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([cwd, os.getcwd()]))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_export_records_one_node_and_round_trips_in_fresh_process(tmp_path):
    (tmp_path / "exlib_def.py").write_text(LIB)
    sys.path.insert(0, str(tmp_path))
    try:
        import exlib_def  # noqa: F401
    finally:
        sys.path.remove(str(tmp_path))
    x = ember.randn(4)
    ep = ember.export.export(_Model(), (x,))
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert [t.name for t in targets].count("exlib::shift") == 1
    assert "exlib::shift" in str(ep.graph)
    np.testing.assert_allclose(ep.module()(x).numpy(), ((ember.sin(x) + 1.5) * 2).numpy(),
                               rtol=1e-6)
    path = str(tmp_path / "prog.pt2")
    ember.export.save(ep, path)
    load = (f"import ember{{}}\nep = ember.export.load({path!r})\n"
            f"print(ep.module()(ember.zeros(4)).tolist())")
    ok = _run(load.format(", exlib_def"), str(tmp_path))
    assert ok.returncode == 0, ok.stderr
    assert "shift called!" in ok.stdout and "[3.0, 3.0, 3.0, 3.0]" in ok.stdout
    missing = _run(load.format(""), str(tmp_path))
    assert missing.returncode != 0 and "exlib::shift" in missing.stderr
