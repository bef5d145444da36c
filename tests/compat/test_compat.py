"""ember.compat: unmodified PyTorch code runs on ember (in a fresh interpreter)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)


def _run(args, **kw):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300,
                          **kw)


def test_unmodified_torch_training_script_runs_on_ember(tmp_path):
    ck = tmp_path / "ck.pt"
    r = _run(["-m", "ember.compat", os.path.join(HERE, "torch_script.py"), str(ck)])
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("torch module is ember;"), line
    acc = float(line.split("accuracy ")[1].split(";")[0])
    assert acc > 0.9
    assert line.endswith("reloaded equal: True")
    # the checkpoint the script wrote is a real torch checkpoint
    import torch
    state = torch.load(ck)
    assert state["model"]["0.weight"].shape == (16, 4)


def test_install_maps_submodules_and_reports_missing_ones():
    code = ("import ember.compat as c; c.install(); import torch, torch.nn.functional as F, "
            "torch.utils.data as d; import ember; "
            "assert torch is ember and F is ember.nn.functional and d is ember.utils.data\n"
            "try:\n    import torch.no_such_module\nexcept ImportError as e:\n    print(e)")
    r = _run(["-c", code])
    assert r.returncode == 0, r.stderr
    assert "torch.no_such_module' has no ember equivalent" in r.stdout


def test_install_refuses_when_real_torch_is_loaded():
    r = _run(["-c", "import torch; import ember.compat as c; c.install()"])
    assert r.returncode != 0 and "already imported" in r.stderr


@pytest.mark.parametrize("args", [[], ["--help"]])
def test_usage(args):
    r = _run(["-m", "ember.compat", *args])
    assert r.returncode == 2 and "usage" in r.stderr


def test_dtypes_and_sizes_print_as_torch_under_the_shim():
    code = ("import ember.compat as c; c.install(); import torch; "
            "print(str(torch.float32), repr(torch.ones(2, 3).shape), torch.ones(1).get_device())")
    r = _run(["-c", code])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["torch.float32", "torch.Size([2,", "3])", "-1"]


def test_functorch_control_flow_and_logging_internals_under_the_shim():
    code = (
        "import ember.compat as c; c.install(); import os, torch\n"
        "from functorch.experimental.control_flow import cond\n"
        "import functorch\n"
        "os.environ['TORCH_LOGS_FORMAT'] = ''\n"
        "torch._logging._internal.DEFAULT_FORMATTER = torch._logging._internal._default_formatter()\n"
        "torch._logging._internal._init_logs()\n"
        "x = torch.ones(3)\n"
        "print(cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,)).tolist())\n"
        "print(functorch.vmap(torch.sin)(torch.zeros(2)).tolist())\n"
        "torch._logging.set_logs(graph_code=True)\n"
        "torch.compile(lambda t: t.cos())(x)\n")
    r = _run(["-c", code])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["[2.0, 2.0, 2.0]", "[0.0, 0.0]"]
    # TORCH_LOGS_FORMAT="" gives the bare message, torch's format
    assert "def forward(self, l_t):" in r.stderr and "[ember.compile]" not in r.stderr


def test_the_shim_names_itself_torch_and_has_torch_C_basics():
    """Libraries check their framework by name (Pyro's patch_dependency asserts
    ``target.split(".")[0] == torch.__name__``) and ask ``torch._C._get_tracing_state()``;
    uninstall() gives ember its name back."""
    code = (
        "import ember.compat as c; c.install(); c.install(); import torch, torch._C, ember\n"
        "print(torch.__name__, torch.nn.__name__, torch._C is ember.compat._C)\n"
        "def patch(target, root=torch):\n"
        "    parts = target.split('.')\n"
        "    assert parts[0] == root.__name__\n"
        "    m = root\n"
        "    for p in parts[1:-1]:\n"
        "        m = getattr(m, p)\n"
        "    return getattr(m, parts[-1])\n"
        "print(patch('torch.distributions.transforms.Transform.__getstate__') is "
        "ember.distributions.transforms.Transform.__getstate__)\n"
        "seen = []\n"
        "def f(x):\n"
        "    seen.append(torch._C._get_tracing_state() is not None)\n"
        "    return x * 2\n"
        "f(torch.ones(2)); torch.jit.trace(f, (torch.ones(2),))\n"
        "print(seen[0], all(seen[1:]), torch._C._LinAlgError is torch.linalg.LinAlgError, "
        "torch._C._log_api_usage_once('x'))\n"
        "try:\n    torch._C._jit_set_profiling_mode\nexcept AttributeError as e:\n    print(e)\n"
        "c.uninstall(); print(ember.__name__, hasattr(ember, '_C'), 'torch' in __import__('sys')"
        ".modules)\n")
    r = _run(["-c", code])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "torch ember.nn True" and lines[1] == "True"
    assert lines[2] == "False True True None"
    assert "has no attribute '_jit_set_profiling_mode' (ember.compat provides only" in lines[3]
    assert lines[4] == "ember False False"


def _disabled_subclass_types(m, C):
    class S(m.Tensor):
        __torch_function__ = C._disabled_torch_function_impl
    s = m.ones(2).as_subclass(S)
    called = C._disabled_torch_function_impl(m.add, (S,), (s, 1))
    return ([type(x).__name__ for x in (s, s + 1, s.clone(), m.cat([s, s]), s[0], called)],
            (s + 1).tolist())


def test_torch_C_names_that_libraries_use():
    """torch_geometric's Index/EdgeIndex set ``__torch_function__ =
    torch._C._disabled_torch_function_impl`` (no override: operations return plain tensors);
    kornia asks ``_are_functorch_transforms_active()``; ``_get_default_device()`` is a str."""
    import torch
    import ember
    from ember.compat import _C
    assert _disabled_subclass_types(ember, _C) == _disabled_subclass_types(torch, torch._C) == \
        (["S", "Tensor", "Tensor", "Tensor", "Tensor", "Tensor"], [2.0, 2.0])
    assert _C._get_default_device() == torch._C._get_default_device() == "cpu"
    seen = []

    def f(x):
        seen.append(_C._are_functorch_transforms_active())
        return (x * x).sum()
    f(ember.ones(2))
    ember.func.grad(f)(ember.ones(2))
    ember.func.vmap(f)(ember.ones(3, 2))
    assert seen == [False, True, True]
    assert not _C._are_functorch_transforms_active()
