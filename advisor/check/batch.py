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
import glob
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from advisor.loading import LoadedProfile, profiles_from_docs
from advisor.policy import Policy
from advisor.yamlsrc import MAX_BYTES

__all__ = [
    "CHECK_RULES", "RANK", "SEVERITIES", "CheckReport", "CheckRule", "Finding", "InvalidFile",
    "ProposalResult", "apply_increase_limit", "diff_against", "expand_paths", "judge",
    "load_baseline", "run_check",
]


# --------------------------------------------------------------------------- inputs


SUFFIXES = (".yaml", ".yml", ".json", ".tf")


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files as given; directories recursively (*.yaml, *.yml, *.json, *.tf); glob patterns expanded."""
    out: list[str] = []
    problems: list[Problem] = []
    for raw in paths:
        if any(ch in raw for ch in "*?[") and not os.path.exists(raw):
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                problems.append(Problem(raw, 1, 1, "pattern matches no file"))
            out.extend(m for m in matches if not os.path.isdir(m))
            continue
        p = Path(raw)
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*") if f.suffix in SUFFIXES and f.is_file() and not _hidden(f, p))
            out.extend(found)
            continue
        out.append(raw)
    if problems:
        raise InputError(problems)
    return list(dict.fromkeys(out))


def _hidden(f: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in f.relative_to(root).parts)


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
) -> CheckReport:
    files = expand_paths(paths)
    if not files:
        raise InputError([Problem(".", 1, 1, "no YAML files to check")])
    day = today or dt.date.today()
    workers = _workers(len(files))
    batch = _Batch()
    if workers == 1:
        batch = _check_files(files, ctx, policy, day, progress)
    else:
        import multiprocessing

        global _JOB
        _JOB = (ctx, policy, day)
        size = max(1, math.ceil(len(files) / (workers * 4)))
        chunks = [files[i : i + size] for i in range(0, len(files), size)]
        done = 0
        try:
            with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals) as pool:
                for chunk, part in zip(chunks, pool.imap(_check_chunk, chunks), strict=True):
                    batch.extend(part)
                    done += len(chunk)
                    if progress:
                        progress(done, len(files))
        finally:
            _JOB = None
    results = batch.results
    if batch.requests:
        from advisor.check.infra.judge import apply_autoscalers, judge_request

        apply_autoscalers(batch.requests, batch.autoscalers)
        for req in batch.requests:
            try:
                results.append(judge_request(req, batch.workloads, ctx, policy, day))
            except InputError as exc:
                batch.invalid.append(InvalidFile(req.path, exc.problems))
    invalid = batch.invalid
    if invalid and not results and not batch.skipped:  # nothing could be judged: a plain input error, nothing to report
        raise InputError([p for bad in invalid for p in bad.problems])
    return CheckReport(results, policy.fail_on, ctx.catalog.as_of.isoformat(), policy_path, invalid=invalid, skipped_files=batch.skipped)


@dataclass
class _Batch:
    results: list[ProposalResult] = field(default_factory=list)
    invalid: list[InvalidFile] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)  # advisor.check.infra.model.Request
    autoscalers: list[Any] = field(default_factory=list)
    workloads: list[LoadedProfile] = field(default_factory=list)  # every profile read (for links)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def extend(self, other: _Batch) -> None:
        self.results += other.results
        self.invalid += other.invalid
        self.requests += other.requests
        self.autoscalers += other.autoscalers
        self.workloads += other.workloads
        self.skipped += other.skipped


def _read_one(path: str, ctx: Context) -> tuple[list[LoadedProfile], Any]:
    """A file's profiles, or its parsed infrastructure (advisor.check.infra.model.Parsed)."""
    from advisor.yamlsrc import STDIN, stdin_is_json

    if path.endswith(".json") or (path == STDIN and stdin_is_json()):
        from advisor.check.infra.names import name_index
        from advisor.check.infra.read import read_json

        return [], read_json(path, name_index(ctx.catalog))
    if path.endswith(".tf"):
        from advisor.check.infra.names import name_index
        from advisor.check.infra.read import read_hcl

        return [], read_hcl(path, name_index(ctx.catalog))
    from advisor.check.infra.sniff import doc_kind
    from advisor.yamlsrc import load_documents, read_text

    text = read_text(path, max_bytes=8 * 1024 * 1024)
    docs = load_documents(text, path, max_nodes=500_000)
    kinds = [doc_kind(d.data) for d in docs if d.data is not None]
    if kinds and all(k in ("other",) for k in kinds):
        from advisor.check.infra.model import Parsed

        return [], Parsed("other", notes=["YAML that is not a workload profile, a Kubernetes manifest or a SkyPilot task"])
    if "kubernetes" in kinds or "skypilot" in kinds:
        from advisor.check.infra.names import name_index
        from advisor.check.infra.read import read_yaml

        return [], read_yaml(docs, kinds, name_index(ctx.catalog))
    if len(text) > MAX_BYTES:
        raise InputError.single(path, 1, 1, f"file is larger than the {MAX_BYTES}-byte limit")
    return profiles_from_docs(path, docs), None


def _check_files(
    files: list[str], ctx: Context, policy: Policy, day: dt.date, progress: Callable[[int, int], None] | None = None
) -> _Batch:
    """Judge file by file: a bad file is listed with its problems and the batch goes on."""
    out = _Batch()
    for i, path in enumerate(files):
        try:
            loaded, parsed = _read_one(path, ctx)
            if parsed is not None:
                if parsed.kind in ("other", "terraform-hcl") and not parsed.requests:
                    out.skipped.append((path, "; ".join(parsed.notes) or "nothing to check"))
                elif not parsed.requests and not parsed.autoscalers:
                    out.skipped.append((path, "; ".join(parsed.notes) or "no accelerator requests"))
                out.requests += parsed.requests
                out.autoscalers += parsed.autoscalers
            else:
                check_accelerators(loaded, ctx.catalog)
                judged = [judge(lp, ctx, policy, day) for lp in loaded]
                out.results.extend(judged)
                # kept for the links of infrastructure requests: the profiles, not their YAML
                out.workloads.extend(lp.without_positions() for lp in loaded)
        except InputError as exc:
            out.invalid.append(InvalidFile(path, exc.problems))
        if progress:
            progress(i + 1, len(files))
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
    return max(1, min(cores, int(wanted))) if wanted.isdigit() else cores


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
