"""Authoring commands: ``advisor init`` and ``advisor schema`` (``advisor rules`` is in
``commands/rules.py``).

They make hand-written profiles and home-grown rules pleasant and safe: a
commented starter profile that validates, JSON Schemas for editors, and a test
runner for every rule's own examples (built-in rules or a user's directory).
Heavy modules (pydantic models, the knowledge base, rich) are imported inside
the commands, so registering them costs ``advisor recommend`` nothing.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

if TYPE_CHECKING:
    pass

# The choices offered by `advisor init`; a test keeps them equal to advisor.models.
TaskChoice = Literal["training", "fine-tuning", "inference"]
DomainChoice = Literal[
    "llm", "nlp", "vision", "diffusion", "speech", "recommendation", "scientific", "tabular", "other"
]
FrameworkChoice = Literal["pytorch", "jax", "tensorflow", "keras", "other"]
TASKS: tuple[str, ...] = ("training", "fine-tuning", "inference")
DOMAINS: tuple[str, ...] = (
    "llm", "nlp", "vision", "diffusion", "speech", "recommendation", "scientific", "tabular", "other",
)
FRAMEWORKS: tuple[str, ...] = ("pytorch", "jax", "tensorflow", "keras", "other")
Format = Literal["text", "json"]
SchemaKindChoice = Literal["profile", "rules", "catalog"]

SCHEMA_URL = "https://raw.githubusercontent.com/advisor-project/advisor/main/schemas/profile.schema.json"
REFERENCE_URL = "https://github.com/advisor-project/advisor/blob/main/docs/reference/profile-fields.md"
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}
_WIDTH = 88


def _quiet() -> bool:
    from advisor.commands.session import _STATE

    return bool(_STATE["quiet"])


def _usage(message: str) -> Exception:
    from advisor.errors import UsageError

    return UsageError(message)


# --------------------------------------------------------------------------- advisor init


@dataclass(frozen=True)
class Answers:
    """What a starter profile is made from: the init questions and their answers."""

    name: str
    task: str
    domain: str
    params_b: float
    framework: str
    clouds: tuple[str, ...]
    qps: float | None = None
    tokens_b: float | None = None


def default_tokens_b(task: str, params_b: float) -> float:
    """Training: about 20 tokens per parameter (compute-optimal); fine-tuning: 1 B tokens."""
    if task == "training":
        return min(round(20 * params_b, 3), 1_000_000.0)
    return 1.0


def cloud_ids() -> tuple[str, ...]:
    """The clouds a profile may name: the registry's (rules/clouds.yaml, through the profile contract)."""
    import typing

    from advisor.models import Cloud

    return typing.get_args(Cloud)


def parse_clouds(text: str) -> tuple[str, ...]:
    """``gcp, aws`` -> ("gcp", "aws"); an unknown cloud is a usage error with a hint."""
    from advisor.validation import did_you_mean

    known = cloud_ids()
    items = [c.strip().lower() for c in re.split(r"[,\s]+", text) if c.strip()]
    if not items:
        raise typer.BadParameter(f"name at least one of {', '.join(known)}")
    for item in items:
        if item not in known:
            raise typer.BadParameter(
                f"{item!r} is not one of {', '.join(known)}{did_you_mean(item, known)}"
            )
    return tuple(dict.fromkeys(items))


def _yaml_str(text: str) -> str:
    if _PLAIN.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


