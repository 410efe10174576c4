"""Errors the user can act on. Every input problem carries a file position."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One problem in one input file, printed as ``path:line:col: error: message``."""

    path: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: error: {self.message}"


class AdvisorError(Exception):
    """Base class: an error the CLI reports without a traceback."""

    exit_code = 2


@dataclass
class InputError(AdvisorError):
    """One or more problems in user input (profiles, rules, catalog, config). Exit code 2."""

    problems: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    @classmethod
    def single(cls, path: str, line: int, col: int, message: str) -> InputError:
        return cls([Problem(path, line, col, message)])


class UsageError(AdvisorError):
    """A bad command-line option or argument (exit code 2); printed as ``error: ...``."""


# errno values that mean "the environment failed", not the input and not advisor.
_CAUSES = {
    "ENOSPC": "no space left on device (disk full)",
    "EDQUOT": "disk quota exceeded",
    "EFBIG": "file too large (file size limit reached)",
    "EROFS": "read-only file system",
    "EACCES": "permission denied",
    "EPERM": "operation not permitted",
    "EIO": "input/output error",
    "EMFILE": "too many open files",
    "ENFILE": "too many open files in the system",
    "ENOMEM": "out of memory",
    "EBADF": "not open for writing (closed descriptor)",
    "ENXIO": "no such device",
    "ETXTBSY": "file busy",
}


def environment_errno(exc: BaseException) -> bool:
    """Whether ``exc`` is an OSError of the environment (full disk, permissions, closed stream)."""
    import errno

    return isinstance(exc, OSError) and errno.errorcode.get(exc.errno or 0, "") in _CAUSES


def describe_os_error(exc: OSError) -> str:
    """The cause of an OSError in words: ``no space left on device (disk full)``."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    return _CAUSES.get(name) or (exc.strerror or str(exc)).lower()


class EnvironmentFault(AdvisorError):
    """The environment failed (disk full, permission denied, read-only file system,
    closed output stream): exit code 4, one line naming the path and the cause."""

    exit_code = 4

    def __init__(self, path: str, action: str, cause: str) -> None:
        self.path, self.action, self.cause = path, action, cause
        super().__init__(f"{path}: cannot {action}: {cause}")

    @classmethod
    def from_os_error(cls, path: str, action: str, exc: OSError) -> EnvironmentFault:
        return cls(path, action, describe_os_error(exc))
