"""``advisor catalog`` (the catalog, text or JSON) and ``advisor catalog import`` (a SkyPilot
price CSV -> a ``--catalog`` override file). Heavy modules are imported inside the commands."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from advisor.commands.options import CatalogOpt
from advisor.commands.session import render_options
from advisor.renderers import formats

# The --format choices are the registry's (advisor/renderers/formats.py).
if TYPE_CHECKING:
    CatalogFormat = str
else:
    CatalogFormat = formats.choices("catalog")


catalog_app = typer.Typer(help="The accelerator catalog: specs, shapes, prices, sources and as-of dates; `import` refreshes prices.")


@catalog_app.callback(invoke_without_command=True)
def catalog_cmd(
    ctx: typer.Context,
    fmt: Annotated[CatalogFormat, typer.Option("--format", "-f")] = "text",
    catalog: CatalogOpt = None,
) -> None:
    """The accelerator catalog: specs, shapes, prices, sources and as-of dates."""
    if ctx.invoked_subcommand is not None:
        return
    from advisor.api import load_catalog

    cat = load_catalog([str(c) for c in catalog or []])
    sys.stdout.write(formats.render("catalog", str(fmt), cat, render_options()))
    sys.stdout.flush()


@catalog_app.command("import")
def import_cmd(
    csv_file: Annotated[
        Path, typer.Argument(help="A SkyPilot catalog CSV (skypilot-catalog catalogs/v8/<cloud>/vms.csv schema).", show_default=False)
    ],
    cloud: Annotated[
        str,
        typer.Option("--cloud", help="The cloud the CSV prices (a cloud of rules/clouds.yaml with a price_catalog).", show_default=False),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="The override file to write (use it with --catalog).", show_default=False)],
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Date of the prices, YYYY-MM-DD (required: SkyPilot's vms.csv has no date column; use the date of the "
            "catalog commit you downloaded, never the file's modification time).",
            show_default=False,
        ),
    ] = None,
    region: Annotated[list[str] | None, typer.Option("--region", help="Import only this region (repeatable).")] = None,
    source_url: Annotated[str | None, typer.Option("--source-url", help="Where the CSV came from, recorded as the prices' source.")] = None,
    strict_drift: Annotated[
        bool,
        typer.Option(
            "--strict-drift",
            help="A price more than 30% from the catalog's for the same chip, cloud, kind and region is an error (exit 2, "
            "nothing written) instead of a warning.",
        ),
    ] = False,
    catalog: CatalogOpt = None,
) -> None:
    """Write a --catalog override with the CSV's prices for the chips the catalog knows. Each imported
    price is compared with the catalog's: one warning per price more than 30% off (--strict-drift: an error)."""
    from advisor.api import import_prices
    from advisor.errors import UsageError

    if as_of is None:
        raise UsageError("--as-of YYYY-MM-DD is required: SkyPilot's vms.csv has no date column, so the date of the prices "
                         "must come from you (the date of the catalog commit the file came from)")
    try:
        when = dt.date.fromisoformat(as_of)
    except ValueError:
        raise UsageError(f"--as-of {as_of!r}: expected a date, YYYY-MM-DD") from None
    from advisor.api import refuse_links

    refuse_links(output)
    result = import_prices(str(csv_file), cloud, str(output), as_of=when, regions=region or (), source_url=source_url,
                           catalogs=[str(c) for c in catalog or []], strict_drift=strict_drift)
    for gap in result.drift:
        sys.stderr.write(f"{gap.path}:{gap.line}:{gap.col}: warning: {gap.message}\n")
    priced = ", ".join(f"{k} ({n})" for k, n in result.priced.items()) or "none"
    dropped = ", ".join(f"{n} {why}" for why, n in sorted(result.dropped.items())) or "none"
    unknown = ", ".join(sorted(result.unknown)) or "none"
    fixed = "".join(f"; GPU count from the name index for {k} ({n} rows)" for k, n in sorted(result.corrected.items()))
    sys.stderr.write(f"wrote {output}: price rows for {priced}; rows dropped: {dropped}; unknown accelerators (not priced): {unknown}"
                     f"{fixed}; {len(result.drift)} price(s) beyond the drift tolerance\n")
