"""The resolved scaffold specification: the setup path, the configuration and the profile, once.

Every generator reads a ``Spec``; none of them re-derives the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from advisor import clouds, fmt
from advisor.catalog import Accelerator
from advisor.conditions import evaluate
from advisor.context import Context
from advisor.errors import UsageError
from advisor.estimate.result import Estimate
from advisor.facts import FieldReader
from advisor.families import family
from advisor.knowledge import PLACEHOLDER, SetupPath, bundled_data
from advisor.models import Profile
from advisor.recommend import Recommendation
from advisor.scaffold.plan import Plan, make_plan, statement
from advisor.scaffold.stacks import published_context
from advisor.setuppath import as_priced, placeholders, setup_cloud, skeleton_for, training_stack
from advisor.validation import did_you_mean


@dataclass
class Spec:
    """Everything the generators need, resolved once."""

    rec: Recommendation
    profile: Profile
    path: SetupPath
    chosen_by_flag: bool
    path_applies: bool
    device: str
    est: Estimate | None
    acc: Accelerator | None
    values: dict[str, str]
    name: str
    serving: bool
    training: bool
    vllm: bool
    stack: str | None
    plan: Plan
    nodes: int = 1  # GPU VMs per replica (GPU) or hosts per slice (TPU)
    slices: int = 1  # TPU multislice
    generations: list[str] = field(default_factory=list)  # the family's catalog entries (names)
    global_batch: int = 0
    max_steps: int = 0
    run_batch: int = 0  # the sequences a step of the skeleton runs: the global batch, less what does not divide over the chips
    checkpoint_every: int = 0  # the skeleton's steps between checkpoints: the plan's, over the skeleton's own step count
    warnings: list[str] = field(default_factory=list)

    @property
    def skeleton_shards(self) -> bool:
        """Whether the training skeleton shards the training state over the GPUs as the estimate's memory assumes and
        runs the plan's layout itself (rules/training-stacks.yaml ``shards_state``: Megatron-LM)."""
        return bool(self.stack and training_stack(self.stack).get("shards_state"))

    def produces(self, artefact: str) -> bool:
        """Whether the setup path declares ``artefact`` (rules/setup/*.yaml ``artefacts``)."""
        return artefact in self.path.artefacts

    @property
    def replicas(self) -> int:
        return (self.est.replicas or 1) if self.est and self.est.mode == "inference" else 1


def commands(path: SetupPath) -> list[str]:
    return [c for s in path.steps for c in s.commands]


def resolve_path(rec: Recommendation, ctx: Context, path_id: str | None) -> tuple[SetupPath, bool]:
    paths = {p.id: p for p in ctx.kb.setup_paths}
    if path_id is None:
        if rec.setup is None:
            raise UsageError(
                f"no setup path matches this {rec.device_name} verdict; name one with --path "
                f"({', '.join(sorted(paths))})"
            )
        return rec.setup.path, False
    if path_id not in paths:
        raise UsageError(
            f"unknown setup path {path_id!r}{did_you_mean(path_id, paths)} (known: {', '.join(sorted(paths))})"
        )
    return paths[path_id], True


def path_cloud(path: SetupPath, profile: Profile, est: Estimate | None) -> str:
    """The cloud the files provision on: the configuration's (setuppath.setup_cloud) where the
    setup path runs there, else the path's cloud the profile allows first, else the path's first."""
    cloud = setup_cloud(profile, est)
    if not path.clouds or cloud in path.clouds:
        return cloud
    return next((c for c in profile.deployment.clouds if c in path.clouds), path.clouds[0])


def stack_for(profile: Profile, device: str, vendor: str | None = None) -> str | None:
    """The training skeleton for the profile on ``device`` (setuppath.skeleton_for)."""
    return skeleton_for(profile, device, vendor)


