"""save never loses or corrupts data: colliding names are refused before anything is written,
files keep their mode, symlinks are written through, and the temporary files of killed
saves are removed by the next save, never anything else."""

import os
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import tensorix as tx
from tensorix.io._atomic import _prefix, temp_files

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals and flock")


def _ours(directory):
    return sorted(n for n in os.listdir(directory) if ".tensorix-tmp-" in n)


# -- names that would collide after flattening ------------------------------------------------
COLLIDING = {
    "slash-vs-nested": lambda a, b: {"a/b": a, "a": {"b": b}},
    "int-vs-str-key": lambda a, b: {1: a, "1": b},
    "list-index-vs-slash": lambda a, b: {"x": [a], "x/0": b},
    "nested-vs-nested": lambda a, b: {"p": {"q/r": a}, "p/q": {"r": b}},
    "array-vs-tensor": lambda a, b: {"a/b": a, "a": {"b": np.zeros(2)}},
}


@pytest.mark.parametrize("case", sorted(COLLIDING))
def test_colliding_names_are_refused_before_writing(case, tmp_path):
    path = tmp_path / "c.safetensors"
    tx.save({"old": tx.ones(2)}, path)
    before = path.read_bytes()
    obj = COLLIDING[case](tx.ones(2), tx.zeros(3))
    with pytest.raises(ValueError, match=r"save\(\): \[.*\] and \[.*\] would both be stored as"):
        tx.save(obj, path)
    assert path.read_bytes() == before and _ours(tmp_path) == []


def test_same_tensor_twice_is_not_a_collision(tmp_path):
    t = tx.arange(3.0)
    tx.save({"a": t, "b": [t]}, tmp_path / "s.safetensors")
    back = tx.load(tmp_path / "s.safetensors")
    assert back["a"] is back["b"][0] and back["a"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("obj", [{"__metadata__": "T"}, {"__metadata__": "T", "step": 1},
                                 {"m": {"x": 1}, "__metadata__": "T"}])
def test_tensor_named_metadata_is_refused(obj, tmp_path):
    """It used to save, and the file then never loaded again."""
    obj = {k: (tx.ones(2) if v == "T" else v) for k, v in obj.items()}
    with pytest.raises(ValueError, match="cannot be named '__metadata__'"):
        tx.save(obj, tmp_path / "m.safetensors")
    assert os.listdir(tmp_path) == []


def test_nesting_too_deep_or_cyclic_is_refused(tmp_path):
    cyclic = []
    cyclic.append(cyclic)
    deep = [0]
    for _ in range(150):
        deep = [deep]
    for obj in (cyclic, deep):
        with pytest.raises(ValueError, match="nested more than 100 levels"):
            tx.save(obj, tmp_path / "d.safetensors")
    assert os.listdir(tmp_path) == []
    ok = [0]  # 100 levels counting the dict: allowed, and it loads back
    for _ in range(98):
        ok = [ok]
    tx.save({"t": tx.ones(1), "deep": ok}, tmp_path / "ok.safetensors")
    assert tx.load(tmp_path / "ok.safetensors")["deep"] == ok


# -- permissions and symlinks, as torch.save's open(path, "wb") ---------------------------------
@posix_only
def test_resave_keeps_the_file_mode(tmp_path):
    path = tmp_path / "secret.safetensors"
    tx.save({"a": tx.ones(2)}, path)
    os.chmod(path, 0o600)
    tx.save({"a": tx.zeros(2)}, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o640)
    tx.save({"a": {"nested": tx.zeros(2)}}, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert tx.load(path)["a"]["nested"].tolist() == [0.0, 0.0]


@posix_only
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root may write read-only files, as open() lets it")
def test_read_only_file_is_refused_like_open(tmp_path):
    path = tmp_path / "ro.safetensors"
    tx.save({"a": tx.ones(2)}, path)
    os.chmod(path, 0o444)
    with pytest.raises(PermissionError):
        tx.save({"a": tx.zeros(2)}, path)
    assert tx.load(path)["a"].tolist() == [1.0, 1.0] and _ours(tmp_path) == []


@posix_only
def test_save_writes_through_symlinks(tmp_path):
    store, links = tmp_path / "store", tmp_path / "links"
    store.mkdir()
    links.mkdir()
    target = store / "real.safetensors"
    tx.save({"a": tx.ones(2)}, target)
    os.chmod(target, 0o600)
    link = links / "latest.safetensors"
    os.symlink(os.path.relpath(target, links), link)
    chain = links / "chain.safetensors"
    os.symlink(link, chain)  # a link to a link
    tx.save({"a": tx.full((2,), 5.0)}, chain)
    assert os.path.islink(link) and os.path.islink(chain)
    assert tx.load(target)["a"].tolist() == [5.0, 5.0]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert sorted(os.listdir(store)) == ["real.safetensors"]
    assert sorted(os.listdir(links)) == ["chain.safetensors", "latest.safetensors"]
    dangling = links / "new.safetensors"
    os.symlink(store / "created.safetensors", dangling)
    tx.save({"b": tx.ones(1)}, dangling)  # as open("wb"): creates the link's target
    assert os.path.islink(dangling) and list(tx.load(store / "created.safetensors")) == ["b"]


def test_missing_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"parent directory .*nope does not exist"):
        tx.save({"a": tx.ones(1)}, tmp_path / "nope" / "w.safetensors")


def test_long_file_names_get_short_temp_names(tmp_path):
    name = "m" * 200 + ".safetensors"
    assert len(_prefix(name)) < 80 and _prefix(name) != _prefix("m" * 199 + "n.safetensors")
    tx.save({"a": tx.ones(1)}, tmp_path / name)
    assert tx.load(tmp_path / name)["a"].tolist() == [1.0]


# -- temporary files of killed saves ------------------------------------------------------------
def _env():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


def _killed_save(path):
    code = ("import os, signal, tensorix as tx\n"
            "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
            f"tx.save({{'a': tx.zeros(100000)}}, {str(path)!r})\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120,
                          env=_env())
    assert proc.returncode == -9, proc.stderr


def _dead_pid():
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, timeout=60)
    return int(proc.stdout)


