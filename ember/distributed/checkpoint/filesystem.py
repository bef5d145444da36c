"""A checkpoint as a directory: one data file per rank and a ``.metadata`` index.

Layout: ``__<rank>_0.distcp`` holds the items a rank wrote, back to back (tensors as raw
C-order bytes, other values as weights-only ``ember.save`` payloads); ``.metadata`` maps
each item to its file, offset, length and the CRC32 of every block of ``_CRC_BLOCK`` bytes.

Atomic: data files and the metadata are written under temporary names and renamed into
place; the coordinator removes an old ``.metadata`` before any rank writes and writes the
new one last, once every rank has reported success, so an interrupted save leaves a
directory without ``.metadata``, which `FileSystemReader` refuses as incomplete.  A save
without collectives (``use_collectives=False``) writes one ``__<rank>.metadata`` piece per
rank instead (each atomic on its own), and the reader merges the pieces.

Files are treated as hostile when read: the metadata is loaded weights-only and checked
(known dtypes, chunks inside their tensor, plain file names, offsets inside the file), and
every byte read is checked against its block's CRC.  A rank reads only the byte ranges
holding the elements it needs (whole CRC blocks of them); ``FileSystemReader.read_ranges``
lists the last load's reads.
"""
import io
import os
import uuid
import zlib
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
from ember_lite._build import _fsync_dir  # one copy: ember_lite imports nothing of ember

from ._codec import decode, encode, register_dataclass
from .default_planner import _check_tiling
from .metadata import (BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex,
                       StorageMeta, TensorStorageMetadata)
from .planner import LoadItemType, WriteItemType
from .storage import StorageReader, StorageWriter, WriteResult

__all__ = ["FileSystemWriter", "FileSystemReader"]

_METADATA = ".metadata"
_CRC_BLOCK = 1 << 20
_MAX_RUNS = 1 << 14


@register_dataclass
@dataclass(frozen=True)
class _StorageInfo:
    relative_path: str
    offset: int
    length: int
    crcs: tuple = ()
    block: int = _CRC_BLOCK


def _done(value):
    fut = Future()
    fut.set_result(value)
    return fut


def _as_uint8(tensor):
    arr = np.ascontiguousarray(tensor.numpy())
    return arr.reshape(-1).view(np.uint8)


