"""ember.export.save/load keep what unflatten and structured programs need: the
nn_module_stack of each node (unflatten(load(f)) has the submodule graphs of unflatten(ep))
and inputs/outputs of registered dataclasses, named in the file by their serialized type
name and found again among the classes registered in the loading process."""
import dataclasses
import io
import json
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import ember
from ember.export import export, load, register_dataclass, save, unflatten

from .test_unflatten import _inputs, _model


def _np(t):
    return t.detach().numpy()


def _graph_sizes(mod):
    return [(n, len(list(m.graph.nodes)) if m.graph is not None else None)
            for n, m in mod.named_modules()]


@pytest.mark.parametrize("train", [True, False])
def test_unflatten_of_a_loaded_program_has_the_submodule_graphs(train):
    ember.manual_seed(0)
    em = _model(ember).train(train)
    x, y = (ember.tensor(a) for a in _inputs(1))
    ep = export(em, (x, y))
    buf = io.BytesIO()
    save(ep, buf)
    direct, loaded = unflatten(ep), unflatten(load(io.BytesIO(buf.getvalue())))
    sizes = _graph_sizes(direct)
    assert sizes == _graph_sizes(loaded)
    # the submodules hold graphs of their own: the root does not run everything
    assert [n for n, _ in sizes] == ["", "a", "a.lin", "a.bn", "b", "b.lin", "b.bn", "out"]
    assert all(k is not None and k > 2 for _, k in sizes)
    for seed in (2, 3):
        x, y = (ember.tensor(a) for a in _inputs(seed))
        np.testing.assert_allclose(_np(loaded(x, y)), _np(direct(x, y)), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(_np(loaded.a(x)), _np(direct.a(x)), rtol=1e-6, atol=1e-6)
    for k, v in direct.state_dict().items():
        np.testing.assert_allclose(_np(loaded.state_dict()[k]), _np(v))
    # the stack is stored per node as [key, fqn, class name] triples, outermost first
    prog = json.loads(zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("program.json"))
    stacks = [n["nn_module_stack"] for n in prog["graph"] if "nn_module_stack" in n]
    assert ["a", "a", "_model.<locals>.Sub"] in [s[0] for s in stacks]
    assert any([k for k, _, _ in s] == ["b", "b.bn"] for s in stacks)


def test_malformed_module_stack_is_a_clear_error():
    ember.manual_seed(0)
    em = _model(ember).eval()
    buf = io.BytesIO()
    save(export(em, tuple(ember.tensor(a) for a in _inputs(1))), buf)
    members = {n: zipfile.ZipFile(io.BytesIO(buf.getvalue())).read(n)
               for n in zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()}
    prog = json.loads(members["program.json"])
    next(n for n in prog["graph"] if "nn_module_stack" in n)["nn_module_stack"] = [["a", 3]]
    members["program.json"] = json.dumps(prog).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    with pytest.raises(ValueError, match="nn_module_stack must be a list of"):
        load(io.BytesIO(out.getvalue()))


_DATACLASSES = '''
import dataclasses
import ember

@dataclasses.dataclass
class Inp:
    x: ember.Tensor
    scale: ember.Tensor
    shift: object = None

@dataclasses.dataclass
class Out:
    y: ember.Tensor
    norm: ember.Tensor
    extra: object = None
'''


class _Net(ember.nn.Module):
    def __init__(self, out_cls):
        super().__init__()
        self.lin = ember.nn.Linear(3, 2)
        self.out_cls = out_cls

    def forward(self, inp):
        y = self.lin(inp.x) * inp.scale
        return self.out_cls(y=y, norm=y.abs().sum(dim=1))


def _saved_dataclass_program(tmp_path, name):
    ns = {}
    exec(_DATACLASSES, ns)   # the classes of the test, as a user script defines them
    register_dataclass(ns["Inp"], serialized_type_name=name + ".Inp")
    register_dataclass(ns["Out"], serialized_type_name=name + ".Out")
    ember.manual_seed(0)
    net = _Net(ns["Out"]).eval()
    rng = np.random.default_rng(0)
    x, s = rng.standard_normal((4, 3)).astype("f4"), rng.standard_normal(2).astype("f4")
    inp = ns["Inp"](ember.tensor(x), ember.tensor(s))
    path = tmp_path / "dc.ember"
    save(export(net, (inp,)), path)
    want = net(inp)
    np.save(tmp_path / "x.npy", x), np.save(tmp_path / "s.npy", s)
    return ns, path, want


def test_dataclass_program_round_trips_in_this_process(tmp_path):
    ns, path, want = _saved_dataclass_program(tmp_path, "serde_test_here")
    ep = load(path)
    got = ep.module()(ns["Inp"](ember.tensor(np.load(tmp_path / "x.npy")),
                                ember.tensor(np.load(tmp_path / "s.npy"))))
    assert type(got) is ns["Out"] and got.extra is None
    np.testing.assert_allclose(_np(got.y), _np(want.y), rtol=1e-6)
    np.testing.assert_allclose(_np(got.norm), _np(want.norm), rtol=1e-6)
    prog = json.loads(zipfile.ZipFile(path).read("program.json"))
    out = prog["out_spec"]
    assert out["kind"] == "custom" and out["type"] == "serde_test_here.Out"
    assert out["context"] == {"tuple": [{"tuple": ["y", "norm"]}, {"tuple": ["extra"]}]}


def _fresh(code, tmp_path):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def test_dataclass_program_loads_in_a_fresh_process_that_registers_it(tmp_path):
    _, path, want = _saved_dataclass_program(tmp_path, "serde_test_fresh")
    np.save(tmp_path / "want_y.npy", _np(want.y)), np.save(tmp_path / "want_n.npy",
                                                           _np(want.norm))
    r = _fresh(_DATACLASSES + '''
import numpy as np
from ember.export import load, register_dataclass
register_dataclass(Inp, serialized_type_name="serde_test_fresh.Inp")
register_dataclass(Out, serialized_type_name="serde_test_fresh.Out")
out = load("dc.ember").module()(Inp(ember.tensor(np.load("x.npy")),
                                    ember.tensor(np.load("s.npy"))))
assert type(out) is Out and out.extra is None, out
np.testing.assert_allclose(out.y.detach().numpy(), np.load("want_y.npy"), rtol=1e-6)
np.testing.assert_allclose(out.norm.detach().numpy(), np.load("want_n.npy"), rtol=1e-6)
print("ok")
''', tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    # without the registration: a clear error naming the class and how to register it
    r = _fresh('''
from ember.export import load
try:
    load("dc.ember")
except NotImplementedError as e:
    print(e)
''', tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "'serde_test_fresh.Inp', which is not registered in this process" in r.stdout
    assert "register_dataclass(cls, serialized_type_name='serde_test_fresh.Inp')" in r.stdout


def test_dataclass_without_a_serialized_name_is_refused_as_torch(tmp_path):
    ns = {}
    exec(_DATACLASSES, ns)
    register_dataclass(ns["Inp"])
    register_dataclass(ns["Out"], serialized_type_name="serde_test_noname.Out")
    inp = ns["Inp"](ember.ones(4, 3), ember.ones(2))
    ep = export(_Net(ns["Out"]), (inp,))
    with pytest.raises(NotImplementedError, match="No registered serialization name for "
                       ".*Inp.* `serialized_type_name` kwarg"):
        save(ep, tmp_path / "x.ember")


def test_dataclass_without_a_serialized_name_torch_refuses_too(tmp_path):
    import torch

    @dataclasses.dataclass
    class TOut:
        y: torch.Tensor

    torch.export.register_dataclass(TOut)

    class M(torch.nn.Module):
        def forward(self, x):
            return TOut(x + 1)
    ep = torch.export.export(M(), (torch.ones(2),))
    with pytest.raises(NotImplementedError, match="No registered serialization name for"):
        torch.export.save(ep, tmp_path / "t.pt2")


def test_malformed_custom_spec_is_a_clear_error(tmp_path):
    _, path, _ = _saved_dataclass_program(tmp_path, "serde_test_bad")
    members = {n: zipfile.ZipFile(path).read(n) for n in zipfile.ZipFile(path).namelist()}
    prog = json.loads(members["program.json"])
    prog["out_spec"]["type"] = 7
    members["program.json"] = json.dumps(prog).encode()
    with zipfile.ZipFile(tmp_path / "bad.ember", "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    with pytest.raises(ValueError, match="malformed custom pytree spec"):
        load(tmp_path / "bad.ember")
