"""ember.distributed.checkpoint in one process (no process group): round trips of nested and
non-tensor values, Stateful objects, FQN-keyed optimizer state (checked against torch's
``torch.distributed.checkpoint.state_dict``), errors as CheckpointException, corrupt and
hostile files, interrupted saves, byte-range planning, format conversion and async_save.
The multi-rank cases (sharding, resharding, ZeRO) are in test_checkpoint_dist.py."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint import CheckpointException, FileSystemReader, \
    FileSystemWriter
from ember.distributed.checkpoint.filesystem import byte_runs
from ember.distributed.checkpoint.state_dict import (
    StateDictOptions, get_model_state_dict, get_optimizer_state_dict, get_state_dict,
    set_optimizer_state_dict, set_state_dict)


def _state():
    return {
        "a": ember.arange(12.).reshape(3, 4),
        "nested": {"b": ember.tensor([1, 2, 3]), "deeper": {"c": ember.tensor(2.5),
                                                            "flag": True}},
        "bf16": ember.arange(6.).to(ember.bfloat16),
        "mask": ember.tensor([True, False, True]),
        "empty": ember.zeros(0, 3),
        "f64": ember.linspace(0, 1, 5, dtype=ember.float64),
        "epoch": 4, "lr": 0.125, "name": "run-1", "none": None,
        "hist": [1, (2, "x")], "ints": {1: "one"},
    }


def _assert_same(a, b, path="root"):
    if isinstance(a, ember.Tensor):
        assert isinstance(b, ember.Tensor), path
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), path
        assert ember.equal(a, b), path
    elif isinstance(a, dict):
        assert set(a) == set(b), (path, set(a), set(b))
        for k in a:
            _assert_same(a[k], b[k], f"{path}.{k}")
    else:
        assert a == b and type(a) is type(b), (path, a, b)


def test_roundtrip_into_empty_dict_and_in_place(tmp_path):
    sd = _state()
    md = dcp.save(sd, checkpoint_id=tmp_path)
    assert "nested.deeper.c" in md.state_dict_metadata
    out = {}
    dcp.load(out, checkpoint_id=tmp_path)
    _assert_same(sd, out)
    target = _state()
    for v in (target["a"], target["nested"]["b"]):
        v.zero_()
    keep = target["a"]
    target["epoch"] = 0
    dcp.load(target, checkpoint_id=str(tmp_path))
    assert target["a"] is keep          # tensors are filled in place
    _assert_same(sd, target)


def test_2_1_names_with_explicit_storage(tmp_path):
    sd = {"x": ember.randn(4, 2), "k": 3}
    dcp.save_state_dict(sd, FileSystemWriter(tmp_path))
    out = {"x": ember.zeros(4, 2), "k": 0}
    dcp.load_state_dict(out, FileSystemReader(tmp_path))
    _assert_same(sd, out)


class Counter:
    def __init__(self, n):
        self.n = n

    def state_dict(self):
        return {"n": ember.tensor(float(self.n)), "label": f"c{self.n}"}

    def load_state_dict(self, sd):
        self.n = int(sd["n"].item())
        assert sd["label"] == f"c{self.n}"


def test_stateful_objects(tmp_path):
    ember.manual_seed(0)
    model = ember.nn.Linear(3, 2)
    dcp.save({"model": model, "counter": Counter(5)}, checkpoint_id=tmp_path)
    fresh, c = ember.nn.Linear(3, 2), Counter(0)
    dcp.load({"model": fresh, "counter": c}, checkpoint_id=tmp_path)
    assert c.n == 5
    assert ember.equal(fresh.weight, model.weight) and ember.equal(fresh.bias, model.bias)


def _mlp(lib, seed=0):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))


def _train(lib, model, opt):
    x = lib.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    for _ in range(2):
        opt.zero_grad()
        (model(x) ** 2).sum().backward()
        opt.step()


def test_optimizer_state_dict_matches_torch():
    import torch
    import torch.distributed.checkpoint.state_dict as tsd
    em, tm = _mlp(ember), _mlp(torch)
    with torch.no_grad():
        for p, q in zip(tm.parameters(), em.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    eo = ember.optim.AdamW(em.parameters(), lr=0.01)
    to = torch.optim.AdamW(tm.parameters(), lr=0.01)
    _train(ember, em, eo)
    _train(torch, tm, to)
    for flat in (False, True):
        opts = StateDictOptions(flatten_optimizer_state_dict=flat)
        got = get_optimizer_state_dict(em, eo, options=opts)
        want = tsd.get_optimizer_state_dict(tm, to, options=tsd.StateDictOptions(
            flatten_optimizer_state_dict=flat))
        if not flat:
            assert set(got["state"]) == set(want["state"])
            assert got["param_groups"][0]["params"] == want["param_groups"][0]["params"]
            got, want = got["state"], want["state"]
            got = {f"{n}.{k}": v for n, st in got.items() for k, v in st.items()}
            want = {f"{n}.{k}": v for n, st in want.items() for k, v in st.items()}
        else:
            assert set(got) == set(want), set(got) ^ set(want)
            got = {k: v for k, v in got.items() if k.startswith("state.")}
        for k, v in got.items():
            np.testing.assert_allclose(np.asarray(v.numpy() if hasattr(v, "numpy") else v),
                                       want[k].detach().numpy(), rtol=1e-5, atol=1e-7,
                                       err_msg=k)


def test_fresh_optimizer_state_is_initialised_without_moving_params():
    model = _mlp(ember)
    before = [p.detach().clone() for p in model.parameters()]
    opt = ember.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, weight_decay=0.1)
    osd = get_optimizer_state_dict(model, opt)
    assert set(osd["state"]) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    for p, b in zip(model.parameters(), before):
        assert ember.equal(p, b) and p.grad is None
    assert opt.param_groups[0]["lr"] == 0.5


@pytest.mark.parametrize("flat", [False, True])
def test_optimizer_state_by_fqn_survives_new_parameter_order(tmp_path, flat):
    model = _mlp(ember)
    opt = ember.optim.Adam(model.parameters(), lr=0.02)
    _train(ember, model, opt)
    opts = StateDictOptions(flatten_optimizer_state_dict=flat)
    msd, osd = get_state_dict(model, opt, options=opts)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=tmp_path)

    model2 = _mlp(ember, seed=3)
    params = list(model2.parameters())
    opt2 = ember.optim.Adam([{"params": params[2:]}, {"params": params[:2][::-1]}], lr=0.7)
    msd2, osd2 = get_state_dict(model2, opt2, options=opts)
    sd = {"model": msd2, "optim": osd2}
    dcp.load(sd, checkpoint_id=tmp_path)
    set_state_dict(model2, opt2, model_state_dict=sd["model"], optim_state_dict=sd["optim"],
                   options=opts)
    by_name = dict(model2.named_parameters())
    for n, p in model.named_parameters():
        assert ember.equal(by_name[n], p)
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert ember.equal(opt2.state[by_name[n]][k], opt.state[p][k]), (n, k)
    assert [g["lr"] for g in opt2.param_groups] == [0.02, 0.02]


def test_set_optimizer_state_dict_rejects_foreign_parameter():
    model = _mlp(ember)
    opt = ember.optim.SGD(list(model.parameters()) + [ember.nn.Parameter(ember.zeros(2))],
                          lr=0.1)
    with pytest.raises(KeyError, match="not in the model"):
        set_optimizer_state_dict(model, opt, {"state": {}, "param_groups": []})


def test_model_state_dict_options():
    model = _mlp(ember)
    model[0].weight.requires_grad_(False)
    sd = get_model_state_dict(model, options=StateDictOptions(ignore_frozen_params=True))
    assert "0.weight" not in sd and "0.bias" in sd
    sub = get_model_state_dict(model, submodules={model[2]},
                               options=StateDictOptions(keep_submodule_prefixes=False))
    assert set(sub) == {"weight", "bias"}


def test_missing_key_and_shape_mismatch_name_rank_and_key(tmp_path):
    dcp.save({"w": ember.zeros(2, 3), "n": 1}, checkpoint_id=tmp_path)
    with pytest.raises(CheckpointException) as e:
        dcp.load({"w": ember.zeros(2, 3), "ghost": ember.zeros(1)}, checkpoint_id=tmp_path)
    assert "ghost" in str(e.value) and "rank 0" in str(e.value)
    assert list(e.value.failures) == [0]
    with pytest.raises(CheckpointException, match=r"size mismatch for 'w'.*\[2, 3\].*\[3, 2\]"):
        dcp.load({"w": ember.zeros(3, 2)}, checkpoint_id=tmp_path)
    with pytest.raises(CheckpointException, match="'n' is a tensor here"):
        dcp.load({"n": ember.zeros(1)}, checkpoint_id=tmp_path)
    part = {"w": ember.ones(2, 3), "ghost": ember.ones(1)}
    dcp.load(part, checkpoint_id=tmp_path,
             planner=dcp.DefaultLoadPlanner(allow_partial_load=True))
    assert ember.equal(part["w"], ember.zeros(2, 3)) and ember.equal(part["ghost"],
                                                                      ember.ones(1))


def test_corrupt_or_truncated_shard(tmp_path):
    dcp.save({"w": ember.arange(1000.)}, checkpoint_id=tmp_path)
    path = tmp_path / "__0_0.distcp"
    raw = bytearray(path.read_bytes())
    raw[123] ^= 0x40
    path.write_bytes(raw)
    with pytest.raises(CheckpointException, match="checksum mismatch"):
        dcp.load({"w": ember.zeros(1000)}, checkpoint_id=tmp_path)
    path.write_bytes(raw[:2000])
    with pytest.raises(CheckpointException, match="is 2000 bytes"):
        dcp.load({"w": ember.zeros(1000)}, checkpoint_id=tmp_path)


def test_hostile_metadata(tmp_path):
    from ember.distributed.checkpoint._codec import encode
    dcp.save({"w": ember.arange(4.)}, checkpoint_id=tmp_path)
    md = FileSystemReader(tmp_path).read_metadata()
    meta = os.path.join(tmp_path, ".metadata")
    for field, value in (("relative_path", "../../escape"), ("offset", -5),
                         ("length", 10 ** 6)):
        info = next(iter(md.storage_data.values()))
        bad = type(info)(**{**info.__dict__, field: value})
        md2 = type(md)(md.state_dict_metadata, md.planner_data,
                       {k: bad for k in md.storage_data}, md.storage_meta)
        ember.save(encode(md2), meta)
        with pytest.raises(CheckpointException, match="corrupt checkpoint metadata"):
            dcp.load({"w": ember.zeros(4)}, checkpoint_id=tmp_path)

    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    ember.save({"x": Evil()}, meta)
    with pytest.raises(CheckpointException, match="corrupt checkpoint metadata"):
        dcp.load({"w": ember.zeros(4)}, checkpoint_id=tmp_path)
    assert not marker.exists()
    ember.save(["c", "Popen", "ls"], meta)    # a class outside the allow-list
    with pytest.raises(CheckpointException, match="unknown class record"):
        dcp.load({"w": ember.zeros(4)}, checkpoint_id=tmp_path)


_KILLED_SAVE = r"""
import os, sys
import ember, ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint import filesystem
real = filesystem.FileSystemWriter.write_data
def dying(self, plan, planner):
    with open(os.path.join(self.path, "__0_0.distcp"), "wb") as f:
        f.write(b"partial")
    os._exit(9)        # killed mid-save
