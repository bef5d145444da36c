"""ember.distributed.pipelining on 2 and 3 real ranks: every schedule (GPipe, 1F1B,
interleaved 1F1B) gives the unsplit model's outputs, losses and parameter gradients; each
stage holds only its share of the parameters.  Splitting and the schedules' orders are
also checked in one process.  Also the rank program: ``python test_pipelining.py CASE``."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from dist_helpers import _env, free_port  # noqa: E402


def launch(case, nproc, timeout=300):
    env = dict(_env(), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    proc = subprocess.run([mpiexec, "-n", str(nproc), sys.executable, HERE, case],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"rank program failed ({proc.returncode}):\n{proc.stdout}\n" \
                                 f"{proc.stderr[-6000:]}"
    for r in range(nproc):
        assert f"RANK{r} OK" in proc.stdout, proc.stdout + proc.stderr[-3000:]


def make_model(torch, n_layers=6, width=8):
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(5, width)
            self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(n_layers)])
            self.out = nn.Linear(width, 3)

        def forward(self, x):
            x = torch.tanh(self.inp(x))
            for layer in self.layers:
                x = torch.relu(layer(x)) + x
            return self.out(x)
    torch.manual_seed(0)
    return MLP()


def split_spec(num_stages, n_layers=6):
    from ember.distributed.pipelining import SplitPoint
    per = n_layers // num_stages
    return {f"layers.{k * per}": SplitPoint.BEGINNING for k in range(1, num_stages)}


def data(torch):
    g = torch.Generator().manual_seed(3)
    return torch.randn(12, 5, generator=g), torch.randn(12, 3, generator=g)


def reference(torch, model, x, y):
    model.zero_grad()
    out = model(x)
    torch.nn.functional.mse_loss(out, y).backward()
    return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


# ---------------------------------------------------------------------------------------
# rank program
# ---------------------------------------------------------------------------------------
def case_schedules():
    import copy
    import ember as torch
    import ember.distributed as dist
    from ember.distributed.pipelining import (Schedule1F1B, ScheduleGPipe,
                                              ScheduleInterleaved1F1B, ScheduleLoopedBFS,
                                              pipeline)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = data(torch)
    loss_fn = torch.nn.functional.mse_loss
    base = make_model(torch)
    ref_out, ref_grads = reference(torch, copy.deepcopy(base), x, y)
    total = sum(p.numel() for p in base.parameters())
    runs = [(ScheduleGPipe, 1), (Schedule1F1B, 1)]
    # 6 stages: 3 per rank on 2 ranks, 2 per rank on 3
    runs += [(ScheduleInterleaved1F1B, 6 // world), (ScheduleLoopedBFS, 6 // world)]
    for cls, per_rank in runs:
        for n_mb in (world, 4):
            model = copy.deepcopy(base)
            num_stages = world * per_rank
            pipe = pipeline(model, mb_args=(x[:3],), split_spec=split_spec(num_stages))
            assert pipe.num_stages == num_stages
            stages = [pipe.build_stage(s, device="cpu")
                      for s in range(rank, num_stages, world)]
            mine = sum(p.numel() for st in stages for p in st.submod.parameters())
            assert mine < total, (mine, total)      # a rank holds only its stages
            sched = (cls(stages, n_mb, loss_fn=loss_fn) if per_rank > 1
                     else cls(stages[0], n_mb, loss_fn=loss_fn))
            losses = []
            if rank == 0:
                out = sched.step(x)
            elif rank == world - 1:
                out = sched.step(target=y, losses=losses)
            else:
                out = sched.step()
            if rank == (num_stages - 1) % world:
                np.testing.assert_allclose(out.detach().numpy(), ref_out.numpy(), atol=1e-6)
                assert len(losses) == n_mb
                mean_loss = sum(l.item() for l in losses) / n_mb
                np.testing.assert_allclose(
                    mean_loss, loss_fn(ref_out, y).item(), rtol=1e-5)
            else:
                assert out is None
            seen = 0
            for st in stages:
                for name, p in st.submod.named_parameters():
                    np.testing.assert_allclose(p.grad.numpy(), ref_grads[name].numpy(),
                                               atol=1e-6, err_msg=f"{cls.__name__} {name}")
                    seen += 1
            assert seen > 0
    print(f"RANK{rank} OK", flush=True)


def case_manual_stage():
    """A hand-written stage per rank (torch's manual PipelineStage), with pipe_split-free
    modules, inference through eval, and a second training step accumulating grads."""
    import ember as torch
    import ember.distributed as dist
    from ember.distributed.pipelining import PipelineStage, ScheduleGPipe
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    layers = [torch.nn.Linear(4, 4) for _ in range(world)]
    full = torch.nn.Sequential(*[torch.nn.Sequential(l, torch.nn.Sigmoid()) for l in layers])
    stage = PipelineStage(full[rank], rank, world, "cpu")
    x = torch.linspace(-1, 1, 16).reshape(4, 4)
    sched = ScheduleGPipe(stage, 2, loss_fn=lambda out, t: (out * t).sum())
    for _ in range(2):
        out = sched.step(x) if rank == 0 else sched.step(target=torch.ones(4, 4))
    full.zero_grad()
    for _ in range(2):
        ((full(x[:2])).sum() + full(x[2:]).sum()).div(2).backward()
    np.testing.assert_allclose(layers[rank].weight.grad.numpy(),
                               full[rank][0].weight.grad.numpy(), atol=1e-6)
    ev = sched.eval(x) if rank == 0 else sched.eval()
    if rank == world - 1:
        np.testing.assert_allclose(ev.numpy(), full(x).detach().numpy(), atol=1e-6)
        np.testing.assert_allclose(out.detach().numpy(), full(x).detach().numpy(), atol=1e-6)
    print(f"RANK{rank} OK", flush=True)


# ---------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("nproc", [2, 3])
def test_schedules_match_unsplit_model(nproc):
    launch("schedules", nproc)


@pytest.mark.slow
def test_manual_stages_on_two_ranks():
    launch("manual_stage", 2)


def test_split_keeps_names_and_values():
    import ember
    from ember.distributed.pipelining import SplitPoint, pipe_split, pipeline

    class Marked(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = ember.nn.Linear(3, 4), ember.nn.Linear(4, 2)

        def forward(self, x):
            h = ember.relu(self.a(x))
            pipe_split()
            return self.b(h) * 2
    m = Marked()
    x = ember.randn(5, 3)
    pipe = pipeline(m, mb_args=(x,))
    assert pipe.num_stages == 2
    assert [n for n, _ in pipe.get_stage_module(1).named_parameters()] == ["b.weight", "b.bias"]
    assert pipe.get_stage_module(0).a.weight is m.a.weight
    np.testing.assert_array_equal(pipe(x).detach().numpy(), m(x).detach().numpy())
    mid = pipe.get_stage_module(0)(x)
    np.testing.assert_array_equal(pipe.get_stage_module(1)(mid).detach().numpy(),
                                  m(x).detach().numpy())
    big = make_model(ember)
    pipe = pipeline(big, mb_args=(x,), split_spec=split_spec(3))
    assert pipe.num_stages == 3
    with pytest.raises(ValueError, match="never calls"):
        pipeline(big, mb_args=(x,), split_spec={"nope": SplitPoint.END})


def make_skip_model(torch, n_layers=6, width=8):
    """Skip connections across stages: the first activation and the input reach the
    output past every stage; ``scale`` is a keyword input used only at the end."""
    nn = torch.nn

    class SkipNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(5, width)
            self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(n_layers)])
            self.out = nn.Linear(width, 3)

        def forward(self, x, scale=None):
            h0 = torch.tanh(self.inp(x))
            h = h0
            for layer in self.layers:
                h = torch.relu(layer(h))
            return self.out(h + h0) * scale + x[:, :3]
    torch.manual_seed(0)
    return SkipNet()


def split_policy(num_stages, n_layers=6):
    """torch's split_policy: a function that puts pipe_split nodes into the traced graph."""
    from ember.distributed.pipelining import pipe_split
    per = n_layers // num_stages
    starts = {f"layers.{k * per}" for k in range(1, num_stages)}

    def policy(gm):
        for node in list(gm.graph.nodes):
            if node.op == "call_module" and node.target in starts:
                with gm.graph.inserting_before(node):
                    gm.graph.call_function(pipe_split, ())
        gm.recompile()
        return gm
    return policy


def case_skips():
    """Skip connections, a keyword input (mb_kwargs) and split_policy on 2 or 3 ranks."""
    import copy
    import ember as torch
    import ember.distributed as dist
    from ember.distributed.pipelining import Schedule1F1B, ScheduleGPipe, pipeline
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = data(torch)
    scale = torch.linspace(0.5, 2, 12).reshape(12, 1)
    loss_fn = torch.nn.functional.mse_loss
    base = make_skip_model(torch)
    ref = copy.deepcopy(base)
    ref_out = ref(x, scale=scale)
    loss_fn(ref_out, y).backward()
    ref_grads = {n: p.grad for n, p in ref.named_parameters()}
    for cls, how in [(ScheduleGPipe, "policy"), (Schedule1F1B, "spec")]:
        model = copy.deepcopy(base)
        split = ({"split_policy": split_policy(world)} if how == "policy"
                 else {"split_spec": split_spec(world)})
        pipe = pipeline(model, mb_args=(x[:3],), mb_kwargs={"scale": scale[:3]}, **split)
        assert pipe.num_stages == world
        stage = pipe.build_stage(rank, device="cpu")
        sched = cls(stage, 4, loss_fn=loss_fn)
        if rank == 0:
            out = sched.step(x, scale=scale)
        elif rank == world - 1:
            out = sched.step(target=y)
        else:
            out = sched.step()
        if rank == world - 1:
            np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy(),
                                       rtol=1e-5, atol=1e-6)
        names = [n for n, _ in stage.submod.named_parameters()]
        assert names and ("inp.weight" in names) == (rank == 0)
        for name, p in stage.submod.named_parameters():
            np.testing.assert_allclose(p.grad.numpy(), ref_grads[name].numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=f"{cls.__name__} {name}")
    print(f"RANK{rank} OK", flush=True)


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [2, 3])
def test_skip_connections_kwargs_and_split_policy_match_unsplit_model(nproc):
    launch("skips", nproc)


