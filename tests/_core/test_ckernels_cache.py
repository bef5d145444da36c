"""The compiled-kernel cache is trusted only as far as it is shown to be ours and intact:
a private directory (created 0700; refused when someone else owns it or can write it), a
SHA-256 recorded for every library at build time and checked before loading, so that
truncated, corrupted or planted libraries are rebuilt and never loaded; an advisory lock so
that concurrent processes compile a library once.  Each case compiles for real with the
system C compiler and loads in a fresh process.

The eager kernel library itself is built once, into a fresh cache, and checked end to end
through ``ckernels.status()`` (`eager_built`).  The damage, planting, symlink, refused
directory and lock cases run the same builder (`ember_lite._build.build`, which
`ember._core.ckernels.build` wraps with the CPU level's flags) on a two-function library:
each then costs a compile of two lines and a process that imports no ember, instead of
the eager library's ~16 CPU s of compiling and ember's import."""
import hashlib
import json
import os
import shlex
import stat
import subprocess
import sys
import textwrap

import pytest

from ember._core.ckernels import build as ckbuild

pytestmark = pytest.mark.skipif(ckbuild.find_compiler() is None and not os.environ.get("CI"),
                                reason="no C compiler here (CI has one)")

_EAGER_PROBE = textwrap.dedent("""
    import json, warnings
    warnings.simplefilter("error")
    import numpy as np
    import ember
    from ember._core import ckernels as ck
    st = ck.status()
    x = ember.tensor(np.linspace(-3, 3, 8192, dtype=np.float32).reshape(8, 1024))
    y = ember.softmax(x, dim=-1).numpy()
    print(json.dumps({k: st.get(k) for k in ("available", "reason", "compiled", "path",
                                             "cache_dir", "cache_refused")}
                     | {"first": float(y[0, 0]), "sum": float(y.sum())}))
""")

_ABI = 7  # what the check demands of a library: the planted ones below pass it too
_VALUE = 0.375
_SMALL_SOURCE = (f"int ck_abi(void) {{ return {_ABI}; }}\n"
                 f"double ck_value(void) {{ return {_VALUE}; }}\n")
_SMALL_PROBE = textwrap.dedent("""
    import ctypes, json, sys
    from ember_lite import _build
    source, abi = sys.argv[1], int(sys.argv[2])
    lib, info = _build.build("ember_small", source, lambda lib: lib.ck_abi() == abi,
                             [(("-O0",) + _build.BASE_FLAGS, {})])
    lib.ck_value.restype = ctypes.c_double
    print(json.dumps({k: info[k] for k in ("compiled", "path", "cache_dir", "cache_refused")}
                     | {"value": lib.ck_value()}))
""")


