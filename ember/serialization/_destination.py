"""Where ``ember.save`` writes: a checkpoint is never destroyed by a save.

* A regular file (or a new path) is written to a temporary file in the same
  directory, flushed to disk and renamed over the target, so an interrupted save
  leaves the previous checkpoint intact.  The new file keeps the old file's
  permission bits and, where the process may set it, its owner.
* A symlink is followed: the file it points to is replaced atomically, as the
  user meant; the link itself stays a link.
* A FIFO, a character or block device (``/dev/null``) or a socket cannot be
  "replaced" meaningfully: it is opened and written through, as torch does.

Temporary files are named ``.<name>.ember-save-<random>.tmp`` and held under an
exclusive ``flock`` while being written.  A SIGKILLed save leaves one behind; the
next save to the same path removes every such file whose lock is free (its writer
is dead), so interrupted saves never accumulate.
"""
import contextlib
import errno
import fcntl
import os
import stat
import uuid

_TMP_MARK = ".ember-save-"


def _tmp_prefix(target):
    return "." + os.path.basename(target) + _TMP_MARK


def _resolve(path):
    """The file a save to ``path`` must replace: symlinks followed (a dangling link's target
    is created)."""
    seen = 0
    while os.path.islink(path):
        link = os.readlink(path)
        path = link if os.path.isabs(link) else os.path.join(os.path.dirname(path), link)
        seen += 1
        if seen > 40:
            raise RuntimeError(f"ember.save: too many levels of symbolic links at '{path}'")
    return os.path.abspath(path)


def remove_stale_temporaries(target):
    """Delete temp files of earlier saves to ``target`` whose writer is no longer alive."""
    directory = os.path.dirname(target) or "."
    prefix = _tmp_prefix(target)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # a live save holds it
            continue
        try:
            # re-check under the lock that the name still refers to this file
            if os.path.samestat(os.fstat(fd), os.lstat(path)):
                os.unlink(path)
        except OSError:
            pass
        finally:
            os.close(fd)


@contextlib.contextmanager
def open_for_save(path):
    """Yields a binary file to write the checkpoint into; commits it on success."""
    target = _resolve(os.fspath(path))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise RuntimeError(f"ember.save: cannot write to '{path}': {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "ember.save: the path is a directory",
                                    os.fspath(path))
        # FIFO, device, socket: written through, never replaced
        with open(target, "wb") as fp:
            yield fp
        return
    directory = os.path.dirname(target)
    remove_stale_temporaries(target)
    tmp = os.path.join(directory, f"{_tmp_prefix(target)}{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    committed = False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _copy_mode_and_owner(fd, st)
        with os.fdopen(fd, "wb", closefd=False) as fp:
            yield fp
            fp.flush()
            os.fsync(fd)
        os.replace(tmp, target)
        committed = True
        _fsync_directory(directory)
    finally:
        if not committed:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        os.close(fd)


def _copy_mode_and_owner(fd, st):
    if st is None:  # a new file: the permissions open(path, "wb") would give
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        return
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):
            os.fchown(fd, st.st_uid, st.st_gid)
        os.fchmod(fd, stat.S_IMODE(st.st_mode))  # chown may clear setuid/setgid bits


def _fsync_directory(directory):
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
