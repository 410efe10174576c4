"""The library API: everything the CLI does, callable from Python.

>>> from advisor import api
>>> ctx = api.Context.load()
>>> [rec] = api.recommend_files(["profiles/llm-chatbot.yaml"], ctx)
>>> rec.device
'tpu'

The command line reaches the library only through this module (an import-linter contract in
``pyproject.toml``). The use cases that pull in heavy modules (the CI gate, the markdown report,
scaffolding) import them inside their functions, so ``advisor recommend`` pays only for what it
uses.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.catalog import Catalog, load_catalog
from advisor.context import Context, check_accelerators
from advisor.errors import UsageError
from advisor.estimate.result import Estimate
from advisor.estimate.search import estimate
from advisor.loading import LoadedProfile, load_profiles
from advisor.models import Profile
from advisor.recommend import Recommendation, recommend

if TYPE_CHECKING:
    from advisor.check.batch import CheckReport
    from advisor.pricing import ImportResult

__all__ = [
    "Catalog", "Context", "Estimate", "LoadedProfile", "Recommendation", "check_accelerators",
    "check_rule_ids", "check_rules", "estimate_config", "estimate_file", "import_prices", "load_catalog", "load_profiles",
    "recommend_files", "recommend_profile", "render_report", "run_check", "scaffold",
    "validate_files", "write_output", "write_scaffold",
]


def recommend_profile(profile: Profile, ctx: Context, *, label: str = "", with_flip: bool = True) -> Recommendation:
    return recommend(profile, ctx.kb, ctx.catalog, ctx.constants, label=label, with_flip=with_flip)


def recommend_files(paths: Iterable[str], ctx: Context, *, with_flip: bool = True) -> list[Recommendation]:
    loaded = load_profiles(paths)
    check_accelerators(loaded, ctx.catalog)
    return [recommend_profile(lp.profile, ctx, label=lp.label, with_flip=with_flip) for lp in loaded]


def estimate_config(profile: Profile, accelerator: str, count: int, ctx: Context) -> Estimate:
    """What-if for one named configuration. Raises KeyError for an unknown accelerator."""
    acc = ctx.catalog.get(accelerator)
    return estimate(profile, acc, count, ctx.constants)


def estimate_file(path: str, accelerator: str, count: int, ctx: Context) -> Estimate:
    """``advisor estimate``: the one profile in ``path`` at a named configuration; a count that is
    not a real shape is estimated anyway, with a warning first."""
    loaded = load_profiles([path])
    if len(loaded) != 1:
        raise UsageError(f"{path}: estimate takes one profile, the file holds {len(loaded)}")
    if ctx.catalog.resolve(accelerator) is None:
        raise UsageError(ctx.catalog.unknown_message(accelerator))
    acc = ctx.catalog.get(accelerator)
    valid = acc.counts()
    est = estimate_config(loaded[0].profile, accelerator, count, ctx)
    if count not in valid:
        est.warnings.insert(0, f"{count} is not a real shape of {acc.id} (valid: {', '.join(map(str, valid))}); estimated anyway")
    return est


def validate_files(paths: Iterable[str], catalogs: Iterable[str] = ()) -> list[LoadedProfile]:
    """Schema check of every file, and of the catalog ids that proposals name."""
    loaded = load_profiles(paths)
    if any(lp.profile.proposal is not None for lp in loaded):  # only proposals name catalog ids
        check_accelerators(loaded, Context.load([], catalogs).catalog)
    return loaded


def write_output(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically (the previous file stays whole on any failure)."""
    from advisor.output import write_atomic

    write_atomic(path, text)


def import_prices(
    csv_file: str,
    cloud: str,
    output: str,
    *,
    as_of: dt.date | None = None,
    regions: Iterable[str] = (),
    source_url: str | None = None,
    catalogs: Sequence[str] = (),
) -> ImportResult:
    """``advisor catalog import``: a SkyPilot catalog CSV as a ``--catalog`` price override,
    written to ``output`` only once it loads as one. ``as_of`` defaults to the file's date."""
    import tempfile

    from advisor.pricing import build_override

    if as_of is None:
        try:
            as_of = dt.datetime.fromtimestamp(os.stat(csv_file).st_mtime, tz=dt.UTC).date()
        except OSError:
            as_of = dt.datetime.now(tz=dt.UTC).date()  # the reader reports the missing file
    cat = load_catalog(list(catalogs))
    result = build_override(csv_file, cat, cloud, as_of, regions=regions, source_url=source_url)
    with tempfile.TemporaryDirectory() as tmp:  # the written file must load as an override
        check = Path(tmp) / "override.yaml"
        check.write_text(result.text, encoding="utf-8")
        load_catalog([*catalogs, str(check)])
    write_output(output, result.text)
    return result


