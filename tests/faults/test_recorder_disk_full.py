"""A disk that fills up while recording: the recorder fails cleanly, the sidecar says so, the run exits 1.

The full disk is simulated deterministically: `FullDisk` replaces the recorder's one file-opening
seam (`recorder._open_text`) with real files whose writes raise ENOSPC once the disk's free bytes
are used up. Overwriting bytes a file already has needs no free space, as on a real file system.
"""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import threading
import time

try:
    import resource
except ImportError:  # Windows
    resource = None

import pytest

import app.sessions.recorder as recorder_module
from app.cli import EXIT_FAILURE, EXIT_USAGE, main
from app.sessions.reader import read_session
from app.sessions.recorder import Recorder, RecorderState
from app.sessions.schema import sidecar_path
from tests.test_sessions import make_snapshots


class _DiskFile(io.RawIOBase):
    """A real file on the test's disk whose growth is charged to `FullDisk.free_bytes`."""

    def __init__(self, disk: FullDisk, path, mode: str) -> None:
        flags = {"x": os.O_WRONLY | os.O_CREAT | os.O_EXCL, "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                 "r+": os.O_RDWR}[mode]
        if mode == "w" and os.path.exists(path):
            disk.free_bytes += os.path.getsize(path)  # truncation frees its blocks
        self._fd = os.open(path, flags, 0o644)
        self._disk = disk
        self._readable = mode == "r+"

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return self._readable

    def readinto(self, b) -> int:
        data = os.read(self._fd, len(b))
        b[:len(data)] = data
        return len(data)

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def tell(self) -> int:
        return os.lseek(self._fd, 0, os.SEEK_CUR)

    def seek(self, pos: int, whence: int = 0) -> int:
        return os.lseek(self._fd, pos, whence)

    def truncate(self, size: int | None = None) -> int:
        size = self.tell() if size is None else size
        old = os.fstat(self._fd).st_size
        os.ftruncate(self._fd, size)
        self._disk.free_bytes += max(0, old - size)
        return size

    def write(self, b) -> int:
        b = bytes(b)
        pos, size = self.tell(), os.fstat(self._fd).st_size
        room = size + self._disk.free_bytes - pos
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = os.write(self._fd, b[:room])
        self._disk.free_bytes -= max(0, pos + n - size)
        return n

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


class FullDisk:
    """`free_bytes` of room for every file the recorder writes, shared like a file system's."""

    def __init__(self, free_bytes: int) -> None:
        self.free_bytes = free_bytes

    def open(self, path, mode: str, buffering: int = -1):
        raw = _DiskFile(self, path, mode)
        size = buffering if buffering > 0 else io.DEFAULT_BUFFER_SIZE
        buf = io.BufferedRandom(raw, size) if mode == "r+" else io.BufferedWriter(raw, size)
        return io.TextIOWrapper(buf, encoding="utf-8", newline="")


@pytest.fixture
def thread_errors():
    """Exceptions that escape any thread (the writer used to die with an AttributeError).

    Installed in the test's body: pytest swaps its own hook in for the call phase, so a
    fixture-time patch would not see them."""
    seen: list[BaseException] = []
    hooks: list = []

    def install():
        hooks.append(threading.excepthook)
        threading.excepthook = lambda args: seen.append(args.exc_value)

    yield install, seen
    if hooks:
        threading.excepthook = hooks[0]


def record_until_full(tmp_path, monkeypatch, free_bytes: int, n: int = 400):
    disk = FullDisk(free_bytes)
    monkeypatch.setattr(recorder_module, "_open_text", disk.open)
    path = tmp_path / "run.csv"
    # Rows fill the 64 kB write buffer long before a flush is due: the error comes from a write.
    rec = Recorder(path, {"app_version": "test"}, flush_interval_s=0.05)
    rec.start()
    assert rec.state is RecorderState.RECORDING  # the header and the first sidecar fit
    for s in make_snapshots(n):
        rec.submit(s)
    return rec, path, disk


def test_a_full_disk_fails_the_recording_and_completes_the_sidecar(tmp_path, monkeypatch, thread_errors):
    install_hook, thread_errors = thread_errors
    install_hook()
    rec, path, disk = record_until_full(tmp_path, monkeypatch, free_bytes=60_000)
    final = rec.stop(summary={"ticks": 400})
    assert thread_errors == []
    assert final.state is RecorderState.FAILED and rec.state is RecorderState.FAILED
    assert final.error == f"writing {path} failed: No space left on device"
    # Every row is either in the file or counted as dropped.
    s = read_session(path)
    assert final.rows_written == s.n_rows > 0
    assert final.rows_written + final.dropped_rows == 400
    # The rename could not get space; the sidecar was completed in place.
    side = json.loads(sidecar_path(path).read_text())
    assert side["complete"] is False and side["error"] == final.error
    assert side["n_rows"] == s.n_rows and side["dropped_rows"] == final.dropped_rows
    assert side["summary"] == {"ticks": 400} and side["app_version"] == "test"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.csv", "run.csv.json"]  # no .json.tmp left


def test_a_disk_with_room_again_gets_the_sidecar_written_atomically(tmp_path, monkeypatch, thread_errors):
    install_hook, thread_errors = thread_errors
    install_hook()
    rec, path, disk = record_until_full(tmp_path, monkeypatch, free_bytes=60_000)
    for _ in range(2000):  # the 400 rows need 1 MB: the writer fails once it reaches the limit
        if rec.state is RecorderState.FAILED:
            break
        time.sleep(0.005)
    assert rec.state is RecorderState.FAILED
    # With nothing queued, the writer keeps waking up to flush: it must not touch the closed file.
    rec._thread.join(timeout=0.3)  # noqa: SLF001
    assert rec._thread.is_alive() and thread_errors == []  # noqa: SLF001
    disk.free_bytes = 1 << 20  # another program freed space before the run ended
    final = rec.stop()
    assert thread_errors == [] and final.state is RecorderState.FAILED
    text = sidecar_path(path).read_text()
    assert text.startswith('{\n  "app_version"')  # the indented document: written and renamed, not in place
    side = json.loads(text)
    assert side["complete"] is False and side["n_rows"] == final.rows_written == read_session(path).n_rows
    assert not list(tmp_path.glob("*.tmp"))


def test_no_room_even_in_place_leaves_the_first_sidecar_and_no_tmp(tmp_path, monkeypatch, thread_errors):
    install_hook, thread_errors = thread_errors
    install_hook()
    rec, path, disk = record_until_full(tmp_path, monkeypatch, free_bytes=60_000)
    final = rec.stop(summary={"pad": "x" * 20_000})  # larger than the old sidecar's room
    assert thread_errors == [] and final.state is RecorderState.FAILED
    side = json.loads(sidecar_path(path).read_text())
    # The summary did not fit over the old sidecar; the record of the failure did.
    assert side["complete"] is False and side["error"] == final.error and side["n_rows"] == final.rows_written
    assert "left_out" in side["summary"]
    assert not list(tmp_path.glob("*.tmp"))


def test_the_sidecar_failing_at_start_leaves_no_tmp(tmp_path, monkeypatch):
    disk = FullDisk(free_bytes=3000)  # room for the header, not for the sidecar
    monkeypatch.setattr(recorder_module, "_open_text", disk.open)
    path = tmp_path / "run.csv"
    rec = Recorder(path, {"app_version": "test"})
    rec.start()
    assert rec.state is RecorderState.FAILED and rec.status().error == f"cannot record to {path}: No space left on device"
    rec.stop()
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="limits the file size the recording process may write")
def test_run_with_a_recording_that_fails_exits_1_and_says_so_last(tmp_path, capsys, thread_errors):
    """The run records through its recording process, which the seam above does not reach: its
    write error is a real one, a file-size limit it inherits (Python ignores SIGXFSZ, so the write
    fails with EFBIG, as a full disk's fails with ENOSPC)."""
    install_hook, thread_errors = thread_errors
    install_hook()
    path = tmp_path / "run.csv"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, hard))  # inherited by the process spawned meanwhile
    try:
        code = main(["run", "--source", "demo", "--seconds", "2", "--fast", "--quiet", "--record", str(path)])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    out, _ = capsys.readouterr()
    assert thread_errors == []
    assert code == EXIT_FAILURE
    last = out.strip().splitlines()[-1]
    n = read_session(path).n_rows
    assert last.startswith(f"recording FAILED: writing {path} failed: File too large; {n} rows kept in {path} (")
    side = json.loads(sidecar_path(path).read_text())
    assert side["n_rows"] == n and side["complete"] is False


def test_an_unwritable_record_path_is_said_once_in_one_line(tmp_path, capsys, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with caplog.at_level(logging.WARNING):
        code = main(["run", "--source", "demo", "--seconds", "1", "--fast", "--quiet", "--record", str(blocker / "s.csv")])
    _, err = capsys.readouterr()
    assert code == EXIT_USAGE
    assert err == (f"pico-teleop: error: cannot record to {blocker / 's.csv'}: cannot create folder {blocker}: "
                   "File exists\n")
    assert [r.getMessage() for r in caplog.records if "cannot record" in r.getMessage()] == []