class FileSystemWriter(StorageWriter):
    r"""Writes a checkpoint into directory ``path``, one file per rank.

    Args:
        path: the checkpoint directory (created if needed).
        single_file_per_rank: kept for torch's signature; ember always writes one file per
            rank.
        sync_files: fsync each file before it is renamed into place.
        thread_count, per_thread_copy_ahead, cache_staged_state_dict: accepted for torch's
            signature; ember writes from one thread.
        overwrite: replace an existing checkpoint in ``path`` (else raise).
    """

    def __init__(self, path, single_file_per_rank=True, sync_files=True, thread_count=1,
                 per_thread_copy_ahead=10_000_000, cache_staged_state_dict=False,
                 overwrite=True, _extensions=None, serialization_format=None):
        self.path = os.fspath(path)
        self.sync_files = sync_files
        self.overwrite = overwrite
        self.save_id = uuid.uuid4().hex

    def reset(self, checkpoint_id=None):
        if checkpoint_id is not None:
            self.path = os.fspath(checkpoint_id)
        self.save_id = uuid.uuid4().hex

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return isinstance(checkpoint_id, (str, os.PathLike))

    def storage_meta(self):
        return StorageMeta(checkpoint_id=self.path, save_id=self.save_id)

    def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
        self.is_coordinator = is_coordinator
        # without collectives (torch's use_collectives=False) each rank writes its own
        # metadata piece, ``__<rank>.metadata``
        self.rank = kwargs.get("rank")
        self.use_collectives = kwargs.get("use_collectives", True)
        os.makedirs(self.path, exist_ok=True)
        if self._rank_local:
            self._clear_rank_local(is_coordinator, kwargs.get("world_size"))
            return
        meta = os.path.join(self.path, _METADATA)
        if is_coordinator and os.path.exists(meta):
            if not self.overwrite:
                raise RuntimeError(f"Checkpoint already exists at {self.path} and "
                                   "overwrite=False")
            # the old index goes first: from here on the directory is incomplete until the
            # new index lands
            os.unlink(meta)
            _fsync_dir(self.path)

    @property
    def _rank_local(self):
        return not getattr(self, "use_collectives", True) and getattr(self, "rank", None) \
            is not None

    def _clear_rank_local(self, is_coordinator, world_size):
        olds = [os.path.join(self.path, _METADATA), _rank_metadata(self.path, self.rank)]
        if is_coordinator and world_size is not None:
            # pieces of an earlier save on more ranks would otherwise join this one
            r = world_size
            while os.path.exists(_rank_metadata(self.path, r)):
                olds.append(_rank_metadata(self.path, r))
                r += 1
        present = [m for m in olds if os.path.exists(m)]
        if present and not self.overwrite:
            raise RuntimeError(f"Checkpoint already exists at {self.path} and overwrite=False")
        for m in present:
            try:
                os.unlink(m)
            except FileNotFoundError:
                pass  # another rank removed the shared index first
        if present:
            _fsync_dir(self.path)

    def prepare_local_plan(self, plan):
        if self._rank_local:
            import dataclasses
            return dataclasses.replace(plan, storage_data=f"__{self.rank}_")
        return plan

    def prepare_global_plan(self, plans):
        import dataclasses
        return [p if p.storage_data is not None else
                dataclasses.replace(p, storage_data=f"__{i}_") for i, p in enumerate(plans)]

    def write_data(self, plan, planner):
        name = f"{plan.storage_data or '__0_'}0.distcp"
        final = os.path.join(self.path, name)
        tmp = os.path.join(self.path, f".{name}.{self.save_id}.tmp")
        results, offset = [], 0
        try:
            with open(tmp, "wb") as f:
                for item in plan.items:
                    data = planner.resolve_data(item)
                    if item.type == WriteItemType.BYTE_IO:
                        raw = memoryview(data.getvalue())
                    else:
                        raw = memoryview(_as_uint8(data))
                    n = raw.nbytes
                    crcs = tuple(zlib.crc32(raw[i:i + _CRC_BLOCK])
                                 for i in range(0, n, _CRC_BLOCK))
                    f.write(raw)
                    results.append(WriteResult(item.index, n,
                                               _StorageInfo(name, offset, n, crcs, _CRC_BLOCK)))
                    offset += n
                f.flush()
                if self.sync_files:
                    os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return _done(results)

    def finish(self, metadata, results):
        storage = {}
        for rank_results in results:
            for r in rank_results:
                storage[r.index] = r.storage_data
        metadata.storage_data = storage
        metadata.storage_meta = self.storage_meta()
        _write_metadata(self.path, metadata, self.sync_files,
                        _rank_metadata(self.path, self.rank) if self._rank_local else None)
        if self.sync_files:
            _fsync_dir(self.path)


def _rank_metadata(path, rank):
    return os.path.join(path, f"__{rank}{_METADATA}")


