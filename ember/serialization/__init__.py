"""``ember.save`` / ``ember.load``: PyTorch's zip checkpoint format, read and written safely.

ember writes exactly the layout ``torch.save`` writes, so ``torch.load`` reads
ember's files and ``ember.load`` reads torch's, without importing torch.

Beyond torch, files from others are treated as hostile until validated:

* ``load`` is weights-only by default and runs no code from the file: the pickle
  is executed by ember's own interpreter (``_unpickler``), which can only build
  data, call bounded stand-ins for a few builtins, and rebuild tensors.
* Every storage offset, size and stride is checked with exact arithmetic before
  a view is built (``_rebuild``); every zip entry's size is checked against the
  file and the pickle's declarations before anything is decompressed, and CRCs
  are verified (``_archive``).  A crafted file gets torch's exception types
  (``pickle.UnpicklingError``/``RuntimeError``), never out-of-bounds memory.
* ``save`` never destroys a checkpoint (``_destination``): regular files are
  replaced atomically keeping their permissions, symlinks are followed, FIFOs
  and devices are written through, and temp files of killed saves are removed by
  the next save.
"""
import collections.abc
import contextlib
import enum
import os
import pickle
import re
import shutil
import sys
import tempfile
import warnings

import numpy as np

from .._core.device import _BACKENDS, device as _device
from . import _globals
from ._archive import open_archive
from ._destination import open_for_save
from ._globals import (StorageType, add_safe_globals, clear_safe_globals, get_safe_globals,
                       safe_globals)
from ._rebuild import LoadedStorage
from ._unpickler import WeightsUnpickler
from ._torch_objects import QINT_STORAGES
from ._writer import SKIP_DATA, write_archive

QINT_STORAGE_NAMES = frozenset(QINT_STORAGES.values())
# torch.serialization.MAP_LOCATION: the types ``load``'s ``map_location`` accepts (pyro
# imports it): a function of (storage, location tag), a device, a device string, a
# {saved tag: new tag} dict, or None
MAP_LOCATION = (collections.abc.Callable[[object, str], object] | _device | str
                | dict[str, str] | None)

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "safe_globals",
           "clear_safe_globals", "get_unsafe_globals_in_checkpoint", "SourceChangeWarning",
           "mkdtemp", "register_package", "check_module_version_greater_or_equal",
           "validate_cuda_device", "validate_hpu_device", "location_tag",
           "default_restore_location", "StorageType", "LoadEndianness", "get_crc32_options",
           "set_crc32_options", "get_default_load_endianness", "set_default_load_endianness",
           "get_default_mmap_options", "set_default_mmap_options", "skip_data",
           "normalize_storage_type", "storage_to_tensor_type"]

DEFAULT_PROTOCOL = 2
# a compressed record may expand at most this many times (beyond torch: decompression bombs)
MAX_DECOMPRESSION_RATIO = 64
_KEY_RE = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


class skip_data:
    """Context manager: ``save`` writes each storage's record at its full size but leaves the
    bytes empty (zeros), for a later pass to fill in; ``load`` builds every tensor without
    reading its bytes (zero-filled).  ``materialize_fake_tensors`` is accepted for torch's
    signature: ember has no fake tensors to materialize."""

    def __init__(self, materialize_fake_tensors=False):
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self):
        self._old = (SKIP_DATA.active, SKIP_DATA.materialize_fake_tensors)
        SKIP_DATA.active = True
        SKIP_DATA.materialize_fake_tensors = self.materialize_fake_tensors

    def __exit__(self, *exc):
        SKIP_DATA.active, SKIP_DATA.materialize_fake_tensors = self._old


def normalize_storage_type(storage_type):
    """The top-level storage class of that name (``ember.FloatStorage``)."""
    return getattr(sys.modules[__name__.split(".")[0]], storage_type.__name__)


def storage_to_tensor_type(storage):
    """The tensor class named like ``storage``'s class, in the same module (``XStorage`` ->
    ``XTensor``); like torch's, a plain TypedStorage/UntypedStorage has none."""
    cls = type(storage)
    return getattr(sys.modules[cls.__module__], cls.__name__.replace("Storage", "Tensor"))


class SourceChangeWarning(Warning):
    """Warned when the source of a class saved with a checkpoint changed (torch's name)."""


@contextlib.contextmanager
def mkdtemp():
    """Yields a fresh temporary directory, removed on exit."""
    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ---- save -----------------------------------------------------------------------------------

_CRC32 = [True]


