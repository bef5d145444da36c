"""DeviceMesh / init_device_mesh on real ranks: a 2 x 2 (and 1-D) mesh's per-dimension
groups, coordinates, submeshes by name and errors, checked against the row-major layout."""
import pytest

from dist_helpers import run_ranks

pytestmark = pytest.mark.slow

WORKER = r'''
import numpy as np, ember, ember.distributed as dist
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
assert dist.init_device_mesh is init_device_mesh and dist.DeviceMesh is DeviceMesh

m1 = init_device_mesh("cpu", (n,), mesh_dim_names=("dp",))
assert m1.get_group() is dist.group.WORLD and m1.get_group("dp") is dist.group.WORLD
assert m1.size() == n and m1.ndim == 1 and m1.shape == (n,) and m1.get_local_rank() == r
assert m1.mesh.tolist() == list(range(n)) and m1.mesh.dtype == ember.int32
assert m1["dp"].get_group() is dist.group.WORLD

if n == 4:
    m = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    i, j = divmod(r, 2)                          # row-major: rank = 2 * dp + tp
    assert m.get_coordinate() == [i, j] and m.get_rank() == r
    assert m.get_local_rank("dp") == i and m.get_local_rank(1) == j
    assert m.size() == 4 and m.size(0) == 2 and m.mesh_dim_names == ("dp", "tp")
    tp, dp = m.get_group("tp"), m.get_group(0)
    assert dist.get_process_group_ranks(tp) == [2 * i, 2 * i + 1]
    assert dist.get_process_group_ranks(dp) == [j, 2 + j]
    t = ember.tensor([float(r)])
    dist.all_reduce(t, group=tp)
    assert t.item() == 4 * i + 1
    sub = m["tp"]
    assert sub.ndim == 1 and sub.mesh.tolist() == [2 * i, 2 * i + 1]
    assert sub.get_group() is tp and sub.get_local_rank() == j
    swapped = m["tp", "dp"]
    assert swapped.mesh.tolist() == [[0, 2], [1, 3]] and swapped.get_group("dp") is dp
    assert m.get_all_groups() == [dp, tp]
    again = DeviceMesh.from_group(tp, "cpu", mesh_dim_names=("tp",))
    assert again.mesh.tolist() == [2 * i, 2 * i + 1] and again.get_group() is tp
    assert m == init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    for bad, exc in ((lambda: m.get_group(), RuntimeError), (lambda: m["pp"], KeyError),
                     (lambda: init_device_mesh("cpu", (3, 2)), RuntimeError),
                     (lambda: init_device_mesh("cpu", (2, 2), mesh_dim_names=("a",)),
                      RuntimeError),
                     (lambda: DeviceMesh("cpu", [[0, 1], [1, 2]]), RuntimeError),
                     (lambda: init_device_mesh("cuda", (4,)), RuntimeError)):
        try:
            bad()
            raise SystemExit(f"no error: {bad}")
        except exc:
            pass
print(f"RANK{r} OK", flush=True)
dist.destroy_process_group()
'''


@pytest.mark.parametrize("n", [2, 4])
def test_device_mesh(n):
    rc, out = run_ranks(WORKER, n, timeout=120)
    assert rc == 0, out[-4000:]
    for r in range(n):
        assert f"RANK{r} OK" in out, out[-4000:]
