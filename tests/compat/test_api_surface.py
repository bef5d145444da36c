"""The API surface against torch: every public torch name exists in ember, compatibly.

Walks torch's public namespaces (``__all__``, else the public ``dir()`` entries that
torch defines), including the submodules programs import by path, and the public
members of the main classes.  Every name must exist under ember at the same dotted
path (an importable module where torch has a module), with the same parameter names,
order, kinds and defaults where both sides' signatures can be introspected -- or be
listed in ``api_exclusions.txt`` with its reason.  Run with ``-s`` for the coverage
table (also written to ``api_surface_coverage.txt`` in pytest's base temp folder).
"""
import fnmatch
import importlib
import inspect
import os
import subprocess
import sys

import pytest

import torch
import ember  # noqa: E402

HERE = os.path.dirname(__file__)

NAMESPACES = [
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils",
    "torch.nn.utils.rnn", "torch.nn.utils.parametrize", "torch.nn.utils.parametrizations",
    "torch.nn.utils.stateless", "torch.nn.parameter", "torch.nn.modules",
    "torch.nn.modules.module", "torch.nn.modules.activation", "torch.nn.modules.linear",
    "torch.nn.modules.conv", "torch.nn.modules.container", "torch.nn.modules.loss",
    "torch.nn.modules.normalization", "torch.nn.modules.batchnorm", "torch.nn.modules.dropout",
    "torch.nn.modules.pooling", "torch.nn.modules.rnn", "torch.nn.modules.sparse",
    "torch.nn.modules.transformer", "torch.nn.modules.padding", "torch.nn.modules.flatten",
    "torch.nn.modules.pixelshuffle", "torch.nn.modules.upsampling", "torch.nn.modules.distance",
    "torch.nn.modules.fold", "torch.nn.modules.lazy", "torch.nn.modules.instancenorm",
    "torch.nn.modules.channelshuffle", "torch.nn.modules.adaptive", "torch.nn.parallel",
    "torch.optim", "torch.optim.optimizer", "torch.optim.lr_scheduler", "torch.optim.swa_utils",
    "torch.utils", "torch.utils.data", "torch.utils.data.dataloader",
    "torch.utils.data.dataset", "torch.utils.data.sampler", "torch.utils.data.distributed",
    "torch.utils.checkpoint", "torch.utils.hooks",
    "torch.autograd", "torch.autograd.graph", "torch.autograd.functional",
    "torch.autograd.forward_ad", "torch.autograd.function", "torch.autograd.grad_mode",
    "torch.autograd.profiler", "torch.func", "torch.fx", "torch.fx.proxy", "torch.fx.node",
    "torch.fx.graph", "torch.fx.graph_module", "torch.fx.interpreter", "torch.fx.subgraph_rewriter",
    "torch.fft", "torch.linalg", "torch.special", "torch.testing", "torch.random", "torch.amp",
    "torch.cuda", "torch.cuda.amp", "torch.backends", "torch.backends.cudnn",
    "torch.backends.cuda", "torch.backends.mps", "torch.backends.mkldnn", "torch.backends.mkl",
    "torch.backends.openmp", "torch.backends.opt_einsum", "torch.backends.cpu",
    "torch.serialization", "torch.storage", "torch.hub", "torch.overrides", "torch.types",
    "torch.distributions", "torch.profiler", "torch.library", "torch.version",
    "torch.onnx", "torch.onnx.errors",
    "torch.jit", "torch.jit.mobile",
    "torch.export", "torch.export.dynamic_shapes", "torch.export.graph_signature",
]

# torch class -> (ember class, or a factory of an ember instance for instance attributes)
CLASSES = {
    "torch.Tensor": "ember.Tensor",
    "torch.nn.Module": "ember.nn.Module",
    "torch.optim.Optimizer": "ember.optim.Optimizer",
    "torch.utils.data.DataLoader": "ember.utils.data.DataLoader",
    "torch.fx.Graph": "ember.fx.Graph",
    "torch.fx.Node": "ember.fx.Node",
    "torch.fx.GraphModule": "ember.fx.GraphModule",
    "torch.autograd.Function": "ember.autograd.Function",
    "torch.autograd.function.FunctionCtx": "ember.autograd.function.FunctionCtx",
    "torch.Generator": "ember.Generator",
    "torch.dtype": "ember.dtype",
    "torch.device": "ember.device",
    "torch.Size": "ember.Size",
    "torch.TypedStorage": "ember.TypedStorage",
    "torch.UntypedStorage": "ember.UntypedStorage",
    "torch.onnx.ONNXProgram": "ember.onnx.ONNXProgram",
    "torch.export.ExportedProgram": "ember.export.ExportedProgram",
}

