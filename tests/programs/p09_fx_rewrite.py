"""torch.fx: symbolic_trace a model, inspect the graph, rewrite it (swap an
activation, fold a multiply-by-one, insert a call_module), Interpreter-based
shape propagation, subgraph_rewriter.replace_pattern, and check numerics."""
import operator

import numpy as np
import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = self.fc2(h) * 1.0
        return self.norm(x + h)


class Net(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.blocks = nn.Sequential(Block(d), Block(d))
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        x = self.blocks(x)
        return torch.softmax(self.head(x).clamp(min=-5.0), dim=-1)


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))


@fx.wrap
def scaled(v, k):
    return v * k


def fn(a, b):
    return scaled(a, 3) + b.sum(dim=0, keepdim=True)


class CountCalls(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.counts = {}

    def run_node(self, n):
        self.counts[n.op] = self.counts.get(n.op, 0) + 1
        return super().run_node(n)


def main():
    model = Net()
    numpy_init(model, 0)
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32))
    ref = model(x)

    gm = fx.symbolic_trace(model)
    ops = [n.op for n in gm.graph.nodes]
    print(f"= node_ops {ops.count('placeholder')} {ops.count('call_module')} {ops.count('call_function')} {ops.count('call_method')} {ops.count('output')}")
    print(f"= targets {[str(n.target) for n in gm.graph.nodes if n.op == 'call_module']}")
    print(f"ok traced_matches {torch.allclose(gm(x), ref)}")
    print(f"ok code_mentions_relu {'relu' in gm.code}")

    # 1. replace F.relu with F.gelu
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is F.relu:
            node.target = F.gelu
            node.kwargs = {}  # relu's inplace= does not apply to gelu
    # 2. fold "* 1.0"
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is operator.mul and node.args[1] == 1.0:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    # 3. insert a Tanh module before the head
    gm.add_submodule("pre_head", nn.Tanh())
    head = next(n for n in gm.graph.nodes if n.op == "call_module" and n.target == "head")
    with gm.graph.inserting_before(head):
        t = gm.graph.call_module("pre_head", (head.args[0],))
    head.args = (t,)
    gm.graph.lint()
    gm.recompile()

    class Expected(nn.Module):
        def __init__(self, src):
            super().__init__()
            self.src = src

        def forward(self, x):
            for b in self.src.blocks:
                x = b.norm(x + b.fc2(F.gelu(b.fc1(x))))
            return torch.softmax(self.src.head(torch.tanh(x)).clamp(min=-5.0), dim=-1)

    out = gm(x)
    print(f"ok rewritten_matches {torch.allclose(out, Expected(model)(x), atol=1e-6)}")
    print(f"= rewritten_sum {out[:, 0].sum().item():.6f}")
    print(f"= n_mul_nodes {sum(1 for n in gm.graph.nodes if n.target is operator.mul)}")

    # shape propagation and a counting interpreter
    ShapeProp(gm).propagate(x)
    shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if "tensor_meta" in n.meta}
    print(f"= shape_of_head {shapes['head']} fc1 {shapes['blocks_0_fc1']}")
    interp = CountCalls(gm)
    res = interp.run(x)
    print(f"= interp_counts {sorted(interp.counts.items())}")
    print(f"ok interp_matches {torch.equal(res, out)}")

    # pattern rewrite: softmax(clamp(x)) -> log_softmax(x).exp()
    def pattern(v):
        return torch.softmax(v.clamp(min=-5.0), dim=-1)

    def replacement(v):
        return torch.log_softmax(v, dim=-1).exp()

    matches = fx.subgraph_rewriter.replace_pattern(gm, pattern, replacement)
    print(f"= pattern_matches {len(matches)}")
    print(f"ok after_pattern_close {torch.allclose(gm(x), out, atol=1e-2)}")

    # a traced function with a custom leaf
    g = fx.symbolic_trace(fn)
    print(f"= fn_result {g(torch.ones(2, 2), torch.arange(4.0).reshape(2, 2)).tolist()}")
    print(f"ok leaf_kept {any(n.target is scaled for n in g.graph.nodes)}")


if __name__ == "__main__":
    main()