def _write_metadata(path, metadata, sync=True, final=None):
    from .._ember import save
    final = final or os.path.join(path, _METADATA)
    tmp = os.path.join(path, f".metadata.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as f:
            save(encode(metadata), f)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _int_tuple(x, what):
    if not isinstance(x, tuple) or not all(_is_int(v) and v >= 0 for v in x):
        raise ValueError(f"corrupt checkpoint metadata: {what} is not a tuple of "
                         f"non-negative integers: {x!r}")
    return x


def _safe_name(name):
    return (isinstance(name, str) and name and name not in (".", "..")
            and "/" not in name and "\\" not in name and "\0" not in name
            and not name.startswith("."))


def validate_metadata(md, tiles=True):
    """Checks a decoded `Metadata` from an untrusted file; raises ValueError naming the
    first inconsistency."""
    if not isinstance(md, Metadata) or not isinstance(md.state_dict_metadata, dict):
        raise ValueError("corrupt checkpoint metadata: not a Metadata record")
    storage = md.storage_data if md.storage_data is not None else {}
    if not isinstance(storage, dict):
        raise ValueError("corrupt checkpoint metadata: storage_data is not a dict")
    for idx, info in storage.items():
        if not isinstance(idx, MetadataIndex) or not isinstance(info, _StorageInfo):
            raise ValueError("corrupt checkpoint metadata: bad storage record")
        if not _safe_name(info.relative_path):
            raise ValueError(f"corrupt checkpoint metadata: file name "
                             f"{info.relative_path!r} of {idx.fqn!r} is not a plain file name")
        if not (_is_int(info.offset) and _is_int(info.length) and _is_int(info.block)
                and info.offset >= 0 and info.length >= 0 and info.block > 0):
            raise ValueError(f"corrupt checkpoint metadata: bad offset/length for {idx.fqn!r}")
        if not isinstance(info.crcs, tuple) or not all(_is_int(c) for c in info.crcs) or \
                len(info.crcs) != -(-info.length // info.block):
            raise ValueError(f"corrupt checkpoint metadata: bad checksums for {idx.fqn!r}")
    for fqn, entry in md.state_dict_metadata.items():
        if not isinstance(fqn, str):
            raise ValueError("corrupt checkpoint metadata: a key is not a string")
        if isinstance(entry, BytesStorageMetadata):
            if MetadataIndex(fqn) not in storage:
                raise ValueError(f"corrupt checkpoint metadata: no data for {fqn!r}")
            continue
        if not isinstance(entry, TensorStorageMetadata) or not isinstance(entry.chunks, list):
            raise ValueError(f"corrupt checkpoint metadata: bad entry for {fqn!r}")
        size = _int_tuple(entry.size, f"the size of {fqn!r}")
        itemsize = getattr(entry.properties.dtype, "itemsize", None)
        if not _is_int(itemsize):
            raise ValueError(f"corrupt checkpoint metadata: bad dtype for {fqn!r}")
        for c in entry.chunks:
            if not isinstance(c, ChunkStorageMetadata):
                raise ValueError(f"corrupt checkpoint metadata: bad chunk of {fqn!r}")
            off = _int_tuple(c.offsets, f"a chunk offset of {fqn!r}")
            sz = _int_tuple(c.sizes, f"a chunk size of {fqn!r}")
            if len(off) != len(size) or len(sz) != len(size):
                raise ValueError(f"corrupt checkpoint metadata: chunk rank of {fqn!r}")
            info = storage.get(MetadataIndex(fqn, off))
            if info is None:
                raise ValueError(f"corrupt checkpoint metadata: no data for a chunk of {fqn!r}")
            if info.length != int(np.prod(sz, dtype=np.int64)) * itemsize:
                raise ValueError(f"corrupt checkpoint metadata: the chunk of {fqn!r} at {off} "
                                 f"claims {info.length} bytes for shape {sz}")
        if tiles:
            _check_tiling(fqn, entry)
    pd = md.planner_data
    if pd is not None:
        if not isinstance(pd, dict) or not all(
                isinstance(k, str) and isinstance(v, tuple) and v
                and all(isinstance(p, (str, int)) for p in v) for k, v in pd.items()):
            raise ValueError("corrupt checkpoint metadata: bad key mapping")
    return md


def byte_runs(chunk_sizes, box_offsets, box_sizes, itemsize):
    """The (start, length) byte ranges of a C-order chunk that hold the box."""
    nd = len(chunk_sizes)
    if nd == 0:
        return [(0, itemsize)]
    if any(s == 0 for s in box_sizes):
        return []
    strides = [1] * nd
    for d in range(nd - 2, -1, -1):
        strides[d] = strides[d + 1] * chunk_sizes[d + 1]
    j = nd - 1
    while j > 0 and box_sizes[j] == chunk_sizes[j]:
        j -= 1
    run = box_sizes[j] * strides[j]
    base = sum(o * s for o, s in zip(box_offsets, strides))
    count = int(np.prod(box_sizes[:j], dtype=np.int64))
    if count > _MAX_RUNS:
        last = sum((o + n - 1) * s for o, n, s in zip(box_offsets, box_sizes, strides))
        return [(base * itemsize, (last + 1 - base) * itemsize)]
    if j == 0:
        starts = np.array([base], np.int64)
    else:
        idx = np.indices(box_sizes[:j]).reshape(j, -1).astype(np.int64)
        starts = base + (idx * np.array(strides[:j], np.int64)[:, None]).sum(0)
    return _merge([(int(s) * itemsize, run * itemsize) for s in np.sort(starts)])


def _merge(ranges):
    out = []
    for s, n in ranges:
        if out and s <= out[-1][0] + out[-1][1]:
            ps, pn = out[-1]
            out[-1] = (ps, max(ps + pn, s + n) - ps)
        else:
            out.append((s, n))
    return out


def _to_blocks(ranges, block, length):
    return _merge([(s // block * block,
                    min(-(-(s + n) // block) * block, length) - s // block * block)
                   for s, n in ranges])


def _direct_buffer(target, np_dtype, length):
    """The bytes of ``target`` when a whole stored chunk can be read straight into them (same
    dtype, C-contiguous, memory shared with the tensor), else None."""
    try:
        arr = target.numpy()
    except (RuntimeError, TypeError):
        return None
    if arr.dtype != np_dtype or not arr.flags.c_contiguous or not arr.flags.writeable or \
            arr.nbytes != length:
        return None
    flat = arr.reshape(-1).view(np.uint8)
    # only a view of the tensor's own storage helps; a copy would drop the data
    return flat if np.shares_memory(flat, target.numpy()) else None


class FileSystemReader(StorageReader):
    """Reads a checkpoint written by `FileSystemWriter` from directory ``path``."""

    def __init__(self, path, _extension_registry=None):
        self.path = os.fspath(path)
        self.read_ranges = []

    def reset(self, checkpoint_id=None):
        if checkpoint_id is not None:
            self.path = os.fspath(checkpoint_id)
        self.read_ranges = []

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return isinstance(checkpoint_id, (str, os.PathLike))

    def read_metadata(self, *args, **kwargs):
        meta = os.path.join(self.path, _METADATA)
        if not os.path.exists(meta) and os.path.exists(_rank_metadata(self.path, 0)):
            return self._merged_rank_metadata()
        if not os.path.exists(meta):
            raise FileNotFoundError(f"{self.path} holds no complete checkpoint: its "
                                    f"{_METADATA} is missing (a save never finished there)")
        return self._read_metadata_file(meta)

    def _merged_rank_metadata(self):
        """A save without collectives left one metadata piece per rank; together they
        index the checkpoint (a value several ranks wrote is read from the lowest rank)."""
        pieces, r = [], 0
        while os.path.exists(_rank_metadata(self.path, r)):
            pieces.append(self._read_metadata_file(_rank_metadata(self.path, r), tiles=False))
            r += 1
        merged = Metadata(state_dict_metadata={}, planner_data={}, storage_data={},
                          storage_meta=pieces[0].storage_meta, version=pieces[0].version)
        for rank, md in enumerate(pieces):
            for fqn, entry in md.state_dict_metadata.items():
                have = merged.state_dict_metadata.get(fqn)
                if have is None:
                    if isinstance(entry, TensorStorageMetadata):
                        entry = TensorStorageMetadata(entry.properties, entry.size,
                                                      list(entry.chunks))
                    merged.state_dict_metadata[fqn] = entry
                elif type(have) is not type(entry) or (
                        isinstance(entry, TensorStorageMetadata)
                        and tuple(have.size) != tuple(entry.size)):
                    raise ValueError(f"corrupt checkpoint metadata: rank {rank}'s piece "
                                     f"disagrees with rank 0's about {fqn!r}")
                elif isinstance(entry, TensorStorageMetadata):
                    seen = {tuple(c.offsets) for c in have.chunks}
                    have.chunks.extend(c for c in entry.chunks if tuple(c.offsets) not in seen)
            for idx, info in (md.storage_data or {}).items():
                merged.storage_data.setdefault(idx, info)
            for k, v in (md.planner_data or {}).items():
                merged.planner_data.setdefault(k, v)
        return validate_metadata(merged)

    def _read_metadata_file(self, meta, tiles=True):
        from .._ember import load
        try:
            raw = load(meta, weights_only=True)
            md = decode(raw)
        except (FileNotFoundError, PermissionError):
            raise
        except Exception as e:
            raise ValueError(f"corrupt checkpoint metadata in {meta}: {e}") from e
        return validate_metadata(md, tiles)

    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        self.metadata = metadata
        self.storage_data = metadata.storage_data or {}
        self._chunks = {}
        for fqn, entry in metadata.state_dict_metadata.items():
            if isinstance(entry, TensorStorageMetadata):
                for c in entry.chunks:
                    self._chunks[MetadataIndex(fqn, c.offsets)] = (c.sizes, entry.properties.dtype)

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    def _read(self, files, info, ranges, buf=None):
        """Reads ``ranges`` (item-relative) of an item, whole CRC blocks at a time, into
        ``buf`` or a new buffer of the item's length (pages never touched stay
        unallocated)."""
        f = files.get(info.relative_path)
        if f is None:
            path = os.path.join(self.path, info.relative_path)
            fd = os.open(path, os.O_RDONLY)
            f = files[info.relative_path] = (fd, os.fstat(fd).st_size)
        fd, fsize = f
        if info.offset + info.length > fsize:
            raise ValueError(f"corrupt checkpoint: {info.relative_path} is {fsize} bytes, but "
                             f"an item spans bytes {info.offset}..{info.offset + info.length}")
        if buf is None:
            buf = np.empty(info.length, np.uint8)
        for s, n in _to_blocks(ranges, info.block, info.length):
            mv = memoryview(buf[s:s + n])
            got = 0
            while got < n:   # straight into the buffer: no intermediate bytes object
                k = os.preadv(fd, [mv[got:]], info.offset + s + got)
                if k <= 0:
                    raise ValueError(f"corrupt checkpoint: short read in {info.relative_path}")
                got += k
            self.read_ranges.append((info.relative_path, info.offset + s, n))
            for k in range(0, n, info.block):
                b = (s + k) // info.block
                if zlib.crc32(mv[k:k + info.block]) != info.crcs[b]:
                    raise ValueError(f"corrupt checkpoint: checksum mismatch in "
                                     f"{info.relative_path} at byte {info.offset + s + k}")
        return buf

    def read_data(self, plan, planner):
        from .._ember import from_numpy
        files = {}
        self.read_ranges = []
        try:
            for item in plan.items:
                info = self.storage_data.get(item.storage_index)
                if info is None:
                    raise KeyError(f"no stored data for {item.storage_index.fqn!r}")
                if item.type == LoadItemType.BYTE_IO:
                    buf = self._read(files, info, [(0, info.length)])
                    planner.load_bytes(item, io.BytesIO(buf.tobytes()))
                    continue
                sizes, dtype = self._chunks[item.storage_index]
                np_dtype = np.dtype(dtype.np)
                target = planner.resolve_tensor(item)
                whole = tuple(item.lengths) == tuple(sizes)
                direct = _direct_buffer(target, np_dtype, info.length) if whole else None
                try:
                    buf = self._read(files, info, byte_runs(
                        sizes, item.storage_offsets, item.lengths, np_dtype.itemsize),
                        direct)
                except ValueError as e:
                    raise ValueError(f"{e} (reading {item.storage_index.fqn!r})") from None
                if direct is None:
                    chunk = buf.view(np_dtype).reshape(sizes)
                    box = chunk[tuple(slice(o, o + n) for o, n in
                                      zip(item.storage_offsets, item.lengths))]
                    # np.require keeps 0-d boxes 0-d and copies only a strided box
                    target.copy_(from_numpy(np.require(np.asarray(box), requirements="C")))
                planner.commit_tensor(item, target)
        finally:
            for fd, _ in files.values():
                os.close(fd)
        return _done(None)
