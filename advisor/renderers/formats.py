"""Output formats: one registry. Each command's ``--format`` choices are this table's names for
that command, and the command line renders through it — there is no per-format branch to forget.

Adding a format is a renderer function (``fn(result, opts) -> str``, in a module of this package)
and one row here: the choice appears in ``--help``, the CLI dispatches to it, and
``tests/test_registries.py`` adds one to a copy of the tree and runs it. The renderer module is
imported only when its format is asked for (start-up pays for none of them).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


@dataclass(frozen=True)
class RenderOptions:
    """What a renderer may need beyond the result: the loaded context (the markdown report reads
    the catalog), ``explain`` (text: every point), and the text width and colour."""

    context: Any = None
    explain: bool = False
    width: int | None = None  # None: 100 columns
    color: bool = False  # terminal escape codes (a terminal without NO_COLOR)
    template: str | None = None  # the markdown report: the user's template
    timestamp: str | None = None  # the markdown report: the generation time, when asked for


@dataclass(frozen=True)
class Format:
    command: str
    name: str
    target: str  # "module:function" of this package (or the library), imported when used
    help: str

    def renderer(self) -> Callable[[Any, RenderOptions], str]:
        module, _, fn = self.target.partition(":")
        return getattr(importlib.import_module(module), fn)  # type: ignore[no-any-return]


FORMATS: tuple[Format, ...] = (
    Format("recommend", "text", "advisor.renderers.text:recommendations", "the verdict at a glance (--explain: every point)"),
    Format("recommend", "json", "advisor.renderers.json:recommendations", "one JSON object per profile (a list for several)"),
    Format("recommend", "markdown", "advisor.renderers.markdown:report", "the markdown report"),
    Format("estimate", "text", "advisor.renderers.text:estimate", "one configuration"),
    Format("estimate", "json", "advisor.renderers.json:estimate", "one configuration as JSON"),
    Format("report", "markdown", "advisor.renderers.markdown:report", "the markdown report (default)"),
    Format("report", "json", "advisor.renderers.json:recommendations", "the recommendations as JSON"),
    Format("check", "text", "advisor.renderers.text:check", "a table of the findings"),
    Format("check", "json", "advisor.renderers.json:check", "the whole report as JSON"),
    Format("check", "markdown", "advisor.renderers.checkfmt:markdown", "a pull-request comment"),
    Format("check", "sarif", "advisor.renderers.checkfmt:sarif", "SARIF 2.1.0 for code scanning"),
    Format("check", "junit", "advisor.renderers.checkfmt:junit", "JUnit XML for CI test reports"),
    Format("check", "github", "advisor.renderers.checkfmt:github", "GitHub Actions annotations"),
    Format("catalog", "text", "advisor.renderers.text:catalog", "the catalog as tables"),
    Format("catalog", "json", "advisor.renderers.json:catalog", "the catalog as JSON"),
)


def names(command: str) -> list[str]:
    return [f.name for f in FORMATS if f.command == command]


def choices(command: str) -> type[StrEnum]:
    """The ``--format`` choices of ``command``, as the enum typer shows and parses."""
    return StrEnum(f"{command.title()}Format", {n: n for n in names(command)})  # type: ignore[return-value]


def render(command: str, name: str, result: Any, opts: RenderOptions) -> str:
    """``result`` in format ``name`` of ``command`` (a name the choices admitted)."""
    for f in FORMATS:
        if f.command == command and f.name == name:
            return f.renderer()(result, opts)
    raise ValueError(f"no {name!r} format for {command}")  # unreachable from the CLI: typer checked the choice