class _Writer:
    """Builds the commented YAML: a comment block above each field, then the field."""

    def __init__(self) -> None:
        from advisor import docgen

        self.docgen = docgen
        self.schema = docgen.json_schema("profile")
        self.rows = {row.path: row for row in docgen.iter_fields(self.schema)}
        self.lines: list[str] = []

    def comment(self, text: str, depth: int = 0) -> None:
        pad = "  " * depth
        self.lines.extend(
            textwrap.wrap(
                text, _WIDTH, initial_indent=pad + "# ", subsequent_indent=pad + "# ",
                break_on_hyphens=False, break_long_words=False,
            )
        )

    def _doc(self, path: str) -> str:
        row = self.rows[path]
        parts = [self.docgen.FIELD_DOCS.get(path, "")]
        if row.required:
            parts.append("Required.")
        node = row.resolved
        allowed = self.docgen.allowed_text(row, self.schema, markdown=False)
        if "enum" in node:
            parts.append(f"One of: {allowed}.")
        elif node.get("type") == "array" and allowed:
            parts.append(f"A list, {allowed}.")
        elif node.get("type") in ("number", "integer") and allowed:
            parts.append(f"Range {allowed}.")
        return " ".join(p for p in parts if p)

    def section(self, name: str) -> None:
        self.lines.append("")
        self.comment(self.docgen.FIELD_DOCS.get(name, ""))
        self.lines.append(f"{name}:")

    def field(self, path: str, value: Any = None, *, example: str | None = None) -> None:
        depth = path.count(".")
        key = path.rsplit(".", 1)[-1]
        self.comment(self._doc(path), depth)
        pad = "  " * depth
        if example is not None:
            self.lines.append(f"{pad}# {key}: {example}")
        else:
            text = _yaml_str(value) if isinstance(value, str) else self.docgen.flow(value)
            self.lines.append(f"{pad}{key}: {text}")


def starter_profile(a: Answers, label: str = "workload.yaml") -> str:
    """A fully commented profile from the answers; every field shows its value or default."""
    w = _Writer()
    training = a.task in ("training", "fine-tuning")
    _starter_header(w, label if label != "-" else "workload.yaml")
    w.field("name", a.name)
    w.field("task", a.task)
    w.field("domain", a.domain)
    _starter_model(w, a)
    if training:
        _starter_training(w, a)
    else:
        _starter_inference(w, a)
    _starter_setting(w, a, serving_stack="vllm" if a.domain in ("llm", "nlp") and not training else "none")
    _starter_proposal(w)
    return "\n".join(w.lines) + "\n"


def _starter_header(w: _Writer, target: str) -> None:
    """The schema line and the comments on how to check the profile and which fields are required."""
    w.lines.append(f"# yaml-language-server: $schema={SCHEMA_URL}")
    w.comment("advisor workload profile, written by `advisor init`.")
    w.comment(f"Check it: advisor validate {target}")
    w.comment(f"Decide:   advisor recommend {target}")
    w.comment(
        "Required: name, task, model.params_b and the training: or inference: block the task "
        "needs. Every other field shows its default and may be deleted; commented-out lines "
        "are optional fields with an example value. All fields, types and ranges:"
    )
    w.comment(REFERENCE_URL)
    w.lines.append("")


def _starter_model(w: _Writer, a: Answers) -> None:
    w.section("model")
    w.field("model.params_b", a.params_b)
    w.field("model.active_params_b", example=w.docgen.number(max(round(a.params_b / 4, 3), 0.001)))
    w.field("model.architecture", {"diffusion": "diffusion", "tabular": "tree"}.get(a.domain, "transformer"))
    w.field("model.precision", "bf16")
    w.field("model.layers", example="32")
    w.field("model.hidden_size", example="4096")
    w.field("model.kv_heads", example="8")
    w.field("model.context_tokens", example="8192")
    w.field("model.hf_id", example="meta-llama/Llama-3.1-8B-Instruct")
    w.field("model.traits", [])


def _starter_training(w: _Writer, a: Answers) -> None:
    tokens = a.tokens_b if a.tokens_b is not None else default_tokens_b(a.task, a.params_b)
    w.section("training")
    w.field("training.tokens_b", tokens)
    w.field("training.seq_len", 2048)
    w.field("training.method", "lora" if a.task == "fine-tuning" else "full")
    w.field("training.deadline_hours", example="72")
    w.field("training.global_batch", example="512")
    w.lines.append("")
    w.comment(
        "For task: inference, replace the training: block with an inference: block (peak_qps, input_tokens, output_tokens, "
        "latency_p99_ms)."
    )


