"""``README.md``: the steps, the estimated cost and time, the files, the assumptions."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import Any

from advisor import clouds
from advisor.families import family
from advisor.fmt import GENERATED_TOKENS, load_phrase, md_message, md_text
from advisor.fmt import hours as _hours
from advisor.fmt import money as _money
from advisor.scaffold.kubernetes import monitoring_for, node_selection, schedule_hours, server_argv
from advisor.scaffold.plan import statement
from advisor.scaffold.shell import Step, auto_steps
from advisor.scaffold.skeleton import stack_title
from advisor.scaffold.skypilot import SkyEntry, cost_phrase, one_replica_of, sky_command, sky_entry
from advisor.scaffold.spec import Spec, one_line, shape
from advisor.scaffold.stacks import servers
from advisor.setuppath import training_stack


def _fmt(value: Any) -> str:
    if isinstance(value, dict):
        if "expected" in value:
            lo, hi = value.get("low"), value.get("high")
            rng = f" (range {_fmt(lo)}–{_fmt(hi)})" if lo is not None and hi is not None else ""
            return f"{_fmt(value['expected'])}{rng}"
        return "; ".join(f"{k.replace('_', ' ')}: {_fmt(v)}" for k, v in value.items() if k != "source" and v not in (None, [], {}))
    if isinstance(value, list | tuple):
        return ", ".join(_fmt(v) for v in value) or "none"
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e6 else f"{value:.3g}"
    return str(value)


def _estimate_lines(spec: Spec, written: Callable[[str], bool]) -> list[str]:
    e = spec.est
    if e is None:
        return ["No accelerator to pay for: see the steps below."]
    price = (
        f"at {_money(e.usd_per_chip_hour)} per chip-hour ({e.price_cloud} {e.price_kind})"
        if e.usd_per_chip_hour is not None
        else "unpriced on the allowed clouds"
    )
    out = [f"- Configuration: **{e.accelerator} x {e.count}** ({shape(spec)}) {price}."]
    if e.mode == "training":
        out.append(f"- Run time: **{_hours(e.hours)}** (range {_hours(e.hours_low)}–{_hours(e.hours_high)}).")
        out.append(f"- Cost: **{_money(e.cost_usd)}** (range {_money(e.cost_low)}–{_money(e.cost_high)}).")
        t = spec.profile.training
        if t is not None and t.deadline_hours:
            out.append(f"- Deadline {t.deadline_hours:g} h: {'met' if e.meets_deadline else 'missed'}.")
        if e.tokens_per_second:
            out.append(f"- Throughput: {e.tokens_per_second:,.0f} training tokens/s for the whole configuration.")
        short = spec.run_batch != spec.global_batch
        out.append(
            f"- {'train.py runs' if written('train.py') else 'The run is'} {spec.max_steps:,} steps of {spec.run_batch} sequences x "
            f"{t.seq_len if t else 0} tokens (training.tokens_b / (seq_len x "
            + (f"the {spec.run_batch} of the global batch of {spec.global_batch} that divide over {e.count} chips))." if short
               else "global batch)).")
        )
    else:
        reps = e.replicas or 1
        unit = (e.unit_cost or {}).get("unit") or "per million output tokens"
        # what a request yields: generated tokens (an LLM, a speech decoder), else one image or one result a request
        tokens = unit.endswith("output tokens")
        unit_usd = e.usd_per_million_tokens if tokens else (e.unit_cost or {}).get("usd")
        out.append(
            f"- Cost: **{_money(e.cost_usd)} per month** for {reps} replica(s) of {e.count} chip(s) "
            f"(range {_money(e.cost_low)}–{_money(e.cost_high)}), {_money(unit_usd)} {unit}."
        )
        if e.latency_ms is not None:
            target = spec.profile.inference.latency_p99_ms if spec.profile.inference else None
            tgt = f" (target p99 {target:,.0f} ms)" if target else ""
            steps = (f"; time to first token {e.ttft_ms or 0:,.0f} ms, {e.tpot_ms:,.1f} ms per output token" if e.tpot_ms is not None
                     else "")
            out.append(f"- Latency: {e.latency_ms:,.0f} ms per request{tgt}{steps}, batch {e.batch} per replica.")
        if e.tokens_per_second:
            out.append(f"- Throughput: {e.tokens_per_second:,.0f} {e.throughput_unit or GENERATED_TOKENS} per replica.")
    budget = spec.profile.goal.budget_usd
    if budget is not None and e.within_budget is not None:
        per = " per month" if e.mode == "inference" else ""
        out.append(f"- Budget {_money(budget)}{per}: {'within' if e.within_budget else 'over'}.")
    return out


_FILE_ROLES = {
    "README.md": "this file",
    "setup.sh": "the setup path's commands as a bash script (`./setup.sh --list`)",
    "train.py": "training script skeleton",
    "sky.yaml": "SkyPilot task with ordered fallbacks, for any allowed cloud",
    "Dockerfile": "training container that `gcloud builds submit` builds",
    "k8s/deployment.yaml": "LLM server Deployment",
    "k8s/leaderworkerset.yaml": "LLM server LeaderWorkerSet (one replica over several hosts)",
    "k8s/service.yaml": "Service in front of it (port 8000, OpenAI-compatible API)",
    "k8s/hpa.yaml": "HorizontalPodAutoscaler on running requests per pod",
    "k8s/podmonitoring.yaml": "exports the server's metrics to Cloud Monitoring for the HPA (GKE)",
    "k8s/monitoring/servicemonitor.yaml": "has the Prometheus Operator scrape the server's metrics for the HPA (setup.sh "
    "applies it where the cluster has the operator's CRD)",
    "k8s/schedule.yaml": "CronJobs that stop the server outside the priced hours and start it again",
}


def _header(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """The title, the verdict and the setup path in a paragraph, the family's generations."""
    p = spec.profile
    path = spec.path
    L: list[str] = [f"# {md_text(p.name, line_start=False)}: {family(spec.device).name} setup", ""]
    L.append(
        f"Generated by `advisor scaffold` (catalog as of {spec.rec.catalog_as_of}). "
        f"Verdict: **{spec.rec.device_name}**"
        + (f" — {spec.rec.estimate.accelerator} x {spec.rec.estimate.count}" if spec.rec.estimate else "")
        + f", confidence {spec.rec.confidence:.2f}. "
        + f"Setup path: **{path.title}** (`{path.id}`"
        + (", chosen with `--path`" if spec.chosen_by_flag else "")
        + ")."
    )
    L.append("")
    L.append(one_line(path.summary))
    L.append("")
    if spec.generations and spec.acc is not None:
        L.append(
            f"{family(spec.device).name} generations in the catalog: "
            + ", ".join(f"**{g}** (chosen)" if g == spec.acc.name else g for g in spec.generations)
            + "."
        )
        L.append("")
    return L


