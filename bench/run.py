"""Start-up, throughput and growth benchmark (a benchmark, not a test).

    python -m bench.run [--runs N] [--proposals N] [--scale N] [--quick] [--json FILE]

Measured in one run, on this machine, commands interleaved (one of each per round, median of
``--runs`` rounds) so that load on the machine hits every figure alike:

- the **same-stack floor** (``bench/floor.py``: a minimal typer app with ``recommend``'s
  signature that loads the profile with the same YAML loader and prints JSON) and the bare
  import line ``import typer, pydantic, rich, yaml``;
- cold ``advisor recommend`` in JSON and text, as ratios to the floor (targets 1.25x / 1.5x),
  with advisor's modules compiled to bytecode as an installed package has them (a pycache prefix
  in the run's temp directory, written by the warm-up round), and once without bytecode;
- the per-phase split of one recommend (``bench/phases.py``: imports, load + validate,
  estimate, scoring + confidence, flips, render);
- growth: recommend and check with the catalog grown to 3x its entries (generated copies,
  passed with ``--catalog``) against today's catalog passed the same way (target within 1.3x);
- ``advisor check`` over ~N files in the real formats a CI gate reads (Terraform plan JSON,
  Kubernetes manifests, SkyPilot tasks and their linked profiles), wall time on all cores
  (target <= 5 s per 1,000);
- ``advisor check`` over N generated proposals on one core, minus the bare CSafeLoader parse of
  the same files: the work per proposal (target <= 1.5 ms), and the slope from N to --scale
  proposals (linear: the two per-proposal figures agree); and the same over N proposals that
  are all different workloads (nothing estimated for one serves another);
- peak RSS of each (target < 120 MB, for recommend and check up to N; the --scale run's is
  reported apart).
Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ADVISOR = [PY, "-m", "advisor"]
PROFILE = "profiles/llm-chatbot.yaml"


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): {err}")
    return wall, usage.ru_maxrss / 1024


def interleaved(commands: dict[str, tuple[list[str], dict[str, str]]], runs: int) -> dict[str, dict[str, Any]]:
    """Each command once per round (after one warm-up round); median and min over the rounds."""
    for cmd, env in commands.values():
        run(cmd, env)  # warm the OS file cache and advisor's compiled-data cache
    walls: dict[str, list[float]] = {k: [] for k in commands}
    rss: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for name, (cmd, env) in commands.items():
            w, m = run(cmd, env)
            walls[name].append(w)
            rss[name].append(m)
    return {
        k: {"name": k, "median_s": statistics.median(walls[k]), "min_s": min(walls[k]), "peak_rss_mib": max(rss[k]), "runs": runs}
        for k in commands
    }


def generate(n: int, directory: Path, distinct: bool = False) -> list[Path]:
    """``n`` proposals cycled from profiles/proposals/ with their names and an hours figure varied:
    17 distinct workloads (the training proposals in 7 deadline variants, the serving ones
    differing only in their proposals), as a repository whose files repeat a few models. ``distinct``: every
    proposal's model is also a different size (params_b x (1 + i / 10^6)), so no two are the
    same workload and nothing estimated for one serves another."""
    sources = sorted((ROOT / "profiles" / "proposals").glob("*.yaml"))
    texts = [p.read_text() for p in sources]
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        text = texts[i % len(texts)].replace("name: ", f"name: bench-{i}-", 1)
        # vary the numbers so that no two proposals are the same workload
        text = text.replace("hours: ", f"hours: {1 + i % 7}", 1) if "hours: " in text else text
        if distinct:
            text = re.sub(r"params_b: ([0-9.]+)", lambda m, k=1 + i / 1e6: f"params_b: {float(m.group(1)) * k!r}", text, count=1)
        path = directory / f"p{i:05d}.yaml"
        path.write_text(text)
        out.append(path)
    return out


def generate_mixed(n: int, directory: Path) -> int:
    """About ``n`` files in the formats a CI gate reads (profiles/proposals/infra: Terraform plan
    JSON, Kubernetes/GKE manifests, SkyPilot tasks, and the workload profiles linked to them; plus
    the profile-format proposals), as copies of the bundled ones, each copy in its own folder so that
    its links resolve within it. Returns the number of files."""
    infra = [p for p in sorted((ROOT / "profiles" / "proposals" / "infra").rglob("*")) if p.is_file()]
    profiles = sorted((ROOT / "profiles" / "proposals").glob("*.yaml"))
    written, k = 0, 0
    while written < n:
        copy = directory / f"c{k:04d}"
        for src in infra:
            dst = copy / src.relative_to(ROOT / "profiles" / "proposals" / "infra")
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            written += 1
        if k < len(profiles):
            shutil.copyfile(profiles[k], copy / profiles[k].name)
            written += 1
        k += 1
    return written


def grown_catalog(directory: Path, factor: int) -> tuple[Path, Path]:
    """(today's catalog as an override, the catalog grown to ``factor`` x its entries): copies
    of every entry under new ids, 10% dearer per copy, so none is identical and none is pruned
    by name; both files go through the same --catalog loading path."""
    data = yaml.safe_load((ROOT / "rules" / "catalog.yaml").read_text())
    same = {"schema_version": 1, "as_of": str(data["as_of"]), "sources": {}, "accelerators": []}
    grown: dict[str, Any] = {"schema_version": 1, "as_of": str(data["as_of"]), "sources": data["sources"], "accelerators": []}
    for acc in data["accelerators"]:
        for k in range(2, factor + 1):
            copy = json.loads(json.dumps(acc, default=str))
            copy["id"] = f"{acc['id']}-copy{k}"
            copy["name"] = f"{acc['name']} (copy {k})"
            copy.pop("aliases", None)
            for p in copy.get("prices", []):
                p["usd_per_chip_hour"] = round(p["usd_per_chip_hour"] * (1 + 0.1 * (k - 1)), 4)
            copy.get("deploy", {}).pop("skypilot", None)
            grown["accelerators"].append(copy)
    a, b = directory / "catalog-same.yaml", directory / f"catalog-x{factor}.yaml"
    a.write_text(yaml.safe_dump(same, sort_keys=False))
    b.write_text(yaml.safe_dump(grown, sort_keys=False))
    return a, b


def phases(env: dict[str, str], runs: int, catalog: Path | None = None) -> dict[str, float]:
    cmd = [PY, "-m", "bench.phases", PROFILE] + (["--catalog", str(catalog)] if catalog else [])
    rows = []
    for _ in range(runs):
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=True)
        rows.append(json.loads(out.stdout))
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--proposals", type=int, default=1000)
    ap.add_argument("--scale", type=int, default=10000, help="proposals for the linearity check (0: skip)")
    ap.add_argument("--quick", action="store_true", help="3 rounds, 200 / 1,000 proposals")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "bench.json"))
    args = ap.parse_args()
    if args.quick:
        args.runs, args.proposals, args.scale = 3, 200, 1000
    tmp = Path(tempfile.mkdtemp(prefix="advisor-bench-"))
    # Bytecode as an installed package has it (pip compiles on install; the warm-up round writes
    # it here): with PYTHONDONTWRITEBYTECODE set, every run would compile advisor's ~10k lines
    # while the floor's libraries come compiled. The "no bytecode" row shows that case.
    raw = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    env = {k: v for k, v in raw.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    cold = {**raw, "PYTHONDONTWRITEBYTECODE": "1"}
    one = {**env, "ADVISOR_JOBS": "1"}
    try:
        same, grown = grown_catalog(tmp, 3)
        files = generate(args.proposals, tmp / "n")
        generate(args.proposals, tmp / "d", distinct=True)
        mixed = generate_mixed(args.proposals, tmp / "m")
        parse = [
            PY,
            "-c",
            "import sys, yaml\nfor f in sys.argv[1:]:\n    yaml.load(open(f).read(), Loader=yaml.CSafeLoader)\n",
            *map(str, files),
        ]
        check = [*ADVISOR, "check", str(tmp / "n"), "--format", "json", "--fail-on", "never", "--no-config"]
        startup = interleaved({
            "import line": ([PY, "-c", "import typer, pydantic, rich, yaml"], env),
            "floor": ([PY, str(ROOT / "bench" / "floor.py"), "recommend", PROFILE, "--format", "json"], env),
            "recommend json": ([*ADVISOR, "recommend", PROFILE, "--format", "json"], env),
            "recommend text": ([*ADVISOR, "recommend", PROFILE], env),
            "recommend json, no bytecode": ([*ADVISOR, "recommend", PROFILE, "--format", "json"], cold),
            "recommend json, catalog as override": ([*ADVISOR, "recommend", PROFILE, "--format", "json", "--catalog", str(same)], env),
            "recommend json, catalog x3": ([*ADVISOR, "recommend", PROFILE, "--format", "json", "--catalog", str(grown)], env),
        }, args.runs)
        rounds = max(3, args.runs // 3)
        bulk = interleaved(
            {
                f"parse {len(files)}": (parse, one),
                f"check {len(files)}, one core": (check, one),
                f"check {len(files)}, all cores": (check, env),
                f"check {len(files)}, one core, catalog x3": ([*check, "--catalog", str(grown)], one),
                f"check {len(files)}, one core, catalog as override": ([*check, "--catalog", str(same)], one),
                f"check {len(files)}, one core, distinct workloads": (
                    [*ADVISOR, "check", str(tmp / "d"), "--format", "json", "--fail-on", "never", "--no-config"],
                    one,
                ),
                f"check {mixed} mixed real-format files, all cores": (
                    [*ADVISOR, "check", str(tmp / "m"), "--format", "json", "--fail-on", "never", "--no-config"],
                    env,
                ),
            },
            rounds,
        )
        scale: dict[str, dict[str, Any]] = {}
        if args.scale and args.scale > args.proposals:
            big = generate(args.scale, tmp / "big")
            parse_big = [
                PY,
                "-c",
                "import sys, yaml\nfor f in sys.argv[1:]:\n    yaml.load(open(f).read(), Loader=yaml.CSafeLoader)\n",
                *map(str, big),
            ]
            scale = interleaved(
                {
                    f"parse {len(big)}": (parse_big, one),
                    f"check {len(big)}, one core": (
                        [*ADVISOR, "check", str(tmp / "big"), "--format", "json", "--fail-on", "never", "--no-config"],
                        one,
                    ),
                },
                1,
            )
        split = phases(env, max(3, args.runs // 2))
        split_grown = phases(env, max(3, args.runs // 2), grown)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    rows = [*startup.values(), *bulk.values(), *scale.values()]
    med = {r["name"]: r["median_s"] for r in rows}
    n = len(files)
    work_ms = 1000 * (med[f"check {n}, one core"] - med[f"parse {n}"]) / n
    ratios: dict[str, float] = {
        "recommend_json_vs_floor": med["recommend json"] / med["floor"],
        "recommend_text_vs_floor": med["recommend text"] / med["floor"],
        "recommend_json_no_bytecode_vs_floor": med["recommend json, no bytecode"] / med["floor"],
        "floor_vs_import_line": med["floor"] / med["import line"],
        "recommend_json_vs_import_line": med["recommend json"] / med["import line"],
        "check_work_ms_per_proposal_one_core": work_ms,
        "check_wall_s_all_cores": med[f"check {n}, all cores"],
        "check_mixed_formats_wall_s_all_cores": med[f"check {mixed} mixed real-format files, all cores"],
        "check_work_ms_per_proposal_one_core_distinct": 1000 * (med[f"check {n}, one core, distinct workloads"] - med[f"parse {n}"]) / n,
        "recommend_growth_x3": med["recommend json, catalog x3"] / med["recommend json, catalog as override"],
        "check_growth_x3": (med[f"check {n}, one core, catalog x3"] - med[f"parse {n}"])
        / max(med[f"check {n}, one core, catalog as override"] - med[f"parse {n}"], 1e-9),
        # the target's runs: recommend, and check up to --proposals files; the --scale run reported apart
        "peak_rss_mib": max(
            r["peak_rss_mib"] for r in [*startup.values(), *bulk.values()] if str(r["name"]).startswith(("recommend", "check"))
        ),
    }
    if scale:
        nb = args.scale
        ratios["check_work_ms_per_proposal_at_scale"] = 1000 * (med[f"check {nb}, one core"] - med[f"parse {nb}"]) / nb
        ratios["check_slope_ms_per_proposal"] = 1000 * (med[f"check {nb}, one core"] - med[f"check {n}, one core"]) / (nb - n)
        ratios["peak_rss_mib_at_scale"] = scale[f"check {nb}, one core"]["peak_rss_mib"]

    print(f"{'what':52s} {'median':>8s} {'min':>8s} {'peak RSS':>10s}")
    for r in rows:
        print(f"{r['name']:52s} {r['median_s']:7.3f}s {r['min_s']:7.3f}s {r['peak_rss_mib']:8.1f} MiB")
    print()
    targets = [
        ("recommend json / same-stack floor", ratios["recommend_json_vs_floor"], 1.25, "x"),
        ("recommend text / same-stack floor", ratios["recommend_text_vs_floor"], 1.5, "x"),
        ("check work per proposal, one core (ms)", work_ms, 1.5, ""),
        ("  the same, every workload distinct (ms)", ratios["check_work_ms_per_proposal_one_core_distinct"], 1.5, ""),
        (f"check {n} proposals wall, all cores (s)", ratios["check_wall_s_all_cores"], 5.0 * n / 1000, ""),
        (
            f"check {mixed} mixed real-format files wall, all cores (s)",
            ratios["check_mixed_formats_wall_s_all_cores"],
            5.0 * mixed / 1000,
            "",
        ),
        ("recommend, catalog x3 / today's", ratios["recommend_growth_x3"], 1.3, "x"),
        ("check work, catalog x3 / today's", ratios["check_growth_x3"], 1.3, "x"),
        (f"peak RSS, recommend and check up to {n} (MiB)", ratios["peak_rss_mib"], 120 / 1.048576, ""),
    ]
    for what, value, target, unit in targets:
        print(f"{what:44s} {value:8.2f}{unit:1s}  target <= {target:g}{unit}  {'met' if value <= target else 'MISSED'}")
    if scale:
        print(
            f"check work per proposal at {args.scale}: {ratios['check_work_ms_per_proposal_at_scale']:.2f} ms; slope "
            f"{ratios['check_slope_ms_per_proposal']:.2f} ms/proposal (linear when close to the figure at {n})"
        )
        print(
            f"peak RSS of check over {args.scale} proposals: {ratios['peak_rss_mib_at_scale']:.1f} MiB (the report holds every result "
            "until it is written)"
        )
    print(f"recommend json without bytecode (every module compiled each run) / floor: {ratios['recommend_json_no_bytecode_vs_floor']:.2f}x")
    print(
        f"floor / import line: {ratios['floor_vs_import_line']:.2f}x; recommend json / import line: "
        f"{ratios['recommend_json_vs_import_line']:.2f}x"
    )
    print("\nper-phase split of one cold recommend (seconds, median; today's catalog | catalog x3):")
    for k in split:
        print(f"  {k:20s} {split[k]:7.3f}  {split_grown[k]:7.3f}")
    out = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "rows": rows, "ratios": ratios, "phases": split, "phases_catalog_x3": split_grown,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
