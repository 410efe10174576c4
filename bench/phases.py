"""Where one cold ``advisor recommend`` spends its time, phase by phase (run as a child process).

    python -m bench.phases PROFILE [--catalog FILE]   -> one JSON line of seconds per phase
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import io  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402


def main() -> None:
    args = sys.argv[1:]
    profile_path = args[0]
    catalogs = args[args.index("--catalog") + 1:args.index("--catalog") + 2] if "--catalog" in args else []
    out: dict[str, float] = {}
    t = time.perf_counter()
    import advisor.cli  # noqa: F401 - what the command line imports before it runs
    from advisor.api import Context
    from advisor.loading import load_profiles
    from advisor.recommend import decide, flips, recommend

    out["imports"] = time.perf_counter() - t
    t = time.perf_counter()
    ctx = Context.load(catalogs=catalogs)
    loaded = load_profiles([profile_path])
    out["load_validate"] = time.perf_counter() - t
    profile = loaded[0].profile
    t = time.perf_counter()
    from advisor.estimate.search import all_candidates

    cands = all_candidates(profile, ctx.catalog, ctx.constants)
    out["estimate"] = time.perf_counter() - t
    t = time.perf_counter()
    decision, cands = decide(profile, ctx.kb, ctx.catalog, ctx.constants, cands)
    out["score_confidence"] = time.perf_counter() - t
    t = time.perf_counter()
    flips(profile, decision, ctx.kb, ctx.catalog, ctx.constants, cands)
    out["flips"] = time.perf_counter() - t
    rec = recommend(profile, ctx.kb, ctx.catalog, ctx.constants, label=loaded[0].label, with_flip=False)
    t = time.perf_counter()
    from advisor.renderers.json import dumps

    dumps(rec.to_json())
    out["render_json"] = time.perf_counter() - t
    t = time.perf_counter()
    from rich.console import Console

    from advisor.renderers.text import render_recommendation

    render_recommendation(rec, Console(file=io.StringIO(), width=120, color_system=None))
    out["render_text"] = time.perf_counter() - t
    out["total_in_process"] = time.perf_counter() - T0
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
