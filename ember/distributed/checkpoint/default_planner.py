"""The default planners: what each rank writes (each shard once, replicated values once) and
which stored pieces each rank reads for the layout it loads into (resharding)."""
import dataclasses
import io

from ..tensor._api import DTensor
from ._flatten import flatten_state_dict, set_element
from .metadata import (BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex,
                       TensorProperties, TensorStorageMetadata)
from .planner import (BytesIOWriteData, LoadItemType, LoadPlan, LoadPlanner, ReadItem,
                      SavePlan, SavePlanner, TensorWriteData, WriteItem, WriteItemType)

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner", "create_default_local_save_plan",
           "create_default_global_save_plan", "create_default_local_load_plan"]


def _is_tensor(obj):
    from ..._core.tensor import Tensor
    return isinstance(obj, Tensor)


def _box_of(obj):
    """(global size, offsets, sizes, local tensor) of a tensor or DTensor value."""
    if isinstance(obj, DTensor):
        offsets, sizes = obj._local_box()
        return tuple(obj.shape), offsets, sizes, obj.to_local()
    shape = tuple(obj.shape)
    return shape, (0,) * len(shape), shape, obj


def _numel(sizes):
    n = 1
    for s in sizes:
        n *= int(s)
    return n


def _dump_bytes(obj):
    from .._ember import save
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


def create_default_local_save_plan(state_dict, is_coordinator=False):
    items = []
    for fqn, obj in state_dict.items():
        if isinstance(obj, DTensor) and any(p.is_partial() for p in obj.placements):
            raise ValueError(f"{fqn!r} is a DTensor with Partial placements "
                             f"{obj.placements}: redistribute it to Shard/Replicate before "
                             "saving")
        if isinstance(obj, DTensor) or _is_tensor(obj):
            size, offsets, sizes, local = _box_of(obj)
            if _numel(sizes) == 0 and _numel(size) != 0:
                continue  # an empty shard of a non-empty tensor has nothing to write
            kind = WriteItemType.SHARD if isinstance(obj, DTensor) else WriteItemType.TENSOR
            props = TensorProperties(dtype=local.dtype, requires_grad=bool(local.requires_grad))
            items.append(WriteItem(
                index=MetadataIndex(fqn, offsets), type=kind,
                tensor_data=TensorWriteData(ChunkStorageMetadata(offsets, sizes), props, size)))
        else:
            items.append(WriteItem(index=MetadataIndex(fqn), type=WriteItemType.BYTE_IO,
                                   bytes_io_data=BytesIOWriteData(-1)))
    return SavePlan(items)


def _item_bytes(item):
    if item.tensor_data is not None:
        return item.tensor_storage_size()
    return max(item.bytes_io_data.nbytes if item.bytes_io_data else 0, 1)


def create_default_global_save_plan(all_plans, rewrite_index_hints=True,
                                    dedup_save_to_lowest_rank=False, _check_tiles=True):
    """Keeps each distinct item (key and chunk offsets) on one rank: the least loaded of
    those holding it (or the lowest), so replicated values are written once and the bytes
    spread over the ranks; then checks that every tensor's chunks tile it exactly."""
    holders = {}
    for rank, plan in enumerate(all_plans):
        for item in plan.items:
            holders.setdefault(item.index, []).append((rank, item))
    load = [0] * len(all_plans)
    chosen = {}
    # items held by one rank first, then the shared ones, biggest first, to balance
    order = sorted(holders.items(), key=lambda kv: (len(kv[1]) > 1, -_item_bytes(kv[1][0][1])))
    for index, hs in order:
        ranks = [r for r, _ in hs]
        rank = min(ranks) if dedup_save_to_lowest_rank else min(ranks, key=lambda r: (load[r], r))
        load[rank] += _item_bytes(hs[0][1])
        chosen[index] = rank
    new_plans = []
    for rank, plan in enumerate(all_plans):
        mine = [it for it in plan.items if chosen.get(it.index) == rank]
        chosen.update({it.index: None for it in mine})  # an index a rank lists twice: once
        new_plans.append(dataclasses.replace(plan, items=mine))

    md = {}
    for plan in new_plans:
        for item in plan.items:
            fqn = item.index.fqn
            if item.type == WriteItemType.BYTE_IO:
                if fqn in md and not isinstance(md[fqn], BytesStorageMetadata):
                    raise ValueError(f"key {fqn!r} is a tensor on some ranks and a non-tensor "
                                     "value on others")
                md[fqn] = BytesStorageMetadata()
                continue
            td = item.tensor_data
            entry = md.get(fqn)
            if entry is None:
                entry = md[fqn] = TensorStorageMetadata(td.properties, tuple(td.size), [])
            elif not isinstance(entry, TensorStorageMetadata):
                raise ValueError(f"key {fqn!r} is a tensor on some ranks and a non-tensor "
                                 "value on others")
            elif tuple(entry.size) != tuple(td.size) or \
                    entry.properties.dtype != td.properties.dtype:
                raise ValueError(f"key {fqn!r} has global size/dtype {tuple(entry.size)}/"
                                 f"{entry.properties.dtype} on one rank and {tuple(td.size)}/"
                                 f"{td.properties.dtype} on another")
            entry.chunks.append(td.chunk)
    for fqn, entry in md.items():
        if isinstance(entry, TensorStorageMetadata):
            entry.chunks.sort(key=lambda c: tuple(c.offsets))
            if _check_tiles:
                _check_tiling(fqn, entry)
    return new_plans, Metadata(state_dict_metadata=md)