def _result(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, f"probe died with {p.returncode}: {err[-2000:]}"
    return json.loads(out.strip().splitlines()[-1])


def _run(args, cache, env_extra):
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache), **env_extra)
    return subprocess.Popen([sys.executable, "-c", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _eager_probe(cache):
    r = _result(_run([_EAGER_PROBE], cache, {}))
    assert abs(r["sum"] - 8.0) < 1e-4
    return r


def _start_small(cache, **env_extra):
    return _run([_SMALL_PROBE, _SMALL_SOURCE, str(_ABI)], cache, env_extra)


def _small_probe(cache, **env_extra):
    """Build (or load from ``cache``) the small library in a fresh process: its info."""
    r = _result(_start_small(cache, **env_extra))
    assert r["value"] == _VALUE  # the genuine library's code ran
    return r


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _files(d):
    return sorted(f for f in os.listdir(d) if not f.endswith(".lock"))


def _entry(path):
    """The files of one cache entry: the library and its hash record."""
    name = os.path.basename(path)
    return [name, name + ".sha256"]


def _evil_library(tmp_path, marker):
    """A library that passes the ABI check and, when loaded, writes ``marker``."""
    src = tmp_path / "evil.c"
    src.write_text(textwrap.dedent(f"""
        #include <stdio.h>
        __attribute__((constructor)) static void ran(void) {{
            FILE *f = fopen("{marker}", "w");
            if (f) {{ fputs("loaded", f); fclose(f); }}
        }}
        int ck_abi(void) {{ return {_ABI}; }}
        double ck_value(void) {{ return -1.0; }}
    """))
    out = tmp_path / "evil.so"
    cc = ckbuild.find_compiler()
    subprocess.run(cc + ["-shared", "-fPIC", str(src), "-o", str(out)], check=True,
                   capture_output=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def eager_built(tmp_path_factory):
    """One fresh cache with the eager library built in it: (cache dir, probe result)."""
    d = tmp_path_factory.mktemp("cache") / "nested" / "kernels"
    r = _eager_probe(d)
    assert r["available"] and r["compiled"] and r["cache_refused"] is None, r
    return d, r


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One cache with the small library built: (cache dir, probe result)."""
    d = tmp_path_factory.mktemp("small") / "kernels"
    r = _small_probe(d)
    assert r["compiled"] and r["cache_refused"] is None, r
    assert _files(d) == _entry(r["path"])
    return d, r


def _fresh_copy(built, tmp_path):
    """A private copy of the built cache (library + record), for one test to damage."""
    d, r = built
    dst = tmp_path / "kernels"
    dst.mkdir(mode=0o700)
    name = os.path.basename(r["path"])
    for f in (name, name + ".sha256"):
        data = (d / f).read_bytes()
        (dst / f).write_bytes(data)
        os.chmod(dst / f, 0o700 if f == name else 0o600)
    return dst, dst / name


@pytest.mark.slow
def test_new_cache_dir_is_private_and_records_the_library_hash(eager_built):
    d, r = eager_built
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert _files(d) == _entry(r["path"])  # no temporary files left
    name = os.path.basename(r["path"])
    digest, recorded_name = (d / (name + ".sha256")).read_text().split()
    assert recorded_name == name and digest == _sha256(r["path"])
    lib_mode = os.stat(r["path"]).st_mode
    assert stat.S_ISREG(lib_mode) and not lib_mode & (stat.S_IWGRP | stat.S_IWOTH)
    again = _eager_probe(d)  # a verified entry is reused, not rebuilt
    assert again["available"] and not again["compiled"] and again["path"] == r["path"]
    assert again["first"] == r["first"]


@pytest.mark.parametrize("damage", ["truncate_half", "truncate_to_100", "flip_byte",
                                    "drop_record"])
def test_damaged_entry_is_rebuilt_never_loaded(built, tmp_path, damage):
    d, lib = _fresh_copy(built, tmp_path)
    if damage == "truncate_half":  # dlopen maps this and crashed later with SIGBUS
        with open(lib, "r+b") as f:
            f.truncate(os.path.getsize(lib) // 2)
    elif damage == "truncate_to_100":  # a half-written-looking file
        with open(lib, "r+b") as f:
            f.truncate(100)
    elif damage == "flip_byte":
        data = bytearray(lib.read_bytes())
        data[len(data) // 2] ^= 0xFF
        lib.write_bytes(bytes(data))
    else:
        os.unlink(str(lib) + ".sha256")
    damaged = _sha256(lib)
    r = _small_probe(d)
    assert r["compiled"] and r["path"] == str(lib), r
    rebuilt = _sha256(lib)
    assert rebuilt != damaged or damage == "drop_record"
    assert os.path.getsize(lib) == os.path.getsize(built[1]["path"])
    assert (d / (lib.name + ".sha256")).read_text().split()[0] == rebuilt
    assert _files(d) == _entry(lib)
    assert _small_probe(d)["compiled"] is False  # and the rebuilt entry verifies


@pytest.mark.parametrize("record", ["none", "genuine"])
def test_library_planted_under_the_predictable_name_is_not_loaded(built, tmp_path, record):
    d, lib = _fresh_copy(built, tmp_path)
    marker = tmp_path / "marker"
    evil = _evil_library(tmp_path, marker)
    lib.write_bytes(evil.read_bytes())
    if record == "none":
        os.unlink(str(lib) + ".sha256")
    r = _small_probe(d)
    assert not marker.exists(), "the planted library ran"
    assert r["compiled"]
    assert _sha256(lib) != _sha256(evil)


def test_symlink_in_place_of_the_library_is_not_followed(built, tmp_path):
    d, lib = _fresh_copy(built, tmp_path)
    marker = tmp_path / "marker"
    evil = _evil_library(tmp_path, marker)
    os.unlink(lib)
    os.symlink(evil, lib)
    # even with a record matching the link's target
    (d / (lib.name + ".sha256")).write_text(f"{_sha256(evil)}  {lib.name}\n")
    r = _small_probe(d)
    assert not marker.exists()
    assert r["compiled"]
    assert not os.path.islink(lib) and os.path.isfile(lib)


def test_writable_by_others_cache_dir_is_refused_for_a_private_one(built, tmp_path):
    d, lib = _fresh_copy(built, tmp_path)
    marker = tmp_path / "marker"
    evil = _evil_library(tmp_path, marker)
    lib.write_bytes(evil.read_bytes())  # planted with a matching record: only the dir check
    (d / (lib.name + ".sha256")).write_text(f"{_sha256(evil)}  {lib.name}\n")
    os.chmod(d, 0o777)
    before = _files(d)
    r = _small_probe(d)
    assert not marker.exists()
    assert r["compiled"]
    assert "writable by group or others (mode 777)" in r["cache_refused"]
    assert "private temporary directory" in r["cache_refused"]
    assert r["cache_dir"] != str(d) and not r["path"].startswith(str(d))
    assert _files(d) == before  # nothing written into the refused directory
    assert not os.path.exists(r["cache_dir"])  # the private directory went at exit


def test_concurrent_builds_are_safe(tmp_path):
    # a compiler that takes a second, so that the three processes meet at the lock
    log = tmp_path / "cc.log"
    slow = tmp_path / "bin" / "slowcc"
    slow.parent.mkdir()
    slow.write_text(f"#!/bin/sh\necho run >> '{log}'\nsleep 1\n"
                    f"exec {shlex.join(ckbuild.find_compiler())} \"$@\"\n")
    slow.chmod(0o755)
    cache = tmp_path / "cache"
    procs = [_start_small(cache, CC=str(slow)) for _ in range(3)]
    results = [_result(p) for p in procs]
    assert all(r["value"] == _VALUE for r in results)
    assert len({r["path"] for r in results}) == 1
    assert sum(bool(r["compiled"]) for r in results) == 1  # the lock: one build, the rest wait
    assert log.read_text().split() == ["run"]
    assert _files(cache) == _entry(results[0]["path"])


def test_check_dir_reasons(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    assert ckbuild.check_dir(str(mine)) is None
    os.chmod(mine, 0o755)  # readable by others is fine: only writers matter
    assert ckbuild.check_dir(str(mine)) is None
    os.chmod(mine, 0o770)
    assert "writable by group or others (mode 770)" in ckbuild.check_dir(str(mine))
    os.chmod(mine, 0o700)
    link = tmp_path / "link"
    os.symlink(mine, link)
    assert ckbuild.check_dir(str(link)) is None
    afile = tmp_path / "file"
    afile.write_text("")
    assert ckbuild.check_dir(str(afile)) == "not a directory"
    owner = os.stat(mine).st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    assert ckbuild.check_dir(str(mine)) == \
        f"owned by uid {owner}, not by this user (uid {owner + 1})"


def test_cache_dir_of_another_user_falls_back_to_a_private_dir(tmp_path, monkeypatch):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(d))
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(d).st_uid + 1)
    used, refused = ckbuild._usable_cache_dir()
    assert used != str(d) and f"kernel cache directory {d} refused: owned by uid" in refused
    st = os.stat(used)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    monkeypatch.undo()
    assert ckbuild.check_dir(used) is None


def test_new_cache_dir_is_created_0700_whatever_the_umask(tmp_path, monkeypatch):
    d = tmp_path / "a" / "b"
    monkeypatch.setenv("EMBER_CACHE_DIR", str(d))
    old = os.umask(0)
    try:
        used, refused = ckbuild._usable_cache_dir()
    finally:
        os.umask(old)
    assert used == str(d) and refused is None
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
