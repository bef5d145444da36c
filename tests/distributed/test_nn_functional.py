"""Differentiable collectives (ember.distributed.nn.functional) and the functional
collectives (ember.distributed._functional_collectives) on 2 and 3 real ranks: forward values
and the gradients of the summed per-rank losses against the same computation done in NumPy
in one process (every rank rebuilds every rank's inputs and loss weights from seeds)."""
import pytest

from dist_helpers import run_ranks

pytestmark = pytest.mark.slow

WORKER = r'''
import numpy as np, ember, ember.distributed as dist
import ember.distributed.nn.functional as DF
import ember.distributed._functional_collectives as fc
from ember.distributed import ReduceOp
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
ember.set_default_dtype(ember.float64)  # the output buffers match the float64 inputs

def arr(seed, shape=(2, 3)):
    return np.random.default_rng(seed).standard_normal(shape)

def leaf(seed, shape=(2, 3)):
    return ember.tensor(arr(seed, shape), requires_grad=True)

def close(got, want, what):
    got = got.detach().numpy() if hasattr(got, "detach") else got
    assert np.allclose(got, want, atol=1e-12), (what, r, got, want)

X = lambda k: arr(100 + k)              # rank k's input
W = lambda k, i=0: arr(200 + 10 * k + i)  # rank k's loss weights (for its output i)

# all_reduce (SUM, AVG), with a nonlinear loss: L = sum_k <W_k, S^2>
for op, scale in ((ReduceOp.SUM, 1.0), (ReduceOp.AVG, 1.0 / n)):
    x = leaf(100 + r)
    out = DF.all_reduce(x, op=op)
    S = scale * sum(X(k) for k in range(n))
    close(out, S, "all_reduce")
    close(x, X(r), "all_reduce leaves its input")
    (out ** 2 * ember.tensor(W(r))).sum().backward()
    close(x.grad, scale * sum(2 * S * W(k) for k in range(n)), "all_reduce grad")

# broadcast from the last rank: only the source's input gets the summed gradient
x = leaf(100 + r)
out = DF.broadcast(x, src=n - 1)
close(out, X(n - 1), "broadcast")
(out * ember.tensor(W(r))).sum().backward()
close(x.grad, sum(W(k) for k in range(n)) if r == n - 1 else 0 * X(r), "broadcast grad")

# reduce onto rank 0: every input gets rank 0's output gradient
x = leaf(100 + r)
out = DF.reduce(x, 0)
close(out, sum(X(k) for k in range(n)) if r == 0 else X(r), "reduce")
(out * ember.tensor(W(r))).sum().backward()
close(x.grad, W(0), "reduce grad")

# all_gather: rank j's input gets the sum over ranks of their gradients for slot j
x = leaf(100 + r)
outs = DF.all_gather(x)
assert len(outs) == n
for j in range(n):
    close(outs[j], X(j), "all_gather")
sum((o * ember.tensor(W(r, j))).sum() for j, o in enumerate(outs)).backward()
close(x.grad, sum(W(k, r) for k in range(n)), "all_gather grad")

# _all_gather_base: concatenation along dim 0
x = leaf(100 + r)
out = DF._all_gather_base(ember.empty(2 * n, 3), x)
close(out, np.concatenate([X(k) for k in range(n)]), "_all_gather_base")
(out * ember.tensor(arr(300 + r, (2 * n, 3)))).sum().backward()
close(x.grad, sum(arr(300 + k, (2 * n, 3)) for k in range(n))[2 * r:2 * r + 2],
      "_all_gather_base grad")

# gather onto rank 1: rank j's input gets rank 1's gradient for slot j
dst = 1
x = leaf(100 + r)
outs = DF.gather(x, dst=dst)
for j in range(n):
    close(outs[j], X(j) if r == dst else 0 * X(j), "gather")
sum((o * ember.tensor(W(r, j))).sum() for j, o in enumerate(outs)).backward()
close(x.grad, W(dst, r), "gather grad")

# scatter from rank 0: only the source's inputs get gradients
src = 0
ts = [leaf(400 + 10 * r + i) for i in range(n)]
out = DF.scatter(ts, src=src)
close(out, arr(400 + 10 * src + r), "scatter")
(out * ember.tensor(W(r))).sum().backward()
for i, t in enumerate(ts):
    close(t.grad, W(i) if r == src else 0 * W(i), "scatter grad")

# reduce_scatter: input i of every rank feeds rank i's output
ins = [leaf(500 + 10 * r + i) for i in range(n)]
out = DF.reduce_scatter(ember.empty(2, 3), ins)
close(out, sum(arr(500 + 10 * k + r) for k in range(n)), "reduce_scatter")
(out * ember.tensor(W(r))).sum().backward()
for i, t in enumerate(ins):
    close(t.grad, W(i), "reduce_scatter grad")

# all_to_all: rank k's input i lands in rank i's output k
ins = [leaf(600 + 10 * r + i) for i in range(n)]
outs = DF.all_to_all([ember.empty(2, 3) for _ in range(n)], ins)
for k in range(n):
    close(outs[k], arr(600 + 10 * k + r), "all_to_all")
sum((o * ember.tensor(W(r, k))).sum() for k, o in enumerate(outs)).backward()
for i, t in enumerate(ins):
    close(t.grad, W(i, r), "all_to_all grad")

# all_to_all_single with uneven splits: rank k sends rows(k, i) rows to rank i
rows = lambda k, i: (k + i) % 2 + 1
def rank_input(k):
    return arr(700 + k, (sum(rows(k, i) for i in range(n)), 2))
def piece(k, i):
    start = sum(rows(k, j) for j in range(i))
    return rank_input(k)[start:start + rows(k, i)]
x = ember.tensor(rank_input(r), requires_grad=True)
osz = [rows(k, r) for k in range(n)]
isz = [rows(r, i) for i in range(n)]
out = DF.all_to_all_single(ember.empty(sum(osz), 2), x, osz, isz)
close(out, np.concatenate([piece(k, r) for k in range(n)]), "all_to_all_single")
wout = lambda k: arr(800 + k, (sum(rows(j, k) for j in range(n)), 2))
(out * ember.tensor(wout(r))).sum().backward()
# rank i's output block k (from rank k) has weights wout(i)[rows before k]
want = np.concatenate([wout(i)[sum(rows(j, i) for j in range(r)):
                               sum(rows(j, i) for j in range(r + 1))] for i in range(n)])
close(x.grad, want, "all_to_all_single grad")

# double backward through all_reduce: d/dx of (d(sum_k <W_k, S^2>)/dx . v)
x = leaf(100 + r)
out = DF.all_reduce(x)
g, = ember.autograd.grad((out ** 2 * ember.tensor(W(r))).sum(), x, create_graph=True)
(g * ember.tensor(arr(900 + r))).sum().backward()
# g_r = 2 S sum_k W_k, so d/dx_j of sum_r <v_r, g_r> = 2 sum_k W_k * sum_r v_r
close(x.grad, 2 * sum(W(k) for k in range(n)) * sum(arr(900 + k) for k in range(n)),
      "all_reduce double backward")

# functional collectives: new tensors, groups given as lists, meshes and (mesh, dim)
from ember.distributed.device_mesh import init_device_mesh
mesh = init_device_mesh("cpu", (n,), mesh_dim_names=("dp",))
for group in (dist.group.WORLD, list(range(n)), mesh, (mesh, "dp")):
    x = ember.tensor(X(r))
    out = fc.wait_tensor(fc.all_reduce(x, "sum", group))
    close(out, sum(X(k) for k in range(n)), "fc.all_reduce")
    close(x, X(r), "fc.all_reduce leaves its input")
    close(fc.all_reduce(x, "max", group), np.max([X(k) for k in range(n)], axis=0), "max")
    close(fc.all_gather_tensor(x, 1, group), np.concatenate([X(k) for k in range(n)], 1),
          "fc.all_gather_tensor dim 1")
    big = ember.tensor(arr(1000 + r, (2, 3 * n)))
    want = sum(arr(1000 + k, (2, 3 * n)) for k in range(n))[:, 3 * r:3 * r + 3]
    close(fc.reduce_scatter_tensor(big, "sum", 1, group), want, "fc.reduce_scatter_tensor")
    close(fc.broadcast(x, 0, group), X(0), "fc.broadcast")
    close(fc.all_gather_tensor(x, -1, group), np.concatenate([X(k) for k in range(n)], 1),
          "fc.all_gather_tensor dim -1")
    tall = ember.tensor(arr(1300 + r, (2 * n, 3)))
    close(fc.all_to_all_single(tall, None, None, group),
          np.concatenate([arr(1300 + k, (2 * n, 3))[2 * r:2 * r + 2] for k in range(n)]),
          "fc.all_to_all_single")
x = leaf(100 + r)
out = fc.all_gather_tensor_autograd(x, 1, dist.group.WORLD)
(out * ember.tensor(arr(1100 + r, (2, 3 * n)))).sum().backward()
close(x.grad, sum(arr(1100 + k, (2, 3 * n)) for k in range(n))[:, 3 * r:3 * r + 3],
      "all_gather_tensor_autograd grad")
x = ember.tensor(arr(1200 + r, (2 * n, 3)), requires_grad=True)
out = fc.reduce_scatter_tensor_autograd(x, "sum", 0, dist.group.WORLD)
(out * ember.tensor(W(r))).sum().backward()
close(x.grad, np.concatenate([W(k) for k in range(n)]), "reduce_scatter_tensor_autograd grad")
x = ember.tensor(arr(1400 + r, (2 * n, 3)), requires_grad=True)
out = fc.all_to_all_single_autograd(x, None, None, dist.group.WORLD)
(out * ember.tensor(arr(1500 + r, (2 * n, 3)))).sum().backward()
close(x.grad, np.concatenate([arr(1500 + i, (2 * n, 3))[2 * r:2 * r + 2] for i in range(n)]),
      "all_to_all_single_autograd grad")
try:
    fc.all_reduce(x, "median", dist.group.WORLD)
    raise SystemExit("no error for an unknown op")
except ValueError as e:
    assert "median" in str(e)
print(f"RANK{r} OK", flush=True)
dist.destroy_process_group()
'''


@pytest.mark.parametrize("n", [2, 3])
def test_differentiable_collectives(n):
    rc, out = run_ranks(WORKER, n, timeout=180)
    assert rc == 0, out[-4000:]
    for r in range(n):
        assert f"RANK{r} OK" in out, out[-4000:]
