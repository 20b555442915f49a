"""Replacing a file atomically, the way every tensorix writer does it.

The bytes go to a temporary file next to the target, are flushed and fsynced, and the
temporary file is renamed over the target (then the directory is fsynced): a crash leaves
either the old file or the new one, never half of one.

Beyond that, a save behaves like ``torch.save``'s ``open(path, "wb")``:

- a symbolic link is written through (its final target is replaced; the link stays);
- an existing file keeps its permission bits (a 0600 checkpoint stays 0600), and a
  read-only one is refused with ``PermissionError`` as ``open`` would refuse it;
- a new file gets the usual mode (0666 less the umask).

A process killed mid-write (``kill -9``, out of memory) cannot remove its temporary file, so
each temporary file is named after its target and its writer
(``.<name>.tensorix-tmp-<pid>-<random>``) and holds an exclusive ``flock`` from a moment
after its creation until it has been renamed into place. The next save to the same target
removes such leftovers, and only those: plain files of that exact name pattern whose lock
is free, and which cannot be a live writer's file in the moment between creation and
locking (not one of this process's own saves in flight, and either the named process is
gone or the file is older than a minute: a restarted container reuses pids). A concurrent
save by a live process is never touched. Where ``fcntl`` is missing (Windows) leftovers
are left alone, since a live writer cannot be told from a dead one. (File systems whose
locks are local to each client, such as NFS mounted with ``local_lock``, cannot protect
two machines saving to the same path at once.)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
import time

try:
    import fcntl
except ImportError:  # Windows: no flock, no cleanup of leftovers
    fcntl = None

__all__ = ["atomic_write", "temp_files"]

_TAG = ".tensorix-tmp-"
_GRACE_S = 60.0  # a live writer locks its file microseconds after creating it
_IN_FLIGHT: set = set()  # this process's temporary files being written (any thread)


def _prefix(base: str) -> str:
    """The temporary-file prefix for a target named ``base``; long names are shortened
    (with a hash, so distinct targets keep distinct prefixes) to stay under NAME_MAX."""
    if len(base.encode()) > 160:
        digest = hashlib.sha256(base.encode()).hexdigest()[:16]
        base = base[:32] + "~" + digest
    return f".{base}{_TAG}"


def _pattern(base: str):
    return re.compile(re.escape(_prefix(base)) + r"(\d{1,10})-[0-9a-f]{12}\Z")


def temp_files(path) -> list[str]:
    """Names of the temporary files (ours or leftovers) for the target ``path``."""
    target = os.path.realpath(os.fspath(path))
    directory, base = os.path.split(target)
    pattern = _pattern(base)
    return sorted(n for n in os.listdir(directory) if pattern.match(n))


def _alive(pid: int) -> bool:
    """Whether process ``pid`` may still be writing (unsure counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # EPERM: someone else's live process
        return True
    return True


def _age(path: str) -> float:
    try:
        return time.time() - os.stat(path, follow_symlinks=False).st_mtime
    except OSError:
        return 0.0


def _remove_leftovers(directory: str, base: str) -> None:
    if fcntl is None:
        return
    pattern = _pattern(base)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if m is None:
            continue
        full = os.path.join(directory, name)
        if full in _IN_FLIGHT or (int(m.group(1)) != os.getpid() and _alive(int(m.group(1)))
                                  and _age(full) < _GRACE_S):
            continue  # may be between its creation and its lock
        try:
            fd = os.open(full, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue  # gone already, a link, or not ours to open
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live writer holds it
            try:
                now = os.stat(full, follow_symlinks=False)
            except OSError:
                continue  # renamed into place meanwhile: not a leftover
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(full)
        except OSError:
            pass
        finally:
            os.close(fd)


def _create_temp(directory: str, base: str) -> tuple[int, str]:
    """An exclusive new temporary file (mode 0666 less the umask), locked."""
    prefix = os.path.join(directory, _prefix(base)) + f"{os.getpid()}-"
    while True:
        name = prefix + secrets.token_hex(6)
        _IN_FLIGHT.add(name)  # before it exists: our own cleaner must never take it
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except BaseException as e:
            _IN_FLIGHT.discard(name)
            if isinstance(e, FileExistsError):
                continue
            raise
        if fcntl is not None:
            # file systems without flock: the pid in the name still guards the file
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd, name


def _keep_mode(tmp: str, fd: int, target: str, op: str) -> None:
    """Give the new file the old one's permission bits (and owner where allowed)."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    if not os.access(target, os.W_OK):
        raise PermissionError(13, f"{op}: permission denied (the file is read-only)", target)
    os.chmod(tmp, stat.S_IMODE(st.st_mode))
    if hasattr(os, "fchown") and (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
        # only root may give a file away; the mode is kept regardless
        with contextlib.suppress(OSError):
            os.fchown(fd, st.st_uid, st.st_gid)


def atomic_write(path, chunks, op: str = "save()") -> None:
    """Replace ``path`` (through symlinks) by the concatenated byte ``chunks``, atomically.

    Example::

        atomic_write("w.bin", [b"header", memoryview(array)])
    """
    target = os.path.realpath(os.fspath(path))
    directory, base = os.path.split(target)
    if not os.path.isdir(directory):  # else the error would name our temporary file
        raise FileNotFoundError(2, f"{op}: parent directory {directory} does not exist",
                                os.fspath(path))
    _remove_leftovers(directory, base)
    fd, tmp = _create_temp(directory, base)
    try:
        _keep_mode(tmp, fd, target, op)
        with os.fdopen(fd, "wb", closefd=False) as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(fd)
        # renamed while still locked, so a cleaner can never take a finished file for a leftover
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)
        _IN_FLIGHT.discard(tmp)
    _fsync_dir(directory)


def _fsync_dir(directory):
    """Make the rename durable (POSIX); a no-op where directories can't be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
