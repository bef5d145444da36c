"""Tensor storage in shared memory (``Tensor.share_memory_``), for ``ember.multiprocessing``.

A shared storage is a file under ``/dev/shm`` (or the temporary directory) mapped with
``mmap``; the tensor's NumPy array views that mapping, so a child process that maps the same
file by name sees, and makes, the same in-place updates (hogwild training).  The process
that created a segment unlinks its file when the array is collected or the process exits;
a process killed by a signal leaves it behind (torch's ``file_system`` strategy has the same
limit).  A segment handed to another process stays until its creator exits, so, as in
torch, the process that made a shared tensor must outlive its consumers.
"""
import atexit
import itertools
import mmap
import os
import secrets
import tempfile
import weakref

import numpy as np

__all__ = ["share", "is_shared", "handle", "attach"]

_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
    else tempfile.gettempdir()
_counter = itertools.count()
_owned = set()
_exported = {}
_attached = weakref.WeakValueDictionary()


class _Segment(mmap.mmap):
    """An mmap that knows the file it maps (mmap subclasses accept attributes)."""
    path = None


def _unlink(path):
    _owned.discard(path)
    try:
        os.unlink(path)
    except OSError:
        pass


@atexit.register
def _cleanup():
    for p in list(_owned):
        _unlink(p)


def _new_segment(nbytes):
    path = os.path.join(_DIR, f"ember_shm_{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, max(nbytes, 1))
        seg = _Segment(fd, max(nbytes, 1))
    finally:
        os.close(fd)
    seg.path = path
    _owned.add(path)
    weakref.finalize(seg, _unlink, path)
    return seg


def _segment_of(arr):
    """(segment, address of the segment's first byte) if ``arr`` views a shared segment."""
    a, last = arr, None
    while a is not None:
        if isinstance(a, memoryview):
            a = a.obj
        if isinstance(a, _Segment):
            return a, last.__array_interface__["data"][0]
        if isinstance(a, np.ndarray):
            last = a
        a = getattr(a, "base", None)
    return None, 0


def is_shared(arr):
    return _segment_of(arr)[0] is not None


def _copy_to_segment(arr):
    seg = _new_segment(arr.nbytes)
    out = np.frombuffer(seg, dtype=arr.dtype, count=arr.size).reshape(arr.shape)
    np.copyto(out, arr)
    return out


def share(t):
    """Moves tensor ``t``'s storage (its root's, for a view) into shared memory, in place."""
    if is_shared(t._data):
        return t
    root = t._base
    if root is None:
        t._data = _copy_to_segment(np.ascontiguousarray(t._data))
        return t
    base = root._data
    if not is_shared(base):
        root._data = _copy_to_segment(np.ascontiguousarray(base))
    offset = t._data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    flat = root._data.reshape(-1).view(np.uint8)
    t._data = np.lib.stride_tricks.as_strided(flat[offset:].view(t._data.dtype)
                                              if t._data.size else flat[:0].view(t._data.dtype),
                                              t._data.shape, t._data.strides)
    return t


def handle(arr):
    """A picklable description of shared ``arr``: (path, size, offset, dtype, shape, strides)."""
    seg, start = _segment_of(arr)
    if seg.path in _owned:
        # another process may map it after this one dropped the tensor (a queue's put): an
        # exported segment lives until this process exits
        _exported[seg.path] = seg
    offset = arr.__array_interface__["data"][0] - start
    return seg.path, len(seg), offset, arr.dtype.str if arr.dtype.kind != "V" else \
        arr.dtype.name, arr.shape, arr.strides


def _dtype(name):
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def attach(path, size, offset, dtype, shape, strides):
    """The array described by `handle`, mapping the segment (once per process)."""
    seg = _attached.get(path)
    if seg is None:
        if not os.path.exists(path) and path in _owned:
            raise RuntimeError(f"shared tensor storage {path} is gone")
        fd = os.open(path, os.O_RDWR)
        try:
            seg = _Segment(fd, size)
        finally:
            os.close(fd)
        seg.path = path
        _attached[path] = seg
    dt = _dtype(dtype)
    start = np.frombuffer(seg, dtype=np.uint8)
    whole = start[offset:]
    return np.lib.stride_tricks.as_strided(whole.view(dt) if whole.size % dt.itemsize == 0
                                           else whole[:whole.size - whole.size % dt.itemsize]
                                           .view(dt), shape, strides)