def get_crc32_options():
    """Whether ``save`` computes CRC-32 checksums of the records it writes."""
    return _CRC32[0]


def set_crc32_options(compute_crc32):
    """Sets whether ``save`` computes CRC-32s.  ember always writes them (``load`` verifies
    them, which is how a flipped bit is caught), so this only records the preference."""
    _CRC32[0] = bool(compute_crc32)


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Saves an object to a disk file.

    The file is a PyTorch zip checkpoint, readable by ``torch.load``.  Beyond torch, a save
    to a path never destroys what was there: a regular file is replaced atomically and keeps
    its permissions, a symlink's target is replaced, and FIFOs/devices are written through.

    Example::

        >>> ember.save({"w": ember.ones(2)}, "ck.pt")
    """
    if not _use_new_zipfile_serialization:
        raise RuntimeError("ember only writes the zip checkpoint format "
                           "(_use_new_zipfile_serialization=False is not supported)")
    if type(pickle_protocol) is not int or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"pickle_protocol must be an int in [2, {pickle.HIGHEST_PROTOCOL}], "
                         f"got {pickle_protocol!r}")
    record_byteorder = not _disable_byteorder_record
    if isinstance(f, (str, os.PathLike)):
        prefix = os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
        prefix = re.sub(r"[^A-Za-z0-9_.\-]", "_", prefix)
        with open_for_save(f) as fp:
            write_archive(obj, fp, prefix, pickle_protocol, record_byteorder)
        return
    if not hasattr(f, "write"):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'write': save "
                             f"expects a path or a writable binary file object")
    write_archive(obj, f, "archive", pickle_protocol, record_byteorder)


# ---- load options -----------------------------------------------------------------------

class LoadEndianness(enum.Enum):
    NATIVE = 1
    LITTLE = 2
    BIG = 3


_LOAD_ENDIANNESS = [None]


def get_default_load_endianness():
    """The byte order assumed for checkpoints without a ``byteorder`` record (None: native)."""
    return _LOAD_ENDIANNESS[0]


def set_default_load_endianness(endianness):
    if endianness is not None and not isinstance(endianness, LoadEndianness):
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _LOAD_ENDIANNESS[0] = endianness


_MMAP_FLAGS = [None]


def get_default_mmap_options():
    """The ``mmap`` flags ``load(mmap=True)`` uses: ``mmap.MAP_PRIVATE`` by default."""
    import mmap
    return mmap.MAP_PRIVATE if _MMAP_FLAGS[0] is None else _MMAP_FLAGS[0]


class set_default_mmap_options:
    """Context manager or function setting the flags of ``load(mmap=True)``: ``MAP_PRIVATE``
    (copy-on-write, the default) or ``MAP_SHARED`` (writes to the tensors reach the file)."""

    def __init__(self, flags):
        import mmap
        if flags not in (mmap.MAP_PRIVATE, mmap.MAP_SHARED):
            raise ValueError("Invalid argument in function set_default_mmap_options, expected "
                             f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = _MMAP_FLAGS[0]
        _MMAP_FLAGS[0] = flags

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _MMAP_FLAGS[0] = self.prev


# ---- locations --------------------------------------------------------------------------

_PACKAGE_REGISTRY = []


def register_package(priority, tagger, deserializer):
    """Registers callables for tagging and deserializing storage objects with a priority
    (lower runs first): ``tagger(storage) -> str|None``, ``deserializer(storage, location)``."""
    _PACKAGE_REGISTRY.append((priority, tagger, deserializer))
    _PACKAGE_REGISTRY.sort(key=lambda entry: entry[0])


def location_tag(storage):
    for _, tagger, _ in _PACKAGE_REGISTRY:
        tag = tagger(storage)
        if tag:
            return tag
    return "cpu"


def default_restore_location(storage, location):
    for _, _, deserializer in _PACKAGE_REGISTRY:
        result = deserializer(storage, location)
        if result is not None:
            return result
    if str(location).startswith("cpu"):
        return storage
    raise RuntimeError(f"don't know how to restore data location of storage at {location}")


def validate_cuda_device(location):
    """The CUDA device index of ``location``; raises as torch does when CUDA is unavailable."""
    if "cuda" not in _BACKENDS:
        raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                           "torch.cuda.is_available() is False. If you are running on a "
                           "CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    return _device(location).index or 0


def validate_hpu_device(location):
    raise RuntimeError("Attempting to deserialize object on a HPU device but no HPU backend "
                       "is available; use map_location='cpu'.")


def check_module_version_greater_or_equal(module, req_version_tuple, error_if_malformed=True):
    """Whether ``module.__version__`` is at least ``req_version_tuple`` (compared field by
    field, as integers)."""
    version_strs = module.__version__.split(".")
    try:
        module_version = tuple(type(req)(version_strs[i])
                               for i, req in enumerate(req_version_tuple))
    except (ValueError, IndexError) as e:
        message = (f"'{module.__name__}' module version string is malformed "
                   f"'{module.__version__}' and cannot be compared with tuple "
                   f"{req_version_tuple}")
        if error_if_malformed:
            raise RuntimeError(message) from e
        import warnings
        warnings.warn(message + ", but continuing assuming that requirement is met",
                      stacklevel=2)
        return True
    return module_version >= req_version_tuple


def _target_device(location, map_location):
    """The device a storage saved at ``location`` goes to, or raise if unavailable."""
    location = str(location)
    if callable(map_location) or map_location is None:
        target = location
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    else:
        target = str(map_location)
    kind = target.partition(":")[0]
    if kind == "cpu":
        return None
    if kind == "cuda" and "cuda" not in _BACKENDS:
        raise RuntimeError("Attempting to deserialize object on a CUDA device but no CUDA "
                           "backend is available. If you are running on a CPU-only machine, "
                           "please use ember.load with map_location='cpu' to map your "
                           "storages to the CPU.")
    if kind not in _BACKENDS:
        raise RuntimeError(f"don't know how to restore data location of storage at {location}: "
                           f"no '{kind}' backend is registered (use map_location='cpu')")
    return _device(target)


# ---- load -------------------------------------------------------------------------------

class _StorageLoader:
    """persistent_load for one archive: validates ids, reads each storage once."""

    def __init__(self, archive, map_location):
        self.archive = archive
        self.map_location = map_location
        self.loaded = {}

    def __call__(self, pid):
        if len(pid) != 5:
            raise pickle.UnpicklingError(f"a storage persistent id has 5 fields, got {len(pid)}")
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, StorageType):
            raise pickle.UnpicklingError(f"expected a storage type, got {storage_type!r:.80}")
        if type(key) is int:
            key = str(key)
        if type(key) is not str or not _KEY_RE.fullmatch(key) or key in (".", ".."):
            raise pickle.UnpicklingError(f"invalid storage key {key!r:.80} in checkpoint")
        if type(location) is not str or type(numel) is not int or numel < 0:
            raise pickle.UnpicklingError(f"invalid storage location/size {location!r:.40}, "
                                         f"{numel!r:.40} in checkpoint")
        if storage_type.dtype is None and storage_type.name != "UntypedStorage":
            raise RuntimeError(f"This checkpoint contains {storage_type.name} (quantized "
                               f"tensors), which ember cannot load yet.")
        dtype = storage_type.dtype
        nbytes = numel * (dtype.itemsize if dtype is not None else 1)
        storage = self.loaded.get(key)
        if storage is not None:
            if storage.nbytes != nbytes:
                raise RuntimeError(f"storage {key} is declared with two different sizes")
            return storage
        device = _target_device(location, self.map_location)
        raw = np.zeros(nbytes, dtype=np.uint8) if SKIP_DATA.active else \
            self.archive.read_storage(key, nbytes)
        array = raw if dtype is None else raw.view(dtype.np)
        storage = LoadedStorage(array, dtype, key, location,
                                big_endian=self.archive.big_endian,
                                quantized=storage_type.name in QINT_STORAGE_NAMES)
        if callable(self.map_location):
            mapped = self.map_location(storage, location)
            if mapped is not None and mapped is not storage:
                raise RuntimeError("a map_location callable must return the storage it was "
                                   "given (ember storages stay on the CPU)")
        if device is not None:
            raise RuntimeError(f"loading storages onto {device} is not supported yet; use "
                               f"map_location='cpu'")
        self.loaded[key] = storage
        return storage


def _resolve_weights_only(weights_only):
    # torch's environment overrides: FORCE_WEIGHTS_ONLY wins over an explicit argument,
    # FORCE_NO_WEIGHTS_ONLY only fills in an argument the caller left out (and says so)
    def flag(name):
        return os.environ.get(name, "0").lower() in ("1", "y", "yes", "true")
    force, force_no = flag("TORCH_FORCE_WEIGHTS_ONLY_LOAD"), flag("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force:
        return True
    if weights_only is None:
        if force_no:
            warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the "
                          "`weights_only` argument was not explicitly passed to `ember.load`, "
                          "forcing weights_only=False.", UserWarning, stacklevel=3)
            return False
        return True
    return weights_only


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Loads an object saved with ``ember.save`` or ``torch.save`` from a file.

    ``weights_only=True`` (the default) only builds tensors, dtypes, sizes, devices,
    containers and primitive values, and refuses anything else before it can run; pass
    ``weights_only=False`` only for files you trust.  ``mmap=True`` maps the storages from
    the file (copy-on-write) instead of reading them.  ``map_location`` may be a string, a
    device, a dict from saved to target locations, or a callable ``(storage, location)``.

    Example::

        >>> state = ember.load("ck.pt", map_location="cpu")
    """
    weights_only = _resolve_weights_only(weights_only)
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"load() got unexpected keyword arguments {sorted(pickle_load_args)}")
    if isinstance(map_location, _device):
        map_location = str(map_location)
    archive, owned = _open(f, bool(mmap), weights_only)
    try:
        return _unpickle(archive, map_location, weights_only, encoding)
    finally:
        archive.close()
        if owned is not None:
            owned.close()


