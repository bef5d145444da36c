import pytest

pytest.importorskip("mpi4py", reason="ember[distributed] (mpi4py, mpich) is not installed")

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # dist_helpers, shared by these tests