def test_skip_connections_are_carried_through_the_stages_between():
    import ember
    from ember.distributed.pipelining import pipeline
    m = make_skip_model(ember)
    x, scale = ember.randn(4, 5), ember.rand(4, 1)
    pipe = pipeline(m, mb_args=(x,), mb_kwargs={"scale": scale}, split_spec=split_spec(3))
    want = m(x, scale=scale).detach().numpy()
    np.testing.assert_allclose(pipe(x, scale=scale).detach().numpy(), want, rtol=1e-6)
    # stage by stage: each takes only its predecessor's outputs
    out = pipe.get_stage_module(0)(x, scale=scale)
    for i in (1, 2):
        out = pipe.get_stage_module(i)(*(out if isinstance(out, tuple) else (out,)))
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-6)
    pol = pipeline(m, mb_args=(x,), mb_kwargs={"scale": scale}, split_policy=split_policy(3))
    assert pol.num_stages == 3
    np.testing.assert_allclose(pol(x, scale=scale).detach().numpy(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="Cannot specify both"):
        pipeline(m, mb_args=(x,), split_spec=split_spec(3), split_policy=split_policy(3))
    with pytest.raises(TypeError, match="not parameters of the forward"):
        pipeline(m, mb_args=(x,), mb_kwargs={"nope": scale})
    with pytest.raises(TypeError, match="must return a GraphModule"):
        pipeline(m, mb_args=(x,), split_policy=lambda gm: None)


def test_single_process_interleaved_matches_unsplit():
    """Without a process group every stage runs on this rank (through the local mailbox)."""
    import copy
    import ember
    from ember.distributed.pipelining import ScheduleInterleaved1F1B, pipeline
    base = make_model(ember)
    x, y = data(ember)
    ref_out, ref_grads = reference(ember, copy.deepcopy(base), x, y)
    from ember.distributed.pipelining import build_stage
    pipe = pipeline(base, mb_args=(x,), split_spec=split_spec(3))
    stages = [build_stage(pipe.get_stage_module(i), i, pipe.pipe_info, "cpu")
              for i in range(3)]
    sched = ScheduleInterleaved1F1B(stages, 3, loss_fn=ember.nn.functional.mse_loss)
    out = sched.step(x, target=y)
    np.testing.assert_allclose(out.detach().numpy(), ref_out.numpy(), atol=1e-6)
    for n, p in base.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ref_grads[n].numpy(), atol=1e-6)