# a few members exist only on instances (set in __init__) on one side or the other
INSTANCES = {
    "ember.Tensor": lambda: ember.zeros(2),
    "ember.nn.Module": lambda: ember.nn.Module(),
    "ember.device": lambda: ember.device("cpu"),
    "ember.dtype": lambda: ember.float32,
    "ember.Size": lambda: ember.Size([2]),
    "ember.Generator": lambda: ember.Generator(),
    "ember.fx.Node": lambda: ember.fx.Graph().placeholder("x"),
    "ember.fx.Graph": lambda: ember.fx.Graph(),
    "ember.optim.Optimizer": lambda: ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], 0.1),
}


def _load_exclusions():
    names, sigs = [], []
    with open(os.path.join(HERE, "api_exclusions.txt")) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pattern, sep, reason = line.partition(": ")
            assert sep and reason.strip(), f"api_exclusions.txt:{lineno}: no reason given"
            target = names
            if pattern.startswith("sig "):
                target, pattern = sigs, pattern[4:]
            target.append((pattern.strip(), reason.strip(), lineno))
    return names, sigs


EXCLUDED, SIG_EXCLUDED = _load_exclusions()
USED = set()  # exclusion line numbers that excused something


def _excluded(table, name):
    for pattern, _, lineno in table:
        if name == pattern or fnmatch.fnmatchcase(name, pattern):
            USED.add(lineno)
            return True
    return False


_BARE = []


def _bare_torch_modules():
    """The torch modules a bare ``import torch`` loads, read in a fresh interpreter: a
    submodule that another test imported (``torch.utils.cpp_extension`` through
    ``torch.utils.backend_registration``) must not change what this walk sees."""
    if not _BARE:
        out = subprocess.run(
            [sys.executable, "-c", "import sys, torch\n"
             "print('\\n'.join(m for m in sys.modules if m.startswith('torch')))"],
            capture_output=True, text=True, check=True, timeout=300)
        _BARE.append(frozenset(out.stdout.split()))
    return _BARE[0]


def _public_names(mod):
    names = getattr(mod, "__all__", None)
    if names is not None:
        return sorted(set(names))
    out = []
    for k in dir(mod):
        if k.startswith("_"):
            continue
        v = getattr(mod, k, None)
        if inspect.ismodule(v) and v.__name__ != f"{mod.__name__}.{k}":
            continue  # an imported module (``torch``, ``m``), not a submodule of this one
        if inspect.ismodule(v) and v.__name__ not in _bare_torch_modules():
            continue  # loaded by something other than ``import torch``
        origin = v.__name__ if inspect.ismodule(v) else getattr(v, "__module__", None)
        if isinstance(origin, str) and origin.startswith("torch"):
            out.append(k)
    return sorted(out)


def _ember_path(torch_path):
    return "ember" + torch_path[len("torch"):]


