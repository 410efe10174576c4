"""A per-user cache of the compiled built-in knowledge base, catalog and constants.

Loading and validating ~70 YAML files costs more than the rest of a
``recommend`` run; the compiled result is stored once per content signature
(advisor version + path, size and mtime of every built-in data file) under
``$XDG_CACHE_HOME/advisor`` (``~/.cache/advisor``). Only built-in data is
cached, never user rule directories or catalog overrides. The cache is read
only from a directory and file owned by the current user and not writable by
others, and only when its HMAC verifies against a per-user random key kept apart
from the cache (``$XDG_STATE_HOME/advisor/cache.key``), so a cache directory
restored from elsewhere (a CI cache, say) is never unpickled. Anything unexpected
falls back to loading the YAML. ``ADVISOR_NO_CACHE=1`` disables it.

Faults of the environment never fail a run: an unwritable, full, read-only or
vanished cache directory, sixteen runs sharing it at once, or a corrupted file
all degrade to "no cache" (the YAML is loaded), and no temp file is left
behind. Relative ``XDG_*`` values are ignored, as the XDG spec asks.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import pickle
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Any

from advisor import __version__


def _xdg(variable: str, *default: str) -> Path | None:
    """``$VARIABLE``, or ``~/<default>``; None when neither is an absolute path."""
    value = os.environ.get(variable, "")
    if os.path.isabs(value):
        return Path(value)
    home = os.path.expanduser("~")
    return Path(home, *default) if os.path.isabs(home) else None


def _cache_dir() -> Path | None:
    base = _xdg("XDG_CACHE_HOME", ".cache")
    return base / "advisor" if base else None


def _key_path() -> Path | None:
    base = _xdg("XDG_STATE_HOME", ".local", "state")
    return base / "advisor" / "cache.key" if base else None


def _read_key(path: Path) -> bytes | None:
    if not (_trusted(path.parent) and _trusted(path)):
        return None
    try:
        key = path.read_bytes()
    except OSError:
        return None
    return key if len(key) == 32 else None


def _key(create: bool) -> bytes | None:
    path = _key_path()
    if path is None:
        return None
    key = _read_key(path)
    if key is not None or not create:
        return key
    tmp: str | None = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted(path.parent):
            return None
        key = secrets.token_bytes(32)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        os.chmod(tmp, 0o600)
        if path.exists() or path.is_symlink():
            os.replace(tmp, path)  # a damaged key (wrong length) is replaced
        else:
            try:
                os.link(tmp, path)  # a concurrent run may create the key first: then use its key
            except FileExistsError:
                return _read_key(path)
        return key
    except OSError:
        return None
    finally:
        if tmp is not None:
            _unlink(tmp)


def _unlink(path: str | Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


# Modules whose classes are pickled: a change to them (in a checkout) invalidates the cache too.
_CODE = ("models", "conditions", "facts", "knowledge", "catalog", "constants", "api", "context", "software", "model_families", "validation")


def signature(root: Path) -> str:
    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent
    code = [here / f"{name}.py" for name in _CODE]
    for path in [*code, *sorted(p for p in root.rglob("*") if p.is_file())]:
        st = path.stat()
        h.update(f"{path.name if path.parent == here else path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:24]


def _trusted(path: Path) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
        return False
    return not (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def load(root: Path, sig: str | None = None) -> Any | None:
    """The tables cached for ``root`` as its files are now (``sig``: their signature, taken before they are read)."""
    if os.environ.get("ADVISOR_NO_CACHE"):
        return None
    directory = _cache_dir()
    if directory is None:
        return None
    path = directory / f"builtin-{sig or signature(root)}.pickle"
    if not (_trusted(directory) and _trusted(path)):
        return None
    key = _key(create=False)
    if key is None:
        return None
    try:
        blob = path.read_bytes()
        mac, payload = blob[:32], blob[32:]
        if not hmac.compare_digest(mac, hmac.new(key, payload, hashlib.sha256).digest()):
            return None
        return pickle.loads(payload)  # authenticated: written by store() below with our key
    except Exception:  # a stale or damaged cache is simply rebuilt
        return None


def store(root: Path, value: Any, sig: str | None = None) -> None:
    """Cache ``value`` under ``sig``, the signature of the files as they were when it was read (taken before reading:
    a file edited while a run reads them leaves the run's tables under the old signature, never the new one)."""
    if os.environ.get("ADVISOR_NO_CACHE"):
        return
    directory = _cache_dir()
    if directory is None:
        return
    from advisor.errors import AdvisorError
    from advisor.output import write_atomic

    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted(directory):
            return
        name = f"builtin-{sig or signature(root)}.pickle"
        for old in directory.glob("builtin-*.pickle"):
            if old.name != name:  # another version's cache; a concurrent run's own file is kept
                old.unlink(missing_ok=True)
        key = _key(create=True)
        if key is None:
            return
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        write_atomic(directory / name, hmac.new(key, payload, hashlib.sha256).digest() + payload, mode=0o600)
    except (OSError, AdvisorError):
        return  # a read-only, full or vanished cache directory is fine: the cache is an optimisation
