"""Writes program_v2.ember (a program file of format version 2: program.json of schema 2,
whose nodes carry their ``nn_module_stack`` and which lists the ``module_call_graph``) and
expected_v2.json, from the model and inputs of make_v1.py.

Never regenerate an existing version's file; add make_v<N>.py for a new format version.
Run from the repository root: ``python tests/export/data/make_v2.py``."""
import json
import pathlib
import sys

import numpy as np

import ember
from ember.export import Dim, export, save

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
from make_v1 import Net  # noqa: E402  (the same model: each version's file is comparable)


def main():
    ember.manual_seed(2026)
    net = Net().eval()
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((n, 4)).astype(np.float32) for n in (3, 5)]
    inputs += [np.full((2, 4), -1.0, np.float32), np.full((2, 4), 1.0, np.float32)]
    ep = export(net, (ember.from_numpy(inputs[0]),),
                dynamic_shapes=({0: Dim("batch", min=1, max=1024)},))
    save(ep, HERE / "program_v2.ember", extra_files={"made_by": "make_v2.py"})
    cases = []
    for x in inputs:
        y, idx = net(ember.from_numpy(x))
        cases.append({"input": x.tolist(), "output": y.detach().numpy().tolist(),
                      "argmax": idx.numpy().tolist()})
    (HERE / "expected_v2.json").write_text(json.dumps({"format_version": 2, "cases": cases},
                                                      indent=1) + "\n")


if __name__ == "__main__":
    main()