def _resolve(path):
    """The object at dotted ``path``: the longest importable module, then attributes."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(path)


def _norm_default(v):
    if v is inspect.Parameter.empty:
        return v
    if isinstance(v, (bool, int, float, str, type(None), tuple, list)):
        return repr(v).replace("ember.", "torch.")  # tuple subclasses: ember.Size([])
    if inspect.isfunction(v) or inspect.isclass(v) or inspect.isbuiltin(v):
        return getattr(v, "__name__", repr(v))
    if type(v).__name__ == "Generator" and v is getattr(
            sys.modules[type(v).__module__.split(".")[0]], "default_generator", None):
        return "default_generator"  # its repr carries a memory address
    return str(v).replace("ember.", "torch.")


def _sig(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def signature_problem(t_obj, e_obj, method=False):
    """Why ember's signature is not compatible with torch's, or None.  Compatible: the same
    parameter names in the same order, of the same kinds (positional-only in torch may be
    positional-or-keyword in ember) and defaults; ember may add parameters with defaults, and
    a bare ``(*args, **kwargs)`` on either side is not checked."""
    ts, es = _sig(t_obj), _sig(e_obj)
    if ts is None or es is None:
        return None
    if inspect.isclass(t_obj) and not ts.parameters and \
            getattr(t_obj, "__init__", None) is object.__init__:
        return None  # a C type without a Python constructor signature
    tp, ep = list(ts.parameters.values()), list(es.parameters.values())
    if method:  # both bound to the instance (ember's Tensor methods name it ``input``)
        tp, ep = tp[1:], ep[1:]
    var = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    if all(p.kind in var for p in ep) and ep or all(p.kind in var for p in tp) and tp:
        return None
    P = inspect.Parameter
    e_by_name = {p.name: (i, p) for i, p in enumerate(ep)}
    for i, p in enumerate(tp):
        if p.kind in var:
            if not any(q.kind == p.kind for q in ep):
                return f"torch takes {'*' if p.kind == P.VAR_POSITIONAL else '**'}{p.name}"
            continue
        if p.name not in e_by_name:
            if p.kind == P.POSITIONAL_ONLY and i < len(ep) and ep[i].kind in \
                    (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD):
                continue  # positional-only names are not part of the interface
            if p.kind == P.KEYWORD_ONLY and any(q.kind == P.VAR_KEYWORD for q in ep):
                continue
            return f"no parameter {p.name!r} (torch {ts}, ember {es})"
        j, q = e_by_name[p.name]
        if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD) and j != i:
            return f"parameter {p.name!r} at position {j}, torch has it at {i} " \
                   f"(torch {ts}, ember {es})"
        if p.kind == P.KEYWORD_ONLY and q.kind not in (P.KEYWORD_ONLY, P.POSITIONAL_OR_KEYWORD):
            return f"parameter {p.name!r} is keyword-only in torch (torch {ts}, ember {es})"
        if p.kind == P.POSITIONAL_OR_KEYWORD and q.kind != P.POSITIONAL_OR_KEYWORD:
            return f"parameter {p.name!r} is positional-or-keyword in torch " \
                   f"(torch {ts}, ember {es})"
        if p.default is not P.empty and _norm_default(p.default) != _norm_default(q.default):
            return f"parameter {p.name!r} defaults to {_norm_default(q.default)}, torch " \
                   f"{_norm_default(p.default)}"
    t_names = {p.name for p in tp}
    for q in ep:
        if q.name not in t_names and q.kind not in var and q.default is P.empty:
            return f"ember requires extra parameter {q.name!r} (torch {ts}, ember {es})"
    return None


STALE = []  # filled while `test_exclusions_are_not_stale` re-checks the excluded names
_RECHECK = [False]


def _check_name(torch_path, t_obj, problems, stats, method=False, e_obj=None, e_owner=None):
    if _excluded(EXCLUDED, torch_path):
        stats["excluded"] += 1
        if _RECHECK[0] and any(p == torch_path for p, _, _ in EXCLUDED):
            found = []
            _check_name.__wrapped__(torch_path, t_obj, found, dict(stats), method, e_obj)
            if not found:
                STALE.append(torch_path)
        return
    _check_name.__wrapped__(torch_path, t_obj, problems, stats, method, e_obj)


def _check_present(torch_path, t_obj, problems, stats, method=False, e_obj=None):
    stats["checked"] += 1
    e_path = _ember_path(torch_path)
    if e_obj is None:
        if inspect.ismodule(t_obj):
            try:
                e_obj = importlib.import_module(e_path)
            except ImportError as e:
                problems.append(f"{torch_path}: no importable module {e_path} ({e})")
                return
        else:
            try:
                e_obj = _resolve(e_path)
            except (AttributeError, ImportError):
                problems.append(f"{torch_path}: missing ({e_path})")
                return
    if callable(t_obj) and not inspect.ismodule(t_obj) and \
            not _excluded(SIG_EXCLUDED, torch_path):
        why = signature_problem(t_obj, e_obj, method=method)
        if why:
            problems.append(f"{torch_path}: signature: {why}")
            return
    stats["ok"] += 1


_check_name.__wrapped__ = _check_present
COVERAGE = {}


def _new_stats(key):
    s = COVERAGE[key] = {"checked": 0, "ok": 0, "excluded": 0}
    return s


@pytest.fixture(scope="module", autouse=True)
def _coverage_table(tmp_path_factory):
    yield
    if not COVERAGE:
        return
    lines = [f"{'namespace':44s} {'names':>6s} {'excl':>5s} {'ok':>5s} {'coverage':>9s} "
             f"{'of all':>7s}"]
    tot = {"checked": 0, "ok": 0, "excluded": 0}
    for k, s in COVERAGE.items():
        for f in tot:
            tot[f] += s[f]
        cov = 100.0 * s["ok"] / s["checked"] if s["checked"] else 100.0
        n = s["checked"] + s["excluded"]
        lines.append(f"{k:44s} {n:6d} {s['excluded']:5d} {s['ok']:5d} {cov:8.1f}% "
                     f"{100.0 * s['ok'] / n if n else 100.0:6.1f}%")
    cov = 100.0 * tot["ok"] / tot["checked"] if tot["checked"] else 100.0
    n = tot["checked"] + tot["excluded"]
    lines.append(f"{'TOTAL':44s} {n:6d} {tot['excluded']:5d} {tot['ok']:5d} {cov:8.1f}% "
                 f"{100.0 * tot['ok'] / n if n else 100.0:6.1f}%")
    text = "\n".join(lines)
    path = tmp_path_factory.getbasetemp() / "api_surface_coverage.txt"
    path.write_text(text + "\n")
    sys.stdout.write("\n\nAPI surface coverage ('coverage': of the names not excluded; "
                     "'of all': of every torch name walked):\n" +
                     text + f"\n(written to {path})\n")


@pytest.mark.parametrize("ns", NAMESPACES)
def test_namespace(ns):
    stats = _new_stats(ns)
    if _excluded(EXCLUDED, ns):
        stats["excluded"] += 1
        return
    t_mod = importlib.import_module(ns)
    problems = []
    _check_name(ns, t_mod, problems, stats) if ns != "torch" else None
    if problems:
        pytest.fail("\n".join(problems))
    for name in _public_names(t_mod):
        try:
            t_obj = getattr(t_mod, name)
        except AttributeError:
            continue  # listed in torch's __all__ but not defined on this build
        _check_name(f"{ns}.{name}", t_obj, problems, stats)
    assert not problems, f"{len(problems)} names of {ns} missing or incompatible in ember " \
                         f"(add them, or exclude them with a reason):\n" + "\n".join(problems)


@pytest.mark.parametrize("cls", list(CLASSES))
def test_class_members(cls):
    stats = _new_stats(cls + " (members)")
    if _excluded(EXCLUDED, cls):
        stats["excluded"] += 1
        return
    t_cls = _resolve(cls)
    problems = []
    try:
        e_cls = _resolve(CLASSES[cls])
    except (AttributeError, ImportError):
        pytest.fail(f"{cls}: missing ({CLASSES[cls]})")
    instance = None
    for name in sorted(n for n in dir(t_cls) if not n.startswith("_")):
        try:
            t_obj = inspect.getattr_static(t_cls, name)
        except AttributeError:
            t_obj = getattr(t_cls, name)
        if isinstance(t_obj, (staticmethod, classmethod)):
            t_obj = getattr(t_cls, name)
        e_obj = None
        if not hasattr(e_cls, name):
            if CLASSES[cls] in INSTANCES and instance is None:
                instance = INSTANCES[CLASSES[cls]]()
            if instance is None or not hasattr(instance, name):
                if not _excluded(EXCLUDED, f"{cls}.{name}"):
                    stats["checked"] += 1
                    problems.append(f"{cls}.{name}: missing ({CLASSES[cls]}.{name})")
                else:
                    stats["excluded"] += 1
                continue
            e_obj = getattr(instance, name)
        else:
            e_obj = inspect.getattr_static(e_cls, name)
            if isinstance(e_obj, (staticmethod, classmethod)):
                e_obj = getattr(e_cls, name)
        is_fn = inspect.isfunction(t_obj) and inspect.isfunction(e_obj)
        _check_name(f"{cls}.{name}", t_obj if is_fn else object(), problems, stats,
                    method=True, e_obj=e_obj)
    assert not problems, f"{len(problems)} members of {cls} missing or incompatible in ember " \
                         f"(add them, or exclude them with a reason):\n" + "\n".join(problems)


def test_signature_check_catches_incompatibilities():
    def t(a, b=1, *, c=None):
        pass

    def same(a, b=1, *, c=None, extra=2):
        pass

    def renamed(x, b=1, *, c=None):
        pass

    def default(a, b=2, *, c=None):
        pass

    def order(b=1, a=None, *, c=None):
        pass

    def required_extra(a, b=1, *, c=None, d):
        pass

    assert signature_problem(t, same) is None
    assert "'a'" in signature_problem(t, renamed)
    assert "defaults to 2" in signature_problem(t, default)
    assert "position" in signature_problem(t, order)
    assert "extra parameter 'd'" in signature_problem(t, required_extra)


def test_exclusions_name_existing_torch_entries():
    """Each exact (non-pattern) exclusion names something torch has, so typos cannot hide."""
    bad = []
    for pattern, _, lineno in EXCLUDED + SIG_EXCLUDED:
        if any(c in pattern for c in "*?["):
            continue
        try:
            _resolve(pattern)
        except (AttributeError, ImportError):
            bad.append(f"api_exclusions.txt:{lineno}: {pattern} is not a torch name")
    assert not bad, "\n".join(bad)


def test_exclusions_are_not_stale():
    """An exclusion naming something ember now has compatibly must go: it would hide a later
    regression (entries for later issues are pruned when those issues land)."""
    STALE.clear()
    _RECHECK[0] = True
    saved = dict(COVERAGE)
    try:
        for ns in NAMESPACES:
            test_namespace(ns)
        for cls in CLASSES:
            test_class_members(cls)
    finally:
        _RECHECK[0] = False
        COVERAGE.clear()
        COVERAGE.update(saved)
    assert not STALE, "api_exclusions.txt entries ember now satisfies (delete them):\n" + \
        "\n".join(STALE)
