"""ember.save never destroys: atomic replacement keeping permissions, symlinks followed,
FIFOs and devices written through, and killed saves leave nothing behind."""
import io
import os
import signal
import stat
import threading
import time

import numpy as np
import pytest
import torch

import ember


def _temps(directory):
    return [n for n in os.listdir(directory) if ".ember-save-" in n]


def test_regular_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "ck.pt"
    path.write_bytes(b"old")
    os.chmod(path, 0o600)
    ember.save({"a": ember.ones(2)}, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    np.testing.assert_array_equal(ember.load(path)["a"].numpy(), [1.0, 1.0])
    os.chmod(path, 0o640)
    ember.save({"a": ember.zeros(2)}, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert _temps(tmp_path) == []


def test_new_file_gets_the_umask_permissions(tmp_path):
    old = os.umask(0o027)
    try:
        ember.save(ember.ones(1), tmp_path / "new.pt")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.pt").st_mode) == 0o640


def test_symlink_is_followed_and_kept(tmp_path):
    real = tmp_path / "real.pt"
    link = tmp_path / "link.pt"
    ember.save({"v": 1}, real)
    link.symlink_to(real.name)
    ember.save({"v": 2}, link)
    assert link.is_symlink() and os.readlink(link) == real.name
    assert ember.load(real) == {"v": 2}
    # a dangling link creates its target
    dangling = tmp_path / "dangling.pt"
    dangling.symlink_to("target.pt")
    ember.save({"v": 3}, dangling)
    assert dangling.is_symlink() and ember.load(tmp_path / "target.pt") == {"v": 3}


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, "rb") as f:
            got["data"] = f.read()

    th = threading.Thread(target=reader)
    th.start()
    ember.save({"w": ember.arange(5.0)}, fifo)
    th.join(timeout=30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    np.testing.assert_array_equal(torch.load(io.BytesIO(got["data"]))["w"].numpy(),
                                  np.arange(5.0, dtype=np.float32))
    assert _temps(tmp_path) == []


@pytest.mark.skipif(not os.access("/dev/null", os.W_OK) and not os.environ.get("CI"),
                    reason="needs a writable /dev/null")
def test_dev_null_stays_a_device():
    ember.save({"w": ember.ones(3)}, "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_directory_is_refused(tmp_path):
    with pytest.raises(IsADirectoryError):
        ember.save({"a": 1}, tmp_path)


def test_file_objects_are_written_through(tmp_path):
    buf = io.BytesIO()
    ember.save({"a": ember.ones(2)}, buf)
    assert torch.load(io.BytesIO(buf.getvalue()))["a"].sum().item() == 2.0
    with open(tmp_path / "f.pt", "wb") as f:
        ember.save({"a": ember.ones(2)}, f)
    assert ember.load(tmp_path / "f.pt")["a"].sum().item() == 2.0


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    path = tmp_path / "ck.pt"
    stale = tmp_path / ".ck.pt.ember-save-deadbeef.tmp"
    stale.write_bytes(b"x" * 100)
    unrelated = tmp_path / ".other.pt.ember-save-deadbeef.tmp"
    unrelated.write_bytes(b"y")
    ember.save({"a": 1}, path)
    assert not stale.exists() and unrelated.exists()


@pytest.mark.slow
def test_sigkill_during_saves_never_corrupts_or_leaks(tmp_path):
    path = tmp_path / "ck.pt"
    n = 1 << 20
    ember.save({"w": ember.arange(n, dtype=ember.float32), "tag": -1}, path)
    rng = np.random.default_rng(0)
    for i in range(50):
        pid = os.fork()  # a child with ember already imported: each kill costs milliseconds
        if pid == 0:
            try:
                big = {"w": ember.arange(n, dtype=ember.float32), "tag": i}
                while True:
                    ember.save(big, path)
            finally:
                os._exit(1)
        time.sleep(float(rng.uniform(0.0, 0.06)))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        got = ember.load(path)  # always a whole checkpoint: the old one or a new one
        assert got["tag"] in (-1, *range(i + 1))
        assert got["w"].shape == (n,) and got["w"][n - 1].item() == n - 1
    ember.save({"w": ember.ones(1), "tag": 99}, path)
    assert _temps(tmp_path) == []
    assert ember.load(path)["tag"] == 99
