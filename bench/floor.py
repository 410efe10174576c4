"""The same-stack floor: a minimal typer app with ``advisor recommend``'s signature that loads
the profile with the same YAML loader and prints it as JSON. Nothing of ours is imported, so
its start-up is what typer + pydantic + rich + yaml cost before any advice is computed.

    python bench/floor.py recommend profiles/llm-chatbot.yaml --format json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import pydantic  # noqa: F401 - the stack advisor runs on, imported as advisor imports it
import typer
import yaml

app = typer.Typer(add_completion=False, no_args_is_help=True)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Floor app."""


@app.command()
def recommend(
    profiles: Annotated[list[Path], typer.Argument()],
    format: Annotated[str, typer.Option("--format", "-f")] = "text",
    rules: Annotated[list[Path] | None, typer.Option("--rules")] = None,
    catalog: Annotated[list[Path] | None, typer.Option("--catalog")] = None,
    no_flip: Annotated[bool, typer.Option("--no-flip")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
) -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in profiles:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.load(fh, Loader=loader)  # a safe loader, as advisor's
        sys.stdout.write(json.dumps(doc, default=str, sort_keys=True) + "\n")


@app.command()
def check(paths: Annotated[list[Path], typer.Argument()]) -> None:
    recommend(paths, "json")


if __name__ == "__main__":
    app()