def resolve(rec: Recommendation, ctx: Context, path_id: str | None) -> Spec:
    path, by_flag = resolve_path(rec, ctx, path_id)
    profile = rec.profile
    device = path.device
    est: Estimate | None
    if device == rec.device:
        est = rec.estimate
    elif family(device).accelerator:
        est = rec.decision.best_by_device.get(device)
    else:
        est = None
    if family(device).accelerator and est is None:
        fam = family(device).name
        raise UsageError(
            f"setup path {path.id!r} needs a {fam} configuration, and no {fam} configuration in the catalog "
            f"is feasible for this workload (verdict: {rec.device_name}); see `advisor recommend`"
        )
    if est is not None and not est.procurable:
        # setup files would launch what no allowed cloud delivers, or outside the regions the team is pinned to
        raise UsageError(
            f"{est.accelerator} x {est.count * (est.replicas or 1)}, the nearest {family(device).name} configuration, cannot "
            f"be obtained: {est.why_not}; no setup files are written for it (see `advisor recommend` for what would change it)"
        )
    acc = ctx.catalog.accelerators.get(est.accelerator) if est else None
    cloud = path_cloud(path, profile, est)
    values = placeholders(profile, acc, est, cloud)
    name = values["name"]
    applies = path.when is None or evaluate(path.when, FieldReader(as_priced(profile, est)))
    inference = profile.task == "inference"
    vllm = profile.serves_llm
    serving = inference and "kubernetes" in path.artefacts
    training = profile.task in ("training", "fine-tuning")
    spec = Spec(
        rec=rec,
        profile=profile,
        path=path,
        chosen_by_flag=by_flag,
        path_applies=applies,
        device=device,
        est=est,
        acc=acc,
        values=values,
        name=name,
        serving=serving,
        training=training,
        vllm=vllm,
        stack=stack_for(profile, device, acc.vendor if acc is not None else None) if training else None,
        plan=make_plan(profile, est, values, device, cloud, serving or (vllm and "skypilot" in path.artefacts)),
    )
    if spec.plan.scheduled and spec.serving:  # the node pool empties outside the priced hours
        values["min_nodes"] = "0"
    if not values.get("machine_type") and any("{machine_type}" in c for c in commands(path)):
        values["machine_type"] = "MACHINE_TYPE"
        spec.warnings.append("the configuration has no machine type: replace MACHINE_TYPE in setup.sh")
    if acc is not None:
        cloud = spec.plan.cloud
        spec.generations = [
            a.name
            for a in ctx.catalog.accelerators.values()
            if a.device == device and not a.local and (cloud in a.clouds or any(p.cloud == cloud for p in a.prices))
        ]
        # Vertex AI names GPUs as Compute Engine does, upper case with underscores (NVIDIA_L4,
        # NVIDIA_H100_80GB): https://cloud.google.com/vertex-ai/docs/training/configure-compute
        values["vertex_accelerator"] = values.get("gke_accelerator", "").upper().replace("-", "_") or "ACCELERATOR_TYPE"
    if acc is not None and est is not None:
        spec.nodes = spec.plan.hosts
        spec.slices = spec.plan.slices
    if profile.training is not None:
        spec.global_batch, spec.max_steps = int(values["global_batch"]), int(values["steps"])
        spec.run_batch = spec.global_batch
        spec.checkpoint_every = spec.plan.checkpoint_every
        # the skeleton splits the batch over its data-parallel ranks: every chip (a plain data-parallel loop), or the
        # plan's data-parallel width where the skeleton runs the plan's tensor and pipeline parallelism (Megatron-LM)
        chips = est.count if est is not None else 0
        if chips and spec.skeleton_shards:
            chips = spec.plan.data
        if chips and spec.global_batch % chips and profile.training.tokens_b and "skeleton" in path.artefacts:
            # the skeleton's train.py runs global_batch // chips sequences per chip (its data-parallel split), so a batch
            # that does not divide over the chips trains a smaller one: its steps are counted for that batch, so the
            # run still sees the profile's tokens (MaxText's fractional per_device_batch_size keeps the exact batch)
            run = max(1, spec.global_batch // chips) * chips
            t = profile.training
            steps = spec.max_steps
            spec.max_steps, spec.run_batch = max(1, round(t.tokens_b * 1e9 / (t.seq_len * run))), run
            # the same hours between checkpoints in the skeleton's larger steps: never a period past its last step
            spec.checkpoint_every = max(1, min(spec.max_steps, round(spec.checkpoint_every * spec.max_steps / max(steps, 1))))
            spec.warnings.append(f"the global batch of {spec.global_batch} does not divide over {chips} chips: train.py runs "
                                 f"{run} sequences a step ({run // chips} per chip) for {spec.max_steps:,} steps")
    collect_warnings(spec)
    return spec


def _context_warning(spec: Spec) -> None:
    """A served context longer than the checkpoint's config allows (rules/checkpoints.yaml ``contexts``): the server refuses
    --max-model-len above it unless the rope scaling its publisher validated is set, and a context longer than that
    runs beyond what was validated (review 23 F9: Qwen3-32B at 254,000 tokens, whose config allows 40,960)."""
    model = spec.plan.model_id
    known = published_context(model) if spec.serving and model else None
    length = spec.plan.context_len
    if known is None or length <= known.config:
        return
    # the publisher's factor up to its validated length, else the smallest tenth that reaches the length
    factor = known.factor if length <= known.extended else math.ceil(length / known.native * 10) / 10
    block = (f'{{"rope_type": "{known.method}", "factor": {factor:g}, "original_max_position_embeddings": {known.native}}}')
    beyond = (
        f"; {length:,} tokens is beyond the {known.extended:,} its publisher validated ({known.method}, factor "
        f"{known.factor:g}): the model's quality there is unknown, so cap the requests at {known.extended:,} or test it first"
        if length > known.extended else ""
    )
    spec.warnings.append(
        f"{model}'s config.json allows {known.config:,} tokens (trained on {known.native:,}); the server is asked for "
        f"{length:,} (--max-model-len) and refuses to start without the rope scaling its model card gives: add "
        f"{block} to the model's config (vLLM: --hf-overrides with it as rope_scaling, or rope_parameters in releases "
        f"that renamed it){beyond}. The scaling applies to every request, short ones too, so set it only where long "
        f"prompts need it ({known.source[0]})"
    )


def collect_warnings(spec: Spec) -> None:
    w = spec.warnings
    if spec.chosen_by_flag and spec.path.id != (spec.rec.setup.path.id if spec.rec.setup else None):
        w.append(
            f"setup path `{spec.path.id}` was chosen with --path"
            + ("" if spec.path_applies else "; its condition does not hold for this profile")
            + (f" (the verdict's path is `{spec.rec.setup.path.id}`)" if spec.rec.setup else "")
        )
    if spec.device != spec.rec.device:
        w.append(
            f"the verdict is {spec.rec.device_name}; these files use the best {family(spec.device).name} "
            "configuration instead, because the chosen setup path is for that family"
        )
    # the commands that create TPU slices as one queued resource of several nodes (rules/provisioning.yaml nodes)
    qr_create = tuple(head for head in bundled_data("provisioning.yaml")["nodes"] if head.endswith(" create"))
    if spec.slices > 1 and spec.est is not None and not any(m in c for c in commands(spec.path) for m in ("--num-slices", *qr_create)):
        w.append(
            f"the configuration is {spec.slices} TPU slices ({spec.est.shape}): sky.yaml launches all "
            f"{spec.slices} (num_nodes), setup.sh provisions one slice; multislice training needs XPK/GKE "
            "(setup path maxtext-tpu) or queued resources with --node-count"
        )
    memory = (spec.est.assumptions.get("memory") or {}) if spec.est is not None and spec.training else {}
    state_gb, chip_gb = float(memory.get("state_gb_total") or 0.0), (spec.est.memory_capacity_gb if spec.est is not None else 0.0)
    sharded = "sharded" in str(memory.get("sharding", ""))  # the estimate's memory shards the state over the chips
    if "skeleton" in spec.path.artefacts and not spec.skeleton_shards and chip_gb and state_gb > chip_gb and sharded:
        w.append(
            f"train.py keeps the whole training state on every chip (DistributedDataParallel / replicated parameters): "
            f"{state_gb:,.0f} GB of weights, gradients and optimiser state against {chip_gb:,.0f} GB per chip, so it runs "
            "out of memory at this size; the estimate assumes the state sharded over all chips: wrap the model in FSDP "
            "(torch.distributed.fsdp.fully_shard), shard it with torch_xla SPMD or jax.sharding, or run the path's own "
            "trainer where it has one (MaxText)"
        )
    laid_out = set(training_stack(spec.stack).get("parallelism") or ()) if spec.stack else set()
    split = [f"{kind} parallelism {n}" for kind, n in (("tensor", spec.plan.tensor), ("pipeline", spec.plan.pipeline))
             if n > 1 and kind not in laid_out]
    if spec.training and split and "skeleton" in spec.path.artefacts:
        w.append(
            f"the estimate lays the run out with {' and '.join(split)}; train.py ({training_stack(spec.stack or 'cuda')['title']}) runs "
            "data parallelism only, so it needs the whole model on each GPU: run the model in a stack that splits it "
            "(Megatron-LM, torchtitan), or expect the memory and speed of a data-parallel run"
        )
    _context_warning(spec)
    if spec.training and spec.plan.spot and "skeleton" in spec.path.artefacts:
        relaunch = " (SkyPilot managed jobs, sky jobs launch sky.yaml, recover on their own)" if spec.produces("skypilot") else ""
        w.append(
            "Spot capacity: train.py checkpoints to --output-dir (./checkpoints on the VM's own disk, deleted with a "
            "preempted VM), so give it persistent storage (a bucket mounted with gcsfuse or Mountpoint for S3, a persistent "
            f"disk) and relaunch after a preemption{relaunch}; the estimate counts no time lost to preemptions"
        )
    creates = any(c.strip().startswith(m + " ") for c in commands(spec.path) for m in qr_create)
    if creates and spec.profile.task == "inference" and spec.replicas > 1:
        w.append(
            f"the configuration is {spec.replicas} serving replicas, a TPU slice each: setup.sh provisions one (a queued "
            "resource of several nodes would join them into one Multislice job); run it once per replica with its own "
            f"NAME (NAME={fmt.safe_name(spec.profile.name)}-2 ./setup.sh ...) and balance the requests over them"
        )
    if any("{jetstream_model}" in c for c in commands(spec.path)) and spec.values.get("jetstream_model", "").startswith("${"):
        w.append(
            f"JetStream's conversion script is known to take Llama 2 and Gemma checkpoints (rules/jetstream-models.yaml); "
            f"{spec.profile.model.hf_id or 'this model'} is not one of them: setup.sh asks for MAXTEXT_MODEL, MAXTEXT_SIZE "
            "and MAXTEXT_TOKENIZER (MaxText's names for it), or serve it with vLLM TPU (setup path gke-vllm-tpu)"
        )
    fam = family(spec.device)
    if fam.accelerator and not fam.sliced and spec.nodes > 1 and spec.est is not None and not (spec.training and _reaches_all(spec)):
        w.append(
            f"the configuration spans {spec.nodes} GPU VMs ({shape(spec)}): setup.sh creates one VM of "
            "that shape" + (f"; sky.yaml launches all {spec.nodes} (num_nodes) and starts torchrun on each"
                            if spec.produces("skypilot") else "")
            if not spec.serving
            else f"the configuration spans {spec.nodes} GPU nodes per replica: each replica is one LeaderWorkerSet "
            "group of that many pods (tensor-parallel inside a node, pipeline-parallel across nodes)"
        )
    if spec.serving and fam.sliced and spec.nodes > 1:
        w.append(
            "vLLM TPU is verified on single-host slices only; this replica needs a multi-host slice, laid out as a "
            "LeaderWorkerSet (one pod per host) that is untested with vLLM TPU: check the tpu-inference release "
            "matrix, or serve a model that fits one host"
        )
    if spec.acc is not None:
        used = {m for c in commands(spec.path) for m in PLACEHOLDER.findall(c)} | (
            {"gke_accelerator"} if spec.serving and spec.plan.cloud == spec.acc.deploy.cloud else set()
        )
        missing = [
            k
            for k in ("machine_type", "gke_accelerator", "runtime_version" if fam.setup.runtime_version else "")
            if k in used and not spec.values.get(k)
        ]
        if missing:
            w.append(f"the catalog has no {', '.join(missing)} for {spec.acc.id}: fill them in setup.sh by hand")
    if spec.acc is not None and spec.profile.software.framework in spec.acc.deploy.unsupported_frameworks:
        w.append(
            f"{spec.acc.name} does not support {spec.profile.software.framework} (catalog: {spec.acc.id}); "
            f"the files install it as for other {fam.name} generations, which will fail there: port the code "
            "(JAX or PyTorch) or choose another accelerator"
        )
    hf_id = spec.profile.model.hf_id
    if spec.plan.server and hf_id is None:
        where = [*(["the Kubernetes manifests (k8s/)"] if spec.serving else []),
                 *(["MODEL_ID in sky.yaml"] if spec.produces("skypilot") and spec.acc is not None else [])]
        w.append("model.hf_id is not set: set the model" + (f" in {' and '.join(where)}" if where else " you serve"))
    if spec.training and spec.produces("skeleton") and spec.stack in ("torch-xla", "cuda") and train_model_id(spec) is None:
        w.append(
            "train.py trains a small stand-in model until you put yours in build_model()"
            + (f" (its Hugging Face loader expects a causal LM; {hf_id} is a {spec.profile.domain} model)" if hf_id else "")
        )
    est = spec.est
    if est is not None and est.price_cloud and est.price_cloud != spec.plan.cloud and fam.accelerator:
        w.append(
            f"the estimate prices {est.accelerator} on {est.price_cloud}; setup.sh provisions it on "
            f"{clouds.cloud(spec.plan.cloud).name} (setup path {spec.path.id} runs there), where the price may differ"
            + (" (sky.yaml tries every allowed cloud)" if spec.produces("skypilot") else "")
        )



def remote_row(cmds: list[str]) -> dict[str, Any] | None:
    """rules/provisioning.yaml ``remote``: how setup.sh reaches the machine the first of ``cmds`` that launches one
    started (None: none does; the machine is the team's to reach)."""
    table: dict[str, dict[str, Any]] = bundled_data("provisioning.yaml")["remote"]
    return next((row for c in cmds for head, row in table.items() if c.strip().startswith(head + " ")), None)


def _reaches_all(spec: Spec) -> bool:
    """Whether setup.sh launches every machine of a training over several and trains on all of them: the path's launch
    command has a way to reach them all (rules/provisioning.yaml ``remote``: ``hosts`` or ``several``)."""
    row = remote_row(commands(spec.path))
    if row is not None and ("hosts" in row or "several" in row):
        return True
    # a Compute Engine VM the path creates by name: setup.sh creates one per host and reaches each (shell.gce_vms); a
    # Vertex AI custom job: a worker pool of the others beside the primary, whose container meets at it (skeleton.entrypoint)
    return any(c.strip().startswith(("gcloud compute instances create {name} ", "cat > job.yaml <<"))
               for c in commands(spec.path))


def shape(spec: Spec) -> str:
    """The configuration's shape in the setup cloud's names (the estimate's may be another cloud's)."""
    est, plan = spec.est, spec.plan
    assert est is not None
    if family(spec.device).sliced or spec.acc is None:
        return est.shape
    name = plan.machine_type if plan.machine_type and plan.machine_type != "MACHINE_TYPE" else ""
    if not name:
        return spec.acc.generic_shape_name(est.count) + (" (owned)" if est.owned_chips is not None else "")
    return f"{plan.hosts} x {name}" if plan.hosts > 1 else name


def verdict_line(spec: Spec) -> str:
    est = spec.est
    if est is None:
        return f"{family(spec.device).name}: no accelerator"
    reps = f", {est.replicas} replicas" if est.mode == "inference" and (est.replicas or 1) > 1 else ""
    return f"{family(spec.device).name}, {est.accelerator} x {est.count} ({shape(spec)}){reps}"


def one_line(text: str) -> str:
    """Input-derived text for a comment or a docstring line: one line, no control characters
    (NUL, ESC, BEL, bidirectional overrides), whitespace runs collapsed."""
    return " ".join(fmt.one_line(text).split())


def train_model_id(spec: Spec) -> str | None:
    """The Hugging Face model train.py loads: a causal LM only (an LLM profile's model.hf_id)."""
    return spec.profile.model.hf_id if spec.profile.domain == "llm" else None


# --------------------------------------------------------------------------- YAML output


class _Dumper(yaml.SafeDumper):
    """Block style, indented lists, literal blocks for multi-line strings."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump(data: Any, header: list[str]) -> str:
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000, allow_unicode=True)
    return "".join(f"# {h}\n".replace("# \n", "#\n") for h in header) + text


def yaml_header(spec: Spec, what: str) -> list[str]:
    return [
        f'{what}, generated by `advisor scaffold` for "{one_line(spec.profile.name)}"',
        f"(setup path {spec.path.id}; catalog as of {spec.rec.catalog_as_of}). Configuration: {verdict_line(spec)}.",
        *statement(spec.plan),
    ]