# --------------------------------------------------------------------------- report, scaffold


def render_report(recs: list[Recommendation], ctx: Context, *, template: str | None = None, timestamp: str | None = None) -> str:
    """The markdown report of one or more recommendations."""
    from advisor.report import render

    return render(recs, ctx, template=template, timestamp=timestamp)


def scaffold(rec: Recommendation, ctx: Context, path_id: str | None = None) -> dict[str, str]:
    """Relative file name -> content of the setup files for the verdict (or the named setup path)."""
    from advisor import scaffold as engine

    return engine.scaffold(rec, ctx, path_id)


def write_scaffold(files: Mapping[str, str], out_dir: str | os.PathLike[str], force: bool = False) -> list[Path]:
    from advisor import scaffold as engine

    return engine.write_scaffold(files, out_dir, force=force)


# --------------------------------------------------------------------------- check


def check_rule_ids() -> list[str]:
    from advisor.check.rules import CHECK_RULES

    return list(CHECK_RULES)


def check_rules() -> list[dict[str, Any]]:
    """The check rules of ``advisor check`` (id, severity, scope, title, help, where checked),
    sorted by id."""
    from advisor.check.rules import CHECK_RULES

    return [CHECK_RULES[rid].to_json() for rid in sorted(CHECK_RULES)]


def run_check(
    paths: Sequence[str],
    *,
    rules: Iterable[str] = (),
    catalogs: Iterable[str] = (),
    config: str | None = None,
    no_config: bool = False,
    cwd: str | None = None,
    fail_on: str | None = None,
    max_cost_increase_percent: float | None = None,
    disable: Sequence[str] = (),
    baseline: str | None = None,
    stdin: bytes | None = None,
    today: dt.date | None = None,
    progress: Callable[[int, int], None] | None = None,
    exclude: Sequence[str] = (),
) -> CheckReport:
    """``advisor check``: the policy (``config``, else found upward from ``cwd``; flags override
    it), every file judged, and the cost diff against ``baseline`` or a plan's prior state.
    ``stdin`` is the content of the path ``-``."""
    from advisor.check import batch as check
    from advisor.policy import find_config, load_policy
    from advisor.validation import did_you_mean

    if config is not None and not os.path.isfile(config):
        raise UsageError(f"{config}: policy file not found")
    cfg_path = None if no_config else (Path(config) if config is not None else find_config(Path(cwd or os.getcwd())))
    loaded = load_policy(cfg_path)
    pol = loaded.policy
    updates: dict[str, Any] = {}
    if fail_on is not None:
        updates["fail_on"] = fail_on
    if max_cost_increase_percent is not None:
        updates["thresholds"] = pol.thresholds.model_copy(update={"cost_over_best_percent": max_cost_increase_percent})
    if disable:
        for rid in disable:
            if rid not in check.CHECK_RULES:
                raise UsageError(f"--disable: unknown check rule {rid!r}{did_you_mean(rid, check.CHECK_RULES)}")
        updates["disabled_rules"] = [*pol.disabled_rules, *disable]
    pol = pol.model_copy(update=updates)
    ctx = Context.load([str(Path(r)) for r in (*pol.rules, *rules)], [str(Path(c)) for c in (*pol.catalog, *catalogs)])
    base = check.load_baseline(baseline, ctx, pol) if baseline is not None else None
    if stdin is not None:
        from advisor.yamlsrc import provide_stdin

        provide_stdin(stdin)
    report = check.run_check(paths, ctx, pol, policy_path=loaded.path, today=today, progress=progress, exclude=exclude)
    if base is not None or any((r.before is not None) for r in report.results):
        report.diff = check.diff_against(report, base)
        check.apply_increase_limit(report, pol)
    return report