def _check_tiling(fqn, entry):
    total = 0
    for c in entry.chunks:
        for o, s, n in zip(c.offsets, c.sizes, entry.size):
            if o < 0 or s < 0 or o + s > n:
                raise ValueError(f"key {fqn!r}: chunk at {tuple(c.offsets)} of size "
                                 f"{tuple(c.sizes)} lies outside the tensor {tuple(entry.size)}")
        total += _numel(c.sizes)
    if total != _numel(entry.size):
        raise ValueError(f"key {fqn!r}: the saved chunks hold {total} elements but the tensor "
                         f"has {_numel(entry.size)} (overlapping or missing shards)")


class DefaultSavePlanner(SavePlanner):
    """Flattens nested dicts to dotted keys, writes each tensor chunk and non-tensor value
    once, and spreads replicated values over the ranks."""

    def __init__(self, flatten_state_dict=True, flatten_sharded_tensors=True,
                 dedup_replicated_tensors=None, dedup_save_to_lowest_rank=False,
                 enable_plan_caching=False):
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.dedup_save_to_lowest_rank = dedup_save_to_lowest_rank
        self.mappings = {}

    def set_up_planner(self, state_dict, storage_meta=None, is_coordinator=False):
        if self.flatten_state_dict:
            state_dict, self.mappings = flatten_state_dict(state_dict)
        else:
            self.mappings = {k: (k,) for k in state_dict}
            for k in state_dict:
                if not isinstance(k, str):
                    raise ValueError(f"distributed checkpoint: key {k!r} is not a string")
        self.state_dict = state_dict
        self.storage_meta = storage_meta
        self.is_coordinator = is_coordinator
        self._bytes = {}

    def create_local_plan(self):
        plan = create_default_local_save_plan(self.state_dict, self.is_coordinator)
        items = []
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                data = self._bytes[item.index.fqn] = _dump_bytes(self.state_dict[item.index.fqn])
                item = dataclasses.replace(item, bytes_io_data=BytesIOWriteData(len(data)))
            items.append(item)
        self.plan = dataclasses.replace(plan, items=items, planner_data=self.mappings)
        return self.plan

    def create_global_plan(self, all_plans):
        # a rank saving without collectives plans only its own pieces: the reader checks
        # the tiling of the pieces merged
        plans, metadata = create_default_global_save_plan(
            all_plans, dedup_save_to_lowest_rank=self.dedup_save_to_lowest_rank,
            _check_tiles=not getattr(self, "_one_rank_of_many", False))
        mappings = {}
        for p in all_plans:
            mappings.update(p.planner_data or {})
        metadata = dataclasses.replace(metadata, planner_data=mappings)
        self.global_plan, self.metadata = plans, metadata
        return plans, metadata

    def finish_plan(self, new_plan):
        self.plan = new_plan
        return new_plan

    def resolve_data(self, write_item):
        """A tensor item's local data, or a non-tensor item's bytes as a BytesIO."""
        if write_item.type == WriteItemType.BYTE_IO:
            data = self._bytes.get(write_item.index.fqn)
            if data is None:
                data = _dump_bytes(self.state_dict[write_item.index.fqn])
            return io.BytesIO(data)
        obj = self.state_dict[write_item.index.fqn]
        return obj.to_local().detach() if isinstance(obj, DTensor) else obj.detach()


def _overlap(a_off, a_size, b_off, b_size):
    off, size = [], []
    for ao, asz, bo, bsz in zip(a_off, a_size, b_off, b_size):
        lo, hi = max(ao, bo), min(ao + asz, bo + bsz)
        if hi <= lo:
            return None
        off.append(lo)
        size.append(hi - lo)
    return tuple(off), tuple(size)


