"""``advisor check``: judge each profile's ``proposal`` against the advisor's own analysis.

A proposal asks for an accelerator, a count and hours. The check estimates
that exact configuration, compares it with the best feasible alternative the
recommender finds, and reports findings with stable rule ids, severities, a
message that says what/why/how to fix, and the line in the proposal file.
Waivers (``proposal.waivers``) need a reason and an unexpired date.

This module runs a batch: it expands the paths, reads each file (profiles here, infrastructure
through ``advisor.check.infra``), judges them (in parallel for large batches) and loads a baseline.
The parts: ``check_rules`` (the registered rules), ``check_judge`` (one proposal),
``check_results`` (findings and the report), ``check_diff`` (the cost diff).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.check import files
from advisor.check.diff import apply_increase_limit, diff_against
from advisor.check.judge import judge
from advisor.check.results import (
    RANK,
    SEVERITIES,
    CheckReport,
    Finding,
    InvalidFile,
    ProposalResult,
)
from advisor.check.rules import CHECK_RULES, CheckRule
from advisor.context import Context, check_accelerators
from advisor.errors import InputError, Problem
from advisor.loading import LoadedProfile
from advisor.policy import Policy

if TYPE_CHECKING:
    from advisor.check.infra.model import ReleaseRef

__all__ = [
    "CHECK_RULES", "RANK", "SEVERITIES", "CheckReport", "CheckRule", "Finding", "InvalidFile",
    "ProposalResult", "apply_increase_limit", "diff_against", "expand_paths", "judge",
    "load_baseline", "run_check",
]


# --------------------------------------------------------------------------- inputs


SUFFIXES = files.SUFFIXES


def expand_paths(paths: Iterable[str], exclude: Iterable[str] = ()) -> list[str]:
    """Files as given; directories recursively (*.yaml, *.yml, *.json, *.tf); glob patterns expanded."""
    return files.select(paths, exclude).files


# --------------------------------------------------------------------------- baseline


def load_baseline(path: str, ctx: Context | None = None, policy: Policy | None = None) -> dict[str, Any]:
    """A previous ``--format json`` result; or, given the context, an old Terraform plan JSON or
    an old directory, checked now to serve as the baseline."""
    if os.path.isdir(path) or not path.endswith(".json"):
        if ctx is None or policy is None:
            raise InputError.single(path, 1, 1, "not an 'advisor check --format json' result")
        return run_check([path], ctx, policy).to_json()
    from advisor.check.infra.jsonsrc import load_json_file

    data, _text = load_json_file(path)
    if isinstance(data, dict) and "format_version" in data and ctx is not None and policy is not None:
        return run_check([path], ctx, policy).to_json()
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError.single(path, 1, 1, "not an 'advisor check --format json' result (no 'results' list) nor a Terraform plan")
    return data


# --------------------------------------------------------------------------- entry


def run_check(
    paths: Iterable[str],
    ctx: Context,
    policy: Policy,
    *,
    policy_path: str | None = None,
    today: dt.date | None = None,
    progress: Callable[[int, int], None] | None = None,
    exclude: Iterable[str] = (),
) -> CheckReport:
    base = os.path.dirname(os.path.abspath(policy_path)) if policy_path else None
    sel = files.select(paths, exclude, policy.exclude, base)
    todo = sel.files
    if not todo and not sel.charts and not sel.skipped and not sel.refused:
        raise InputError([Problem(".", 1, 1, "no YAML, JSON or Terraform files to check")])
    day = today or dt.date.today()
    workers = _workers(len(todo))
    batch = _Batch(skipped=list(sel.skipped), invalid=[InvalidFile(p.path, [p]) for p in sel.refused])
    if workers == 1:
        batch.extend(_check_files(todo, ctx, policy, day, progress))
    else:
        import multiprocessing

        global _JOB
        _JOB = (ctx, policy, day)
        size = max(1, math.ceil(len(todo) / (workers * 4)))
        chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
        done = 0
        try:
            with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals) as pool:
                for chunk, part in zip(chunks, pool.imap(_check_chunk, chunks), strict=True):
                    batch.extend(part)
                    done += len(chunk)
                    if progress:
                        progress(done, len(todo))
        finally:
            _JOB = None
    _called_modules(batch)
    _rendered(sel, ctx, policy, day, batch)
    results = batch.results
    _bound(batch)
    if batch.requests:
        from advisor.check.infra.judge import apply_autoscalers, apply_compute_classes, judge_request
        from advisor.check.infra.names import name_index

        apply_compute_classes(batch.requests, batch.autoscalers, name_index(ctx.catalog))
        apply_autoscalers(batch.requests, batch.autoscalers)
        # the objects a kustomization of the run deploys (kind, namespace, name): a file it builds that holds one of them
        # is counted through the build
        deployed = {(r.target[0], r.target[1], r.target[2].split(" [", 1)[0]) for r in batch.requests
                    if r.target is not None and " [kustomize " in r.address}
        for req in batch.requests:
            try:
                got = judge_request(req, batch.workloads, ctx, policy, day)
                if (req.kind == "kubernetes" and " [" not in req.address and req.target in deployed
                        and os.path.realpath(req.path) in batch.built):
                    # the file as written, whose object a kustomization of the run also builds: judged here (a policy
                    # holds for it), counted in the summary once, as the build deploys it (a build that deletes the
                    # object, or renames it, leaves the file counted)
                    got.in_build = True
                    got.notes.append(IN_BUILD_NOTE)
                results.append(got)
            except InputError as exc:
                batch.invalid.append(InvalidFile(req.path, exc.problems))
            except Exception as exc:  # one member's bug marks that member, the batch still reports
                batch.invalid.append(
                    InvalidFile(
                        req.path,
                        [
                            Problem(
                                req.path,
                                req.line,
                                req.col,
                                f"internal error while judging {req.address}: {type(exc).__name__} (a bug in advisor; please report it)",
                            )
                        ],
                    )
                )
    batch.skipped = [(p, why) for p, why in batch.skipped if p not in sel.quiet]
    invalid = batch.invalid
    if invalid and not results and not batch.skipped:  # nothing could be judged: a plain input error, nothing to report
        raise InputError([p for bad in invalid for p in bad.problems])
    _keys(results, paths_root(paths))
    return CheckReport(
        results,
        policy.fail_on,
        ctx.catalog.as_of.isoformat(),
        policy_path,
        invalid=invalid,
        skipped_files=batch.skipped,
        excluded=sel.excluded,
    )


def _called_modules(batch: _Batch) -> None:
    """A module kept in the repository that a checked Terraform file calls is judged at the call, with the call's
    inputs (advisor.check.infra.hcl._local_modules): its own files' requests, read at the module's variable defaults,
    describe no deployment and are dropped, their files listed as skipped with the caller."""
    if not batch.modules:
        return
    kept: list[Any] = []
    dropped: dict[str, str] = {}
    for req in batch.requests:
        caller = batch.modules.get(os.path.dirname(os.path.abspath(req.path))) if req.kind == "terraform-hcl" else None
        if caller is None:
            kept.append(req)
        else:
            dropped.setdefault(req.path, caller)
    batch.requests = kept
    batch.skipped += [
        (path, f"a Terraform module of this repository called from {caller}: its resources are judged at that call, with its inputs")
        for path, caller in dropped.items()
    ]


IN_BUILD_NOTE = ("a kustomization of this run builds this file: judged here as written and again as built; the summary's "
                 "chips and cost count the build")


def _rendered(sel: files.Selection, ctx: Context, policy: Policy, day: dt.date, batch: _Batch) -> None:
    """What is deployed from more than one file, after the files themselves: Helm charts, the releases
    of a chart the files named (Argo CD, Flux, helmfile, Terraform), and kustomizations."""
    for chart in sel.charts:
        if files.helm() is not None:
            _chart_with_helm(chart, ctx, policy, day, batch)
        else:
            _chart_without_helm(chart, ctx, batch)
    for ref in batch.releases:
        _release(ref, ctx, policy, day, batch)
    for owner in batch.builds:
        _owner_build(owner, ctx, batch)
    patches: set[str] = set()
    for kfile in sel.kustomizations:
        patches |= _kustomization(kfile, ctx, batch)
    if sel.kustomizations:  # a kustomization that built requests is not "skipped"
        built = {r.path for r in batch.requests}
        batch.skipped = [(p, why) for p, why in batch.skipped if p not in built]
    if patches:  # a patch file is a partial manifest: what it asks for is judged in the build that applies it
        kept = [r for r in batch.requests if os.path.realpath(r.path) not in patches]
        for path in dict.fromkeys(r.path for r in batch.requests if os.path.realpath(r.path) in patches):
            batch.skipped.append((path, "a kustomize patch: judged in the kustomization that applies it"))
        batch.requests = kept


def paths_root(paths: Iterable[str]) -> str:
    """What the run's keys are relative to: the directory when one directory is checked (so an old
    checkout passed to --baseline keys its files as the new run does), the file's directory when
    one file is (an old plan.json against the new one), else the working directory."""
    given = list(paths)
    if len(given) == 1 and given[0] != "-" and not any(ch in given[0] for ch in "*?["):
        return given[0] if os.path.isdir(given[0]) else (os.path.dirname(given[0]) or ".")
    return "."


def _keys(results: list[ProposalResult], root: str) -> None:
    """``--baseline`` matches results by key: the file's path relative to the run's root, and the
    resource address (``k8s/serve.yaml::Deployment/prod/vllm``) or the document (``p.yaml#2``)."""
    for r in results:
        rel = r.path if r.path == "-" else files.relative_to_root(r.path, root)
        if r.source is not None and r.source.get("kind", "profile") != "profile":
            r.key = f"{rel}::{r.source['address']}"
        else:
            r.key = rel + (r.label[len(r.path):] if r.label.startswith(r.path) else "")


MAX_REQUESTS = 50_000  # accelerator requests in one run
MAX_MATCH_WORK = 20_000_000  # match: patterns x requests tried in one run


def _bound(batch: _Batch) -> None:
    """Clear errors instead of minutes of work: too many requests, or too many ``match:`` patterns
    to try against them."""
    if len(batch.requests) > MAX_REQUESTS:
        raise InputError.single(
            batch.requests[MAX_REQUESTS].path,
            1,
            1,
            f"more than {MAX_REQUESTS:,} accelerator requests in one run: check the repository in parts",
        )
    patterns = sum(len(lp.profile.match or []) for lp in batch.workloads)
    if patterns * len(batch.requests) > MAX_MATCH_WORK:
        worst = max(batch.workloads, key=lambda lp: len(lp.profile.match or []))
        raise InputError.single(
            worst.path,
            1,
            1,
            f"{patterns:,} match: patterns against {len(batch.requests):,} resources is more than advisor tries in one run "
            f"({MAX_MATCH_WORK:,} pattern tests): use fewer, broader patterns or link resources by annotation / label / tag",
        )


def _chart_with_helm(chart: str, ctx: Context, policy: Policy, day: dt.date, out: _Batch) -> None:
    """``helm template`` once with the chart's values.yaml and once more with each values file beside it."""
    from advisor.check.infra.helmlite import mark_upgrade, mark_variant, overlays, release_states

    got = _Batch()
    states = release_states(chart)
    for overlay in [None, *overlays(chart)]:
        for upgrade in states:
            variant = _Batch()
            _one_file(chart, ctx, policy, day, variant, text=_render_chart(chart, overlay, upgrade))
            if upgrade:
                mark_upgrade(variant.requests, variant.autoscalers)
                variant.invalid = []  # said once, by the install's rendering
            if overlay is not None:
                mark_variant(variant.requests, variant.autoscalers, overlay)
            got.extend(variant)
    if got.requests or got.autoscalers or got.results or got.invalid:
        got.skipped = []
    got.skipped = list(dict.fromkeys(got.skipped))
    out.extend(got)


MAX_STAGED_FILES = 10_000
MAX_STAGED_BYTES = 64 * 1024 * 1024


def _without_vcs(chart: str, tmp: str) -> str | InputError:
    """The chart directory helm is given: the chart itself, or where a version-control directory (.git, .hg, .svn) is
    inside it (a chart at a repository's root), a copy in ``tmp`` without it. Helm loads every file of a chart that
    .helmignore does not ignore, and a template reads them (.Files.Get): review 34 put the job's token from
    .git/config into a name in every output. The copy is bounded (MAX_STAGED_FILES, MAX_STAGED_BYTES); links are copied
    as the files they point to (one out of the repository was refused before)."""
    import shutil

    from advisor.yamlsrc import VCS_DIRS

    found, count, size = False, 0, 0
    for d, dirs, names in os.walk(chart):
        if VCS_DIRS & set(dirs):
            found = True
            dirs[:] = [x for x in dirs if x not in VCS_DIRS]
        count += len(names)
        if count > MAX_STAGED_FILES:
            break
        for n in names:
            try:
                size += os.path.getsize(os.path.join(d, n))
            except OSError:
                continue
    if not found:
        return chart
    if count > MAX_STAGED_FILES or size > MAX_STAGED_BYTES:
        return InputError.single(chart, 1, 1, "a chart directory that holds a version-control directory and more than "
                                 f"{MAX_STAGED_FILES:,} files or {MAX_STAGED_BYTES // 2**20} MiB: not rendered (helm would "
                                 "read the version-control directory too); move the chart to a directory of its own")
    dest = os.path.join(tmp, os.path.basename(os.path.abspath(chart)) or "chart")

    def left_out(d: str, names: list[str]) -> list[str]:
        # the directories, links into them, and links to directories (a link to the chart itself would be copied into
        # the copy again and again, down to the longest path the system takes)
        def linked(n: str) -> bool:
            at = os.path.join(d, n)
            return os.path.islink(at) and (os.path.isdir(at) or bool(VCS_DIRS & set(Path(os.path.realpath(at)).parts)))

        return [n for n in names if n in VCS_DIRS or linked(n)]

    try:
        shutil.copytree(chart, dest, ignore=left_out)
    except (OSError, shutil.Error) as exc:
        return InputError.single(chart, 1, 1, f"the chart could not be copied without its version-control directory: {exc}"[:300])
    return dest


def _render_chart(
    chart: str, overlay: str | list[str] | None = None, upgrade: bool = False, release: ReleaseRef | None = None,
) -> str | InputError:
    """``helm template [NAME] CHART [--namespace NS] [-f VALUES ...] [--is-upgrade]`` (bounded in time and size): the
    manifests the chart renders to, for ``release`` where one names it."""
    import subprocess
    import tempfile

    helm = files.helm()
    if helm is None:  # pragma: no cover - selected only when helm is on PATH
        return InputError.single(chart, 1, 1, "helm is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        staged = _without_vcs(chart, tmp)
        if isinstance(staged, InputError):
            return staged
        try:
            overlays = [overlay] if isinstance(overlay, str) else list(overlay or [])
            named = [release.release] if release and release.release else []
            space = ["--namespace", release.namespace] if release and release.namespace else []
            cmd = [helm, "template", *named, staged, *space, *(arg for f in overlays for arg in ("-f", f)),
                   *(["--is-upgrade"] if upgrade else [])]
            done = subprocess.run(cmd, capture_output=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return InputError.single(chart, 1, 1, f"helm template failed: {type(exc).__name__}")
    if done.returncode != 0:
        msg = done.stderr.decode("utf-8", "replace").replace(staged, chart).strip().splitlines()
        return InputError.single(chart, 1, 1, f"helm template failed: {(msg[-1] if msg else 'exit ' + str(done.returncode))[:300]}")
    if len(done.stdout) > 8 * 1024 * 1024:
        return InputError.single(chart, 1, 1, "helm template rendered more than 8 MiB")
    from advisor.yamlsrc import decode

    try:
        return decode(done.stdout, chart)
    except InputError as exc:
        return exc


def _release(ref: Any, ctx: Context, policy: Policy, day: dt.date, out: _Batch) -> None:
    """A chart in the repository as a release names it (Argo CD, Flux, helmfile): rendered with the
    release's values files and inline values and its name and namespace, judged at the reference."""
    from advisor.check.infra.helmlite import RELEASE, RELEASE_NAME
    from advisor.check.infra.k8s import DEFAULT_NAMESPACE

    names = RELEASE.set((ref.release or RELEASE_NAME, ref.namespace or "default"))
    spaces = DEFAULT_NAMESPACE.set(ref.namespace or "default")
    try:
        _release_rendered(ref, ctx, policy, day, out)
    finally:
        RELEASE.reset(names)
        DEFAULT_NAMESPACE.reset(spaces)


def _release_rendered(ref: Any, ctx: Context, policy: Policy, day: dt.date, out: _Batch) -> None:
    from advisor.check.infra.helmlite import read_values
    from advisor.check.infra.model import label_variant

    got = _Batch()
    if files.helm() is not None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            extra = []
            for i, layer in enumerate(ref.layers):
                p = os.path.join(tmp, f"values-{i}.yaml")
                with open(p, "w", encoding="utf-8") as fh:
                    json.dump(layer, fh, default=str)  # JSON is YAML (a YAML date as its text)
                extra.append(p)
            _one_file(ref.chart, ctx, policy, day, got, text=_render_chart(ref.chart, [*ref.files, *extra], release=ref))
            from advisor.check.infra.helmlite import mark_upgrade, release_states

            if True in release_states(ref.chart):
                again = _Batch()  # the upgrade's requests only: its problems are said once, by the install's rendering
                _one_file(ref.chart, ctx, policy, day, again,
                          text=_render_chart(ref.chart, [*ref.files, *extra], upgrade=True, release=ref))
                mark_upgrade(again.requests, again.autoscalers)
                got.requests += again.requests
                got.autoscalers += again.autoscalers
    else:
        from advisor.check.infra.helmlite import ChartRead, read_variant
        from advisor.check.infra.names import name_index

        try:
            values = read_values(ref.files, ref.layers)
            read: ChartRead = read_variant(ref.chart, name_index(ctx.catalog), values)
        except InputError as exc:
            got.invalid.append(InvalidFile(ref.path, exc.problems))
            read = ChartRead()
        except (RecursionError, MemoryError):
            too_big = Problem(ref.path, ref.pos[0], ref.pos[1], "Helm chart too large or too deeply nested to read")
            got.invalid.append(InvalidFile(ref.path, [too_big]))
            read = ChartRead()
        got.requests, got.autoscalers = read.requests, read.autoscalers
        if read.problems:
            got.invalid.append(InvalidFile(ref.chart, read.problems))
    for req in got.requests:
        req.path, (req.line, req.col), req.where = ref.path, ref.pos, {}
        req.unresolved = [(f, v, ref.pos) for f, v, _p in req.unresolved] + [("release", f"{w}: {v}", p) for w, v, p in ref.unread]
    label_variant(got.requests, got.autoscalers, ref.label, f"the chart {ref.chart} as {ref.path} installs it")
    out.requests += got.requests
    out.autoscalers += got.autoscalers
    out.invalid += got.invalid


def _kustomization(kfile: str, ctx: Context, out: _Batch) -> set[str]:
    """A kustomization that transforms its resources, built: what it deploys, beside its files as
    written; returns the patch files it applies."""
    from advisor.check.infra import kustomize
    from advisor.check.infra.names import name_index

    if not kustomize.transforms(kfile):
        return set()
    label = f" [kustomize {os.path.dirname(kfile) or '.'}]"
    try:
        got = kustomize.read(kfile, files.boundary(kfile), name_index(ctx.catalog), label)
    except (RecursionError, MemoryError):
        out.invalid.append(InvalidFile(kfile, [Problem(kfile, 1, 1, "kustomization too large or too deeply nested to build")]))
        return set()
    if got.problems:
        out.invalid.append(InvalidFile(kfile, got.problems))
        return set()
    out.requests += got.requests
    out.autoscalers += got.autoscalers
    out.built |= got.members
    return got.patches


def _owner_build(owner: Any, ctx: Context, out: _Batch) -> None:
    """What an Argo CD Application or a Flux Kustomization deploys when it builds a kustomization of the repository with
    overrides of its own (replicas, patches, components): that build, read (kustomize.read_overrides)."""
    from advisor.check.infra import kustomize
    from advisor.check.infra.names import name_index

    try:
        got = kustomize.read_overrides(owner, files.boundary(owner.path), name_index(ctx.catalog))
    except (RecursionError, MemoryError):
        out.invalid.append(InvalidFile(owner.path, [Problem(owner.path, 1, 1, "kustomization too large or too deeply nested to build")]))
        return
    if got.problems:
        out.invalid.append(InvalidFile(owner.path, got.problems))
        return
    out.requests += got.requests
    out.autoscalers += got.autoscalers


def _chart_without_helm(chart: str, ctx: Context, out: _Batch) -> None:
    """A chart on a runner without helm: advisor renders its templates with its values itself."""
    from advisor.check.infra.helmlite import read_chart
    from advisor.check.infra.names import name_index

    try:
        got = read_chart(chart, name_index(ctx.catalog))
    except InputError as exc:  # its values file is no YAML, say: that chart is invalid, the batch still reports (review 29)
        out.invalid.append(InvalidFile(chart, exc.problems))
        return
    except (RecursionError, MemoryError):
        out.invalid.append(InvalidFile(chart, [Problem(chart, 1, 1, "Helm chart too large or too deeply nested to read")]))
        return
    if got.problems:
        out.invalid.append(InvalidFile(chart, got.problems))
    out.requests += got.requests
    out.autoscalers += got.autoscalers
    if got.skipped:
        out.skipped.append((chart, got.skipped))


@dataclass
class _Batch:
    results: list[ProposalResult] = field(default_factory=list)
    invalid: list[InvalidFile] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)  # advisor.check.infra.model.Request
    autoscalers: list[Any] = field(default_factory=list)
    workloads: list[LoadedProfile] = field(default_factory=list)  # every profile read (for links)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    releases: list[Any] = field(default_factory=list)  # advisor.check.infra.model.ReleaseRef
    builds: list[Any] = field(default_factory=list)  # documents that build a kustomization with overrides (Argo CD, Flux)
    modules: dict[str, str] = field(default_factory=dict)  # a local module's directory -> the first file that calls it
    built: set[str] = field(default_factory=set)  # resource files a kustomization of the run builds (real paths)

    def extend(self, other: _Batch) -> None:
        for directory, caller in other.modules.items():
            self.modules.setdefault(directory, caller)
        self.releases += other.releases
        self.builds += other.builds
        self.results += other.results
        self.invalid += other.invalid
        self.requests += other.requests
        self.autoscalers += other.autoscalers
        self.workloads += other.workloads
        self.skipped += other.skipped


TEMPLATE_MARK = re.compile(r"\{\{|\$\{|\$\(|%\{")
# the top-level keys of what the gate reads (a workload profile, a Kubernetes manifest, a SkyPilot or dstack task, a
# Cluster Toolkit blueprint, a CloudFormation template, a Ray cluster config): a file that cannot be read and has one
# stays an input error
_TASK_KEYS = ("task", "model", "inference", "training", "workload", "apiVersion", "kind", "resources", "num_nodes", "setup",
              "deployment_groups", "Resources", "AWSTemplateFormatVersion", "available_node_types", "head_node_type")
_WORKFLOW_KEYS = ("name", "run", "type")  # a GitHub Actions workflow's (or a step's) as well as a task's


def _top_keys(keys: tuple[str, ...]) -> re.Pattern[str]:
    """A line that writes one of ``keys`` at the top of a document (or of a list item / flow mapping there)."""
    return re.compile(r"(?m)^(?:[?{\-][ \t]*)*[\"']?(?:" + "|".join(keys) + r")[\"']?\s*:")


# the top-level keys of a profile, manifest or task; STRONG_KEYS those of them no GitHub Actions workflow has at its top
READ_KEYS = _top_keys(_TASK_KEYS + _WORKFLOW_KEYS)
STRONG_KEYS = _top_keys(_TASK_KEYS)
# a Kubernetes manifest's top-level keys, and a workload profile's (a profile is never skipped: its errors are the user's)
MANIFEST_KEYS = re.compile(r"(?m)^[\"']?apiVersion[\"']?\s*:")
PROFILE_KEYS = _top_keys(("task", "model", "inference", "training", "workload", "deployment", "goal"))


_MERGE_DEPTH = 64
# where a YAML parser and kubectl's document reader (k8s.io/apimachinery util/yaml YAMLReader, Argo CD's too) split a file
# differently: the reader breaks lines at \n only, so a bare carriage return is a line break to the parser alone, and it
# takes a line that starts "---#" for a separator, which YAML reads as the plain scalar "---#"
_BARE_CR = re.compile(r"\r(?!\n)")
_HASH_SEPARATOR = re.compile(r"^---#", re.M)


def _split_alike(text: str, path: str) -> None:
    """An input error where the documents advisor reads are not the ones kubectl applies (review 34: a ConfigMap, a bare
    carriage return and a quoted string hid a Pod of 8 H100 that kubectl applied beside it)."""
    for pattern, why in ((_BARE_CR, "a carriage return not followed by a line feed"),
                         (_HASH_SEPARATOR, "a line that starts '---#'")):
        m = pattern.search(text)
        if m is not None:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise InputError.single(path, line, col, f"{why}: YAML and kubectl split this file into different documents "
                                    "(kubectl breaks lines at line feeds only and takes '---#' for a separator); write it "
                                    "with plain line feeds and '--- #' separators")


def _as_applied(data: Any, depth: int = 0) -> Any:
    """A leniently read document as the tools that apply it read it: merge keys (``<<``: a mapping or a list of them)
    merged under the mapping's own keys, as YAML 1.1's merge type, go-yaml and PyYAML do, and a root-level local tag
    (read as ``{"!tag": value}``) dropped; nested no deeper than _MERGE_DEPTH."""
    if depth > _MERGE_DEPTH:
        return data
    if isinstance(data, dict):
        if depth == 0 and len(data) == 1 and isinstance(next(iter(data)), str) and str(next(iter(data))).startswith("!"):
            return _as_applied(next(iter(data.values())), depth + 1)
        merged: dict[Any, Any] = {}
        src = data.get("<<")
        for m in (src if isinstance(src, list) else [src]):
            if isinstance(m, dict):
                merged.update({k: v for k, v in _as_applied(m, depth + 1).items() if k not in merged})
        merged.update({k: _as_applied(v, depth + 1) for k, v in data.items() if k != "<<"})
        return merged
    if isinstance(data, list):
        return [_as_applied(v, depth + 1) for v in data]
    return data


def _read_one(path: str, ctx: Context, text: str | None = None) -> tuple[list[LoadedProfile], Any]:
    """A file's profiles and its parsed infrastructure (advisor.check.infra.model.Parsed): every
    document classified on its own, so a proposal is judged whatever else the file holds."""
    from advisor.check.infra.names import name_index
    from advisor.yamlsrc import STDIN, stdin_is_json

    if text is None and (path.endswith(".json") or (path == STDIN and stdin_is_json())):
        from advisor.check.infra.read import read_json

        return read_json(path, name_index(ctx.catalog))
    if text is None and path.endswith(files.TF_SUFFIXES):
        from advisor.check.infra.read import read_hcl

        return [], read_hcl(path, name_index(ctx.catalog))
    from advisor.check.infra.sniff import doc_kind, has_profile_modeline
    from advisor.loading import profiles_from_docs
    from advisor.yamlsrc import MAX_BYTES, load_documents, read_text

    if text is None:
        text = read_text(path, max_bytes=8 * 1024 * 1024)
    _split_alike(text, path)
    try:
        docs = [d for d in load_documents(text, path, max_nodes=500_000) if d.data is not None]
    except InputError as exc:
        from advisor.check.infra.model import Parsed
        from advisor.check.infra.names import names_hardware
        from advisor.check.infra.read import template_hint

        try:  # read leniently (any tag as untagged, a merge key as a key): YAML of another tool is no proposal
            # (a key written twice keeps its last value here, as go-yaml v2 and PyYAML read it: a Helm values file or a CI
            # config with a duplicate key is still no proposal; one that is a manifest or task stays an input error)
            lenient = [d for d in load_documents(text, path, max_nodes=500_000, lenient=True, last_wins=True) if d.data is not None]
        except InputError:
            lenient = None
        if lenient is not None and any(doc_kind(d.data) == "cloudformation" for d in lenient):
            # a CloudFormation template in its short form (!Ref, !Sub): read with the tags as their long form
            from advisor.check.infra.read import split

            return split(path, lenient, [doc_kind(d.data) for d in lenient], name_index(ctx.catalog), len(text))
        if lenient is not None and any(doc_kind(d.data).startswith("other") and not doc_kind(_as_applied(d.data)).startswith("other")
                                       for d in lenient):
            # a document that is a manifest, a task or a profile once its merge keys are merged and its root tag dropped, as
            # kubectl, SkyPilot (PyYAML) and go-yaml read it: never "YAML the gate does not read" (review 34: a Pod of 8 H100
            # behind `<<: {apiVersion: v1, kind: Pod}` or a `!pod` tag passed as no proposal); the strict error stands
            raise exc
        if lenient is not None and all(doc_kind(d.data).startswith("other") for d in lenient):
            # mkdocs.yml's !!python/name tags, a catalog or compose file's merge keys (gpustack's model catalog)
            p = exc.problems[0]
            return [], Parsed("other", notes=[f"YAML the gate does not read ({p.line}:{p.col}: {p.message[:80]}) that holds no "
                                             "workload profile and no infrastructure the gate reads"])
        from advisor.check.infra.sniff import WORKFLOW, text_workflow

        if TEMPLATE_MARK.search(text) and (kept := _without_broken_templates(text, path, name_index(ctx.catalog))) is not None:
            # a document that is a template until rendered (a Secret's {{HF_TOKEN}}) and names no accelerator, beside
            # documents that are YAML: those are read, each on its own, with their own lines; the template one is left out
            blanked, spans = kept
            loaded, parsed = _read_one(path, ctx, blanked)
            if parsed is not None:
                for first, last in spans:
                    note = (f"lines {first}-{last} of the file: a document that is not YAML until rendered (an unrendered "
                            "placeholder) and names no accelerator, left out; the file's other documents are read")
                    parsed.notes.append(note)
                    for req in parsed.requests:
                        req.notes.append(note)
            return loaded, parsed
        workflow = text_workflow(text) and not STRONG_KEYS.search(text)
        if TEMPLATE_MARK.search(text) and not workflow and not names_hardware(text, name_index(ctx.catalog)):
            # a template that is no YAML until rendered (kserve's e2e test resources, a Helm template outside a
            # chart) and names no accelerator, chip resource or accelerator machine anywhere: nothing to judge
            return [], Parsed("other", notes=["a template that is not YAML until rendered (unrendered {{ }} / ${ } "
                                             "placeholders) and names no accelerator: nothing to judge"])
        if (path != STDIN and lenient is None and exc.problems[0].message.startswith("invalid YAML")
                and (workflow or (not TEMPLATE_MARK.search(text) and not READ_KEYS.search(text)))
                and not names_hardware(text, name_index(ctx.catalog))
                and not _readable_parts(text, path, name_index(ctx.catalog))):
            # YAML no tool reads either (a syntax error: kueue's KEP metadata with unquoted @handles, a workflow whose
            # heredoc ends its run block; not a refused tag or a limit) that names no accelerator and has none of the
            # top-level keys of what the gate reads (a profile, a manifest, a SkyPilot or dstack task), or whose keys
            # are a GitHub Actions workflow's (its name is the workflow's, its ${{ }} expressions GitHub's, not a
            # template to render first): no proposal, and no reason to stop a repository-wide run
            p = exc.problems[0]
            where = f"({p.line}:{p.col}: {p.message[:80]})"
            return [], Parsed("other", notes=[
                f"{WORKFLOW} that is not valid YAML {where} and names no accelerator: nothing to judge" if workflow else
                f"not valid YAML {where}, and names no accelerator and none of the keys of a profile, manifest or task: nothing to judge"])
        broken = (lenient is None and exc.problems[0].message.startswith("invalid YAML")) or "duplicate key" in exc.problems[0].message
        if (path != STDIN and broken
                and MANIFEST_KEYS.search(text) and not PROFILE_KEYS.search(text) and not TEMPLATE_MARK.search(text)
                and not names_hardware(text, name_index(ctx.catalog))
                and not _readable_parts(text, path, name_index(ctx.catalog))):
            # a Kubernetes manifest with a syntax error (GKE samples' over-indented Gateway and HTTPRoute) or a key
            # written twice (data-on-eks' Graviton SparkApplication: kubectl refuses it too) that names no accelerator,
            # chip resource or accelerator machine anywhere: kubectl cannot apply it, it asks for nothing, and a gate on
            # accelerator spend does not stop a repository-wide run on it
            p = exc.problems[0]
            return [], Parsed("other", notes=[
                f"a Kubernetes manifest that {'has a key written twice' if 'duplicate key' in p.message else 'is not valid YAML'} "
                f"({p.line}:{p.col}: {p.message[:80]}; kubectl cannot apply it "
                "either) and names no accelerator: nothing to judge"])
        chart = _chart_of(path)
        if TEMPLATE_MARK.search(text) and chart is not None:
            # a template in a Helm chart's directory outside templates/ (files/ a template includes with .Files.Get and
            # tpl): part of the chart, rendered where the chart's templates include it, not YAML of its own
            return [], Parsed("other", notes=[f"a template file of the Helm chart {chart} (not YAML until the chart renders it)"])
        raise template_hint(text, exc) from None
    modeline = has_profile_modeline(text)
    kinds = [doc_kind(d.data, modeline=modeline) for d in docs]
    if docs and all(k == "profile" for k in kinds):  # profiles only: no infrastructure reader is loaded
        if len(text) > MAX_BYTES:
            raise InputError.single(path, 1, 1, f"file is larger than the {MAX_BYTES}-byte limit for workload profiles")
        return profiles_from_docs(path, docs), None
    from advisor.check.infra.model import Parsed
    from advisor.check.infra.read import split

    if not docs:
        return [], Parsed("other", notes=["an empty YAML file"])
    try:
        return split(path, docs, kinds, name_index(ctx.catalog), len(text))
    except InputError:
        chart = _chart_of(path)
        if chart is None or any(k in ("kubernetes", "profile", "cloudformation") or (isinstance(d.data, dict) and "apiVersion" in d.data)
                                for k, d in zip(kinds, docs, strict=True)):
            raise
        # a values file kept in a chart's directory (configs/*.yaml passed with -f) that happens to look like another
        # tool's file: the chart's, not that tool's
        return [], Parsed("other", notes=[f"a YAML file of the Helm chart {chart} that is no manifest (a values file?)"])


def _without_broken_templates(text: str, path: str, index: Any) -> tuple[str, list[tuple[int, int]]] | None:
    """``text`` with each ``---`` document that is no YAML, holds an unrendered placeholder and names no accelerator
    blanked out line for line (so the others keep their positions), and the (first, last) lines of each; None when no
    document is so, when another document cannot be read either, or when what is left is no YAML."""
    from advisor.check.infra.names import names_hardware
    from advisor.yamlsrc import load_documents

    lines = text.split("\n")
    bounds = [i for i, line in enumerate(lines) if re.fullmatch(r"---[ \t]*\r?", line)][:1000]
    starts = [0, *[b + 1 for b in bounds]]
    ends = [*bounds, len(lines)]
    spans: list[tuple[int, int]] = []
    for a, b in zip(starts, ends, strict=True):
        part = "\n".join(lines[a:b])
        try:
            load_documents(part, path)
        except InputError:
            if not TEMPLATE_MARK.search(part) or names_hardware(part, index):
                return None
            spans.append((a, b))
    if not spans or len(spans) == len(starts):
        return None
    for a, b in spans:
        lines[a:b] = [""] * (b - a)
    blanked = "\n".join(lines)
    try:
        load_documents(blanked, path)
    except InputError:
        return None
    return blanked, [(a + 1, b) for a, b in spans]


def _readable_parts(text: str, path: str, index: Any) -> bool:
    """Whether a file that is no YAML as a whole holds a document that is (kubectl applies the documents before the one
    it cannot read) and that is a workload profile or names accelerators once its escapes are decoded (``\\/``, a
    quoted line continuation): such a file is not skipped but stays an input error. A readable PersistentVolumeClaim
    or Connector beside the broken document asks for nothing (review 21, F1: such files stopped repository-wide runs)."""
    import json

    from advisor.check.infra.names import names_hardware
    from advisor.check.infra.read import split
    from advisor.check.infra.sniff import doc_kind
    from advisor.yamlsrc import load_documents

    parts = re.split(r"(?m)^---[ \t]*\r?$", text)  # a CRLF file's separators too, as kubectl trims them
    if len(parts) > 1000:  # more than are read: never taken for nothing (review 29: a Deployment after 1,000 ConfigMaps)
        return True
    for part in parts:
        try:
            docs = [d for d in load_documents(part, path) if d.data is not None]
        except InputError:
            continue
        for d in docs:
            if doc_kind(d.data) == "profile" or names_hardware(json.dumps(d.data, default=str), index):
                return True
        kinds = [doc_kind(d.data) for d in docs]
        try:  # what the readers find in it (a KAI GPU-fraction annotation names no chip resource)
            if docs and split(path, docs, kinds, index, len(part))[1].requests:
                return True
        except InputError:
            return True  # not read: never taken for nothing
    return False


def _chart_of(path: str) -> str | None:
    from advisor.check.files import chart_of

    chart = chart_of(path) if path.endswith((".yaml", ".yml")) else None
    return None if chart is None else os.path.relpath(chart)


def _one_file(path: str, ctx: Context, policy: Policy, day: dt.date, out: _Batch, text: str | InputError | None = None) -> None:
    try:
        if isinstance(text, InputError):
            raise text
        loaded, parsed = _read_one(path, ctx, text)
        if parsed is not None:
            # a ComputeClass is no autoscaler of a workload: a file of classes only (what a pod selecting one may get) is
            # listed with its note, as a Kueue ResourceFlavor is, never passed over without a word
            scalers = [a for a in parsed.autoscalers if a.target[0] != "ComputeClass"]
            if not parsed.requests and not scalers and not parsed.releases and not parsed.builds and not loaded:
                out.skipped.append((path, "; ".join(dict.fromkeys(parsed.notes)) or "no accelerator requests"))
            out.requests += parsed.requests
            out.autoscalers += parsed.autoscalers
            out.releases += parsed.releases
            out.builds += parsed.builds
            for directory in parsed.modules:
                out.modules.setdefault(directory, path)
        if loaded:
            check_accelerators(loaded, ctx.catalog)
            judged = [judge(lp, ctx, policy, day) for lp in loaded]
            out.results.extend(judged)
            # kept for the links of infrastructure requests: the profiles, not their YAML
            out.workloads.extend(lp.without_positions() for lp in loaded)
    except InputError as exc:
        out.invalid.append(InvalidFile(path, exc.problems))
    except (RecursionError, MemoryError):
        out.invalid.append(InvalidFile(path, [Problem(path, 1, 1, "input too large or too deeply nested to read")]))
    except Exception as exc:  # a bug on one member marks that member invalid; the batch still reports
        out.invalid.append(
            InvalidFile(
                path,
                [Problem(path, 1, 1, f"internal error while reading this file: {type(exc).__name__} (a bug in advisor; please report it)")],
            )
        )


def _check_files(
    todo: list[str], ctx: Context, policy: Policy, day: dt.date, progress: Callable[[int, int], None] | None = None
) -> _Batch:
    """Judge file by file: a bad file is listed with its problems and the batch goes on."""
    out = _Batch()
    for i, path in enumerate(todo):
        _one_file(path, ctx, policy, day, out)
        if progress:
            progress(i + 1, len(todo))
    return out


# Large batches are spread over the available cores; forked workers inherit the loaded
# context and profiles, so only results cross the process boundary.
PARALLEL_THRESHOLD = 200
_JOB: tuple[Context, Policy, dt.date] | None = None


def _workers(n: int) -> int:
    import multiprocessing

    if n < PARALLEL_THRESHOLD or os.environ.get("ADVISOR_JOBS") == "1":
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    wanted = os.environ.get("ADVISOR_JOBS", "")
    return max(1, min(cores, int(wanted))) if re.fullmatch(r"[0-9]{1,6}", wanted) else cores


def _worker_signals() -> None:
    """Workers leave SIGINT to the parent (a Ctrl-C reaches the whole process group) and die
    at once on SIGTERM, which the parent's pool sends them when it is interrupted."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _check_chunk(files: list[str]) -> _Batch:
    assert _JOB is not None
    ctx, policy, day = _JOB
    return _check_files(files, ctx, policy, day)