def _nothing_to_provision(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """Why a CPU or edge verdict provisions nothing."""
    accel = family(spec.device).accelerator
    L: list[str] = []
    if not accel:
        L.append("## Nothing to provision")
        L.append("")
        if family(spec.device).role == "host":
            L.append(
                "No accelerator pays off for this workload: it runs on CPUs, on a laptop first and on a plain "
                "Compute Engine VM or Cloud Run only when it outgrows one. There is no TPU or GPU to reserve, "
                "so there is no SkyPilot task or Kubernetes manifest here."
            )
        else:
            L.append(
                "The model runs on the end device (phone, car, IoT board), not in a data centre: there is no "
                "cloud accelerator to reserve, so there is no SkyPilot task or Kubernetes manifest here. The "
                "steps export, quantise and benchmark the model for the device runtime."
            )
        L.append("")
    return L


def _estimate_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """The estimate the files were generated for."""
    accel = family(spec.device).accelerator
    L: list[str] = []
    L.append("## Estimated cost and time" if accel else "## Estimate")
    L.append("")
    L.extend(_estimate_lines(spec, files.__contains__))
    L.append("")
    L.append("`advisor recommend` on the profile explains every point of the verdict and the other candidates.")
    L.append("")
    return L


def _files_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """What each generated file is."""
    L: list[str] = []
    L.append("## Files")
    L.append("")
    L.append("| file | what it is |")
    L.append("|---|---|")
    for name in files:
        role = _FILE_ROLES.get(name, "")
        if name == "train.py" and spec.stack:
            role = f"training script skeleton: {stack_title(spec.stack)}"
        L.append(f"| `{name}` | {role} |")
    L.append("| `README.md` | this file |")
    L.append("")
    return L


def _steps_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """The settings and every step of setup.sh, how it runs and its commands."""
    L: list[str] = []
    L.append("## Steps")
    L.append("")
    auto = {s.key for s in auto_steps(steps)}
    setting_vars = [
        var for var in ("PROJECT_ID", "REGION", "ZONE", "NAME", "MODEL_ID", "HF_TOKEN") if any(var in c for s in steps for c in s.commands)
    ]
    setting_vars += sorted({v for s in steps for v in s.needs} - set(setting_vars))  # the settings a step stops without
    L.append(
        "Set the variables at the top of `setup.sh` (or export them: "
        + ", ".join(f"`{v}`" for v in setting_vars)
        + "), then run `./setup.sh`: it runs the steps marked *run by default*, in order. "
        "Run any other step by name or number (`./setup.sh STEP`); `./setup.sh --list` lists them."
        if setting_vars
        else "Run `./setup.sh`: it runs the steps marked *run by default*, in order; run the others by name "
        "(`./setup.sh STEP`)."
    )
    if any("wait_active " in c for s in steps for c in s.commands):
        L.append("")
        L.append(
            "`wait_active` is a helper in `setup.sh`: it polls the queued resource every 30 s until it is ACTIVE "
            "(WAITING_FOR_RESOURCES means no capacity yet) and stops on FAILED or SUSPENDED."
        )
    L.append("")
    for n, s in enumerate(steps, 1):
        how = {
            "auto": "run by default" if s.key in auto else "run it by name",
            "interactive": "interactive: run it by name",
            "device": "needs the target device: run it by name",
            "provision": "creates cloud resources: run it by name when you need them",
            "training": "trains a model, which serving does not need: run it by name",
            "cleanup": "deletes the resources: run it by name when done",
            "schedule": "service hours: run it from cron",
        }[s.kind]
        if s.remote:  # a step of the launched machine (the path's host: instance)
            hop = next((h for h in steps if h.runs), None)
            how = ("interactive, " if s.kind == "interactive" else "") + (
                f"on the machine: `./setup.sh {hop.key}` runs it there" if hop is not None and s.key in hop.runs
                else f"on the machine, where `./setup.sh {hop.key}` copied this directory: run it there by name"
                if hop is not None else "on the machine: copy this directory there and run it by name")
        added = "; added by the scaffold" if s.added else ""
        L.append(f"{n}. **{one_line(s.title)}** (`./setup.sh {s.key}`; {how}{added})")
        if s.note:
            L.append(f"   {one_line(s.note)}")
        L.append("")
        if s.commands:
            L.append("   ```bash")
            for c in s.commands:
                for line in c.split("\n"):
                    L.append(f"   {line}".rstrip())
            L.append("   ```")
            L.append("")
    return L


def _training_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """What train.py does and how to watch it (TensorBoard)."""
    L: list[str] = []
    if spec.training and "train.py" in files and spec.stack == "cpu":
        L.append("## Training script")
        L.append("")
        L.append(
            "`train.py` trains XGBoost (tree_method=\"hist\", all cores) on a synthetic data set so it runs as is; "
            "point it at yours with `python3 train.py --data data.csv --target label`. It saves `model.json`."
        )
        L.append("")
    elif spec.training and "train.py" in files:
        runs = any("train.py" in c for s in steps for c in s.commands if not s.added)
        L.append("## Training script and TensorBoard")
        L.append("")
        own = training_stack(spec.stack).get("readme") if spec.stack else None  # a stack that says what its skeleton runs
        plan = spec.plan
        L.append(
            (str(own).format(tensor=plan.tensor, pipeline=plan.pipeline, data=plan.data) if own else
             f"`train.py` is a runnable skeleton for {stack_title(spec.stack or 'cuda')}: it trains on synthetic "
             "data until you point it at yours and writes TensorBoard logs to `./runs`"
             + (" (or `$AIP_TENSORBOARD_LOG_DIR` on Vertex AI)" if "Dockerfile" in files else "")
             + ". Its defaults (model, sequence length, global batch, steps) come from the profile; "
             "`python3 train.py --help` lists them.")
            + ("" if runs else " The setup path's own steps do not run it: it is the starting point for your own loop"
               + (" (`./setup.sh train` runs it on the slice)." if any(s.runs_train for s in steps) else ", and `sky.yaml` runs it."))
        )
        L.append("")
        # the step that serves TensorBoard (tensorboard --logdir), not one that installs it or logs to it
        tb = [s for s in steps if any("tensorboard --logdir" in c for c in s.commands)]
        if tb:
            L.append(
                f"TensorBoard: `./setup.sh {tb[0].key}`, then open http://localhost:6006 "
                "(the step forwards the port from the machine that trains, or reads the logs locally)."
            )
        else:
            L.append("TensorBoard: run `tensorboard --logdir ./runs` where it trains, then open http://localhost:6006.")
        L.append("")
    return L


def _kubernetes_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """The serving manifests: layout, context length, serving stack, autoscaling."""
    p = spec.profile
    L: list[str] = []
    if spec.serving:
        L.append("## Kubernetes manifests")
        L.append("")
        e = spec.est
        assert e is not None
        plan = spec.plan
        server = servers()[plan.server]
        argv = " ".join(server_argv(spec, plan.model_id, plan.tensor, plan.pipeline))
        dpa = (
            f"data-parallel attention over {plan.attention_data} chips (each attends for its own requests with a whole copy "
            "of the attention weights, one KV cache) and the experts split over all of them (expert parallelism, the "
            "layout the estimate costed)"
        ) if plan.attention_data > 1 else ""
        if plan.hosts > 1:
            layout = (
                dpa if dpa else
                f"{plan.tensor}-way tensor parallelism inside a host and {plan.pipeline} pipeline stages across hosts "
                "(vLLM's documented multi-node layout, https://docs.vllm.ai/en/stable/serving/parallelism_scaling.html)"
                if plan.pipeline > 1
                else f"one {plan.tensor}-way tensor-parallel mesh over all of them (one ICI domain; {server.title}'s multi-host form, "
                     f"{server.sources[-2]})"
            )
            L.append(
                f"`k8s/leaderworkerset.yaml` runs `{argv}` as a LeaderWorkerSet: each of the {plan.replicas} replica(s) "
                f"is {plan.hosts} pods, one per host, each with {plan.chips_per_host} chip(s): {layout}. `setup.sh` installs the "
                "LeaderWorkerSet controller, then applies the whole `k8s/` folder with `kubectl apply -f k8s/`."
            )
        else:
            L.append(
                f"`k8s/deployment.yaml` runs `{argv}` with {dpa or f'tensor parallelism over {e.count} chip(s)'} "
                f"per replica and {plan.replicas} replica(s) (the estimate's count for "
                f"{load_phrase(p.inference)}). `setup.sh` applies the whole "
                "`k8s/` folder with `kubectl apply -f k8s/`."
            )
        if plan.server_seqs > plan.max_seqs:
            L.append("")
            L.append(
                f"The server batches up to {plan.server_seqs} requests at once: the largest batch that still meets the latency "
                f"target, the capacity each replica was counted at; at peak a replica has about {plan.max_seqs} in flight "
                "(the autoscaler's target), and a burst is absorbed by larger batches rather than a queue."
            )
        L.append("")
        L.append(
            f"`--max-model-len` / context length {plan.context_len:,} tokens: "
            "the profile's longest prompt + longest output (`inference.max_input_tokens` + "
            "`inference.max_output_tokens`; where not given, the 99th percentile of lengths with the average "
            "`input_tokens` / `output_tokens`, about 4.6 x it)"
            + (f", at most the model's context (`model.context_tokens`, {p.model.context_tokens:,})" if p.model.context_tokens else "")
            + " and the tokens a replica's KV cache holds; set them to the longest request you must accept, because longer "
            "requests are rejected."
        )
        if plan.prefill_budget and server.prefill_budget:
            chosen = (e.p99 or {}).get("prefill_budget") or {}
            L.append("")
            L.append(
                f"`{' '.join(server.budget_flags(plan.prefill_budget))}`: {plan.prefill_budget:,} prompt "
                f"tokens per step instead of the server's default {int(chosen.get('default') or 0):,}. A decode step that "
                "shares its batch with another request's prompt chunk takes that chunk's time too, and the profile's p99 "
                "targets need the smaller chunk (the estimate's p99 figures are at this budget; a long prompt takes more "
                "steps to its first token)."
            )
        if plan.server_note:
            L.append("")
            L.append(f"Serving stack: {plan.server_note}.")
        if "k8s/hpa.yaml" in files:
            mon = monitoring_for(spec)
            L.append("")
            L.append(
                f"The HorizontalPodAutoscaler scales between {plan.min_replicas} and {plan.max_replicas} replicas on "
                f"`{server.metric}` per pod: `{mon['file']}` exports it; {mon['note']} ({mon['source']}). "
                "Until the metric is served, the HPA keeps the replica count of the Deployment."
            )
        L.append("")
    return L


def _skypilot_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """The SkyPilot task: the chosen configuration first, then the fallbacks."""
    p = spec.profile
    L: list[str] = []
    if "sky.yaml" in files:
        e = spec.est
        assert e is not None
        L.append("## SkyPilot")
        L.append("")
        launch = sky_command(spec)
        first = sky_entry(spec, spec.acc, e) if spec.acc else None
        own = first is not None and bool(first.clouds) and all(clouds.cloud(c).owned for c in first.clouds)
        where = (
            "on your own cluster (SkyPilot's Kubernetes infra) for the chosen configuration, the hardware it is priced on, "
            "and on an allowed cloud for the fallbacks"
            if own else "on any allowed cloud"
        )
        L.append(
            f"`{launch}` runs the same job through SkyPilot {where} "
            f"({', '.join(c for c in p.deployment.clouds if c in clouds.rented()) or 'none'}), trying the chosen "
            "accelerator first and then these fallbacks, in order (next-best feasible configurations of the same "
            "family with the same node count, so `setup` and `run` stay valid):"
        )
        if n := one_replica_of(spec):
            L[-1] += (f" It starts one replica of the plan's {n} (each spans several nodes, which SkyServe does not run): "
                      f"launch {n} clusters and balance the requests over them.")
        L.append("")
        if first is not None:
            L.append(f"- `{first.accelerators}` x {first.nodes} node(s): {cost_phrase(e)} (chosen)")
        for fb in fallbacks:
            L.append(f"- `{fb.accelerators}` x {fb.nodes} node(s): {cost_phrase(fb.est)}")
        if not fallbacks:
            L.append("- no fallback: no other feasible configuration of the family fits the same node count")
        L.append("")
    return L


def _service_hours_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """How a service priced for part of the day is stopped outside its hours."""
    L: list[str] = []
    if spec.plan.scheduled:
        L.append("## Service hours")
        L.append("")
        if "k8s/schedule.yaml" in files:
            start, stop = schedule_hours(spec.plan)
            L.append(
                f"The estimate prices {spec.plan.hours_per_day:g} h a day: `k8s/schedule.yaml` scales the server to 0 at "
                f"{stop:02d}:00 UTC and back at {start:02d}:00 UTC; {node_selection(spec)['empties']}. Edit the two "
                "schedules for your hours."
            )
        elif any(st.kind == "schedule" for st in steps):
            keys = " and ".join(f"`./setup.sh {st.key}`" for st in steps if st.kind == "schedule")
            L.append(f"The estimate prices {spec.plan.hours_per_day:g} h a day: run {keys} from cron (the steps say when).")
        else:
            L.append(
                f"The estimate prices {spec.plan.hours_per_day:g} h a day; this setup path has no machine to stop, "
                "so stop the serving process outside those hours yourself."
            )
        L.append("")
    return L


def _plan_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """Every plan attribute the files state, as a table."""
    L: list[str] = []
    L.append("## The plan")
    L.append("")
    L.append("Every file states these values (the `plan:` lines at its top): what the estimate priced.")
    L.append("")
    L.append("| attribute | value |")
    L.append("|---|---|")
    for line in statement(spec.plan):
        for word in shlex.split(line.removeprefix("plan:")):
            key, _, value = word.partition("=")
            L.append(f"| {key} | {value} |")
    L.append("")
    if spec.plan.server and spec.plan.quantization != "none" and spec.plan.checkpoint_method:
        title = servers()[spec.plan.server].title
        L.append(
            f"Precision: the published checkpoint {spec.plan.model_id}, quantized to {spec.plan.quantization}"
            + ("" if spec.plan.checkpoint_method == spec.plan.quantization else f" ({spec.plan.checkpoint_method})")
            + f": {title} reads the method from its config, so the server "
            "gets no quantization flag (vLLM refuses a --quantization that differs from the config's method)."
        )
        L.append("")
    elif spec.plan.server and spec.plan.quantization != "none":
        note = servers()[spec.plan.server].precision_note(spec.plan.quantization)
        L.append(f"Precision: {note or f'{spec.plan.quantization} (on-the-fly quantization; the server flags say so)'}.")
        L.append("")
    return L


def _assumptions_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """Names, pricing and the estimate's assumptions."""
    p = spec.profile
    L: list[str] = []
    L.append("## Assumptions")
    L.append("")
    L.append(
        f"- Names: resources are named after `{spec.name}` (from the profile name); region `{spec.values['region']}`, zone "
        f"`{spec.values['zone']}`."
    )
    L.append(
        f"- Pricing: {spec.plan.pricing} on {', '.join(p.deployment.clouds)}; prices and shapes from the catalog as of "
        f"{spec.rec.catalog_as_of}."
    )
    if spec.est is not None:
        for key, value in spec.est.assumptions.items():
            L.append(f"- {key.replace('_', ' ').capitalize()}: {_fmt(value)}.")
    L.append("")
    return L


def _warnings_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """The scaffold's and the recommendation's warnings."""
    L: list[str] = []
    if spec.warnings or spec.rec.warnings:
        L.append("## Warnings")
        L.append("")
        L.extend(f"- {md_message(w)}" for w in spec.warnings)
        L.extend(f"- From the recommendation: {md_message(w, line_start=False)}" for w in spec.rec.warnings)
        L.append("")
    return L


def _sources_section(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> list[str]:
    """The setup path's sources."""
    path = spec.path
    L: list[str] = []
    L.append("## Sources")
    L.append("")
    L.extend(f"- {s}" for s in path.sources)
    return L


# The README's sections in their order: each a function of the scaffold's spec, steps, files and SkyPilot
# fallbacks that returns its lines (none where it does not apply).
SECTIONS: tuple[Callable[[Spec, list[Step], Mapping[str, str], list[SkyEntry]], list[str]], ...] = (
    _header,
    _nothing_to_provision,
    _estimate_section,
    _files_section,
    _steps_section,
    _training_section,
    _kubernetes_section,
    _skypilot_section,
    _service_hours_section,
    _plan_section,
    _assumptions_section,
    _warnings_section,
    _sources_section,
)


def readme(spec: Spec, steps: list[Step], files: Mapping[str, str], fallbacks: list[SkyEntry]) -> str:
    """README.md of the scaffold: its SECTIONS in order."""
    L = [line for section in SECTIONS for line in section(spec, steps, files, fallbacks)]
    return "\n".join(L).rstrip("\n") + "\n"
