"""Start-up and throughput benchmark (a benchmark, not a test).

    python -m bench.run [--runs N] [--proposals N] [--json bench/results/bench.json]

Measures, on this machine, in one run:
- cold ``advisor recommend`` (text and JSON) vs ``python -c "import typer, pydantic, rich, yaml"``;
- ``advisor check`` over N generated proposals vs parsing the same files with ``yaml.CSafeLoader``;
- the peak RSS of each.
Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ADVISOR = [PY, "-m", "advisor"]


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err}")
    return wall, usage.ru_maxrss / 1024


def measure(name: str, cmd: list[str], env: dict[str, str], runs: int) -> dict[str, object]:
    run(cmd, env)  # warm the OS file cache and advisor's compiled-data cache
    walls, rss = [], []
    for _ in range(runs):
        w, m = run(cmd, env)
        walls.append(w)
        rss.append(m)
    return {"name": name, "median_s": statistics.median(walls), "min_s": min(walls), "peak_rss_mib": max(rss), "runs": runs}


def generate(n: int, directory: Path) -> list[Path]:
    sources = sorted((ROOT / "profiles" / "proposals").glob("*.yaml"))
    texts = [p.read_text() for p in sources]
    out = []
    for i in range(n):
        text = texts[i % len(texts)].replace("name: ", f"name: bench-{i}-", 1)
        # vary the numbers so that no two proposals are the same workload
        text = text.replace("hours: ", f"hours: {1 + i % 7}", 1) if "hours: " in text else text
        path = directory / f"p{i:05d}.yaml"
        path.write_text(text)
        out.append(path)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--proposals", type=int, default=1000)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "bench.json"))
    args = ap.parse_args()
    env = {**os.environ, "NO_COLOR": "1"}
    profile = "profiles/llm-chatbot.yaml"
    rows = [
        measure("baseline: import typer, pydantic, rich, yaml", [PY, "-c", "import typer, pydantic, rich, yaml"], env, args.runs),
        measure("advisor --version", [*ADVISOR, "--version"], env, args.runs),
        measure("advisor recommend (text)", [*ADVISOR, "recommend", profile], env, args.runs),
        measure("advisor recommend (json)", [*ADVISOR, "recommend", profile, "--format", "json"], env, args.runs),
    ]
    tmp = Path(tempfile.mkdtemp(prefix="advisor-bench-"))
    try:
        files = generate(args.proposals, tmp)
        parse = [PY, "-c", "import sys, yaml\nfor f in sys.argv[1:]:\n    yaml.load(open(f).read(), Loader=yaml.CSafeLoader)\n", *map(str, files)]
        runs = max(3, args.runs // 2)
        rows.append(measure(f"baseline: CSafeLoader parse of {len(files)} proposals", parse, env, runs))
        rows.append(measure(f"advisor check {len(files)} proposals (json)", [*ADVISOR, "check", str(tmp), "--format", "json", "--fail-on", "never", "--no-config"], env, runs))
        rows.append(measure(f"advisor check {len(files)} proposals, one core", [*ADVISOR, "check", str(tmp), "--format", "json", "--fail-on", "never", "--no-config"], {**env, "ADVISOR_JOBS": "1"}, runs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = rows[0]["median_s"]
    parse_base = rows[4]["median_s"]
    ratios = {
        "recommend_text_vs_import": rows[2]["median_s"] / base,  # type: ignore[operator]
        "recommend_json_vs_import": rows[3]["median_s"] / base,  # type: ignore[operator]
        "check_vs_yaml_parse": rows[5]["median_s"] / parse_base,  # type: ignore[operator]
        "check_per_proposal_ms": 1000 * rows[5]["median_s"] / args.proposals,  # type: ignore[operator]
    }
    print(f"{'what':58s} {'median':>8s} {'min':>8s} {'peak RSS':>10s}")
    for r in rows:
        print(f"{r['name']:58s} {r['median_s']:7.3f}s {r['min_s']:7.3f}s {r['peak_rss_mib']:8.1f} MiB")
    print(f"recommend/import: text {ratios['recommend_text_vs_import']:.2f}x, json {ratios['recommend_json_vs_import']:.2f}x (target <= 1.5x)")
    print(f"check/yaml-parse: {ratios['check_vs_yaml_parse']:.2f}x (target <= 4x), {ratios['check_per_proposal_ms']:.2f} ms per proposal, "
          f"{rows[5]['median_s']:.2f}s wall (target <= 5s)")
    out = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}, "rows": rows, "ratios": ratios}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
