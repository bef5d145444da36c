"""The zip container of a checkpoint, laid out byte for byte as ``torch.save`` lays it out.

torch writes its archives with miniz in streaming mode, so a file saved by ember has
the size and record layout of the same file saved by torch (tools and tutorials
compare checkpoint sizes):

- every record is stored (never compressed), with zeroed time, date and "version
  needed" fields and flags 0x0808 (UTF-8 names, sizes in a data descriptor);
- the local header leaves CRC and sizes zero; a 16-byte data descriptor
  (``PK\\x07\\x08``, CRC, sizes) follows the data (24 bytes, 8-byte sizes, for zip64);
- a local header carries one extra field ``FB`` + length + ``Z`` padding that puts
  the record's data at a multiple of 64 bytes (even already aligned data gets the
  4-byte field);
- central directory entries carry no extra field unless zip64 needs one;
- the archive always ends with a zip64 end record and locator before the classic
  end record.
"""
import struct
import zlib

_ALIGN = 64
_U32_MAX = 0xFFFFFFFF
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_FLAGS = 0x0808
_ZIP64_MADE_BY = 0x031E
_ZIP64_NEEDED = 45


class ZipWriter:
    """Appends stored records to a binary file object; ``close()`` writes the directory."""

    def __init__(self, fp):
        self.fp = fp
        self.pos = 0
        self.entries = []  # (name bytes, crc, size, local header offset)

    def _write(self, data):
        self.fp.write(data)
        self.pos += len(data)

    def write_record(self, name, data):
        """Store ``data`` (bytes-like) as ``name`` with its bytes 64-byte aligned."""
        name_b = name.encode("utf-8")
        view = memoryview(data).cast("B")
        size = view.nbytes
        offset = self.pos
        zip64 = b""
        if size >= _U32_MAX or offset >= _U32_MAX:  # sizes/offset move to a zip64 field
            zip64 = struct.pack("<HH", 1, 16) + struct.pack("<QQ", size, size)
        data_start = offset + _LOCAL.size + len(name_b) + len(zip64) + 4
        pad = (-data_start) % _ALIGN
        extra = zip64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        self._write(_LOCAL.pack(b"PK\x03\x04", 0, _FLAGS, 0, 0, 0, 0, 0, 0,
                                len(name_b), len(extra)))
        self._write(name_b)
        self._write(extra)
        crc = zlib.crc32(view)
        self._write(view)
        if zip64:
            self._write(struct.pack("<4sIQQ", b"PK\x07\x08", crc, size, size))
        else:
            self._write(struct.pack("<4sIII", b"PK\x07\x08", crc, size, size))
        self.entries.append((name_b, crc, size, offset))

    def close(self):
        cd_start = self.pos
        for name_b, crc, size, offset in self.entries:
            fields = []
            size32 = size
            if size >= _U32_MAX:
                fields += [size, size]
                size32 = _U32_MAX
            off32 = offset
            if offset >= _U32_MAX:
                fields.append(offset)
                off32 = _U32_MAX
            extra = (struct.pack("<HH", 1, 8 * len(fields)) + struct.pack(f"<{len(fields)}Q", *fields)
                     if fields else b"")
            self._write(_CENTRAL.pack(b"PK\x01\x02", 0, 0, _FLAGS, 0, 0, 0, crc, size32, size32,
                                      len(name_b), len(extra), 0, 0, 0, 0, off32))
            self._write(name_b)
            self._write(extra)
        cd_size = self.pos - cd_start
        n = len(self.entries)
        eocd64 = self.pos
        self._write(struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, _ZIP64_MADE_BY, _ZIP64_NEEDED,
                                0, 0, n, n, cd_size, cd_start))
        self._write(struct.pack("<4sIQI", b"PK\x06\x07", 0, eocd64, 1))
        self._write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                                min(cd_size, _U32_MAX), min(cd_start, _U32_MAX), 0))
