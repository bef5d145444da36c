"""ember.export.save/load: the program file round-trips an ExportedProgram (values, signature,
specs, ranges, weights, both training modes), runs no code on load, and turns every kind of
damaged file into a clear RuntimeError/ValueError."""
import collections
import io
import json
import pathlib
import re
import zipfile

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember_lite
from ember.export import Dim, export, load, save
from ember.export.serde import FORMAT_VERSION, load_program, save_program


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Tanh(), nn.Linear(8, 3))


def _saved(ep, **kw):
    buf = io.BytesIO()
    save(ep, buf, **kw)
    return buf.getvalue()


def _members(raw):
    z = zipfile.ZipFile(io.BytesIO(raw))
    return {n: z.read(n) for n in z.namelist()}


def _zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    return buf.getvalue()


def _with_program(raw, edit, member="program.json"):
    m = _members(raw)
    prog = json.loads(m[member])
    edit(prog)
    m[member] = json.dumps(prog).encode()
    return _zip(m)


@pytest.fixture(scope="module")
def mlp_file():
    m = _mlp()
    x = ember.randn(5, 4)
    ep = export(m, (x,), dynamic_shapes=({0: Dim("batch", min=2, max=32)},))
    return m, ep, _saved(ep)


def test_round_trip_values_signature_and_ranges(mlp_file, tmp_path):
    m, ep, raw = mlp_file
    ep2 = load(io.BytesIO(raw))
    assert [str(s) for s in ep2.graph_signature.input_specs] == \
        [str(s) for s in ep.graph_signature.input_specs]
    assert [str(s) for s in ep2.graph_signature.output_specs] == \
        [str(s) for s in ep.graph_signature.output_specs]
    assert ep2.range_constraints == ep.range_constraints
    assert sorted(ep2.state_dict) == sorted(ep.state_dict)
    for k, t in ep.state_dict.items():
        assert isinstance(ep2.state_dict[k], nn.Parameter)
        np.testing.assert_array_equal(ep2.state_dict[k].detach().numpy(), t.detach().numpy())
    for n in (3, 17):  # another batch size than the example: the dynamic dim survived
        x = ember.randn(n, 4)
        np.testing.assert_array_equal(ep2.module()(x).detach().numpy(),
                                      m(x).detach().numpy())
    with pytest.raises(RuntimeError):
        ep2.module()(ember.randn(40, 4))  # beyond the saved range Dim(max=32)
    args, kwargs = ep2.example_inputs
    np.testing.assert_array_equal(args[0].numpy(), ep.example_inputs[0][0].numpy())
    assert kwargs == {}


def test_paths_pathlike_and_file_objects(mlp_file, tmp_path):
    m, ep, _ = mlp_file
    x = ember.randn(4, 4)
    want = m(x).detach().numpy()
    p = tmp_path / "prog.ember"
    save(ep, str(p))
    np.testing.assert_array_equal(load(str(p)).module()(x).detach().numpy(), want)
    save(ep, p)  # os.PathLike, overwriting atomically
    np.testing.assert_array_equal(load(p).module()(x).detach().numpy(), want)
    with open(p, "rb") as fh:
        np.testing.assert_array_equal(load(fh).module()(x).detach().numpy(), want)
    assert [q.name for q in tmp_path.iterdir()] == ["prog.ember"]  # no temp files left


def test_layout_is_the_documented_one(mlp_file):
    _, ep, raw = mlp_file
    m = _members(raw)
    assert m["version"] == str(FORMAT_VERSION).encode()
    prog = json.loads(m["program.json"])
    assert prog["schema_version"] == 2 and prog["kind"] == "ExportedProgram"
    assert json.loads(m["lite/program.json"])["schema_version"] == 1
    placeholders = [n for n in prog["graph"] if n["op"] == "placeholder"]
    user = placeholders[-1]
    assert user["meta"] == {"shape": ["s0", 4], "dtype": "float32"}
    assert prog["symbols"]["s0"] == {"hint": 5, "min": 2, "max": 32}
    w = prog["state_dict"]["0.weight"]
    assert (w["dtype"], w["shape"], w["strides"], w["offset"]) == ("float32", [8, 4], [4, 1], 0)
    stored = np.frombuffer(m[w["storage"]], "<f4").reshape(8, 4)
    np.testing.assert_array_equal(stored, ep.state_dict["0.weight"].detach().numpy())
    lite = json.loads(m["lite/program.json"])
    from ember.ops.primitives import PRIMITIVES
    targets = {n["target"] for n in lite["graph"] if n["op"] == "call_function"}
    assert targets <= PRIMITIVES | {"getitem"}, targets - PRIMITIVES
    assert "layer_norm" not in json.dumps(lite["graph"])