def _starter_inference(w: _Writer, a: Answers) -> None:
    w.section("inference")
    w.field("inference.mode", "online")
    w.field("inference.peak_qps", a.qps if a.qps is not None else 10)
    w.field("inference.input_tokens", 512)
    w.field("inference.output_tokens", 256)
    w.field("inference.latency_p99_ms", example="2000")
    w.field("inference.hours_per_day", 24)
    w.field("inference.steps", example="30")
    w.lines.append("")
    w.comment(
        "For task: training or fine-tuning, replace the inference: block with a training: block (tokens_b, seq_len, method, "
        "deadline_hours)."
    )


def _starter_setting(w: _Writer, a: Answers, *, serving_stack: str) -> None:
    """The software, deployment, team and goal sections."""
    w.section("software")
    w.field("software.framework", a.framework)
    w.field("software.serving_stack", serving_stack)
    w.field("software.custom_cuda_kernels", False)
    w.field("software.dynamic_shapes", False)
    w.field("software.fp64", False)
    w.field("software.cuda_libraries", [])

    w.section("deployment")
    w.field("deployment.clouds", list(a.clouds))
    w.field("deployment.edge", False)
    w.field("deployment.region", example="us-central1")
    w.field("deployment.pricing", "on-demand")

    w.section("team")
    w.field("team.tpu_experience", "none")
    w.field("team.gpu_experience", "some")

    w.section("goal")
    w.field("goal.optimize", "balanced")
    w.field("goal.budget_usd", example="20000")


def _starter_proposal(w: _Writer) -> None:
    """The commented-out ``proposal:`` block that gates a pull request."""
    w.lines.append("")
    w.comment(w.docgen.FIELD_DOCS["proposal"] + " Uncomment to gate a pull request with `advisor check`.")
    w.lines.append("# proposal:")
    for path, example in (("proposal.accelerator", "tpu-v6e"), ("proposal.count", "8"), ("proposal.hours", "720")):
        w.lines.append(f"#   {path.split('.')[1]}: {example}".ljust(28) + f"# {w.docgen.FIELD_DOCS[path]}")


def _check_starter(text: str, label: str) -> None:
    """The starter must validate; a bad flag value becomes a usage error naming the field."""
    from advisor.errors import InputError
    from advisor.models import Profile
    from advisor.validation import validate_document
    from advisor.yamlsrc import load_documents

    try:
        (doc,) = load_documents(text, label, go_bools=False)
        validate_document(doc, Profile, what="a workload profile")
    except InputError as exc:
        messages = "; ".join(p.message for p in exc.problems)
        raise _usage(f"the answers do not make a valid profile: {messages}") from None


def _ask(path: str, err: bool) -> Answers:
    """The init questions on a terminal, each with a default."""

    def positive(limit: float) -> Any:
        def proc(value: Any) -> float:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise typer.BadParameter(f"{value!r} is not a number") from None
            if not 0 < number <= limit:
                raise typer.BadParameter(f"{value!r} is outside (0, {limit:g}]")
            return number

        return proc

    name = typer.prompt("Name of the workload", default=_default_name(path), err=err)
    task = typer.prompt("Task", default="inference", type=TaskChoice, err=err)
    domain = typer.prompt("Domain", default="llm", type=DomainChoice, err=err)
    params_b = typer.prompt("Model size, billions of parameters", default="8", value_proc=positive(100_000), err=err)
    framework = typer.prompt("Framework", default="pytorch", type=FrameworkChoice, err=err)
    clouds = typer.prompt(
        f"Clouds you may use ({', '.join(cloud_ids())}; comma-separated)", default="gcp", value_proc=parse_clouds, err=err
    )
    qps = tokens_b = None
    if task == "inference":
        qps = typer.prompt("Peak requests per second", default="10", value_proc=positive(10_000_000), err=err)
    else:
        tokens_b = typer.prompt(
            "Tokens over the whole run, billions",
            default=_number(default_tokens_b(task, float(params_b))),
            value_proc=positive(1_000_000),
            err=err,
        )
    return Answers(str(name), str(task), str(domain), float(params_b), str(framework), tuple(clouds), qps, tokens_b)


def _default_name(path: str) -> str:
    stem = Path(path).stem if path != "-" else ""
    return stem if stem not in ("", "workload") else "my-workload"