filesystem.FileSystemWriter.write_data = dying
dcp.save({"w": ember.full((4,), 2.0)}, checkpoint_id=sys.argv[1])
"""


def test_killed_save_is_never_taken_for_complete(tmp_path):
    old, other = tmp_path / "ckpt", tmp_path / "previous"
    dcp.save({"w": ember.ones(4)}, checkpoint_id=old)
    dcp.save({"w": ember.full((4,), 7.0)}, checkpoint_id=other)
    script = tmp_path / "kill.py"
    script.write_text(_KILLED_SAVE)
    p = subprocess.run([sys.executable, str(script), str(old)], capture_output=True)
    assert p.returncode == 9, p.stderr.decode()
    assert not (old / ".metadata").exists()
    with pytest.raises(CheckpointException, match="no complete checkpoint"):
        dcp.load({"w": ember.zeros(4)}, checkpoint_id=old)
    got = {"w": ember.zeros(4)}
    dcp.load(got, checkpoint_id=other)
    assert ember.equal(got["w"], ember.full((4,), 7.0))
    assert not [f for f in os.listdir(other) if f.endswith(".tmp")]


def test_overwrite_false(tmp_path):
    dcp.save({"w": ember.ones(2)}, checkpoint_id=tmp_path)
    with pytest.raises(CheckpointException, match="overwrite=False"):
        dcp.save({"w": ember.ones(2)}, storage_writer=FileSystemWriter(tmp_path,
                                                                       overwrite=False))


def test_byte_runs_cover_exactly_the_box():
    rng = np.random.default_rng(0)
    for _ in range(60):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(s) for s in rng.integers(1, 6, nd))
        off = tuple(int(rng.integers(0, s)) for s in shape)
        size = tuple(int(rng.integers(1, s - o + 1)) for s, o in zip(shape, off))
        itemsize = int(rng.choice([1, 2, 4, 8]))
        want = np.zeros(int(np.prod(shape)) * itemsize, bool)
        elems = np.arange(int(np.prod(shape))).reshape(shape)[
            tuple(slice(o, o + n) for o, n in zip(off, size))].ravel()
        for e in elems:
            want[e * itemsize:(e + 1) * itemsize] = True
        got = np.zeros_like(want)
        runs = byte_runs(shape, off, size, itemsize)
        for s, n in runs:
            assert not got[s:s + n].any(), "ranges overlap"
            got[s:s + n] = True
        np.testing.assert_array_equal(got, want, err_msg=str((shape, off, size)))
        assert all(runs[i][0] + runs[i][1] < runs[i + 1][0] for i in range(len(runs) - 1))
    assert byte_runs((), (), (), 4) == [(0, 4)]


def test_format_utils_and_cli(tmp_path):
    from ember.distributed.checkpoint.format_utils import dcp_to_torch_save, \
        torch_save_to_dcp
    sd = {"m": {"w": ember.arange(6.).reshape(2, 3)}, "step": 11}
    dcp.save(sd, checkpoint_id=tmp_path / "d")
    dcp_to_torch_save(tmp_path / "d", tmp_path / "a.pt")
    _assert_same(sd, ember.load(tmp_path / "a.pt"))
    torch_save_to_dcp(tmp_path / "a.pt", tmp_path / "d2")
    out = {}
    dcp.load(out, checkpoint_id=tmp_path / "d2")
    _assert_same(sd, out)
    cmd = [sys.executable, "-m", "ember.distributed.checkpoint.format_utils"]
    p = subprocess.run(cmd + ["dcp_to_torch", str(tmp_path / "d2"), str(tmp_path / "b.pt")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    import torch
    got = torch.load(tmp_path / "b.pt", weights_only=True)
    np.testing.assert_array_equal(got["m"]["w"].numpy(), sd["m"]["w"].numpy())
    assert got["step"] == 11
    p = subprocess.run(cmd + ["torch_to_dcp", str(tmp_path / "b.pt"), str(tmp_path / "d3")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = {}
    dcp.load(out, checkpoint_id=tmp_path / "d3")
    _assert_same(sd, out)
    p = subprocess.run(cmd + ["dcp_to_torch", str(tmp_path / "nope"), "x.pt"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "not a checkpoint directory" in p.stderr


def test_async_save_snapshots_values(tmp_path):
    w = ember.arange(5.)
    fut = dcp.async_save({"w": w, "k": {"n": 2}}, checkpoint_id=tmp_path)
    w.add_(100)                       # training goes on; the staged copy is saved
    md = fut.result(timeout=60)
    assert set(md.state_dict_metadata) == {"w", "k.n"}
    out = {}
    dcp.load(out, checkpoint_id=tmp_path)
    assert ember.equal(out["w"], ember.arange(5.)) and out["k"] == {"n": 2}


@pytest.mark.parametrize("module,name", [
    ("distributed.checkpoint", "save"), ("distributed.checkpoint", "load"),
    ("distributed.checkpoint", "async_save"), ("distributed.checkpoint", "save_state_dict"),
    ("distributed.checkpoint", "load_state_dict"), ("distributed.checkpoint", "FileSystemWriter"),
    ("distributed.checkpoint", "FileSystemReader"),
    ("distributed.checkpoint", "DefaultSavePlanner"),
    ("distributed.checkpoint", "DefaultLoadPlanner"),
    ("distributed.checkpoint", "CheckpointException"),
    ("distributed.checkpoint.state_dict", "get_state_dict"),
    ("distributed.checkpoint.state_dict", "set_state_dict"),
    ("distributed.checkpoint.state_dict", "get_model_state_dict"),
    ("distributed.checkpoint.state_dict", "get_optimizer_state_dict"),
    ("distributed.checkpoint.state_dict", "set_model_state_dict"),
    ("distributed.checkpoint.state_dict", "set_optimizer_state_dict"),
    ("distributed.checkpoint.state_dict", "StateDictOptions"),
    ("distributed.checkpoint.format_utils", "dcp_to_torch_save"),
    ("distributed.checkpoint.format_utils", "torch_save_to_dcp"),
    ("distributed.tensor", "distribute_tensor"), ("distributed.tensor", "DTensor.from_local"),
    ("distributed.tensor", "DTensor.redistribute"), ("distributed.tensor", "DTensor.to_local"),
    ("distributed.tensor", "DTensor.full_tensor"),
    ("distributed.device_mesh", "init_device_mesh"),
])
def test_signatures_match_torch(module, name):
    import importlib
    import inspect

    def get(root):
        obj = importlib.import_module(f"{root}.{module}")
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    want = list(inspect.signature(get("torch")).parameters)
    assert list(inspect.signature(get("ember")).parameters) == want
