"""Writes program_v2.ember (a program file of format version 2: program.json of schema 2,
whose nodes carry their ``nn_module_stack`` and which lists the ``module_call_graph``) and
expected_v2.json, from the model and inputs of make_v1.py.

Never regenerate an existing version's file; add make_v<N>.py for a new format version.
Run from the repository root: ``python tests/export/data/make_v2.py``."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from make_v1 import write  # noqa: E402  (the same model: each version's file is comparable)

if __name__ == "__main__":
    write(2)