def create_default_local_load_plan(state_dict, metadata, strict=True):
    """Read items for every key of ``state_dict``: for a tensor, one per stored chunk that
    overlaps the piece this rank holds.  Missing keys and size mismatches are all reported
    in one error."""
    items, missing, problems = [], [], []
    for fqn, obj in state_dict.items():
        md = metadata.state_dict_metadata.get(fqn)
        if md is None:
            if strict:
                missing.append(fqn)
            continue
        if isinstance(md, BytesStorageMetadata):
            if isinstance(obj, DTensor) or _is_tensor(obj):
                problems.append(f"{fqn!r} is a tensor here but a non-tensor value in the "
                                "checkpoint")
                continue
            items.append(ReadItem(LoadItemType.BYTE_IO, MetadataIndex(fqn), (),
                                  MetadataIndex(fqn), (), ()))
            continue
        if not (isinstance(obj, DTensor) or _is_tensor(obj)):
            problems.append(f"{fqn!r} is a {type(obj).__name__} here but a tensor in the "
                            "checkpoint")
            continue
        size, offsets, sizes, _ = _box_of(obj)
        if tuple(size) != tuple(md.size):
            problems.append(f"size mismatch for {fqn!r}: the checkpoint has shape "
                            f"{list(md.size)}, the destination {list(size)}")
            continue
        if _numel(sizes) == 0:
            continue
        for chunk in md.chunks:
            ov = _overlap(offsets, sizes, chunk.offsets, chunk.sizes)
            if ov is None:
                continue
            off, length = ov
            items.append(ReadItem(
                LoadItemType.TENSOR, MetadataIndex(fqn, offsets),
                tuple(o - d for o, d in zip(off, offsets)),
                MetadataIndex(fqn, chunk.offsets),
                tuple(o - c for o, c in zip(off, chunk.offsets)), length))
    if missing:
        problems.insert(0, f"missing key(s) in the checkpoint: {missing}")
    if problems:
        raise RuntimeError("; ".join(problems))
    return LoadPlan(items)


class DefaultLoadPlanner(LoadPlanner):
    """Loads into the tensors of ``state_dict`` in place (each rank reading only the pieces
    of its own shards) and replaces non-tensor values.  An empty ``state_dict`` receives
    every saved key, as full tensors, in the saved nesting."""

    def __init__(self, flatten_state_dict=True, flatten_sharded_tensors=True,
                 allow_partial_load=False):
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.allow_partial_load = allow_partial_load

    def set_up_planner(self, state_dict, metadata=None, is_coordinator=False):
        from .._ember import empty
        self.original_state_dict = state_dict
        self.metadata = metadata
        self.is_coordinator = is_coordinator
        self._materialise = not state_dict
        if self._materialise:
            flat = {}
            for fqn, md in metadata.state_dict_metadata.items():
                flat[fqn] = (None if isinstance(md, BytesStorageMetadata)
                             else empty(tuple(md.size), dtype=md.properties.dtype))
            self.mappings = {k: tuple(v) for k, v in (metadata.planner_data or {}).items()}
            self.state_dict = flat
            for fqn, value in flat.items():
                set_element(state_dict, self.mappings.get(fqn, (fqn,)), value)
        elif self.flatten_state_dict:
            self.state_dict, self.mappings = flatten_state_dict(state_dict)
        else:
            self.state_dict = state_dict
            self.mappings = {k: (k,) for k in state_dict}

    def create_local_plan(self):
        md = self.metadata
        if self._materialise:
            bytes_keys = {k for k, v in md.state_dict_metadata.items()
                          if isinstance(v, BytesStorageMetadata)}
            tensors = {k: v for k, v in self.state_dict.items() if k not in bytes_keys}
            plan = create_default_local_load_plan(tensors, md, True)
            plan.items.extend(ReadItem(LoadItemType.BYTE_IO, MetadataIndex(k), (),
                                       MetadataIndex(k), (), ()) for k in sorted(bytes_keys))
            return plan
        return create_default_local_load_plan(self.state_dict, md, not self.allow_partial_load)

    def create_global_plan(self, global_plan):
        return global_plan

    def finish_plan(self, central_plan):
        return central_plan

    def load_bytes(self, read_item, value):
        from .._ember import load
        obj = load(value, weights_only=True)
        fqn = read_item.dest_index.fqn
        self.state_dict[fqn] = obj
        set_element(self.original_state_dict, self.mappings.get(fqn, (fqn,)), obj)

    def lookup_tensor(self, index):
        obj = self.state_dict[index.fqn]
        return obj.to_local() if isinstance(obj, DTensor) else obj

    def resolve_tensor(self, read_item):
        """The view of the destination that ``read_item`` fills."""
        t = self.lookup_tensor(read_item.dest_index).detach()
        for d, (o, n) in enumerate(zip(read_item.dest_offsets, read_item.lengths)):
            if o != 0 or n != t.shape[d]:
                t = t.narrow(d, o, n)
        return t

    def commit_tensor(self, read_item, tensor):
        pass
