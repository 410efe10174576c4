"""Command-line options shared by several commands (one definition, one help text)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

RulesOpt = Annotated[
    list[Path] | None,
    typer.Option("--rules", help="Extra rule directory (repeatable); same validation as built-in rules."),
]
CatalogOpt = Annotated[
    list[Path] | None,
    typer.Option("--catalog", help="Catalog override file (repeatable): prices, regions, new chips."),
]