def test_extra_files_and_opset_versions(mlp_file):
    _, ep, _ = mlp_file
    raw = _saved(ep, extra_files={"meta.txt": "hello", "blob": b"\x00\xff"},
                 opset_version={"mylib": 3})
    extra = {"meta.txt": "", "blob": ""}
    load(io.BytesIO(raw), extra_files=extra, expected_opset_version={"mylib": 3})
    assert extra == {"meta.txt": "hello", "blob": b"\x00\xff"}
    with pytest.raises(RuntimeError, match="opset 'mylib' version 3, but version 4"):
        load(io.BytesIO(raw), expected_opset_version={"mylib": 4})
    with pytest.raises(RuntimeError, match="no member 'extra/missing'"):
        load(io.BytesIO(raw), extra_files={"missing": ""})
    with pytest.raises(ValueError, match="plain file name"):
        save(ep, io.BytesIO(), extra_files={"../evil": "x"})


def test_save_rejects_what_is_not_a_program():
    with pytest.raises(TypeError, match="ExportedProgram"):
        save(nn.Linear(2, 2), io.BytesIO())


def test_training_mode_program_and_its_alternate():
    ember.manual_seed(1)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    x = ember.randn(6, 3)
    ep = export(m, (x,))
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    ref.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                         for k, v in m.state_dict().items()})
    mod = load(io.BytesIO(_saved(ep))).module()
    tx = torch.from_numpy(x.numpy().copy())
    np.testing.assert_allclose(mod(x).detach().numpy(), ref(tx).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    # the buffer mutations were applied, as torch's BatchNorm updates running stats
    np.testing.assert_allclose(mod.get_buffer("1.running_mean").numpy(),
                               ref[1].running_mean.numpy(), rtol=1e-5, atol=1e-7)
    assert int(mod.get_buffer("1.num_batches_tracked")) == 1
    mod.eval()
    ref.eval()
    np.testing.assert_allclose(mod(x).detach().numpy(), ref(tx).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_structured_inputs_and_outputs():
    Pair = collections.namedtuple("Pair", ["total", "diff"])

    def f(d, scale):
        return {"pair": Pair(d["a"] + d["b"], d["a"] - d["b"]), "scaled": [d["a"] * scale]}
    a, b = ember.randn(3), ember.randn(3)
    ep = export(f, ({"a": a, "b": b}, 2.0))
    out = load(io.BytesIO(_saved(ep))).module()({"a": a, "b": b}, 2.0)
    assert set(out) == {"pair", "scaled"}
    assert type(out["pair"]).__name__ == "Pair" and out["pair"]._fields == ("total", "diff")
    np.testing.assert_array_equal(out["pair"].total.numpy(), (a + b).numpy())
    np.testing.assert_array_equal(out["scaled"][0].numpy(), (a * 2.0).numpy())


def test_dtypes_tied_weights_and_bfloat16():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 3)
            self.out = nn.Linear(3, 5, bias=False)
            self.out.weight = self.emb.weight
            self.register_buffer("scale", ember.tensor([1.5, 2.0, 0.5], dtype=ember.bfloat16))

        def forward(self, idx):
            return self.out(self.emb(idx) * self.scale.float())
    m = Tied()
    idx = ember.tensor([[0, 3], [4, 1]])
    ep = export(m, (idx,))
    raw = _saved(ep)
    prog = json.loads(_members(raw)["program.json"])
    assert prog["state_dict"]["scale"]["dtype"] == "bfloat16"
    got = load(io.BytesIO(raw)).module()(idx)
    np.testing.assert_array_equal(got.detach().numpy(), m(idx).detach().numpy())


def test_graph_module_from_the_compile_capture_round_trips():
    gms = []

    def backend(gm, example_inputs):
        gms.append(gm)
        return gm.forward
    fn = ember.compile(lambda x, y: (x.sin() * y).sum(1), backend=backend, fullgraph=True)
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    fn(x, y)
    buf = io.BytesIO()
    save_program(gms[0], buf)
    buf.seek(0)
    gm = load_program(buf)
    np.testing.assert_array_equal(gm(x, y)[0].numpy(), (x.sin() * y).sum(1).numpy())


# ---- damaged and hostile files --------------------------------------------------------------
def _load_both(raw):
    """The error of ember.export.load and of ember_lite.load: each must be a clear one."""
    errors = []
    for loader in (load, ember_lite.load):
        with pytest.raises((RuntimeError, ValueError)) as e:
            loader(io.BytesIO(raw))
        assert type(e.value) in (RuntimeError, ValueError), type(e.value)
        errors.append(str(e.value))
    return errors


def test_not_a_zip_and_truncated(mlp_file):
    _, _, raw = mlp_file
    for bad in (b"", b"not a zip at all", raw[: len(raw) // 2], raw[:-30]):
        for msg in _load_both(bad):
            assert "program file" in msg or "corrupt" in msg or "member" in msg, msg


def test_missing_members(mlp_file):
    _, _, raw = mlp_file
    for name in ("version", "program.json", "lite/program.json"):
        m = _members(raw)
        del m[name]
        if name == "program.json":
            with pytest.raises(RuntimeError, match="no member 'program.json'"):
                load(io.BytesIO(_zip(m)))
        elif name == "lite/program.json":
            with pytest.raises(RuntimeError, match="no member 'lite/program.json'"):
                ember_lite.load(io.BytesIO(_zip(m)))
        else:
            for msg in _load_both(_zip(m)):
                assert "no member 'version'" in msg


def test_version_mismatch_says_which_versions_are_read(mlp_file):
    _, _, raw = mlp_file
    m = _members(raw)
    m["version"] = b"7"
    e1, e2 = _load_both(_zip(m))
    assert "this file has format version 7; ember reads 1..2" in e1
    assert "this file has format version 7; ember_lite reads 1..2" in e2
    m["version"] = b"seven"
    for msg in _load_both(_zip(m)):
        assert "malformed format version" in msg
    bumped = _with_program(raw, lambda p: p.update(schema_version=3))
    with pytest.raises(RuntimeError, match=r"schema version 3; ember reads 1\.\.2"):
        load(io.BytesIO(bumped))


def test_bad_json(mlp_file):
    _, _, raw = mlp_file
    m = _members(raw)
    m["program.json"] = m["program.json"][:-10]
    m["lite/program.json"] = b"[1, 2]"
    with pytest.raises(ValueError, match="program.json is not valid JSON"):
        load(io.BytesIO(_zip(m)))
    with pytest.raises(ValueError, match="must hold a JSON object"):
        ember_lite.load(io.BytesIO(_zip(m)))


def test_shape_that_does_not_fit_its_storage(mlp_file):
    _, _, raw = mlp_file

    def grow(p):
        p["state_dict"]["0.weight"]["shape"] = [80, 4]
    for member in ("program.json", "lite/program.json"):
        bad = _with_program(raw, grow, member)
        loader = load if member == "program.json" else ember_lite.load
        with pytest.raises(ValueError, match=r"0.weight.*needs 320 elements.*holds 32"):
            loader(io.BytesIO(bad))


def test_unknown_dtype_and_operator(mlp_file):
    _, _, raw = mlp_file

    def dtype(p):
        p["state_dict"]["0.bias"]["dtype"] = "object"
    for member, loader in (("program.json", load), ("lite/program.json", ember_lite.load)):
        with pytest.raises(ValueError, match="unknown dtype 'object'"):
            loader(io.BytesIO(_with_program(raw, dtype, member)))

    def op(p):
        next(n for n in p["graph"] if n["op"] == "call_function")["target"] = "os.system"
    with pytest.raises(RuntimeError, match="operator 'os.system'.*REGISTRY"):
        load(io.BytesIO(_with_program(raw, op)))
    with pytest.raises(RuntimeError, match="no kernel for operator.*os.system"):
        ember_lite.load(io.BytesIO(_with_program(raw, op, "lite/program.json")))


def test_size_expressions_are_parsed_never_run(mlp_file, tmp_path):
    _, _, raw = mlp_file
    marker = tmp_path / "pwned"
    payload = f"__import__('pathlib').Path({str(marker)!r}).touch() or 4"

    def inject(p):
        ph = [n for n in p["graph"] if n["op"] == "placeholder"][-1]
        ph["meta"]["shape"][1] = payload
    for member, loader in (("program.json", load), ("lite/program.json", ember_lite.load)):
        with pytest.raises(ValueError, match=r"only integers, symbols, \+ - \* // % and max/min"):
            prog = loader(io.BytesIO(_with_program(raw, inject, member)))
            if member != "program.json":
                prog(np.zeros((3, 4), np.float32))
    assert not marker.exists()

    def inject_kwarg(p):
        n = next(n for n in p["graph"] if n["op"] == "call_function")
        n["kwargs"]["evil"] = {"sym": "s0.__class__"}
    with pytest.raises(ValueError, match="only integers"):
        load(io.BytesIO(_with_program(raw, inject_kwarg)))


def test_malformed_arguments_and_specs(mlp_file):
    _, _, raw = mlp_file

    def tag(p):
        n = next(n for n in p["graph"] if n["op"] == "call_function")
        n["args"][0] = {"pickle": "cos\nsystem\n"}
    with pytest.raises(ValueError, match="unknown argument tag 'pickle'"):
        load(io.BytesIO(_with_program(raw, tag)))

    def forward_ref(p):
        n = next(n for n in p["graph"] if n["op"] == "call_function")
        n["args"][0] = {"node": "not_yet"}
    with pytest.raises(ValueError, match="'not_yet', which is not defined before it"):
        load(io.BytesIO(_with_program(raw, forward_ref)))

    def kind(p):
        p["input_specs"][0]["kind"] = "BACKDOOR"
    with pytest.raises(ValueError, match="unknown InputKind 'BACKDOOR'"):
        load(io.BytesIO(_with_program(raw, kind)))


def test_nothing_in_the_package_uses_pickle_or_eval():
    root = pathlib.Path(ember.__file__).parent / "export" / "serde"
    lite = pathlib.Path(ember_lite.__file__).parent
    for path in list(root.rglob("*.py")) + list(lite.rglob("*.py")):
        text = path.read_text()
        for pattern in (r"import pickle", r"(?<![\w.`])eval\(", r"(?<![\w.`])exec\(",
                        r"np\.load\(", r"allow_pickle", r"__import__"):
            assert not re.search(pattern, text), f"{path}: {pattern}"


def _mutations(raw, member, n, seed):
    """``n`` copies of the file with 1-3 values of ``member``'s JSON replaced by hostile ones."""
    import random
    rng = random.Random(seed)
    members = _members(raw)
    base = json.loads(members[member])
    values = [None, 0, -1, 1.5, "x", "s0", "1//0", "s0*", [], {}, [1, 2], {"node": "zz"},
              {"sym": "s9"}, True, 10 ** 30, "float32", {"tuple": "a"}, {"array": {}},
              {"subgraph": [1]}, [[[[[]]]]]]

    def paths(obj, prefix=()):
        if prefix:
            yield prefix
        items = obj.items() if isinstance(obj, dict) else enumerate(obj) \
            if isinstance(obj, list) else ()
        for k, v in items:
            yield from paths(v, prefix + (k,))
    all_paths = list(paths(base))
    for _ in range(n):
        prog = json.loads(members[member])
        for _ in range(rng.randint(1, 3)):
            obj, path = prog, rng.choice(all_paths)
            try:
                for p in path[:-1]:
                    obj = obj[p]
                # a copy: a later edit inside it must not reach `values` (or loop back)
                obj[path[-1]] = json.loads(json.dumps(rng.choice(values)))
            except (TypeError, KeyError, IndexError):
                pass
        m = dict(members)
        m[member] = json.dumps(prog).encode()
        yield _zip(m)


def test_hostile_edits_give_clear_errors(mlp_file):
    # loading never lets a TypeError/KeyError/NumPy error escape; the lite runtime names the
    # node whose kernel failed on a graph edited into nonsense
    _, _, raw = mlp_file
    x = np.ones((3, 4), np.float32)
    for bad in _mutations(raw, "program.json", 250, seed=1):
        try:
            load(io.BytesIO(bad))
        except (RuntimeError, ValueError):
            pass
    for bad in _mutations(raw, "lite/program.json", 250, seed=2):
        try:
            ember_lite.load(io.BytesIO(bad))(x)
        except (RuntimeError, ValueError):
            pass
        except TypeError as e:  # the input checks: the edit changed what the program takes
            assert str(e).startswith(("the program takes", "input ")), e


def test_wrong_file_arguments(tmp_path, mlp_file):
    _, ep, _ = mlp_file
    with pytest.raises(TypeError, match="f must be a path or a writable binary file"):
        save(ep, 42)
    for loader in (load, ember_lite.load):
        with pytest.raises(TypeError, match="f must be a path or a readable binary file"):
            loader(3.5)
        with pytest.raises(FileNotFoundError):
            loader(tmp_path / "missing.ember")
