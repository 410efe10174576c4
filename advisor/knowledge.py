"""The knowledge base: heuristics, setup paths and the not-encoded seed claims.

All of it is YAML under ``rules/`` (shipped in the wheel as ``advisor/rules``),
validated on load with file/line/column errors. ``--rules DIR`` adds user
rules and setup paths with exactly the same validation.
"""

# No `from __future__ import annotations` here: the models' annotations are evaluated once, at
# definition, instead of pydantic evaluating each as a string when the class is created (start-up).

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError

from advisor.conditions import Condition, ConditionParser
from advisor.errors import InputError, Problem
from advisor.models import Cloud, Device, Framework, Strict
from advisor.validation import builtin_rules_dir as builtin_rules_dir
from advisor.validation import problems_from
from advisor.yamlsrc import Document, load_file

RULE_ID = r"^[a-z0-9]+(-[a-z0-9]+)*$"
SOURCE = r"^(seed:S-[AB][0-9]+(\.[0-9]+)?|https://\S+)$"
Category = Literal["workload-fit", "ecosystem", "constraint", "cost", "team", "platform"]
PLACEHOLDERS = frozenset(
    {
        "project", "zone", "region", "name", "cluster", "accelerator", "count",
        "accelerator_type", "topology", "runtime_version", "machine_type",
        "gke_accelerator", "chips_per_host", "hosts", "model", "tp", "replicas",
        "max_model_len", "pp", "min_nodes", "max_nodes", "workload", "slices", "seq_len",
        "global_batch", "steps", "layers", "emb_dim", "vocab", "heads", "kv_heads", "head_dim", "mlp_dim", "moe_mlp_dim", "maxtext_mlp_dim",
        "maxtext_model",
        "vertex_accelerator",
        "max_seqs", "server_seqs", "max_input_len", "per_device_batch", "num_experts", "experts_per_token",
        "weight_dtype", "disk_gb", "checkpoint_every", "mlx_quant", "gguf_quant", "vllm_dp_items", "vllm_dp_args", "engine_seqs",
        "vllm_budget_items", "vllm_budget_args", "sglang_budget_args", "sglang_dp_args", "sglang_tp", "per_chip_batch", "jetstream_model",
        "jetstream_size", "jetstream_tokenizer", "az_count_args",
        "vllm_precision_items", "vllm_precision_args", "vllm_seqs_items", "az_vm_suffix", "spmd_batch", "grad_accum", "run_timeout",
        "gpu_smi",
        "vendor", "gpu_resource", "gpu_resource_column", "device_plugin", "train_pip",
    }
)
# The one placeholder syntax of setup-path text: ``{name}``.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# What ``advisor scaffold`` can generate for a setup path (advisor/scaffold/__init__.py GENERATORS).
Artefact = Literal["shell", "kubernetes", "skypilot", "skeleton", "dockerfile", "readme"]
DEFAULT_ARTEFACTS: tuple[str, ...] = ("shell", "skeleton", "skypilot", "readme")




def _check_source(value: str) -> str:
    if not re.match(SOURCE, value):
        raise ValueError(f"{value!r} is not a seed claim (seed:S-A2.1) or an https:// URL")
    return value


def _listify(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Source = Annotated[str, Field(max_length=500), AfterValidator(_check_source)]
Sources = Annotated[list[Source], BeforeValidator(_listify), Field(min_length=1, max_length=20)]


class Effect(Strict):
    device: Device | None = None
    points: Annotated[float, Field(ge=-100, le=100)] | None = None
    exclude: Annotated[list[Device], Field(min_length=1, max_length=4)] | None = None

    def model_post_init(self, _ctx: Any) -> None:
        scored = self.device is not None or self.points is not None
        if scored and self.exclude is not None:
            raise ValueError("an effect either scores (device + points) or excludes, not both")
        if not scored and self.exclude is None:
            raise ValueError("an effect needs 'device' and 'points', or 'exclude'")
        if scored and (self.device is None or self.points is None):
            raise ValueError("a scoring effect needs both 'device' and 'points'")


class Examples(Strict):
    fires: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=50)]
    not_fires: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=50)]


