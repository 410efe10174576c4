"""Writing a scaffold: the whole set of files appears, or nothing does, and only inside its directory.

Every file is written in full (and fsynced) to a temporary directory beside the output directory,
on the same file system. A new output directory is then that temporary directory, renamed once.
Into an existing one, the files are renamed into place one by one, and any failure on the way
(a full disk, no inodes left, a vanished directory) rolls back: the files moved in are removed,
the files they replaced (``--force``) put back, the directories made for them removed. A
symbolic link anywhere below the output directory (``out/k8s`` pointing elsewhere, a file that
is a link) is refused before anything is written, and checked again just before each rename.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from advisor.errors import EnvironmentFault, UsageError, environment_errno

TEMP_PREFIX = ".advisor-scaffold-"


def write_scaffold(files: Mapping[str, str], out_dir: str | os.PathLike[str], force: bool = False) -> list[Path]:
    """Write ``files`` under ``out_dir``, all of them or none. Existing files are refused (all of
    them named, nothing written) unless ``force``. Returns the written paths in order."""
    root = Path(out_dir)
    rels = [_check_rel(name) for name in files]
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a directory")
    clashes = _clashes(root, rels, force)
    if clashes:
        raise UsageError(
            "refusing to overwrite: " + ", ".join(dict.fromkeys(clashes)) + "; use --force to replace existing files"
        )
    parent = Path(os.path.abspath(root)).parent
    made_parents = _missing_parents(parent)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=parent))
    except OSError as exc:
        _remove_dirs(made_parents)
        raise _fault(root, "create the output directory", exc) from None
    try:
        for name, rel in zip(files, rels, strict=True):
            _stage(tmp / rel, files[name], executable=name.endswith(".sh"))
        if not os.path.lexists(root):
            try:
                os.rename(tmp, root)  # once: the whole scaffold appears at one moment
                return [root / rel for rel in rels]
            except OSError:
                if not os.path.lexists(root):
                    raise
                # made meanwhile: move the files in one by one, as into any existing directory
        return _move_in(tmp, root, rels)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_dirs(made_parents)
        if isinstance(exc, OSError):
            raise _fault(root, "write the scaffold", exc) from None
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fault(root: Path, action: str, exc: OSError) -> Exception:
    if environment_errno(exc):
        return EnvironmentFault.from_os_error(str(root), action, exc)
    return UsageError(f"{root}: cannot {action} ({exc.strerror or exc})")


def _clashes(root: Path, rels: list[PurePosixPath], force: bool) -> list[str]:
    out: list[str] = []
    for rel in rels:
        target = root / rel
        for sub in list(reversed(rel.parents))[1:]:
            here = root / sub
            if here.is_symlink():
                out.append(f"{here} (a symbolic link; a scaffold writes only inside its directory)")
            elif here.exists() and not here.is_dir():
                out.append(f"{here} (a file where a directory is needed)")
        if target.is_symlink():
            out.append(f"{target} (a symbolic link; a scaffold writes only inside its directory)")
        elif target.is_dir():
            out.append(f"{target} (a directory)")
        elif target.exists() and not force:
            out.append(str(target))
    return out


def _stage(path: Path, text: str, *, executable: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(path, 0o755 if executable else 0o644)


def _move_in(tmp: Path, root: Path, rels: list[PurePosixPath]) -> list[Path]:
    """Rename each staged file into ``root``; on any failure undo every step, then re-raise."""
    backups = tmp / ".replaced"
    backups.mkdir()
    moved: list[Path] = []
    replaced: list[tuple[Path, Path]] = []
    made: list[Path] = []
    try:
        for i, rel in enumerate(rels):
            dst = root / rel
            here = root
            for part in rel.parts[:-1]:
                here = here / part
                try:
                    st = os.lstat(here)
                except FileNotFoundError:
                    os.mkdir(here)
                    made.append(here)
                    continue
                if not stat.S_ISDIR(st.st_mode):  # a link or a file appeared since the check
                    raise UsageError(f"{here}: not a plain directory (a symbolic link?); a scaffold writes only inside its directory")
            try:
                st = os.lstat(dst)
            except FileNotFoundError:
                pass
            else:
                if not stat.S_ISREG(st.st_mode):
                    raise UsageError(f"{dst}: not a regular file (a symbolic link?); a scaffold writes only inside its directory")
                keep = backups / str(i)
                os.replace(dst, keep)
                replaced.append((keep, dst))
            os.replace(tmp / rel, dst)
            moved.append(dst)
    except BaseException:
        for dst in reversed(moved):
            with contextlib.suppress(OSError):
                os.unlink(dst)
        for keep, dst in reversed(replaced):
            with contextlib.suppress(OSError):
                os.replace(keep, dst)
        _remove_dirs(made)
        raise
    return moved


def _missing_parents(path: Path) -> list[Path]:
    out: list[Path] = []
    while not path.exists() and path != path.parent:
        out.append(path)
        path = path.parent
    return out


def _remove_dirs(dirs: list[Path]) -> None:
    """Remove directories this write made (deepest first), if they are still empty."""
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(d)


def _check_rel(name: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or any(part in ("", ".", "..") for part in rel.parts):
        raise UsageError(f"scaffold file name {name!r} must be a plain relative path")
    return rel