@posix_only
def test_next_save_removes_leftovers_of_killed_saves_and_nothing_else(tmp_path):
    import fcntl

    path = tmp_path / "w.safetensors"
    tx.save({"a": tx.ones(3)}, path)
    _killed_save(path)
    first = temp_files(path)
    assert len(first) == 1 and os.path.getsize(tmp_path / first[0]) > 0
    _killed_save(path)  # removes the first leftover, leaves its own: they never pile up
    leftovers = temp_files(path)
    assert len(leftovers) == 1 and leftovers != first
    assert tx.load(path)["a"].tolist() == [1.0, 1.0, 1.0]

    dead, prefix = _dead_pid(), _prefix("w.safetensors")
    decoys = {
        "other-target": f"{_prefix('other.safetensors')}{dead}-0123456789ab",
        "live-writer": f"{prefix}{os.getppid()}-0123456789ab",  # creating, not yet locked
        "locked": f"{prefix}{dead}-abcdefabcdef",  # another machine's live writer
        "bad-suffix": f"{prefix}{dead}-0123456789ab.bak",
        "user-file": ".tmp-w.safetensors",
        "lookalike": f"w.safetensors.tensorix-tmp-{dead}-0123456789ab",
    }
    for name in decoys.values():
        (tmp_path / name).write_bytes(b"keep me")
    os.symlink(tmp_path / "w.safetensors", tmp_path / f"{prefix}{dead}-fedcbafedcba")
    stale = {  # leftovers too, though their pid is alive: a restarted container reuses pids
        "same-pid-as-ours": f"{prefix}{os.getpid()}-aaaaaaaaaaaa",
        "live-pid-but-old": f"{prefix}{os.getppid()}-bbbbbbbbbbbb",
    }
    for name in stale.values():
        (tmp_path / name).write_bytes(b"stale")
    hours_ago = time.time() - 7200
    os.utime(tmp_path / stale["live-pid-but-old"], (hours_ago, hours_ago))
    held = os.open(tmp_path / decoys["locked"], os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        tx.save({"a": tx.zeros(2)}, path)
    finally:
        os.close(held)
    remaining = set(os.listdir(tmp_path))
    assert not (set(leftovers) | set(stale.values())) & remaining
    assert set(decoys.values()) <= remaining
    assert os.path.islink(tmp_path / f"{prefix}{dead}-fedcbafedcba")
    assert all((tmp_path / n).read_bytes() == b"keep me" for n in decoys.values())
    assert tx.load(path)["a"].tolist() == [0.0, 0.0]


@posix_only
def test_concurrent_save_by_another_process_is_left_alone(tmp_path):
    """A live writer's temporary file survives our save, and its own save then succeeds."""
    path = tmp_path / "w.safetensors"
    tx.save({"a": tx.ones(1)}, path)
    code = ("import os, sys, tensorix as tx\n"
            "real = os.fsync\n"
            "def wait(fd):\n"
            "    sys.stdin.readline()\n"
            "    real(fd)\n"
            "os.fsync = wait\n"
            f"tx.save({{'theirs': tx.full((1000,), 7.0)}}, {str(path)!r})\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env())
    try:
        deadline = time.monotonic() + 120
        while not temp_files(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        theirs = temp_files(path)
        assert len(theirs) == 1
        tx.save({"ours": tx.zeros(1)}, path)
        assert temp_files(path) == theirs
        assert list(tx.load(path)) == ["ours"]
    finally:
        _, err = proc.communicate(b"\n", timeout=120)
    assert proc.returncode == 0, err
    assert temp_files(path) == []
    assert tx.load(path)["theirs"].tolist() == [7.0] * 1000


@posix_only
def test_a_thread_saving_in_its_creation_window_is_left_alone(tmp_path):
    """Between creating its temporary file and locking it, a save of this very process (in
    another thread) is known by name; once no save owns the name it is a leftover."""
    from tensorix.io import _atomic

    path = tmp_path / "w.safetensors"
    name = str(tmp_path / f"{_prefix('w.safetensors')}{os.getpid()}-0123456789ab")
    _atomic._IN_FLIGHT.add(name)
    try:
        open(name, "wb").close()  # created, not locked yet
        tx.save({"a": tx.ones(1)}, path)
        assert os.path.exists(name)
    finally:
        _atomic._IN_FLIGHT.discard(name)
    tx.save({"a": tx.ones(1)}, path)
    assert not os.path.exists(name) and _ours(tmp_path) == []
