"""Atomic output: write a temp file beside the target, then rename over it.

The one atomic writer of advisor (reports, check output, ``init``, generated docs, the cache).
On any error (a full disk, a permission, a signal) the previous file is left
byte-identical and no temp file remains. A failure of the file system is an
``EnvironmentFault`` (exit 4) naming the target and the cause; an impossible
target (a directory, a missing directory) is a ``UsageError`` (exit 2). An existing
target that is not a regular file (``/dev/stdout``, a FIFO) is written in place:
a device cannot be replaced by a rename. The file gets ``mode`` when given (the cache:
0o600); otherwise a replaced file keeps its mode and a new one gets 0o666 less the umask.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from advisor.errors import AdvisorError, EnvironmentFault, UsageError, environment_errno

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def refuse_links(output: str | os.PathLike[str]) -> None:
    """Refuse a relative output path that passes through a symbolic link below the working directory, the output path
    itself included (every command that writes: check, report, scaffold, init, catalog import). The change under review
    can commit ``reports -> /elsewhere`` or ``advisor.md -> /dev/null``: a report would be written outside the checkout,
    or into a device and lost, or a committed ``reports -> forged/`` pass a forged file off as this run's. The link (not
    what it points to) is removed, so that a later step finds no file at the output path. An absolute path is the
    user's own choice (``/dev/stdout``)."""
    path = Path(output)
    if path.is_absolute():
        return
    at = Path(".")
    for part in path.parts:
        at = at / part
        if at.is_symlink():
            with contextlib.suppress(OSError):
                at.unlink()
            raise UsageError(f"{path}: {at} is a symbolic link; write the output to a real path (the link was removed)")


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back for a few instructions (so a temp file is never created unrecorded)."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    except (AttributeError, ValueError, OSError):  # no pthread_sigmask, or not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _write_error(target: Path, exc: OSError) -> AdvisorError:
    if environment_errno(exc):
        return EnvironmentFault.from_os_error(str(target), "write", exc)
    return UsageError(f"{target}: cannot write: {exc.strerror or exc}")


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str | os.PathLike[str], text: str | bytes, *, mode: int | None = None) -> None:
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{target}: is a directory, expected an output file")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{target}: directory {parent} does not exist")
    try:
        old_mode: int | None = os.stat(target).st_mode
    except OSError:
        old_mode = None
    if old_mode is not None and not stat.S_ISREG(old_mode):
        _write_in_place(target, text)
        return
    data = text.encode("utf-8") if isinstance(text, str) else text
    tmp: str | None = None
    try:
        with signals_deferred():  # the temp name is recorded before an interrupt can land
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is None:
            mode = (old_mode & 0o777) if old_mode is not None else _new_file_mode()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise _write_error(target, exc) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _write_in_place(target: Path, text: str | bytes) -> None:
    try:
        with open(target, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
    except OSError as exc:
        raise _write_error(target, exc) from None