class RuleSpec(Strict):
    id: Annotated[str, Field(pattern=RULE_ID, max_length=80)]
    title: Annotated[str, Field(min_length=1, max_length=200)]
    category: Category = "workload-fit"
    when: Any
    effect: Effect
    reason: Annotated[str, Field(min_length=1, max_length=2000)]
    fix: Annotated[str, Field(max_length=2000)] | None = None
    source: Sources
    examples: Examples
    aliases: list[Annotated[str, Field(pattern=RULE_ID)]] = Field(default_factory=list)


class Step(Strict):
    title: Annotated[str, Field(min_length=1, max_length=300)]
    commands: list[Annotated[str, Field(max_length=4000)]] = Field(default_factory=list, max_length=40)
    note: Annotated[str, Field(max_length=2000)] | None = None
    # Only for profiles of this kind (fine-tuning counts as training); omit = every profile.
    task: Literal["training", "inference"] | None = None
    # Only where the configuration runs on one of these clouds (its priced cloud, on-prem for owned
    # chips); omit = every cloud the path allows.
    clouds: list[Cloud] | None = None
    # Only for profiles whose software.framework is one of these; omit = every framework.
    frameworks: list[Framework] | None = None
    # Only for profiles that meet this condition (the rules' condition language: profile fields and facts.*);
    # omit = every profile. What serves the model is one: vLLM's command for a language model, Triton's for
    # a model no LLM server runs (facts.llm_server).
    when: Any = None
    # The LLM server(s) this step starts (ids of rules/serving-stacks.yaml): where the configuration's server is known
    # (the scaffold's plan and recommend's setup, which fall back to another server where the profile's cannot serve
    # it: SGLang from one host only on GPUs), that alone decides whether the step applies; elsewhere ``when`` does.
    server: Annotated[list[Annotated[str, Field(max_length=40)]], BeforeValidator(_listify), Field(max_length=10)] | None = None
    # The reference for the command shapes of this step (official CLI docs).
    source: Annotated[list[Source], BeforeValidator(_listify), Field(max_length=10)] | None = None
    # Where the commands run: ``instance`` = on the machine an earlier step launches or reserves, not on the
    # workstation that runs setup.sh (the scaffold runs such steps there: rules/provisioning.yaml ``remote``);
    # omit = where setup.sh runs.
    host: Literal["instance"] | None = None
    # The commands run until stopped (a server in the foreground): ./setup.sh without arguments runs no step after
    # this one (or after the step that runs it on the launched machine), since none would start while it serves.
    until_stopped: bool = False

    def applies(self, task: str, cloud: str, framework: str = "") -> bool:
        """Whether this step is for a profile of ``task`` and ``framework`` whose configuration runs on ``cloud``."""
        kind = "inference" if task == "inference" else "training"
        return (
            self.task in (None, kind)
            and (self.clouds is None or cloud in self.clouds)
            and (self.frameworks is None or not framework or framework in self.frameworks)
        )


class SetupSpec(Strict):
    id: Annotated[str, Field(pattern=RULE_ID, max_length=80)]
    title: Annotated[str, Field(min_length=1, max_length=200)]
    device: Device
    priority: Annotated[int, Field(ge=0, le=1000)] = 0
    clouds: list[Cloud] | None = None  # where its commands run; None = anywhere
    when: Any = None
    source: Sources
    summary: Annotated[str, Field(min_length=1, max_length=4000)]
    steps: Annotated[list[Step], Field(min_length=1, max_length=30)]
    # The files the path produces; absent = shell, skeleton, skypilot, readme (DEFAULT_ARTEFACTS).
    artefacts: Annotated[list[Artefact], Field(min_length=1, max_length=10)] | None = None


class NotEncoded(Strict):
    claim: Annotated[str, Field(pattern=r"^S-[AB][0-9]+(\.[0-9]+)?$")]
    reason: Annotated[str, Field(min_length=1, max_length=2000)]


@dataclass(frozen=True)
class Rule:
    """A loaded, checked heuristic."""

    id: str
    title: str
    category: str
    when: Condition
    device: str | None
    points: float
    exclude: tuple[str, ...]
    reason: str
    fix: str | None
    sources: tuple[str, ...]
    fires: tuple[dict[str, Any], ...]
    not_fires: tuple[dict[str, Any], ...]
    path: str
    line: int
    aliases: tuple[str, ...] = ()

    @property
    def effect_text(self) -> str:
        if self.exclude:
            return "excludes " + ", ".join(self.exclude)
        return f"{self.points:+g} {self.device}"


