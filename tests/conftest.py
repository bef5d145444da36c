import gc
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# Property tests explore a fixed, seed-derived set of examples: CI must not fail at random on
# a newly drawn case (new cases are found by running with HYPOTHESIS_PROFILE=explore).
try:
    from hypothesis import settings
    settings.register_profile("ci", derandomize=True, print_blob=True)
    settings.register_profile("explore", derandomize=False)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover - hypothesis is in the dev extra
    pass


def pytest_configure(config):
    """With PYTHONDONTWRITEBYTECODE set (as on the machines that run the suite), every fresh
    interpreter a test starts -- the subprocess tests, each MPI rank, DataLoader workers
    started by spawn -- compiled ember's ~650 modules from source again: ~1 CPU s of its
    ~2 s ``import ember``.  The controller compiles them once into the ordinary
    ``__pycache__`` (ignored by git; ~1 CPU s, and a stat per file when they are up to date),
    which those interpreters read: the variable only stops writing.  Python checks each
    cached file against its source's mtime and size, so an edited module is compiled afresh
    as before."""
    if not sys.dont_write_bytecode or hasattr(config, "workerinput"):
        return
    import compileall
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for package in ("ember", "ember_lite"):
        compileall.compile_dir(os.path.join(root, package), quiet=2)


def pytest_collection_finish(session):
    """What collection built (test items, imported modules, the op database's records) lives
    for the whole run: after one collection it moves to the collector's permanent generation,
    so the full collections during the run (and the tests' own gc.collect()) stop rescanning
    it. Over 8,000 tests of tests/ops, _dynamo, export, func and _inductor at 1 thread, the
    generation-2 collections took 7.5 CPU s, 4.5 with the freeze (total 49.3 -> 41.7)."""
    gc.collect()
    gc.freeze()


# ---- state a test must not leave behind ------------------------------------------------------
def _eval_frame_access():
    """(current, restore) of the interpreter's frame-evaluation function (PEP 523), or None where
    this Python does not export the functions."""
    import ctypes
    api, f = ctypes.pythonapi, ctypes.PYFUNCTYPE
    try:
        interp = f(ctypes.c_void_p)(("PyInterpreterState_Get", api))()
        get = f(ctypes.c_void_p, ctypes.c_void_p)(("_PyInterpreterState_GetEvalFrameFunc", api))
        set_ = f(None, ctypes.c_void_p, ctypes.c_void_p)(
            ("_PyInterpreterState_SetEvalFrameFunc", api))
    except (AttributeError, OSError):  # pragma: no cover - another Python build
        return None
    start = get(interp)
    return (lambda: get(interp)), (lambda: set_(interp, start)), start


_EVAL_FRAME = _eval_frame_access()
_TRACERS = sys.getprofile(), sys.gettrace()


def _ember_state_left():
    """What the finished test left changed of ember's process-wide and this thread's modes
    (each is reset to its default here), as a list of strings."""
    if "ember.autograd.anomaly_mode" not in sys.modules:
        return []
    import ember
    from ember._core.node import HOOKS_ON, SAVED_HOOKS
    from ember._core.state import SHARED, STATE
    from ember.autograd.anomaly_mode import _CHECK_NAN
    left = []
    for what, bad, reset in (
            ("dispatch modes", STATE.modes or STATE.intercept, lambda: (
                setattr(STATE, "modes", []), setattr(STATE, "intercept", False))),
            ("grad mode off", not STATE.grad_enabled, lambda: setattr(STATE, "grad_enabled", True)),
            ("inference mode", STATE.inference, lambda: setattr(STATE, "inference", False)),
            ("anomaly mode", SHARED.anomaly or not _CHECK_NAN[0], lambda: ember.autograd
             .set_detect_anomaly(False)),
            ("forward-AD levels", SHARED.forward, lambda: setattr(SHARED, "forward", 0)),
            ("saved-tensor hooks", SAVED_HOOKS.stack or HOOKS_ON[0] or SAVED_HOOKS.disabled,
             lambda: (SAVED_HOOKS.stack.clear(), HOOKS_ON.__setitem__(0, 0),
                      setattr(SAVED_HOOKS, "disabled", None))),
            ("default dtype", ember.get_default_dtype() is not ember.float32,
             lambda: ember.set_default_dtype(ember.float32))):
        if bad:
            left.append(what)
            reset()
    return left


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After each test (its fixtures torn down): the sys profile/trace functions and ember's
    modes must be as before it, else the test fails here and the state is reset, so that no
    later test runs under it.  Costs ~5 us a test.

    A failed real ``torch.compile``/``torch.export`` leaves torch's frame-evaluation shim
    installed in the interpreter for good (torch 2.13 counts the thread as still in dynamo):
    CPython then calls every Python function through the shim, not inline, and the caller
    keeps its own references to the arguments.  That costs ~8% in eager Python and changes
    what ``sys.getrefcount`` sees (the engine then copied a first ``.grad`` it would take
    without a copy).  It is torch's state, not the test's fault: the default is restored
    here without failing the test."""
    result = yield
    if _EVAL_FRAME is not None and _EVAL_FRAME[0]() != _EVAL_FRAME[2]:
        _EVAL_FRAME[1]()
    left = _ember_state_left()
    if (sys.getprofile(), sys.gettrace()) != _TRACERS:
        left.append(f"sys.setprofile/settrace: {sys.getprofile()!r}, {sys.gettrace()!r}")
        sys.setprofile(_TRACERS[0])
        sys.settrace(_TRACERS[1])
    if left:
        raise AssertionError(f"{item.nodeid} left this state behind: {', '.join(left)}")
    return result
