"""Reading a checkpoint's zip archive with every size checked before it is trusted.

The zip directory says how large each entry is; a hostile or damaged file can say
anything.  Before a byte is decompressed, an entry must lie inside the file, a
storage entry must be exactly as large as the pickle declares, and a compressed
entry may not expand more than ``ember.serialization.MAX_DECOMPRESSION_RATIO`` times (torch's writer
never compresses; ratios of thousands are decompression bombs).  Entries are read
in chunks straight into their final array, and their CRC-32 is verified, so a flipped
bit is an error, never a silently different weight.  With ``mmap=True`` stored
entries are mapped copy-on-write instead of read (no CRC check then, as in torch).
zipfile's exceptions never reach the user: they become torch's RuntimeError.
"""
import io
import os
import struct
import zipfile
import zlib

import numpy as np

_RATIO_FREE_BYTES = 1 << 20     # small entries may compress arbitrarily well
_CHUNK = 16 << 20
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_CORRUPT_HINT = ("If you are seeing this error, your checkpoint file is probably corrupted: it "
                 "may not have been saved completely, may have been transferred incorrectly, or "
                 "was modified after saving.")


def _max_ratio():
    from .. import serialization
    return serialization.MAX_DECOMPRESSION_RATIO


def _mmap_mode():
    import mmap
    from .. import serialization
    return "r+" if serialization.get_default_mmap_options() == mmap.MAP_SHARED else "c"


def _zip_error(e, what="reading zip archive"):
    return RuntimeError(f"PytorchStreamReader failed {what}: {e}. {_CORRUPT_HINT}")


class Archive:
    """An opened checkpoint: its pickle, its records and its storages."""

    def __init__(self, fp, path=None, mmap=False):
        self.fp = fp
        start = fp.tell()
        fp.seek(0, os.SEEK_END)
        self.size = fp.tell()
        fp.seek(start)
        try:
            self.zf = zipfile.ZipFile(fp)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
                struct.error, UnicodeDecodeError, NotImplementedError) as e:
            # NotImplementedError: a damaged "version needed" field zipfile refuses
            raise _zip_error(e) from None
        self.infos = {}
        for info in self.zf.infolist():
            self.infos.setdefault(info.filename, info)
        pkl = [n for n in self.infos if n.endswith("/data.pkl") or n == "data.pkl"]
        if not pkl:
            raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not "
                               "found. This zip archive is not a PyTorch/ember checkpoint.")
        self.prefix = pkl[0][: -len("data.pkl")]
        self._mmap = None
        if mmap:
            if path is None:
                raise ValueError("f must be a file path in order to use the mmap argument")
            self._mmap = np.memmap(path, dtype=np.uint8, mode=_mmap_mode()) if self.size else None
        order = self.read_record("byteorder", limit=16, missing=b"little")
        if order not in (b"little", b"big"):
            raise RuntimeError(f"invalid byteorder record {order[:16]!r} in checkpoint")
        self.big_endian = order == b"big"

    def close(self):
        self.zf.close()

    # ---- entries --------------------------------------------------------------------------
    def _info(self, name):
        info = self.infos.get(self.prefix + name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        if info.header_offset < 0 or info.header_offset + 30 + info.compress_size > self.size:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: the entry "
                               f"claims {info.compress_size} bytes at offset "
                               f"{info.header_offset}, past the end of the {self.size}-byte "
                               f"file (truncated?). {_CORRUPT_HINT}")
        max_ratio = _max_ratio()
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > _RATIO_FREE_BYTES and \
                info.file_size > max_ratio * max(info.compress_size, 1):
            raise RuntimeError(
                f"refusing to decompress {name}: {info.compress_size} compressed bytes claim to "
                f"expand to {info.file_size} bytes (ratio over "
                f"ember.serialization.MAX_DECOMPRESSION_RATIO={max_ratio}), the "
                f"pattern of a decompression bomb. If the file is trusted, store its entries "
                f"uncompressed (as torch.save does) or raise that limit.")
        return info

    def has_record(self, name):
        return self.prefix + name in self.infos

    def read_record(self, name, limit, missing=None):
        if missing is not None and not self.has_record(name):
            return missing
        info = self._info(name)
        if info.file_size > limit:
            raise RuntimeError(f"record {name} of the checkpoint is {info.file_size} bytes, "
                               f"more than the {limit} it can legitimately be")
        return bytes(self._read_into(info, np.empty(info.file_size, np.uint8)))

    def read_pickle(self):
        info = self._info("data.pkl")
        return self._read_into(info, np.empty(info.file_size, np.uint8)).tobytes()

    def read_storage(self, key, nbytes):
        """The raw bytes of storage ``key``, which the pickle declares to be ``nbytes`` long."""
        name = f"data/{key}"
        info = self._info(name)
        if info.file_size != nbytes:
            raise RuntimeError(f"storage {key} of the checkpoint holds {info.file_size} bytes, "
                               f"but the pickle declares {nbytes}. {_CORRUPT_HINT}")
        if self._mmap is not None and info.compress_type == zipfile.ZIP_STORED:
            start = self._data_offset(info)
            if start + nbytes > self.size:
                raise RuntimeError(f"storage {key} extends past the end of the file (truncated?)")
            return self._mmap[start:start + nbytes]
        return self._read_into(info, np.empty(nbytes, np.uint8))

    def _data_offset(self, info):
        self.fp.seek(info.header_offset)
        header = self.fp.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
            raise RuntimeError(f"bad local header for {info.filename}. {_CORRUPT_HINT}")
        fields = _LOCAL_HEADER.unpack(header)
        return info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]

    def _read_into(self, info, out):
        view = memoryview(out)
        try:
            with self.zf.open(info) as f:
                pos = 0
                while pos < len(view):
                    n = f.readinto(view[pos:pos + _CHUNK]) if hasattr(f, "readinto") else 0
                    if not n:
                        break
                    pos += n
                if pos != len(view) or f.read(1):
                    raise zipfile.BadZipFile(f"{info.filename} is shorter than its directory entry")
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
                NotImplementedError, struct.error) as e:
            raise _zip_error(e, f"reading file {info.filename}") from None
        return out


def open_archive(f, mmap=False):
    """(Archive, file object to close or None) for a path or a binary file object."""
    if isinstance(f, (str, os.PathLike)):
        fp = open(f, "rb")
        try:
            return Archive(fp, os.fspath(f), mmap), fp
        except BaseException:
            fp.close()
            raise
    if mmap:
        name = getattr(f, "name", None)
        if not isinstance(name, (str, os.PathLike)) or not os.path.isfile(name):
            raise ValueError("f must be a file path in order to use the mmap argument")
        return Archive(f, os.fspath(name), mmap), None
    if not (hasattr(f, "seek") and hasattr(f, "tell")):
        f = io.BytesIO(f.read())
    return Archive(f, None, False), None
