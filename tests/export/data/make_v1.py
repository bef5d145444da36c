"""Writes program_v1.ember (a program file of format version 1) and expected_v1.json (its
inputs and the outputs ember eager computed for them when the file was made).

Kept so that every runtime release is tested against the files older embers wrote: never
regenerate an existing version's file; add make_v<N>.py for a new format version.
Run from the repository root: ``python tests/export/data/make_v1.py``."""
import json
import pathlib

import numpy as np

import ember
import ember.nn as nn
from ember.export import Dim, export, save

HERE = pathlib.Path(__file__).parent


class Net(nn.Module):
    """Touches most of the format: parameters and a buffer, a dynamic batch with a size
    computed in the graph (the reshape), composite ops the lite graph decomposes, a
    data-dependent branch (cond's two sub-graphs) and an integer output."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.norm = nn.LayerNorm(6)
        self.fc2 = nn.Linear(3, 2)
        self.register_buffer("offset", ember.tensor([-0.38, 0.38]))

    def forward(self, x):
        h = nn.functional.gelu(self.norm(self.fc1(x)))
        h = h.reshape(x.shape[0], 2, 3).mean(dim=1)
        y = self.fc2(h) + self.offset
        y = ember.cond(x.sum() > 0, lambda y: y * 2.0, lambda y: y - 1.0, (y,))
        return y, y.argmax(dim=1)


def write(version):
    """program_v<version>.ember and expected_v<version>.json, as this ember writes them
    (make_v2.py reuses it: the same model in each version's file).  Only the version this
    ember writes can be made: an older one's kept file is never regenerated."""
    from ember.export.serde import FORMAT_VERSION
    if version != FORMAT_VERSION:
        raise SystemExit(f"this ember writes format version {FORMAT_VERSION}, not {version}")
    ember.manual_seed(2026)
    net = Net().eval()
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((n, 4)).astype(np.float32) for n in (3, 5)]
    inputs += [np.full((2, 4), -1.0, np.float32), np.full((2, 4), 1.0, np.float32)]
    ep = export(net, (ember.from_numpy(inputs[0]),),
                dynamic_shapes=({0: Dim("batch", min=1, max=1024)},))
    save(ep, HERE / f"program_v{version}.ember", extra_files={"made_by": f"make_v{version}.py"})
    cases = []
    for x in inputs:
        y, idx = net(ember.from_numpy(x))
        cases.append({"input": x.tolist(), "output": y.detach().numpy().tolist(),
                      "argmax": idx.numpy().tolist()})
    (HERE / f"expected_v{version}.json").write_text(
        json.dumps({"format_version": version, "cases": cases}, indent=1) + "\n")


def main():
    write(1)


if __name__ == "__main__":
    main()
