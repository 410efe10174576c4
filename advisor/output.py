"""Atomic output: write a temp file beside the target, then rename over it.

On any error (a full disk, a permission, a signal) the previous file is left
byte-identical and no temp file remains. A failure of the file system is an
``EnvironmentFault`` (exit 4) naming the target and the cause. An existing
target that is not a regular file (``/dev/stdout``, a FIFO) is written in place:
a device cannot be replaced by a rename.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from advisor.errors import EnvironmentFault, UsageError

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


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


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{target}: is a directory, expected an output file")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{target}: directory {parent} does not exist")
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        _write_in_place(target, text)
        return
    tmp: str | None = None
    try:
        with signals_deferred():  # the temp name is recorded before an interrupt can land
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, (mode & 0o777) if mode is not None else 0o644)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise EnvironmentFault.from_os_error(str(target), "write", exc) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _write_in_place(target: Path, text: str) -> None:
    try:
        with open(target, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    except OSError as exc:
        raise EnvironmentFault.from_os_error(str(target), "write", exc) from None
