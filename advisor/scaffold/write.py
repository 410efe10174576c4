"""Writing a scaffold: every file appears whole or not at all."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from advisor.errors import EnvironmentFault, UsageError, environment_errno


def write_scaffold(files: Mapping[str, str], out_dir: str | os.PathLike[str], force: bool = False) -> list[Path]:
    """Write ``files`` under ``out_dir``; every file appears whole or not at all.

    Each file is written in full to a temporary directory inside ``out_dir``
    and then renamed into place, so a crash never leaves a half-written file.
    Existing files are refused (all of them named, nothing written) unless
    ``force``. Returns the written paths in order.
    """
    root = Path(out_dir)
    rels = [_check_rel(name) for name in files]
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a directory")
    clashes: list[str] = []
    for rel in rels:
        target = root / rel
        for parent in list(reversed(target.relative_to(root).parents))[1:]:
            if (root / parent).exists() and not (root / parent).is_dir():
                clashes.append(f"{root / parent} (a file where a directory is needed)")
        if target.is_dir():
            clashes.append(f"{target} (a directory)")
        elif (target.exists() or target.is_symlink()) and not force:
            clashes.append(str(target))
    if clashes:
        raise UsageError(
            "refusing to overwrite: " + ", ".join(dict.fromkeys(clashes)) + "; use --force to replace existing files"
        )
    written: list[Path] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".advisor-scaffold-", dir=root))
    except OSError as exc:
        if environment_errno(exc):
            raise EnvironmentFault.from_os_error(str(root), "create the output directory", exc) from None
        raise UsageError(f"{root}: cannot create the output directory ({exc.strerror or exc})") from None
    try:
        staged: list[tuple[Path, Path]] = []
        for i, (name, rel) in enumerate(zip(files, rels, strict=True)):
            src = tmp / f"{i}.part"
            with open(src, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(files[name])
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(src, 0o755 if name.endswith(".sh") else 0o644)
            staged.append((src, root / rel))
        for src, dst in staged:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
            written.append(dst)
    except OSError as exc:
        if environment_errno(exc):
            raise EnvironmentFault.from_os_error(str(root), "write the scaffold", exc) from None
        raise UsageError(f"{root}: cannot write the scaffold ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written


def _check_rel(name: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or any(part in ("", ".", "..") for part in rel.parts):
        raise UsageError(f"scaffold file name {name!r} must be a plain relative path")
    return rel
