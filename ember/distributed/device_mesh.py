"""``DeviceMesh`` and ``init_device_mesh`` (torch.distributed.device_mesh) for CPU ranks.

A mesh arranges the global ranks in an n-dimensional array; each dimension has one process
group per line of ranks along it (for a (dp, tp) mesh of 2 x 3 ranks: 3 "dp" groups of 2
and 2 "tp" groups of 3), and a rank's ``get_group(dim)`` is the line it sits on.  Every
rank builds every line's group, in the same order, because creating a group is collective
over its members.  A line that spans the whole world reuses the default group.
"""
import numpy as np

__all__ = ["DeviceMesh", "init_device_mesh"]


def _dist():
    from .. import distributed as dist
    return dist


class DeviceMesh:
    """A logical n-dimensional arrangement of ranks, with a process group per dimension.

    Args:
        device_type: "cpu" (ember's distributed backend is on CPU).
        mesh: the global ranks, as a nested list, NumPy array or integer tensor; its shape is
            the mesh's shape.
        mesh_dim_names: a name for each dimension, used by `get_group`, `get_local_rank`
            and indexing (``mesh["dp"]``).

    Every rank of the world must construct the mesh, with the same arguments.
    """

    def __init__(self, device_type, mesh=None, *, mesh_dim_names=None, backend_override=None,
                 _init_backend=True):
        dist = _dist()
        if mesh is None:
            raise TypeError("DeviceMesh: mesh (the array of global ranks) is required")
        arr = np.asarray(mesh._data if hasattr(mesh, "_data") else mesh)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"DeviceMesh: mesh must hold integer ranks, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
        flat = arr.ravel()
        if len(set(flat.tolist())) != flat.size:
            raise RuntimeError(f"DeviceMesh: mesh {arr.tolist()} holds duplicate ranks")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != arr.ndim:
                raise RuntimeError(f"DeviceMesh: mesh_dim_names {mesh_dim_names} must have one "
                                   f"name per mesh dimension ({arr.ndim})")
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError(f"DeviceMesh: mesh_dim_names {mesh_dim_names} must be unique")
        self._device_type = str(device_type)
        self._mesh = arr
        self._mesh_dim_names = mesh_dim_names
        self._rank = dist.get_rank() if dist.is_initialized() else 0
        where = np.argwhere(arr == self._rank)
        self._coordinate = tuple(int(c) for c in where[0]) if len(where) else None
        self._dim_groups = None
        if _init_backend:
            if not dist.is_initialized():
                raise RuntimeError("DeviceMesh: the default process group is not initialized; "
                                   "call init_process_group first (or use init_device_mesh)")
            world = dist.get_world_size()
            if flat.max(initial=-1) >= world or flat.min(initial=0) < 0:
                raise RuntimeError(f"DeviceMesh: mesh {arr.tolist()} names ranks outside the "
                                   f"world of {world}")
            self._dim_groups = [self._make_dim_group(d, world) for d in range(arr.ndim)]

    def _make_dim_group(self, dim, world):
        dist = _dist()
        lines = np.moveaxis(self._mesh, dim, -1).reshape(-1, self._mesh.shape[dim])
        mine = None
        for line in lines:
            ranks = [int(r) for r in line]
            if sorted(ranks) == list(range(world)) and ranks == sorted(ranks):
                pg = dist.group.WORLD
            else:
                pg = dist.new_group(ranks)
            if self._rank in ranks:
                mine = pg
        return mine

    # ---- properties -------------------------------------------------------------------
    @property
    def device_type(self):
        return self._device_type

    @property
    def mesh(self):
        """The global ranks of the mesh, as an int32 tensor of the mesh's shape."""
        from .._core.tensor import wrap
        return wrap(self._mesh.astype(np.int32))

    @property
    def mesh_dim_names(self):
        return self._mesh_dim_names

    @property
    def ndim(self):
        return self._mesh.ndim

    @property
    def shape(self):
        return tuple(self._mesh.shape)

    def size(self, mesh_dim=None):
        """The number of ranks in the mesh, or along ``mesh_dim``."""
        if mesh_dim is None:
            return int(self._mesh.size)
        return int(self._mesh.shape[self._dim_index(mesh_dim)])

    def get_rank(self):
        """This process's global rank."""
        return self._rank

    def get_coordinate(self):
        """This rank's index in the mesh (None if the mesh does not hold it)."""
        return None if self._coordinate is None else list(self._coordinate)

    def get_local_rank(self, mesh_dim=None):
        """This rank's position along ``mesh_dim`` (optional for a 1-D mesh): its rank in
        that dimension's group."""
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions; optional "
                                   "kwarg `mesh_dim` needs to be specified when "
                                   "device_mesh.ndim > 1.")
            mesh_dim = 0
        if self._coordinate is None:
            raise RuntimeError(f"rank {self._rank} is not part of {self!r}")
        return self._coordinate[self._dim_index(mesh_dim)]

    def _dim_index(self, mesh_dim):
        if isinstance(mesh_dim, str):
            if not self._mesh_dim_names or mesh_dim not in self._mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self._mesh_dim_names}")
            return self._mesh_dim_names.index(mesh_dim)
        d = int(mesh_dim)
        if not -self.ndim <= d < self.ndim:
            raise IndexError(f"mesh_dim {mesh_dim} is out of range for a {self.ndim}-D mesh")
        return d % self.ndim

    # ---- groups -----------------------------------------------------------------------
    def get_group(self, mesh_dim=None):
        """The process group of this rank's line along ``mesh_dim`` (optional for a 1-D
        mesh)."""
        if self._dim_groups is None:
            raise RuntimeError("DeviceMesh process groups not initialized!")
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions; optional "
                                   "kwarg `mesh_dim` needs to be specified when "
                                   "device_mesh.ndim > 1.")
            mesh_dim = 0
        return self._dim_groups[self._dim_index(mesh_dim)]

    def get_all_groups(self):
        """The process group of every mesh dimension, in dimension order."""
        return [self.get_group(d) for d in range(self.ndim)]

    def __getitem__(self, mesh_dim_names):
        """The submesh of the named dimensions that holds this rank: ``mesh["tp"]`` is the
        1-D mesh of this rank's tp line, with the tp group."""
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names.")
        dims = [self._dim_index(n) for n in names]
        if len(set(dims)) != len(dims):
            raise KeyError(f"Invalid mesh_dim_names {names}: a dimension is named twice")
        if self._coordinate is None:
            raise RuntimeError(f"rank {self._rank} is not part of {self!r}")
        index = tuple(slice(None) if d in dims else c for d, c in enumerate(self._coordinate))
        kept = [d for d in range(self.ndim) if d in dims]
        sub = self._mesh[index]
        sub = np.transpose(sub, [kept.index(d) for d in dims])
        out = DeviceMesh(self._device_type, sub, mesh_dim_names=names, _init_backend=False)
        if self._dim_groups is not None:
            out._dim_groups = [self._dim_groups[d] for d in dims]
        return out

    @staticmethod
    def from_group(group, device_type, mesh=None, *, mesh_dim_names=None):
        """A mesh over existing process group(s): one group gives a 1-D mesh of its ranks;
        a list of groups (one per dimension) needs ``mesh``."""
        dist = _dist()
        groups = list(group) if isinstance(group, (list, tuple)) else [group]
        if len(groups) > 1 and mesh is None:
            raise ValueError("DeviceMesh.from_group: mesh is required with several groups")
        if mesh is None:
            mesh = dist.get_process_group_ranks(groups[0])
        out = DeviceMesh(device_type, mesh, mesh_dim_names=mesh_dim_names, _init_backend=False)
        if out.ndim != len(groups):
            raise ValueError(f"DeviceMesh.from_group: {len(groups)} group(s) for a "
                             f"{out.ndim}-D mesh")
        out._dim_groups = groups
        return out

    # ---- object protocol --------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_traceback):
        return None

    def _key(self):
        return (tuple(self._mesh.ravel().tolist()), self.shape, self._device_type,
                self._mesh_dim_names)

    def __eq__(self, other):
        return self is other or (isinstance(other, DeviceMesh) and self._key() == other._key())

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self._mesh_dim_names:
            dims = "(" + ", ".join(f"{n}={s}" for n, s in zip(self._mesh_dim_names,
                                                              self.shape)) + ")"
        else:
            dims = str(self.shape)
        return f"DeviceMesh({dims}, '{self._device_type}', mesh={self._mesh.tolist()})"


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """A `DeviceMesh` of ``mesh_shape`` over the world's ranks in row-major order
    (initializing the default process group from the environment if needed).

    Example::
        >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        >>> mesh["tp"].get_group(), mesh.get_local_rank("dp")
    """
    dist = _dist()
    mesh_shape = tuple(int(s) for s in mesh_shape)
    if mesh_dim_names is not None and len(mesh_dim_names) != len(mesh_shape):
        raise RuntimeError("mesh_shape and mesh_dim_names should have same length! Found "
                           f"len(mesh_dim_names): {len(mesh_dim_names)} and len(mesh_shape):"
                           f"{len(mesh_shape)}.")
    if str(device_type).split(":")[0] != "cpu":
        raise RuntimeError(f"init_device_mesh: device_type {device_type!r}: ember's "
                           "distributed backend runs on CPU; use 'cpu'")
    if not dist.is_initialized():
        dist.init_process_group()
    world = dist.get_world_size()
    if int(np.prod(mesh_shape)) != world:
        raise RuntimeError(f"init_device_mesh: mesh_shape {mesh_shape} holds "
                           f"{int(np.prod(mesh_shape))} ranks, but the world has {world}")
    return DeviceMesh(device_type, np.arange(world).reshape(mesh_shape),
                      mesh_dim_names=mesh_dim_names, backend_override=backend_override)