def _number(value: float) -> str:
    from advisor.docgen import number

    return number(value)


def init_cmd(
    path: Annotated[str, typer.Argument(help="File to write ('-' prints to stdout).")] = "workload.yaml",
    task: Annotated[TaskChoice | None, typer.Option("--task", "-t", help="What the accelerators will do.", show_default=False)] = None,
    params_b: Annotated[
        float | None, typer.Option("--params-b", "-p", help="Model size, billions of parameters [default: 8].", show_default=False)
    ] = None,
    framework: Annotated[
        FrameworkChoice | None, typer.Option("--framework", help="Model framework [default: pytorch].", show_default=False)
    ] = None,
    clouds: Annotated[
        str | None,
        typer.Option("--clouds", help="Clouds you may use, comma-separated: gcp,aws,azure,oci,on-prem [default: gcp].", show_default=False),
    ] = None,
    qps: Annotated[
        float | None, typer.Option("--qps", help="Inference: peak requests per second [default: 10].", show_default=False)
    ] = None,
    tokens_b: Annotated[
        float | None,
        typer.Option(
            "--tokens-b",
            help="Training: tokens over the whole run, billions [default: 20 per parameter; fine-tuning 1].",
            show_default=False,
        ),
    ] = None,
    domain: Annotated[DomainChoice | None, typer.Option("--domain", "-d", help="Kind of model [default: llm].", show_default=False)] = None,
    name: Annotated[str | None, typer.Option("--name", help="Workload name [default: from the file name].", show_default=False)] = None,
    no_input: Annotated[bool, typer.Option("--no-input", help="Ask nothing, even on a terminal: flags and defaults only.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter profile that validates (asks a few questions on a terminal)."""
    target = Path(path)
    if path != "-":
        if target.is_dir():
            raise _usage(f"{path}: is a directory; name the profile file to write, e.g. {target / 'workload.yaml'}")
        if (target.exists() or target.is_symlink()) and not force:
            raise _usage(f"{path}: already exists; use --force to overwrite it, or name another file")
    given: dict[str, Any] = {
        "task": task, "params_b": params_b, "framework": framework, "qps": qps, "tokens_b": tokens_b,
        "domain": domain, "name": name, "clouds": None,
    }
    if clouds is not None:
        try:
            given["clouds"] = parse_clouds(clouds)
        except typer.BadParameter as exc:
            raise _usage(f"--clouds: {exc.message}") from None
    if qps is not None and task is not None and task != "inference":
        raise _usage(f"--qps applies to task inference, not {task}; use --tokens-b")
    if tokens_b is not None and task == "inference":
        raise _usage("--tokens-b applies to training and fine-tuning, not inference; use --qps")
    interactive = not no_input and all(v is None for v in given.values()) and sys.stdin.isatty()
    if interactive:
        answers = _ask(path, err=path == "-")
    else:
        resolved_task = task or ("training" if tokens_b is not None else "inference")
        answers = Answers(
            name=name or _default_name(path),
            task=resolved_task,
            domain=domain or "llm",
            params_b=params_b if params_b is not None else 8.0,
            framework=framework or "pytorch",
            clouds=given["clouds"] or ("gcp",),
            qps=qps if resolved_task == "inference" else None,
            tokens_b=tokens_b,
        )
    text = starter_profile(answers, path)
    _check_starter(text, path if path != "-" else "<stdout>")
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from advisor.api import refuse_links, write_output

    refuse_links(target)
    write_output(target, text)
    if not _quiet():
        size_text = _number(answers.params_b)
        typer.echo(f"wrote {path} ({answers.task}, {answers.domain}, {size_text} B parameters)")
        typer.echo(f"next: advisor validate {path} && advisor recommend {path}")


# --------------------------------------------------------------------------- advisor schema


def schema_cmd(
    kind: Annotated[SchemaKindChoice, typer.Option("--kind", "-k", help="Which file format.")] = "profile",
) -> None:
    """JSON Schema of a workload profile (or a rule file, or the catalog), for editors and CI."""
    from advisor.docgen import schema_text

    sys.stdout.write(schema_text(kind))
    sys.stdout.flush()
