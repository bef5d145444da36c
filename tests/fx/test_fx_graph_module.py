"""GraphModule: code generation round trips, recompile, copying, pickling, saving."""
import copy
import importlib
import operator
import pickle
import sys

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.fx import GraphModule, symbolic_trace
from fxutil import AddRelu, BasicBlock, close, rand


def _block():
    ember.manual_seed(0)
    m = BasicBlock()
    m.eval()
    return m, rand(2, 4, 8, 8)


def test_code_exec_round_trip_matches():
    m, x = _block()
    gm = symbolic_trace(m)
    src = gm.code
    ns = {"ember": ember}
    exec(src, ns)
    close(ns["forward"](gm, x), m(x))
    # the generated code is readable: one statement per node, no helper indirection
    body = [ln.strip() for ln in src.strip().splitlines()[1:]]
    assert body[0] == "conv1 = self.conv1(x)"
    assert body[-1] == "return relu_1"
    assert len(body) == len(gm.graph.nodes) - 1


def test_print_readable_and_str():
    m, _ = _block()
    gm = symbolic_trace(m)
    s = gm.print_readable(print_output=False)
    assert s.startswith("class BasicBlock(ember.nn.Module):\n    def forward(self, x):")
    assert "        conv1 = self.conv1(x)" in s
    assert "def forward(self, x):" in str(gm) and "BasicBlock(" in str(gm)


def test_recompile_after_graph_edit():
    m = AddRelu()
    gm = symbolic_trace(m)
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is operator.mul:
            n.update_arg(1, 3)
    gm.recompile()
    assert "mul = relu_1 * 3" in gm.code
    x, y = rand(3, 4), rand(3, 4, seed=1)
    close(gm(x, y), m(x, y) / 2 * 3)
    with pytest.raises(TypeError):
        gm.graph = "not a graph"


def test_only_referenced_attributes_are_copied():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.used = nn.Linear(3, 3)
            self.unused = nn.Linear(3, 3)
            self.register_buffer("scale", ember.full((3,), 2.0))

        def forward(self, x):
            return self.used(x) * self.scale
    gm = symbolic_trace(M())
    assert [n for n, _ in gm.named_children()] == ["used"]
    assert set(gm.state_dict()) == {"used.weight", "used.bias", "scale"}
    assert gm.used is gm.used and isinstance(gm.used, nn.Linear)


def test_graph_module_from_dict_root():
    g = symbolic_trace(AddRelu()).graph
    lin = nn.Linear(4, 4)
    gm = GraphModule({"lin": lin}, g)
    x, y = rand(3, 4), rand(3, 4, seed=1)
    close(gm(x, y), F.relu(F.relu(lin(x) + y) + x) * 2)
    with pytest.raises(RuntimeError, match="not provided"):
        GraphModule({}, g)


def test_deepcopy_is_independent():
    m, x = _block()
    gm = symbolic_trace(m)
    gm.meta["tag"] = 1
    gm2 = copy.deepcopy(gm)
    close(gm2(x), gm(x))
    assert gm2.conv1 is not gm.conv1 and gm2.graph is not gm.graph
    assert gm2.meta == {"tag": 1} and type(gm2).__name__ == "BasicBlock"
    with ember.no_grad():
        gm2.conv1.weight.mul_(0)
    assert not ember.equal(gm2(x), gm(x))
    # editing the copy's graph leaves the original alone
    out = next(n for n in gm2.graph.nodes if n.op == "output")
    out.args = (out.args[0].args[0],)
    gm2.graph.eliminate_dead_code()
    gm2.recompile()
    assert len(gm2.graph.nodes) < len(gm.graph.nodes)
    close(gm(x), m(x))


def test_pickle_round_trip_regenerates_code():
    m, x = _block()
    gm = symbolic_trace(m)
    gm2 = pickle.loads(pickle.dumps(gm))
    assert gm2.code == gm.code and type(gm2).__name__ == "BasicBlock"
    close(gm2(x), m(x))


def test_ember_save_load_with_weights_only_false(tmp_path):
    m, x = _block()
    gm = symbolic_trace(m)
    path = tmp_path / "gm.pt"
    ember.save(gm, path)
    with pytest.raises(Exception):
        ember.load(path)  # weights-only refuses arbitrary classes
    gm2 = ember.load(path, weights_only=False)
    assert isinstance(gm2, GraphModule) and gm2.code == gm.code
    close(gm2(x), m(x))


def test_to_folder_imports_and_runs(tmp_path):
    m, x = _block()
    gm = symbolic_trace(m)
    folder = tmp_path / "exported_block"
    gm.to_folder(folder, "Block")
    src = (folder / "module.py").read_text()
    assert "class Block(ember.nn.Module):" in src
    assert "self.conv1 = ember.nn.Conv2d(4, 8, kernel_size=(3, 3)" in src
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("exported_block")
        close(mod.Block()(x), m(x))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("exported_block", None)
        sys.modules.pop("exported_block.module", None)


def test_add_delete_submodules_and_delete_unused():
    gm = symbolic_trace(AddRelu())
    assert gm.add_submodule("extra.deep.lin", nn.Linear(2, 2))
    assert isinstance(gm.get_submodule("extra.deep.lin"), nn.Linear)
    assert gm.delete_submodule("extra.deep.lin")
    assert not gm.delete_submodule("extra.deep.lin")
    assert not gm.delete_submodule("nope.x")
    gm.add_submodule("spare", nn.ReLU())
    gm.delete_all_unused_submodules()
    assert [n for n, _ in gm.named_modules()] == ["", "lin"]
    # a call_module node pointing at a new submodule
    gm.add_submodule("act", nn.Tanh())
    out = next(n for n in gm.graph.nodes if n.op == "output")
    with gm.graph.inserting_before(out):
        t = gm.graph.call_module("act", (out.args[0],))
    out.args = (t,)
    gm.graph.lint()
    gm.recompile()
    x, y = rand(3, 4), rand(3, 4, seed=1)
    close(gm(x, y), (F.relu(F.relu(gm.lin(x) + y) + x) * 2).tanh())
    with pytest.warns(UserWarning, match="no underlying reference"):
        gm.graph.call_module("missing", (t,))


def test_error_traceback_shows_generated_line():
    gm = symbolic_trace(AddRelu())
    import traceback
    try:
        gm(rand(3, 5), rand(3, 4))
    except RuntimeError as e:
        tb = "".join(traceback.format_exception(e))
        assert "<eval_with_key>" in tb and "lin = self.lin(x)" in tb
    else:
        raise AssertionError("expected a shape error")
