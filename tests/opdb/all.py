"""All OpInfos: every ``db_*.py`` module of this package contributes its ``OPS``."""
import importlib
import pkgutil

from . import __path__ as _path

OPS = []
for _m in sorted(m.name for m in pkgutil.iter_modules(_path) if m.name.startswith("db_")):
    OPS.extend(importlib.import_module(f"{__package__}.{_m}").OPS)

_names = [o.name for o in OPS]
_dups = {n for n in _names if _names.count(n) > 1}
assert not _dups, f"duplicate OpInfo names: {_dups}"