def _open(f, mmap, weights_only):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as probe:
            head = probe.read(4)
    else:
        if not (hasattr(f, "seek") and hasattr(f, "tell")):
            import io
            f = io.BytesIO(f.read())
        pos = f.tell()
        head = f.read(4)
        f.seek(pos)
    if not head:
        raise EOFError("Ran out of input: the checkpoint file is empty")
    if head[:1] == b"\x80":  # a pickle stream: torch's pre-1.6 (legacy) format
        raise RuntimeError("ember.load only reads zip-format checkpoints (the format torch.save "
                           "has written since PyTorch 1.6); this file is in the legacy format. "
                           "Re-save it with a recent torch.")
    if head[:2] != b"PK":
        message = "the file is neither a zip-format nor a legacy-format checkpoint."
        if weights_only:
            raise pickle.UnpicklingError("Weights only load failed: " + message)
        raise RuntimeError("ember.load failed: " + message)
    return open_archive(f, mmap)


def _unpickle(archive, map_location, weights_only, encoding):
    import io
    data = archive.read_pickle()
    storages = _StorageLoader(archive, map_location)
    if weights_only:
        unpickler = WeightsUnpickler(
            io.BytesIO(data), resolve_global=_globals.resolve_weights_only,
            is_callable=_globals.is_allowed_callable, is_class=_globals.is_allowed_class,
            persistent_load=storages, encoding=encoding, budget=(64 << 20) + 16 * len(data))
        try:
            return unpickler.load()
        except pickle.UnpicklingError as e:
            raise pickle.UnpicklingError(
                f"Weights only load failed. ember.load is weights-only by default and refuses "
                f"to run code from the file. {e} If you trust the source of this file, "
                f"ember.load(..., weights_only=False) loads it, but that can run arbitrary "
                f"code.") from None
    return _FullUnpickler(io.BytesIO(data), storages, encoding).load()


