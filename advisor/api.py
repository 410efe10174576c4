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
from advisor.errors import InputError, Problem, UsageError
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
    "check_rule_ids", "check_rules", "estimate_config", "estimate_file", "estimate_files", "import_prices", "load_catalog", "load_profiles",
    "recommend_files", "recommend_profile", "refuse_links", "render_report", "resolve_hardware", "run_check", "scaffold",
    "validate_files", "write_output", "write_scaffold",
]


def recommend_profile(profile: Profile, ctx: Context, *, label: str = "", with_flip: bool = True) -> Recommendation:
    return recommend(profile, ctx.kb, ctx.catalog, ctx.constants, label=label, with_flip=with_flip)


def recommend_files(paths: Iterable[str], ctx: Context, *, with_flip: bool = True) -> list[Recommendation]:
    loaded = load_profiles(paths)
    check_accelerators(loaded, ctx.catalog)
    return [recommend_profile(lp.profile, ctx, label=lp.label, with_flip=with_flip) for lp in loaded]


def estimate_config(profile: Profile, accelerator: str, count: int, ctx: Context) -> Estimate:
    """What-if for one named configuration; on hardware the team owns (deployment.owned), within what it owns, as
    ``recommend`` sizes it. Raises KeyError for an unknown accelerator."""
    acc = ctx.catalog.get(accelerator)
    owned = sum(o.count for o in profile.deployment.owned or [] if ctx.catalog.get(o.accelerator).id == acc.id)
    if owned and count <= owned:
        return estimate(profile, acc, count, ctx.constants, owned_chips=owned)
    return estimate(profile, acc, count, ctx.constants)


def resolve_hardware(name: str, count: int | None, ctx: Context) -> tuple[str, int]:
    """The catalog id and chip count a name and an optional ``--count`` mean. The name may be a
    catalog id or alias (``tpu-v6e``, ``trillium``), a TPU slice (``v6e-8``, ``v5p-128``: its chips,
    from the catalog's slices), a machine type (``a3-highgpu-8g``, ``ct6e-standard-8t``) or a cloud
    instance type (``p5.48xlarge``), from the same name index ``advisor check`` reads infrastructure
    files with (the catalog's shapes and ``rules/names.yaml``). A name that fixes the chips needs
    no count; with one, a slice must agree and a machine's count must be whole machines."""
    if ctx.catalog.resolve(name) is not None and count is not None:
        return ctx.catalog.get(name).id, count
    from advisor.check.infra.names import name_index

    hw = name_index(ctx.catalog).lookup(name)
    if hw.accelerator is None:
        known = hw.reason if hw.reason and hw.reason.startswith(f"{name}:") else None  # real hardware not in the catalog
        raise UsageError(known or ctx.catalog.unknown_message(name) + "; machine types (a3-highgpu-8g), TPU slices "
                         "(v6e-8) and instance types (p5.48xlarge) are accepted too")
    if hw.chips is None:  # a label that names the accelerator only
        if count is None:
            raise UsageError(f"--count is needed: {name!r} is an accelerator, not a machine, slice or instance name that fixes the chips")
        return hw.accelerator, count
    is_slice = hw.topology is not None or (hw.hosts or 1) > 1
    if count is None or count == hw.chips:
        return hw.accelerator, hw.chips
    if not is_slice and count % hw.chips == 0:
        return hw.accelerator, count  # whole machines of that type
    what = (f"the slice {name} is {hw.chips} chips" if is_slice
            else f"{name} has {hw.chips} chips per machine: the count must be a multiple of {hw.chips}")
    raise UsageError(f"--count {count} does not match {name!r}: {what}")


def estimate_file(path: str, accelerator: str, count: int | None, ctx: Context) -> Estimate:
    """``advisor estimate``: the one profile in ``path`` (``FILE#N``: the N-th document of a
    multi-document file) at a named configuration (``resolve_hardware``); a count that is not a
    real shape is estimated anyway, with a warning first."""
    return _estimate_loaded(one_profile(path), accelerator, count, ctx)


