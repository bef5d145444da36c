"""Finding ``mpiexec`` (the mpich wheel installs it next to the Python executable)."""
import os
import shutil
import sys

__all__ = ["find_mpiexec"]


def find_mpiexec(required=True):
    """The path of ``mpiexec``: ``$EMBER_MPIEXEC``, then next to ``sys.executable``, then on
    PATH.  Raises RuntimeError naming the extra to install when ``required`` and absent."""
    env = os.environ.get("EMBER_MPIEXEC")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(sys.executable))
    for name in ("mpiexec", "mpiexec.hydra", "mpirun"):
        cand = os.path.join(here, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found or not required:
        return found
    raise RuntimeError("mpiexec was not found next to the Python executable or on PATH; install "
                       "ember's 'distributed' extra (pip install 'ember[distributed]', which "
                       "brings the mpich wheel with mpiexec) or set EMBER_MPIEXEC")
