import gc
import os
import sys

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