def _estimate_loaded(lp: LoadedProfile, accelerator: str, count: int | None, ctx: Context) -> Estimate:
    acc_id, count = resolve_hardware(accelerator, count, ctx)
    acc = ctx.catalog.accelerators[acc_id]
    valid = acc.counts()
    est = estimate_config(lp.profile, acc_id, count, ctx)
    if count not in valid:
        est.warnings.insert(0, f"{count} is not a real shape of {acc.id} (valid: {', '.join(map(str, valid))}); estimated anyway")
    return est


def one_profile(path: str, command: str = "estimate") -> LoadedProfile:
    """The profile of ``path``, or of ``FILE#N``: the N-th (1-based) document, as ``check`` labels it."""
    import re

    m = re.fullmatch(r"(.+)#([0-9]{1,6})", path)
    if m is not None and not os.path.exists(path):
        file, n = m.group(1), int(m.group(2))
        loaded = load_profiles([file])
        chosen = [lp for lp in loaded if lp.doc.index + 1 == n]
        if not chosen:
            raise UsageError(f"{path}: {file} has no document {n} (its profiles: {', '.join(lp.label for lp in loaded)})")
        return chosen[0]
    loaded = load_profiles([path])
    if len(loaded) != 1:
        raise UsageError(f"{path}: {command} takes one profile, the file holds {len(loaded)}: "
                         f"name one as FILE#N ({', '.join(lp.label for lp in loaded)})")
    return loaded[0]


def estimate_files(paths: Sequence[str], accelerator: str, count: int | None, ctx: Context) -> list[tuple[str, Estimate]]:
    """``estimate_file`` for each path (``FILE#N`` too), as (label, estimate)."""
    chosen = [one_profile(path) for path in paths]
    return [(lp.label, _estimate_loaded(lp, accelerator, count, ctx)) for lp in chosen]


def validate_files(paths: Iterable[str], catalogs: Iterable[str] = ()) -> list[LoadedProfile]:
    """Schema check of every file, and of the catalog ids that proposals name."""
    loaded = load_profiles(paths)
    if any(lp.profile.proposal is not None for lp in loaded):  # only proposals name catalog ids
        check_accelerators(loaded, Context.load([], catalogs).catalog)
    return loaded


def refuse_links(path: str | os.PathLike[str]) -> None:
    """Refuse an output path through a symbolic link below the working directory (advisor.output.refuse_links)."""
    from advisor.output import refuse_links as refuse

    refuse(path)


