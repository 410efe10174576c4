"""``advisor scaffold FILE -o DIR``: the verdict's setup path as files that run.

A thin layer over ``advisor.api.scaffold``; the library and the recommendation
are imported inside the command so that registering it costs the other
commands nothing at start-up.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from advisor.commands.options import CatalogOpt as _CatalogOpt
from advisor.commands.options import RulesOpt as _RulesOpt


def scaffold_cmd(
    file: Annotated[Path, typer.Argument(help="Workload profile, YAML; FILE#N: the N-th document of a multi-document file.",
                                         show_default=False, metavar="FILE")],
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Directory to write the files into (created if missing).", show_default=False, metavar="DIR"
        ),
    ],
    path: Annotated[
        str | None,
        typer.Option(
            "--path", help="Setup path id to scaffold instead of the verdict's (see rules/setup/).", metavar="SETUP_PATH_ID"
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files that already exist in DIR.")] = False,
    rules: _RulesOpt = None,
    catalog: _CatalogOpt = None,
) -> None:
    """Write setup.sh, Kubernetes manifests, train.py, sky.yaml and a README for the verdict."""
    from advisor.api import Context, check_accelerators, one_profile, recommend_profile, scaffold, write_scaffold

    ctx = Context.load([str(r) for r in rules or []], [str(c) for c in catalog or []])
    loaded = one_profile(str(file), "scaffold")  # FILE#N: the N-th profile of a file of several, as estimate takes it
    check_accelerators([loaded], ctx.catalog)
    rec = recommend_profile(loaded.profile, ctx, label=loaded.label, with_flip=False)
    files = scaffold(rec, ctx, path)
    from advisor.api import refuse_links

    refuse_links(output)  # a committed scaffold -> ~/bin would put an executable setup.sh there
    written = write_scaffold(files, output, force=force)
    from advisor.commands.session import _STATE

    if _STATE.get("quiet"):
        return
    est = rec.estimate
    what = f"{est.accelerator} x {est.count}" if est else rec.device_name
    used = path or (rec.setup.path.id if rec.setup else "")
    lines = [f"wrote {len(written)} files to {output} ({what}, setup path {used}):"]
    lines += [f"  {p}" for p in written]
    lines.append(f"next: read {output / 'README.md'}, then run {output / 'setup.sh'} --list")
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
