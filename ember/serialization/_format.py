"""Facts about PyTorch's zip checkpoint format shared by the reader and the writer.

A checkpoint is a zip archive ``<prefix>/data.pkl`` (a protocol-2 pickle) plus one
raw little-endian file per storage, ``<prefix>/data/<key>``.  A tensor in the
pickle is a call to one of ``torch._utils``' rebuild functions on a *persistent
id* ``("storage", storage_type, key, location, numel)``.  Dtypes older than
PyTorch 2.1 have a legacy typed storage class (``torch.FloatStorage``, numel in
elements); the others are written as ``torch.storage.UntypedStorage`` (numel in
bytes) and rebuilt with ``_rebuild_tensor_v3``, which names the dtype.
"""
from .._core import dtype as _dt

# dtypes with a legacy typed storage class, exactly torch.storage._dtype_to_storage_type_map()
LEGACY_STORAGE_NAMES = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
    "uint8": "ByteStorage", "bool": "BoolStorage", "bfloat16": "BFloat16Storage",
    "complex128": "ComplexDoubleStorage", "complex64": "ComplexFloatStorage",
}
DTYPE_BY_LEGACY_STORAGE = {v: getattr(_dt, k) for k, v in LEGACY_STORAGE_NAMES.items()}

# quantized storages torch can write; ember has no quantized dtypes yet (refused clearly)
QUANTIZED_STORAGES = {"QInt8Storage", "QInt32Storage", "QUInt8Storage", "QUInt4x2Storage",
                      "QUInt2x4Storage"}

# torch dtype names as they appear in pickles (``torch.float32`` is written as GLOBAL torch float32)
TORCH_DTYPE_NAMES = {d.name: d for d in _dt.ALL + _dt.QUANTIZED}
TORCH_DTYPE_NAMES.update({"half": _dt.float16, "float": _dt.float32, "double": _dt.float64,
                          "long": _dt.int64, "int": _dt.int32, "short": _dt.int16,
                          "cfloat": _dt.complex64, "cdouble": _dt.complex128})

# torch dtypes that exist in torch but not (yet) in ember: named in the error instead of "unknown"
TORCH_ONLY_DTYPES = {"complex32", "chalf", "quint4x2", "quint2x4",
                     "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
                     "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16", "uint1", "uint2",
                     "uint3", "uint4", "uint5", "uint6", "uint7", "int1", "int2", "int3", "int4",
                     "int5", "int6", "int7"}

DATA_PKL = "data.pkl"
STORAGE_ALIGNMENT = 64