class _FullUnpickler(pickle.Unpickler):
    """``weights_only=False``: the standard unpickler, with torch's names mapped to ember."""

    def __init__(self, file, storages, encoding):
        super().__init__(file, encoding=encoding)
        self._storages = storages

    def find_class(self, module, name):
        # protocol-2 files may name Python 2 modules (__builtin__.set); none exist in Python 3
        from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING
        if (module, name) in NAME_MAPPING:
            module, name = NAME_MAPPING[(module, name)]
        elif module in IMPORT_MAPPING:
            module = IMPORT_MAPPING[module]
        return _globals.resolve_unrestricted(module, name)

    def persistent_load(self, pid):
        return self._storages(pid)


def get_unsafe_globals_in_checkpoint(f):
    """The globals a checkpoint references that a weights-only load would refuse."""
    import io
    import pickletools
    archive, owned = _open(f, False, True)
    try:
        data = archive.read_pickle()
    finally:
        archive.close()
        if owned is not None:
            owned.close()
    found, strings = [], []
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(data)):
            if op.name == "GLOBAL":
                found.append(arg.replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
            if isinstance(arg, str):
                strings.append(arg)
    except (ValueError, EOFError) as e:
        raise pickle.UnpicklingError(f"invalid pickle data: {e}") from None
    unsafe = []
    for full in found:
        module, _, name = full.rpartition(".")
        try:
            _globals.resolve_weights_only(module, name)
        except pickle.UnpicklingError:
            if full not in unsafe:
                unsafe.append(full)
    return unsafe

