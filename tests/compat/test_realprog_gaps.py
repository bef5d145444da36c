"""Behaviours that public programs (pytorch/examples, nanoGPT, minGPT) run unchanged rely on
and ember got wrong; each checked against torch."""
import importlib
import io
import os

import numpy as np
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@LIBS
def test_whole_transformer_pickles_under_the_linear_module_path(lib):
    # word_language_model saves the whole model and reloads it allowlisting
    # nn.modules.linear.NonDynamicallyQuantizableLinear: MultiheadAttention's output
    # projection must be that very class
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 1,
                                  enable_nested_tensor=False)
    assert type(model.layers[0].self_attn.out_proj) is nn.modules.linear.NonDynamicallyQuantizableLinear
    buf = io.BytesIO()
    lib.save(model, buf)
    buf.seek(0)
    allowed = [nn.modules.activation.MultiheadAttention, nn.modules.container.ModuleList,
               nn.modules.dropout.Dropout, nn.modules.linear.Linear,
               nn.modules.linear.NonDynamicallyQuantizableLinear,
               nn.modules.normalization.LayerNorm, nn.modules.transformer.TransformerEncoder,
               nn.modules.transformer.TransformerEncoderLayer, nn.functional.relu]
    with lib.serialization.safe_globals(allowed):
        back = lib.load(buf)
    x = lib.randn(3, 2, 8)
    model.eval()
    back.eval()
    np.testing.assert_array_equal(back(x).detach().numpy(), model(x).detach().numpy())