def write_output(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically (the previous file stays whole on any failure)."""
    from advisor.output import write_atomic

    write_atomic(path, text)


def import_prices(
    csv_file: str,
    cloud: str,
    output: str,
    *,
    as_of: dt.date,
    regions: Iterable[str] = (),
    source_url: str | None = None,
    catalogs: Sequence[str] = (),
    strict_drift: bool = False,
) -> ImportResult:
    """``advisor catalog import``: a SkyPilot catalog CSV as a ``--catalog`` price override,
    written to ``output`` only once it loads as one. ``as_of`` is the date of the prices (the file
    carries none). Prices beyond the drift tolerance of the catalog's are in ``result.drift``;
    with ``strict_drift`` they are errors and nothing is written."""
    import tempfile

    from advisor import clouds
    from advisor.check.infra.names import name_index
    from advisor.pricing import build_override
    from advisor.validation import did_you_mean

    importable = clouds.with_price_catalog()
    if cloud not in importable:
        raise UsageError(
            f"--cloud {cloud!r}: no price file to import for it; one of {', '.join(importable)}{did_you_mean(cloud, importable)}"
        )
    cat = load_catalog(list(catalogs))
    names = name_index(cat)

    def instance_chips(name: str) -> tuple[str, int] | None:
        hw = names.lookup(name)
        if hw.accelerator is None and hw.reason and hw.reason.startswith(f"{name}:"):
            return ("", 0)  # real hardware the catalog does not have (rules/names.yaml `unsupported`)
        return (hw.accelerator, hw.chips) if hw.accelerator and hw.chips else None

    result = build_override(csv_file, cat, cloud, as_of, regions=regions, source_url=source_url, instance_chips=instance_chips)
    if strict_drift and result.drift:
        raise InputError(result.drift)
    with tempfile.TemporaryDirectory() as tmp:  # the written file must load as an override
        check = Path(tmp) / "override.yaml"
        check.write_text(result.text, encoding="utf-8")
        try:
            load_catalog([*catalogs, str(check)])
        except InputError as exc:
            # Point at the CSV, not at a temporary file that is gone when the message is read.
            raise InputError(
                [
                    Problem(csv_file, 1, 1, f"the imported prices do not load as a catalog override: {p.message}")
                    if p.path == str(check)
                    else p
                    for p in exc.problems
                ]
            ) from None
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


def _trust_named_plans(report: Any, paths: Sequence[str]) -> None:
    """A plan's prior state (change.before) is the baseline of its resources only where the plan is the workflow's: a
    file named on the command line or standard input (terraform show -json plan.out > plan.json; advisor check
    plan.json). A plan JSON found by walking a directory is the pull request's to write: one that 'deletes' an 8-L4 node
    pool cancelled a new 8-L4 Deployment's cost under max_monthly_increase_usd. Its resources count in full, as with
    no baseline, and say why."""
    # the paths as named, not resolved: a link the pull request adds to the workflow's plan is not that plan
    named = {os.path.abspath(p) for p in paths if p != "-" and os.path.isfile(p)}
    for r in report.results:
        if r.before is not None and r.path != "-" and os.path.abspath(r.path) not in named:
            r.before = None
            r.notes.append(
                "a plan JSON found in a directory, not named on the command line: its prior state (change.before) is not "
                "taken as the baseline, so the resource counts in full (name the workflow's own plan file, or pass --baseline)"
            )


def run_check(
    paths: Sequence[str],
    *,
    rules: Iterable[str] = (),
    catalogs: Iterable[str] = (),
    config: str | None = None,
    no_config: bool = False,
    policy: str | None = None,
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
    it; or ``policy``, from outside the checkout, and nothing else), every file judged, and the
    cost diff against ``baseline`` or a plan's prior state.
    ``stdin`` is the content of the path ``-``."""
    from advisor.check import batch as check
    from advisor.policy import find_config, load_policy
    from advisor.validation import did_you_mean

    if policy is not None:
        # The policy comes from outside the change (the base branch): nothing in the checkout
        # can replace or extend it; its relative paths are the repository's (the working directory).
        if config is not None or no_config:
            raise UsageError("--policy cannot be combined with --config or --no-config")
        if not os.path.isfile(policy):
            raise UsageError(f"{policy}: policy file not found")
        loaded = load_policy(Path(policy), base=Path(cwd or os.getcwd()))
        if loaded.policy.waivers.unwaivable is None:  # a waiver the pull request writes does not lift the base branch's limits
            waivers = loaded.policy.waivers.model_copy(update={"unwaivable": ["policy-*"]})
            loaded = loaded.model_copy(update={"policy": loaded.policy.model_copy(update={"waivers": waivers})})
    else:
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
    base = None
    if baseline is not None:
        from advisor.check.diff import validate_baseline

        base = validate_baseline(check.load_baseline(baseline, ctx, pol), baseline)
    if stdin is not None:
        from advisor.yamlsrc import provide_stdin

        provide_stdin(stdin)
    report = check.run_check(paths, ctx, pol, policy_path=loaded.path, today=today, progress=progress, exclude=exclude)
    _trust_named_plans(report, paths)
    if base is not None or any((r.before is not None) for r in report.results):
        report.diff = check.diff_against(report, base)
        check.apply_increase_limit(report, pol)
    elif (pol.limits.max_monthly_increase_usd is not None or pol.limits.max_one_off_increase_usd is not None) and report.results:
        # fail closed: a limit on the increase with nothing to compare against (no --baseline, no plan prior state)
        # counts every resource the change asks for in full, never skips the limit in silence
        report.diff = check.diff_against(report, {"results": []})
        report.diff["baseline"] = "none"
        check.apply_increase_limit(report, pol)
    return report