@dataclass(frozen=True)
class SetupPath:
    id: str
    title: str
    device: str
    priority: int
    when: Condition | None
    clouds: tuple[str, ...] | None
    sources: tuple[str, ...]
    summary: str
    steps: tuple[Step, ...]
    path: str
    line: int
    artefacts: tuple[str, ...] = DEFAULT_ARTEFACTS
    # each step's compiled ``when`` (None: every profile), in the order of ``steps``
    step_when: tuple[Condition | None, ...] = ()


@dataclass
class KnowledgeBase:
    rules: list[Rule] = field(default_factory=list)
    setup_paths: list[SetupPath] = field(default_factory=list)
    not_encoded: list[NotEncoded] = field(default_factory=list)
    rule_dirs: list[str] = field(default_factory=list)

    def rule(self, rule_id: str) -> Rule | None:
        for r in self.rules:
            if r.id == rule_id or rule_id in r.aliases:
                return r
        return None

    def cited_claims(self) -> set[str]:
        out: set[str] = set()
        for sources in [r.sources for r in self.rules] + [s.sources for s in self.setup_paths]:
            out.update(s.removeprefix("seed:") for s in sources if s.startswith("seed:"))
        out.update(n.claim for n in self.not_encoded)
        return out


def bundled_data(name: str) -> Any:
    """A data file shipped in ``rules/`` (families, clouds), read with the project's safe loader."""
    from advisor.validation import builtin_table
    from advisor.yamlsrc import load_file

    path = builtin_rules_dir() / name
    return builtin_table(path, "data", lambda: load_file(str(path))[0].data)


def _validate(doc: Document, cls: type[Strict]) -> tuple[Any, list[Problem]]:
    if not isinstance(doc.data, dict):
        return None, [doc.problem((), f"expected a mapping, got {type(doc.data).__name__}")]
    try:
        return cls.model_validate(doc.data), []
    except ValidationError as exc:
        return None, problems_from(exc, doc, cls)


def _parse_when(doc: Document, data: Any, problems: list[Problem], loc: tuple[str | int, ...] = ("when",)) -> Condition | None:
    parser = ConditionParser(doc)
    cond = parser.parse(data, loc)
    problems.extend(parser.problems)
    return cond


def _yaml_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def _single_doc(path: Path, problems: list[Problem]) -> Document | None:
    try:
        docs = load_file(str(path))
    except InputError as exc:
        problems.extend(exc.problems)
        return None
    docs = [d for d in docs if d.data is not None]
    if len(docs) != 1:
        problems.append(Problem(str(path), 1, 1, "expected exactly one YAML document"))
        return None
    return docs[0]


def _load_spec(path: Path, cls: type[Strict], kind: str, problems: list[Problem]) -> tuple[Document, Any] | None:
    """One document of ``path`` validated as ``cls``, whose ``id`` must equal the file stem."""
    doc = _single_doc(path, problems)
    if doc is None:
        return None
    spec, errs = _validate(doc, cls)
    problems.extend(errs)
    if spec is None:
        return None
    if spec.id != path.stem:
        problems.append(doc.problem(("id",), f"{kind} id {spec.id!r} must match the file name {path.stem!r}"))
    return doc, spec


def load_rule_file(path: Path, problems: list[Problem]) -> Rule | None:
    loaded = _load_spec(path, RuleSpec, "rule", problems)
    if loaded is None:
        return None
    doc, spec = loaded
    cond = _parse_when(doc, spec.when, problems)
    if cond is None:
        return None
    eff = spec.effect
    return Rule(
        id=spec.id,
        title=spec.title,
        category=spec.category,
        when=cond,
        device=eff.device,
        points=float(eff.points or 0.0),
        exclude=tuple(eff.exclude or ()),
        reason=" ".join(spec.reason.split()),
        fix=" ".join(spec.fix.split()) if spec.fix else None,
        sources=tuple(spec.source),
        fires=tuple(spec.examples.fires),
        not_fires=tuple(spec.examples.not_fires),
        path=str(path),
        line=doc.start[0],
        aliases=tuple(spec.aliases),
    )