@LIBS
def test_weights_only_environment_overrides(lib, monkeypatch):
    # time_sequence_prediction torch.load()s a pickled NumPy array, which the weights-only
    # default refuses; users run it with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
    buf = io.BytesIO()
    lib.save(np.arange(6.0).reshape(2, 3), buf)

    def load(**kw):
        buf.seek(0)
        return lib.load(buf, **kw)

    with pytest.raises(Exception, match="Weights only load failed"):
        load()
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "yes")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected"):
        np.testing.assert_array_equal(load(), np.arange(6.0).reshape(2, 3))
    with pytest.raises(Exception, match="Weights only load failed"):
        load(weights_only=True)  # an explicit argument wins over this variable
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "2")  # not a true value
    with pytest.raises(Exception, match="Weights only load failed"):
        load()
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "true")
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD`"):
        load()
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    with pytest.raises(Exception, match="Weights only load failed"):
        load(weights_only=False)  # this one wins over the argument


def test_range_objects_index_like_lists():
    # mnist_forward_forward writes x_[range(n), y] = v: torch takes any Python sequence
    out = []
    for lib in (torch, ember):
        x = lib.arange(20.0).reshape(4, 5)
        x[range(4), lib.tensor([0, 1, 2, 3])] = -1.0
        out.append([x.numpy(), x[range(1, 3)].numpy(), x[(range(2), range(2, 4))].numpy(),
                    tuple(x[range(0)].shape), x[range(3), 1:].numpy()])
    for e, t in zip(out[1], out[0]):
        np.testing.assert_array_equal(e, t)


def test_compat_runs_a_script_as_python_does(tmp_path):
    # nanoGPT's train.py imports its sibling model.py and warnings name the script by its
    # absolute path: `python -m ember.compat prog.py` must set up __main__ as `python prog.py`
    import subprocess
    import sys
    d = tmp_path / "prog"
    d.mkdir()
    (d / "helper_mod.py").write_text("VALUE = 41\n")
    (d / "prog.py").write_text(
        "import os, sys, warnings\nimport helper_mod\n"
        "print(__file__, sys.argv, sys.path[0], helper_mod.VALUE + 1)\n"
        "print(__name__, __spec__ is None)\n")
    outs = []
    for pre in ([], ["-m", "ember.compat"]):
        r = subprocess.run([sys.executable, *pre, os.path.join("prog", "prog.py"), "a", "--b=1"],
                           cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[1] == outs[0]
    assert str(d / "prog.py") in outs[0]


@LIBS
def test_cuda_calls_without_cuda_answer_as_a_cpu_build(lib):
    # nanoGPT's bench.py calls torch.cuda.synchronize() on device=cpu: a CPU build of torch
    # refuses it; seeding and empty_cache stay no-ops
    assert lib.cuda.is_available() is False
    for f in (lib.cuda.synchronize, lib.cuda.current_device):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            f()
    lib.cuda.manual_seed(3)
    lib.cuda.manual_seed_all(3)
    lib.cuda.empty_cache()
    assert lib.cuda.is_bf16_supported() is False


def test_tensor_reads_any_python_sequence():
    # reinforce.py builds torch.tensor(returns) from a collections.deque
    import array
    import collections
    cases = [collections.deque([1.5, 2.0, -3.0]), range(2, 7), collections.deque(),
             [range(2), collections.deque([3, 4])], array.array("d", [1.0, 2.5]),
             (collections.deque([True, False]),)]
    for data in cases:
        t, e = torch.tensor(data), ember.tensor(data)
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], data
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    for bad in ({1: 2}, {1, 2}, [1, None], object()):
        with pytest.raises(RuntimeError) as te:
            torch.tensor(bad)
        with pytest.raises(RuntimeError) as ee:
            ember.tensor(bad)
        assert str(ee.value) == str(te.value)
    for bad in ("ab", [1, "a"]):
        with pytest.raises(TypeError, match="invalid data type 'str'"):
            torch.tensor(bad)
        with pytest.raises(TypeError, match="invalid data type 'str'"):
            ember.tensor(bad)


@LIBS
def test_fx_node_type_aliases_annotate_tracer_overrides(lib):
    # pytorch/examples fx/module_tracer.py annotates create_proxy with torch.fx.node.Target
    # and Argument; a Tracer overriding it records the same graph
    from typing import Any, Dict, Optional, Tuple
    fx = lib.fx

    class Recording(fx.Tracer):
        seen = []

        def create_proxy(self, kind: str, target: fx.node.Target, args: Tuple[Any, ...],
                         kwargs: Dict[str, Any], name: Optional[str] = None,
                         type_expr: Optional[Any] = None) -> fx.node.Argument:
            self.seen.append(kind)
            return super().create_proxy(kind, target, args, kwargs, name, type_expr)

    m = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.ReLU())
    graph = Recording().trace(m)
    assert [n.op for n in graph.nodes] == ["placeholder", "call_module", "call_module", "output"]
    assert Recording.seen == ["placeholder", "call_module", "call_module"]
    names = {t.__name__ for t in fx.node.base_types}
    assert {"str", "int", "float", "bool", "complex", "dtype", "Tensor", "device",
            "memory_format", "layout", "OpOverload"} <= names


@LIBS
def test_pin_memory_without_accelerator_warns_per_iterator(lib, monkeypatch):
    # minGPT's Trainer asks for pin_memory=True; torch says on CPU that it is not used
    import warnings
    if lib.__name__ == "ember":  # a backend registered by another test is an accelerator
        monkeypatch.setattr(lib.accelerator, "_accelerator_name", lambda: None)
    data = lib.utils.data.TensorDataset(lib.arange(6.0))

    def messages(**kw):
        loader = lib.utils.data.DataLoader(data, batch_size=2, **kw)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            batches = [b[0].tolist() for b in loader]
        assert batches == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
        return [str(x.message) for x in w]

    assert messages() == []
    assert messages(pin_memory=True) == [
        "'pin_memory' argument is set as true but no accelerator is found, then device pinned "
        "memory won't be used."]
    got = messages(pin_memory=True, pin_memory_device="cpu")
    assert len(got) == 2 and got[0].startswith("pin_memory_device is deprecated")


@LIBS
def test_profiler_record_function_operators(lib):
    # fx/profiling_tracer.py puts torch.ops.profiler._record_function_enter/_exit into a
    # traced graph so that record_function ranges survive tracing
    ops = lib.ops.profiler

    class ProfilerTracer(lib.fx.Tracer):
        def trace(self, root, concrete_args=None):
            rf = lib.autograd.profiler.record_function
            orig = rf.__enter__, rf.__exit__
            tracer = self

            def enter(rf_self):
                rf_self._proxy = tracer.create_proxy("call_function", ops._record_function_enter,
                                                     (rf_self.name,), {})
                return rf_self

            def exit_(rf_self, *exc):
                ops._record_function_exit(rf_self._proxy)

            rf.__enter__, rf.__exit__ = enter, exit_
            try:
                return super().trace(root, concrete_args)
            finally:
                rf.__enter__, rf.__exit__ = orig

    def f(x):
        with lib.profiler.record_function("blk"):
            return x.relu() * 2

    tracer = ProfilerTracer()
    graph = tracer.trace(f)
    gm = lib.fx.GraphModule(tracer.root, graph)
    kinds = [n.op for n in gm.graph.nodes]
    assert kinds.count("call_function") >= 3 and kinds[0] == "placeholder"
    x = lib.tensor([-1.0, 2.0])
    with lib.autograd.profiler.profile() as prof:
        out = gm(x)
    assert out.tolist() == [0.0, 4.0]
    events = {e.name: e for e in prof.function_events}
    blk, relu = events["blk"], events["aten::relu"]
    assert blk.time_range.start <= relu.time_range.start
    assert relu.time_range.end <= blk.time_range.end
    # and by hand, the new-style handle
    with lib.autograd.profiler.profile() as prof:
        h = ops._record_function_enter_new("by_hand")
        lib.ones(2).relu()
        ops._record_function_exit(h)
    assert "by_hand" in [e.name for e in prof.function_events]


def user_leaf(x):
    return x + 1


def test_fx_code_names_a_user_function_by_its_qualified_name():
    # fx/primitive_library.py prints traced code: a call_function target from a user module
    # is named after module and function, as torch's codegen does
    lines = []
    for lib in (torch, ember):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        g.output(g.call_function(user_leaf, (x,)))
        gm = lib.fx.GraphModule(lib.nn.Module(), g)
        lines.append([ln.strip() for ln in gm.code.splitlines() if "(x)" in ln])
        assert gm(lib.ones(2)).tolist() == [2.0, 2.0]
    assert lines[1] == lines[0]
    assert lines[0][0].startswith("user_leaf = " + __name__.replace(".", "_") + "_user_leaf(x)")


@LIBS
def test_profiling_cuda_without_cuda_warns_as_torch(lib):
    # nanoGPT's bench.py --profile=True asks for CPU and CUDA activities on a CPU machine
    import warnings
    acts = [lib.profiler.ProfilerActivity.CPU, lib.profiler.ProfilerActivity.CUDA]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with lib.profiler.profile(activities=acts) as prof:
            lib.ones(3).relu()
    assert "CUDA is not available, disabling CUDA profiling" in [str(x.message) for x in w]
    assert "aten::relu" in [e.name for e in prof.events()]


_SCALAR_WARN_SCRIPT = r"""
import warnings
import {lib} as lib
warnings.simplefilter("always")
x = lib.ones(1, requires_grad=True)
seen = []
def _in(mode, f, t):
    with mode:
        return f(t)
for name, conv in [("int", int), ("bool", bool), ("item", lambda t: t.item()),
                   ("float_nograd", lambda t: float(t.detach())),
                   ("float_in_no_grad_mode", lambda t: _in(lib.no_grad(), float, t)),
                   ("float_in_inference_mode", lambda t: _in(lib.inference_mode(), float, t)),
                   ("float", float),
                   ("float_again", float), ("complex", complex)]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        conv(x * 2)
    seen.append((name, [str(m.message) for m in w]))
print(repr(seen))
"""


@LIBS
def test_float_of_a_tensor_requiring_grad_warns_once_per_process(lib):
    # time_sequence_prediction prints float(loss) of a graph output: torch warns once
    # (TORCH_WARN_ONCE) for float()/complex(), never for int()/bool()/.item(), and only
    # in grad mode (LBFGS takes float(loss) in its no_grad step: no warning)
    import ast
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", _SCALAR_WARN_SCRIPT.format(lib=lib.__name__)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = dict(ast.literal_eval(out.stdout.strip().splitlines()[-1]))
    assert [k for k, v in seen.items() if v] == ["float"]
    assert seen["float"][0].startswith(
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
        "behavior.\nConsider using tensor.detach() first.")


def test_utils_pytree_module_matches_torch():
    # x-transformers and ema-pytorch import torch.utils._pytree by path
    import collections
    import importlib
    tp = importlib.import_module("torch.utils._pytree")
    ep = importlib.import_module("ember.utils._pytree")
    assert ember.utils._pytree is ep
    Pt = collections.namedtuple("Pt", "x y")
    tree = {"a": [1, None, (2, 3.5)], "b": Pt(4, [5]), "c": ()}
    for lib in (tp, ep):
        leaves, spec = lib.tree_flatten(tree)
        assert leaves == [1, None, 2, 3.5, 4, 5]
        assert lib.tree_leaves(tree) == leaves
        assert lib.tree_unflatten([l * 2 if l is not None else l for l in leaves], spec) == \
            {"a": [2, None, (4, 7.0)], "b": Pt(8, [10]), "c": ()}
        assert lib.tree_structure(tree) == lib.tree_structure(lib.tree_map(str, tree))
        assert lib.tree_structure(tree) != lib.tree_structure({"a": [1, 2]})
        other = {"a": [10, None, (20, 30)], "b": Pt(40, [50]), "c": ()}
        got = lib.tree_map(lambda u, v: (u, v), tree, other)
        assert got["b"] == Pt((4, 40), [(5, 50)]) and got["a"][2] == ((2, 20), (3.5, 30))
        with pytest.raises(ValueError):
            lib.tree_map(lambda u, v: u, tree, {"a": [1]})
    x = ember.ones(2)
    out = ep.tree_map(lambda t: t * 3, {"k": (x, [x])})
    assert out["k"][1][0].tolist() == [3.0, 3.0]


@LIBS
def test_cuda_state_queries_without_cuda_answer_as_a_cpu_build(lib):
    # performer-pytorch's reversible layers read torch.cuda._initialized; training scripts log
    # memory_allocated(); checkpointing code saves get_rng_state_all()
    assert lib.cuda._initialized is False and lib.cuda.is_initialized() is False
    assert lib.cuda.memory_allocated() == 0 and lib.cuda.max_memory_allocated() == 0
    assert lib.cuda.memory_reserved() == 0 and lib.cuda.max_memory_reserved() == 0
    assert dict(lib.cuda.memory_stats()) == {}
    assert lib.cuda.get_rng_state_all() == []
    lib.cuda.set_rng_state_all([])
    lib.cuda.seed()
    lib.cuda.seed_all()
    for f in (lib.cuda.init, lib.cuda.initial_seed, lib.cuda.get_rng_state):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            f()
    assert lib.cuda.is_initialized() is False


def _np_interop(lib):
    import warnings
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch's __array_wrap__ signature
        for expr in ["np.float64(2.0) * t", "np.float32(0.5) + t", "np.int64(3) - t",
                     "np.float64(3) / t", "np.float64(2) ** t", "np.float64(1.5) > t",
                     "np.float64(2.0) == t", "np.sin(t)", "np.exp(t)", "np.add(t, 1)",
                     "t * np.array(2.0)", "t + np.array([1.0, 2.0, 3.0])", "np.isnan(t)",
                     "np.greater(np.ones(3), t)", "np.float64(2.0) * tg"]:
            t = lib.tensor([1.0, 2.0, 4.0])
            tg = lib.tensor([1.0, 2.0, 4.0], requires_grad=True)
            r = eval(expr)
            assert isinstance(r, lib.Tensor), expr
            out.append((expr, str(r.dtype).split(".")[1], r.detach().tolist(),
                        r.grad_fn is not None))
        for expr in ["np.ones(3) * t", "np.array(2.0) + t", "np.ones(3) > t", "np.ones(3) @ t"]:
            t = lib.tensor([1.0, 2.0, 4.0])
            with pytest.raises(TypeError):
                eval(expr)
    return out


def test_numpy_scalars_and_ufuncs_on_the_left_give_tensors():
    # nflows' BatchNorm: nn.Parameter(np.float64 * torch.ones(n)) -- NumPy computed an
    # ndarray (ember had no __array_priority__), and NumPy ufuncs of tensors returned ndarrays
    assert _np_interop(ember) == _np_interop(torch)


def _grouped(lib):
    fu = importlib.import_module(lib.__name__ + ".utils._foreach_utils")
    a, b, c = lib.ones(2), lib.ones(3, dtype=lib.float64), lib.full((1,), 2.0)
    out = []
    for lists, wi in [([[a, b, c], [None, b, c]], True), ([[a, b, c]], False),
                      ([[a, b, c], []], True)]:
        g = fu._group_tensors_by_device_and_dtype(lists, with_indices=wi)
        out.append(sorted((str(d), str(dt).split(".")[1],
                           [[None if t is None else t.tolist() for t in lst] for lst in ls],
                           idx) for (d, dt), (ls, idx) in g.items()))
        for (d, dt), (ls, _) in g.items():  # the grouped tensors are the inputs themselves
            assert all(t is None or t.dtype == dt and any(t is u for u in (a, b, c))
                       for lst in ls for t in lst)
    for bad in ([[a, b], [c]], [[None, b], [c, c]], []):
        with pytest.raises(RuntimeError):
            fu._group_tensors_by_device_and_dtype(bad)
    out.append((fu._has_foreach_support([a, None], a.device),
                fu._device_has_foreach_support(lib.device("cpu")),
                fu._device_has_foreach_support(lib.device("meta")),
                fu._get_foreach_kernels_supported_devices()[:3],
                fu._get_fused_kernels_supported_devices()[:6]))
    return out


def test_foreach_utils_groups_tensor_lists_as_torch():
    # pytorch-optimizer imports torch.utils._foreach_utils._group_tensors_by_device_and_dtype
    assert _grouped(ember) == _grouped(torch)


@LIBS
def test_norm_base_classes_import_by_their_module_paths(lib):
    # pytorch-optimizer (and weight-decay filters in training scripts) test
    # isinstance(m, nn.modules.batchnorm._BatchNorm)
    from importlib import import_module
    bn = import_module(lib.__name__ + ".nn.modules.batchnorm")
    inn = import_module(lib.__name__ + ".nn.modules.instancenorm")
    nn = lib.nn
    assert isinstance(nn.BatchNorm2d(3), bn._BatchNorm)
    assert isinstance(nn.BatchNorm1d(3), bn._NormBase)
    assert isinstance(nn.SyncBatchNorm(3), bn._BatchNorm)
    assert isinstance(nn.InstanceNorm1d(3), inn._InstanceNorm)
    assert isinstance(nn.InstanceNorm2d(3), inn._NormBase)
    assert not isinstance(nn.InstanceNorm2d(3), bn._BatchNorm)
    assert not isinstance(nn.LayerNorm(3), bn._NormBase)


def _module_utils(lib):
    import collections
    from importlib import import_module
    u = import_module(lib.__name__ + ".nn.modules.utils")
    out = [u._single(3), u._pair(3), u._pair((1, 2)), u._triple([4, 5, 6]), u._quadruple(0),
           u._pair.__name__, u._ntuple(5, "five")(7), u._reverse_repeat_tuple((1, 2, 3), 2),
           u._list_with_default([None, 4], [1, 2, 3, 5]), u._list_with_default(7, [1, 2])]
    with pytest.raises(ValueError, match="at least 3"):
        u._list_with_default([None, 4], [1, 2])
    sd = collections.OrderedDict([("module.a", 1), ("module.b.c", 2), ("d", 3)])
    sd._metadata = {"": {"v": 0}, "module": {"v": 1}, "module.b": {"v": 2}}
    u.consume_prefix_in_state_dict_if_present(sd, "module.")
    out += [list(sd.items()), sd._metadata]
    plain = {"module.x": 1}
    u.consume_prefix_in_state_dict_if_present(plain, "module.")
    return out + [plain]


def test_nn_modules_utils_matches_torch():
    # kornia (and many layers) import _pair/_triple from torch.nn.modules.utils
    assert _module_utils(ember) == _module_utils(torch)


@LIBS
def test_tracing_queries_libraries_ask_outside_any_trace(lib):
    # kornia imports is_fake and get_proxy_mode, and annotates with torch.torch.Tensor
    from importlib import import_module
    ft = import_module(lib.__name__ + "._subclasses.fake_tensor")
    pt = import_module(lib.__name__ + ".fx.experimental.proxy_tensor")
    assert lib.torch is lib and lib.torch.Tensor is lib.Tensor
    assert ft.is_fake(lib.ones(2)) is False and ft.is_fake(3) is False
    assert ft.is_fake(lib.empty(2, device="meta")) is False
    assert pt.get_proxy_mode() is None


@LIBS
def test_config_show_and_parallel_info_in_torchs_format(lib):
    # torch_geometric reads 'USE_MKL=OFF' in torch.__config__.show() at import
    import re
    text = lib.__config__.show()
    settings = dict(re.findall(r"(\w+)=([^,\s]*)", text.split("Build settings:")[1]))
    for key in ("BLAS_INFO", "LAPACK_INFO", "USE_MKL", "USE_OPENMP", "USE_GLOO", "USE_CUDA"):
        assert key in settings, key
    assert settings["USE_MKL"] == ("ON" if lib.backends.mkl.is_available() else "OFF")
    assert settings["USE_OPENMP"] == ("ON" if lib.backends.openmp.is_available() else "OFF")
    assert settings["USE_GLOO"] == ("ON" if lib.distributed.is_gloo_available() else "OFF")
    info = lib.__config__.parallel_info()
    assert f"at::get_num_threads() : {lib.get_num_threads()}" in info
    assert f"at::get_num_interop_threads() : {lib.get_num_interop_threads()}" in info
    assert "OMP_NUM_THREADS : " in info


def test_submodules_torch_imports_with_itself_are_attributes():
    # torchmetrics calls torch.distributed.is_available() after a plain `import torch`
    import subprocess
    import sys
    script = ("import {lib}, sys\n"
              "print(sorted(n for n in ('distributed', 'multiprocessing', '_higher_order_ops', "
              "'_subclasses') if isinstance(getattr({lib}, n, None), type(sys))))\n"
              "print({lib}.distributed.is_available(), hasattr({lib}, 'no_such_module'))\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    outs = [subprocess.run([sys.executable, "-c", script.format(lib=lib)], capture_output=True,
                           text=True, env=env, timeout=300).stdout for lib in ("torch", "ember")]
    assert outs[0] == outs[1] and "True False" in outs[1]


def _numpy_spellings(lib):
    t = lib.arange(24.0).reshape(2, 3, 4)
    out = []
    for expr in ["lib.sum(t, axis=1)", "t.sum(axis=1, keepdims=True)", "lib.prod(t, axis=0)",
                 "lib.mean(t, axis=2, keepdims=True)", "lib.amax(t, axis=(0, 2))",
                 "lib.max(t, axis=1).values", "lib.argmax(t, axis=2)", "lib.cumsum(t, axis=1)",
                 "lib.cat([t, t], axis=1)", "lib.stack([t, t], axis=0)",
                 "lib.logsumexp(t, axis=1)", "lib.std(t, axis=1)", "lib.sort(t, axis=1).values",
                 "lib.softmax(t, axis=1)", "lib.squeeze(t[:1], axis=0)", "lib.sum(x=t)",
                 "lib.mean(a=t)", "t.var(axis=0)", "lib.all(t > 3, axis=1)"]:
        r = eval(expr)
        out.append((expr, r.tolist()))
    for expr in ["lib.sum(t, dim=1, axis=1)", "lib.roll(t, 1, axis=1)"]:
        with pytest.raises(TypeError):
            eval(expr)
    return out


def test_numpy_spelled_arguments_as_torch():
    # torchmetrics' multiscale SSIM calls torch.prod(x, axis=0); torch's argument parser
    # takes axis/keepdims/x/a for dim/keepdim/input
    assert _numpy_spellings(ember) == _numpy_spellings(torch)
