"""Atomic output: write a temp file beside the target, then rename over it.

On any error the previous file is left byte-identical and no temp file remains.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from advisor.errors import UsageError


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{target}: is a directory, expected an output file")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{target}: directory {parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