def load_setup_file(path: Path, problems: list[Problem]) -> SetupPath | None:
    loaded = _load_spec(path, SetupSpec, "setup path", problems)
    if loaded is None:
        return None
    doc, spec = loaded
    for si, step in enumerate(spec.steps):
        for ci, command in enumerate(step.commands):
            for name in PLACEHOLDER.findall(command):
                if name not in PLACEHOLDERS:
                    problems.append(
                        doc.problem(
                            ("steps", si, "commands", ci),
                            f"unknown placeholder {{{name}}}; allowed: {', '.join(sorted(PLACEHOLDERS))}",
                        )
                    )
    cond = None
    if spec.when is not None:
        cond = _parse_when(doc, spec.when, problems)
        if cond is None:
            return None
    step_when: list[Condition | None] = []
    for si, step in enumerate(spec.steps):
        parsed = None if step.when is None else _parse_when(doc, step.when, problems, ("steps", si, "when"))
        if step.when is not None and parsed is None:
            return None
        step_when.append(parsed)
    return SetupPath(
        id=spec.id,
        title=spec.title,
        device=spec.device,
        priority=spec.priority,
        when=cond,
        clouds=tuple(spec.clouds) if spec.clouds is not None else None,
        sources=tuple(spec.source),
        summary=" ".join(spec.summary.split()),
        steps=tuple(spec.steps),
        path=str(path),
        line=doc.start[0],
        artefacts=tuple(dict.fromkeys(spec.artefacts)) if spec.artefacts else DEFAULT_ARTEFACTS,
        step_when=tuple(step_when),
    )


def _load_not_encoded(path: Path, problems: list[Problem]) -> list[NotEncoded]:
    if not path.is_file():
        return []
    doc = _single_doc(path, problems)
    if doc is None:
        return []
    if not isinstance(doc.data, list):
        problems.append(doc.problem((), "expected a list of {claim, reason}"))
        return []
    out = []
    for i, item in enumerate(doc.data):
        try:
            out.append(NotEncoded.model_validate(item))
        except ValidationError as exc:
            problems.extend(problems_from(exc, doc, NotEncoded, (i,)))
    return out


def load_rule_dir(directory: Path, kb: KnowledgeBase, problems: list[Problem], *, user: bool) -> None:
    """Load ``heuristics/`` and ``setup/`` of a rule directory (or its top-level YAML files)."""
    if not directory.is_dir():
        problems.append(Problem(str(directory), 1, 1, "rule directory does not exist"))
        return
    heuristics = directory / "heuristics"
    rule_files = _yaml_files(heuristics) if heuristics.is_dir() else []
    if user and not heuristics.is_dir():
        # A user directory may simply hold rule files.
        rule_files = [p for p in _yaml_files(directory) if p.name not in ("not-encoded.yaml",)]
    for path in rule_files:
        rule = load_rule_file(path, problems)
        if rule is not None:
            kb.rules.append(rule)
    for path in _yaml_files(directory / "setup"):
        sp = load_setup_file(path, problems)
        if sp is not None:
            kb.setup_paths.append(sp)
    kb.not_encoded.extend(_load_not_encoded(directory / "not-encoded.yaml", problems))
    kb.rule_dirs.append(str(directory))


def load_knowledge(extra_dirs: list[str] | None = None, *, builtin: bool = True) -> KnowledgeBase:
    """Built-in knowledge plus user rule directories; raises InputError with every problem."""
    kb = KnowledgeBase()
    problems: list[Problem] = []
    if builtin:
        load_rule_dir(builtin_rules_dir(), kb, problems, user=False)
    for d in extra_dirs or []:
        load_rule_dir(Path(os.path.expanduser(d)), kb, problems, user=True)
    seen: dict[str, Rule] = {}
    for rule in kb.rules:
        for name in (rule.id, *rule.aliases):
            if name in seen:
                first = seen[name]
                problems.append(
                    Problem(rule.path, rule.line, 1, f"duplicate rule id {name!r} (also in {first.path}:{first.line})")
                )
            seen[name] = rule
    ids: dict[str, SetupPath] = {}
    for sp in kb.setup_paths:
        if sp.id in ids:
            problems.append(Problem(sp.path, sp.line, 1, f"duplicate setup path id {sp.id!r} (also in {ids[sp.id].path})"))
        ids[sp.id] = sp
    if problems:
        raise InputError(problems)
    return kb
