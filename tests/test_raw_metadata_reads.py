"""Backend neutrality, checked on the source: no new reads of a tensor's raw-array metadata.

Composites, rules and library code read ``x.shape``/``x.dtype``/``x.ndim``/``x.numel()``,
never ``x._data.shape`` (and ``.dtype``/``.ndim``/``.size``): the raw array is NumPy's or
another backend's, and a symbolic size or a non-NumPy array cannot answer for it
(DESIGN.md, decision 1).  Kernels -- functions whose first parameter is ``xp`` -- work on
raw arrays by design and are not counted.

Every module under ``ember/`` is parsed with ``ast`` and each attribute chain
``<expr>._data.{shape,dtype,ndim,size}`` outside a kernel is a read.  The packages in
``CLEAN`` have none, and must keep it so.  Elsewhere a read is allowed only up to the count
in ``ALLOWED`` for its file; the counts may only go down: when a file loses reads, lower
its entry (the test says to), so the list stays the true remainder.
"""
import ast
import functools
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
META = frozenset({"shape", "dtype", "ndim", "size"})

# packages (or modules) free of raw metadata reads
CLEAN = ("ember/sparse/", "ember/linalg/", "ember/special/", "ember/fft/", "ember/nn/modules/",
         "ember/nn/utils/", "ember/nn/init.py", "ember/optim/", "ember/utils/",
         "ember/distributions/", "ember/distributed/", "ember/nn/parallel/", "ember/library/",
         "ember/ops/fft/", "ember/ops/linalg/", "ember/_inductor/")

# the remaining reads, per file (may only shrink)
ALLOWED = {
    # the Tensor's own metadata properties and the storage/view machinery under them
    "ember/_core/tensor.py": 8,
    "ember/_core/inplace.py": 7,
    "ember/_core/meta.py": 2,
    "ember/_core/node.py": 5,
    "ember/_core/random.py": 1,
    "ember/_core/shared_storage.py": 4,
    # autograd's engine (helper work in progress); Function.apply's node metadata, read raw
    # as record() reads it (a Size per tensor costs ~5% of apply)
    "ember/autograd/engine.py": 6,
    "ember/autograd/function.py": 6,
    # x[i]'s hot path (building a Size costs ~5% of x[i]) and the parse of its key
    "ember/ops/indexing.py": 2,
    # programs on top
    "ember/_dynamo/numpy_array.py": 1,
}


def raw_metadata_reads(source):
    """Line numbers of ``<expr>._data.<meta>`` outside kernels in Python ``source``."""
    lines = []

    def visit(node, in_kernel):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            params = node.args.posonlyargs + node.args.args
            in_kernel = in_kernel or (bool(params) and params[0].arg == "xp")
        elif (not in_kernel and isinstance(node, ast.Attribute) and node.attr in META
              and isinstance(node.value, ast.Attribute) and node.value.attr == "_data"):
            lines.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, in_kernel)
    visit(ast.parse(source), False)
    return lines


@functools.lru_cache(maxsize=None)
def _reads_by_file():
    found = {}
    for dirpath, _, files in os.walk(os.path.join(ROOT, "ember")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
                with open(path, encoding="utf-8") as fh:
                    lines = raw_metadata_reads(fh.read())
                if lines:
                    found[rel] = lines
    return found


def test_the_scanner_sees_reads_and_skips_kernels():
    src = ("def f(x):\n    return x._data.shape, x.shape, x._data.reshape(1)\n"
           "def k(xp, a):\n    return a._data.dtype\n"
           "g = lambda t: t._data.ndim + t.grad._data.size\n"
           "LU_data.dtype\n")
    assert raw_metadata_reads(src) == [2, 5, 5]


def test_cleaned_packages_read_no_raw_metadata():
    bad = [f"{path}:{line}" for path, lines in sorted(_reads_by_file().items())
           if path.startswith(CLEAN) for line in lines]
    assert not bad, ("raw-array metadata reads (use x.shape/x.dtype/x.ndim/x.numel()):\n  "
                     + "\n  ".join(bad))


def test_raw_metadata_reads_elsewhere_only_shrink():
    found = {p: lines for p, lines in _reads_by_file().items() if not p.startswith(CLEAN)}
    grown = [f"{p}: {len(lines)} reads (allowed {ALLOWED.get(p, 0)}), lines {lines}"
             for p, lines in sorted(found.items()) if len(lines) > ALLOWED.get(p, 0)]
    assert not grown, ("new raw-array metadata reads (use x.shape/x.dtype/x.ndim/x.numel()):"
                       "\n  " + "\n  ".join(grown))
    shrunk = [f'"{p}": {len(found.get(p, ()))}' for p, n in sorted(ALLOWED.items())
              if len(found.get(p, ())) < n]
    assert not shrunk, ("reads were removed: lower (or delete) these ALLOWED entries:\n  "
                        + "\n  ".join(shrunk))