@pytest.mark.parametrize("kind", ["gpipe", "1f1b", "interleaved", "looped_bfs"])
def test_schedule_orders_never_deadlock(kind):
    from ember.distributed.pipelining.schedules import order_for, simulate
    for world, per in [(2, 1), (3, 1), (4, 1), (2, 2), (2, 3), (3, 2), (4, 2)]:
        if kind == "1f1b" and per != 1:
            continue
        stages = world * per
        for n in (1, 2, 3, 4, 5, 8):
            orders = [order_for(kind, r, world, stages, n) for r in range(world)]
            for r, o in enumerate(orders):    # every step of every local stage, once
                want = {(k, s, m) for k in "FB" for s in range(r, stages, world)
                        for m in range(n)}
                assert sorted(o) == sorted(want)
            simulate(orders, stages)
    if kind == "1f1b":     # 1F1B bounds the microbatches in flight per stage
        o = order_for("1f1b", 0, 4, 4, 8)
        live = peak = 0
        for k, _, _ in o:
            live += 1 if k == "F" else -1
            peak = max(peak, live)
        assert peak == 4
    with pytest.raises(RuntimeError, match="deadlock"):
        simulate([[("B", 0, 0), ("F", 0, 0)], [("F", 1, 0), ("B", 1, 0)]], 2)


@pytest.mark.parametrize("name", ["pipeline", "pipe_split", "PipelineStage", "ScheduleGPipe",
                                  "Schedule1F1B", "ScheduleInterleaved1F1B",
                                  "ScheduleLoopedBFS", "Pipe.build_stage", "build_stage"])
def test_signatures_match_torch(name):
    import inspect
    import torch.distributed.pipelining as tp
    import ember.distributed.pipelining as ep

    def get(root):
        obj = root
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    assert list(inspect.signature(get(ep)).parameters) == \
        list(inspect.signature(get(tp)).parameters)


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
