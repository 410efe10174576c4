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
