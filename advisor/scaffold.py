"""From a recommendation to files a team can run: ``advisor scaffold``.

``scaffold(rec, ctx)`` turns the verdict's setup path (or one named with
``path_id``) into a dict of relative file name -> text, deterministic (no
timestamps, no version stamps); ``write_scaffold`` writes it atomically.

* ``setup.sh``: the path's steps as bash functions, with the project, region,
  zone and names as variables at the top (override them from the
  environment) and the verdict's hardware (accelerator type, runtime version,
  machine type, topology) filled in. ``./setup.sh`` runs the leading steps
  that only provision, install and launch; steps that are interactive
  (SSH sessions, port forwards, TensorBoard), that need a device at hand, or
  that delete resources run only when named (``./setup.sh STEP``).
* ``k8s/``: for GKE + vLLM serving paths, the Deployment (node selectors,
  TPU/GPU resources, tensor-parallel size = chips per replica, replicas from
  the estimate), the Service, and with more than one replica an HPA on vLLM's
  running-request count plus the PodMonitoring that exports it.
* ``train.py``: for training and fine-tuning, a runnable skeleton for the
  stack: PyTorch/XLA (TPU + PyTorch), JAX, TensorFlow, PyTorch + CUDA with
  Hugging Face (GPU), XGBoost (CPU); it logs to TensorBoard in ``./runs``.
* ``sky.yaml``: a SkyPilot task with the chosen accelerator first and the
  next-best feasible accelerators of the same family as ``ordered`` fallbacks.
* ``Dockerfile``: for paths that build a container (Vertex AI).
* ``README.md``: the steps, the estimated cost and time, the assumptions.

The commands come from the setup path's data (``rules/setup``); a few
documented rewrites make them run as one script: a quoted ``kubectl apply``
heredoc becomes ``kubectl apply -f k8s/``; a serving node pool that must hold
several replicas gets autoscaling bounds; ``queued-resources describe`` becomes
a wait until the slice is ACTIVE; an SSH port forward followed by
``tensorboard`` becomes one SSH command that runs TensorBoard remotely; copying
the (possibly still empty) ``data/`` folder of the bucket does not stop the
script; and a TPU VM path that never runs ``train.py`` gets a step that does.
"""

from __future__ import annotations

import functools
import math
import os
import re
import shlex
import shutil
import string
import tempfile
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from advisor.catalog import Accelerator
from advisor.conditions import evaluate
from advisor.context import Context
from advisor.errors import EnvironmentFault, UsageError, environment_errno
from advisor.estimator import Estimate
from advisor.facts import FieldReader
from advisor.fmt import hours as _hours
from advisor.fmt import money as _money
from advisor.knowledge import SetupPath
from advisor.models import Profile
from advisor.recommend import Recommendation, placeholders
from advisor.validation import did_you_mean

TEMPLATES = Path(__file__).resolve().parent / "templates" / "scaffold"

# Placeholders that become shell variables in setup.sh (overridable from the environment).
SHELL_VARS = {
    "project": "PROJECT_ID",
    "region": "REGION",
    "zone": "ZONE",
    "name": "NAME",
    "cluster": "CLUSTER",
    "model": "MODEL_ID",
}
_VAR_COMMENTS = {
    "PROJECT_ID": "your Google Cloud project id (required)",
    "REGION": "region of the bucket, cluster and image repository",
    "ZONE": "zone of the VM, TPU slice or node pool",
    "NAME": "prefix of every resource name",
    "CLUSTER": "GKE cluster name",
    "MODEL_ID": "Hugging Face model id",
    "HF_TOKEN": "a Hugging Face access token (gated models such as Llama need one)",
}
# Environment variables setup.sh may read without defining them.
_AMBIENT = {"HOME", "PATH", "USER", "PWD", "SHELL", "TMPDIR"}

SKY_CLOUDS = ("gcp", "aws", "azure", "oci")
MAX_FALLBACKS = 3
VLLM_PORT = 8000
HPA_METRIC = "prometheus.googleapis.com|vllm:num_requests_running|gauge"

_STACK_TEMPLATE = {
    "torch-xla": "train_torch_xla.py.tmpl",
    "jax": "train_jax.py.tmpl",
    "tensorflow": "train_tensorflow.py.tmpl",
    "cuda": "train_cuda.py.tmpl",
    "cpu": "train_cpu.py.tmpl",
}
_STACK_TITLE = {
    "torch-xla": "PyTorch/XLA (torch_xla devices, PJRT)",
    "jax": "JAX (jax.sharding, optax)",
    "tensorflow": "TensorFlow / Keras (tf.distribute)",
    "cuda": "PyTorch + CUDA with Hugging Face (torchrun, DDP)",
    "cpu": "XGBoost on CPU",
}


@dataclass
class _Spec:
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
    nodes: int = 1  # GPU VMs per replica (GPU) or hosts per slice (TPU)
    slices: int = 1  # TPU multislice
    global_batch: int = 0
    max_steps: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def replicas(self) -> int:
        return (self.est.replicas or 1) if self.est and self.est.mode == "inference" else 1


# --------------------------------------------------------------------------- entry points


def scaffold(rec: Recommendation, ctx: Context, path_id: str | None = None) -> dict[str, str]:
    """Relative file name -> content for the verdict's configuration (or the named setup path)."""
    spec = _spec(rec, ctx, path_id)
    files: dict[str, str] = {}
    if spec.training and spec.stack:
        files["train.py"] = _train_py(spec)
    if spec.serving:
        files.update(_k8s(spec))
    if spec.device in ("tpu", "gpu") and any("gcloud builds submit" in c for c in _commands(spec.path)):
        files["Dockerfile"] = _dockerfile(spec)
    steps = _steps(spec, files)
    files["setup.sh"] = _setup_sh(spec, steps)
    if spec.device in ("tpu", "gpu") and spec.est is not None and spec.acc is not None:
        sky, fallbacks = _sky_yaml(spec, ctx)
        files["sky.yaml"] = sky
    else:
        fallbacks = []
    files["README.md"] = _readme(spec, steps, files, fallbacks)
    return dict(sorted(files.items()))


def write_scaffold(files: Mapping[str, str], out_dir: str | os.PathLike[str], force: bool = False) -> list[Path]:
    """Write ``files`` under ``out_dir``; every file appears whole or not at all.

    Each file is written in full to a temporary directory inside ``out_dir``
    and then renamed into place, so a crash never leaves a half-written file.
    Existing files are refused (all of them named, nothing written) unless
    ``force``. Returns the written paths in order.
    """
    root = Path(out_dir)
    rels = [_check_rel(name) for name in files]
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a directory")
    clashes: list[str] = []
    for rel in rels:
        target = root / rel
        for parent in list(reversed(target.relative_to(root).parents))[1:]:
            if (root / parent).exists() and not (root / parent).is_dir():
                clashes.append(f"{root / parent} (a file where a directory is needed)")
        if target.is_dir():
            clashes.append(f"{target} (a directory)")
        elif (target.exists() or target.is_symlink()) and not force:
            clashes.append(str(target))
    if clashes:
        raise UsageError(
            "refusing to overwrite: " + ", ".join(dict.fromkeys(clashes)) + "; use --force to replace existing files"
        )
    written: list[Path] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".advisor-scaffold-", dir=root))
    except OSError as exc:
        if environment_errno(exc):
            raise EnvironmentFault.from_os_error(str(root), "create the output directory", exc) from None
        raise UsageError(f"{root}: cannot create the output directory ({exc.strerror or exc})") from None
    try:
        staged: list[tuple[Path, Path]] = []
        for i, (name, rel) in enumerate(zip(files, rels, strict=True)):
            src = tmp / f"{i}.part"
            with open(src, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(files[name])
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(src, 0o755 if name.endswith(".sh") else 0o644)
            staged.append((src, root / rel))
        for src, dst in staged:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
            written.append(dst)
    except OSError as exc:
        if environment_errno(exc):
            raise EnvironmentFault.from_os_error(str(root), "write the scaffold", exc) from None
        raise UsageError(f"{root}: cannot write the scaffold ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written


def _check_rel(name: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or any(part in ("", ".", "..") for part in rel.parts):
        raise UsageError(f"scaffold file name {name!r} must be a plain relative path")
    return rel


# --------------------------------------------------------------------------- resolving


def _commands(path: SetupPath) -> list[str]:
    return [c for s in path.steps for c in s.commands]


def _resolve_path(rec: Recommendation, ctx: Context, path_id: str | None) -> tuple[SetupPath, bool]:
    paths = {p.id: p for p in ctx.kb.setup_paths}
    if path_id is None:
        if rec.setup is None:
            raise UsageError(
                f"no setup path matches this {rec.device.upper()} verdict; name one with --path "
                f"({', '.join(sorted(paths))})"
            )
        return rec.setup.path, False
    if path_id not in paths:
        raise UsageError(
            f"unknown setup path {path_id!r}{did_you_mean(path_id, paths)} (known: {', '.join(sorted(paths))})"
        )
    return paths[path_id], True


def _stack(profile: Profile, device: str) -> str | None:
    fw = profile.software.framework
    if device == "cpu":
        return "cpu"
    if device not in ("tpu", "gpu"):
        return None
    if fw in ("jax", "keras"):
        return "jax"
    if fw == "tensorflow":
        return "tensorflow"
    return "torch-xla" if device == "tpu" else "cuda"


def _spec(rec: Recommendation, ctx: Context, path_id: str | None) -> _Spec:
    path, by_flag = _resolve_path(rec, ctx, path_id)
    profile = rec.profile
    device = path.device
    est: Estimate | None
    if device == rec.device:
        est = rec.estimate
    elif device in ("tpu", "gpu"):
        est = rec.decision.best_by_device.get(device)
    else:
        est = None
    if device in ("tpu", "gpu") and est is None:
        fam = device.upper()
        raise UsageError(
            f"setup path {path.id!r} needs a {fam} configuration, and no {fam} configuration in the catalog "
            f"is feasible for this workload (verdict: {rec.device.upper()}); see `advisor recommend`"
        )
    acc = ctx.catalog.accelerators.get(est.accelerator) if est else None
    values = placeholders(profile, acc, est)
    name = values["name"]
    applies = path.when is None or evaluate(path.when, FieldReader(profile))
    cmds = _commands(path)
    inference = profile.task == "inference"
    vllm = inference and (profile.software.serving_stack == "vllm" or profile.domain in ("llm", "nlp"))
    serving = (
        inference
        and any("container node-pools create" in c or "container clusters create" in c for c in cmds)
        and any("vllm" in c for c in cmds)
    )
    training = profile.task in ("training", "fine-tuning")
    spec = _Spec(
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
        stack=_stack(profile, device) if training else None,
    )
    if acc is not None and est is not None:
        if acc.device == "tpu":
            spec.nodes = int(values.get("hosts") or 1)
            if acc.slice_for(est.count) is None:
                biggest = max(sl.chips for sl in acc.shapes.slices or [])
                spec.slices = max(1, est.count // biggest)
        else:
            spec.nodes = max(1, math.ceil(est.count / (acc.shapes.gpus_per_node or 8)))
    if profile.training is not None and est is not None:
        t = profile.training
        spec.global_batch = t.global_batch or max(8, 4 * est.count)
        spec.max_steps = max(1, round(t.tokens_b * 1e9 / (t.seq_len * spec.global_batch)))
    elif profile.training is not None:
        spec.global_batch, spec.max_steps = 256, 100
    _collect_warnings(spec)
    return spec


def _collect_warnings(spec: _Spec) -> None:
    w = spec.warnings
    if spec.chosen_by_flag and spec.path.id != (spec.rec.setup.path.id if spec.rec.setup else None):
        w.append(
            f"setup path `{spec.path.id}` was chosen with --path"
            + ("" if spec.path_applies else "; its condition does not hold for this profile")
            + (f" (the verdict's path is `{spec.rec.setup.path.id}`)" if spec.rec.setup else "")
        )
    if spec.device != spec.rec.device:
        w.append(
            f"the verdict is {spec.rec.device.upper()}; these files use the best {spec.device.upper()} "
            "configuration instead, because the chosen setup path is for that family"
        )
    if spec.slices > 1 and spec.est is not None:
        w.append(
            f"the configuration is {spec.slices} TPU slices ({spec.est.shape}): setup.sh and sky.yaml "
            "provision one slice; multislice training needs XPK/GKE (setup path maxtext-tpu) or queued "
            "resources with --node-count"
        )
    if spec.device == "gpu" and spec.nodes > 1 and spec.est is not None:
        w.append(
            f"the configuration spans {spec.nodes} GPU VMs ({spec.est.shape}): setup.sh creates one VM of "
            f"that shape; sky.yaml launches all {spec.nodes} (num_nodes) and starts torchrun on each"
            if not spec.serving
            else f"the configuration spans {spec.nodes} GPU nodes per replica; a plain Deployment serves "
            "from one node, so multi-node serving needs LeaderWorkerSet (tensor-parallel inside a node, "
            "pipeline-parallel across nodes)"
        )
    if spec.serving and spec.device == "tpu" and spec.nodes > 1:
        w.append("vLLM TPU is verified on single-host slices only; this replica needs a multi-host slice")
    if spec.acc is not None:
        missing = [k for k in ("machine_type", "gke_accelerator" if spec.serving else "", "runtime_version" if spec.device == "tpu" else "") if k and not spec.values.get(k)]
        if missing:
            w.append(f"the catalog has no {', '.join(missing)} for {spec.acc.id}: fill them in setup.sh by hand")
    hf_id = spec.profile.model.hf_id
    if spec.vllm and hf_id is None:
        w.append("model.hf_id is not set: set the model in k8s/deployment.yaml and MODEL_ID in sky.yaml")
    if spec.training and spec.stack in ("torch-xla", "cuda") and _train_model_id(spec) is None:
        w.append(
            "train.py trains a small stand-in model until you put yours in build_model()"
            + (f" (its Hugging Face loader expects a causal LM; {hf_id} is a {spec.profile.domain} model)" if hf_id else "")
        )
    est = spec.est
    if est is not None and est.price_cloud and est.price_cloud != "gcp" and spec.device in ("tpu", "gpu"):
        w.append(
            f"the estimate prices {est.accelerator} on {est.price_cloud}; setup.sh provisions it on Google Cloud, "
            "where the price may differ (sky.yaml tries every allowed cloud)"
        )


# --------------------------------------------------------------------------- shell


_PH = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_SAFE_WORD = re.compile(r"[A-Za-z0-9_./:@%+=,-]*")


def _sh_word(value: str) -> str:
    return value if _SAFE_WORD.fullmatch(value) else shlex.quote(value)


def fill_command(cmd: str, literal: Mapping[str, str], shell: Mapping[str, str]) -> str:
    """Fill ``{placeholders}`` in a shell command, aware of its quoting.

    Placeholders named in ``shell`` become ``${VAR}`` where bash expands them
    (unquoted, in double quotes, in unquoted heredocs; inside single quotes the
    quote is closed around ``"${VAR}"``); the others get their literal value,
    quoted for the context they stand in. Unknown placeholders stay as they are.
    """
    out: list[str] = []
    state = ""  # "", "'" or '"'
    pending: list[tuple[str, bool]] = []
    i, n = 0, len(cmd)

    def sub(name: str, ctx: str) -> str:
        if name in shell and ctx != "heredoc-literal":
            var = "${" + shell[name] + "}"
            return f"'\"{var}\"'" if ctx == "'" else var
        value = literal[name]
        if ctx == "'":
            return value.replace("'", "'\"'\"'")
        if ctx == '"':
            return re.sub(r'([\\"$`])', r"\\\1", value)
        if ctx == "heredoc":
            return re.sub(r"([\\$`])", r"\\\1", value)
        if ctx == "heredoc-literal":
            return value
        return _sh_word(value)

    def body_sub(m: re.Match[str], ctx: str) -> str:
        known = m.group(1) in literal or m.group(1) in shell
        return sub(m.group(1), ctx) if known else m.group(0)

    while i < n:
        m = _PH.match(cmd, i)
        if m and (m.group(1) in literal or m.group(1) in shell):
            out.append(sub(m.group(1), state))
            i = m.end()
            continue
        c = cmd[i]
        if state == "'":
            if c == "'":
                state = ""
            out.append(c)
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            out.append(cmd[i : i + 2])
            i += 2
            continue
        if state == '"':
            if c == '"':
                state = ""
            out.append(c)
            i += 1
            continue
        if c in "'\"":
            state = c
        elif c == "<" and (h := _HEREDOC.match(cmd, i)):
            pending.append((h.group(2), bool(h.group(1))))
            out.append(h.group(0))
            i = h.end()
            continue
        elif c == "\n" and pending:
            out.append(c)
            i += 1
            for delim, quoted in pending:
                ctx = "heredoc-literal" if quoted else "heredoc"
                while i < n:
                    end = cmd.find("\n", i)
                    line = cmd[i:] if end < 0 else cmd[i : end + 1]
                    i += len(line)
                    if line.rstrip("\n").strip("\t") == delim:
                        out.append(line)
                        break
                    out.append(_PH.sub(functools.partial(body_sub, ctx=ctx), line))
            pending = []
            continue
        out.append(c)
        i += 1
    return "".join(out)


@dataclass
class _Step:
    key: str
    title: str
    commands: list[str]  # filled, ready for bash
    note: str | None
    kind: str  # auto | interactive | device | provision | cleanup
    needs: list[str]
    added: bool = False  # added by the scaffold, not in the setup path


_INTERACTIVE_SSH = re.compile(r"\b(?:compute|tpu-vm) ssh\b")


def _kind(title: str, raw: list[str], device: str, task: str = "") -> str:
    first = title.split()[0].lower() if title.split() else ""
    if first in ("delete", "clean", "tear", "remove", "destroy"):
        return "cleanup"
    if task == "inference" and first in ("train", "fine-tune", "finetune"):
        return "training"
    for c in raw:
        line = c.strip()
        if "port-forward" in line or line.startswith("tensorboard") or '--command="tensorboard' in line:
            return "interactive"
        if _INTERACTIVE_SSH.search(line) and "--command" not in line:
            return "interactive"
        if line.startswith("adb "):
            return "device"
        if device in ("cpu", "edge") and line.startswith("gcloud "):
            return "provision"
    return "auto"


def _rewrite(spec: _Spec, raw: list[str]) -> list[str]:
    """The documented rewrites that make a setup path's commands run as one script."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        cmd = raw[i]
        nxt = raw[i + 1] if i + 1 < len(raw) else None
        stripped = cmd.strip()
        if spec.serving and re.match(r"kubectl apply -f -\s*<<", stripped):
            out.append("kubectl apply -f k8s/")
        elif (
            spec.serving
            and stripped.startswith("gcloud container node-pools create")
            and spec.replicas > 1
            and "--enable-autoscaling" not in stripped
        ):
            hosts = max(1, spec.nodes)
            out.append(f"{cmd} --enable-autoscaling --min-nodes={hosts} --max-nodes={hosts * spec.replicas}")
        elif m := re.match(r"gcloud compute tpus queued-resources describe (.*)$", stripped):
            out.append(f"wait_active gcloud compute tpus queued-resources describe {m.group(1)}")
        elif (
            nxt is not None
            and _INTERACTIVE_SSH.search(stripped)
            and " -- -L " in stripped
            and "--command" not in stripped
            and nxt.strip().startswith("tensorboard ")
            and '"' not in nxt
        ):
            head, sep, tail = cmd.partition(" -- -L ")
            out.append(f'{head} --command="{nxt.strip()}"{sep}{tail}')
            i += 2
            continue
        elif re.search(r"gs://\{project\}-\{name\}/data\b", stripped) and " cp " in stripped and "||" not in stripped:
            out.append(
                f'{cmd} || echo "setup.sh: nothing to copy from gs://{{project}}-{{name}}/data yet '
                '(upload your data there); continuing" >&2'
            )
        else:
            out.append(cmd)
        i += 1
    return out


def _launch(spec: _Spec) -> str:
    return {"torch-xla": "PJRT_DEVICE=TPU python3 train.py"}.get(spec.stack or "", "python3 train.py")


def _steps(spec: _Spec, files: Mapping[str, str]) -> list[_Step]:
    shell = dict(SHELL_VARS)
    literal = {k: v for k, v in spec.values.items() if k not in shell}
    for k in shell:
        literal.setdefault(k, spec.values.get(k, ""))
    def prose(text: str) -> str:  # titles and notes name the configuration too
        return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: str(spec.values.get(m.group(1), m.group(0))), text)

    raw_steps: list[tuple[str, list[str], str | None, bool]] = [
        (prose(s.title), list(s.commands), prose(s.note) if s.note else None, False) for s in spec.path.steps
    ]
    cmds = _commands(spec.path)
    if (
        "train.py" in files
        and not any("train.py" in c for c in cmds)
        and any("tpus tpu-vm ssh" in c for c in cmds)
    ):
        extra = (
            "Run the generated train.py on every host",
            [
                "gcloud compute tpus tpu-vm scp train.py {name}: --project={project} --zone={zone} --worker=all",
                f'gcloud compute tpus tpu-vm ssh {{name}} --project={{project}} --zone={{zone}} --worker=all --command="{_launch(spec)}"',
            ],
            "The setup path's own steps do not run train.py; this one copies the skeleton to every host of the "
            "slice and starts it there.",
            True,
        )
        at = next((i for i, s in enumerate(raw_steps) if _kind(s[0], s[1], spec.device) == "cleanup"), len(raw_steps))
        raw_steps.insert(at, extra)
    steps: list[_Step] = []
    seen: set[str] = set()
    for title, raw, note, added in raw_steps:
        rewritten = _rewrite(spec, raw)
        kind = _kind(title, rewritten, spec.device, spec.profile.task)
        base = "train" if added else re.sub(r"[^a-z0-9]", "", title.split()[0].lower()) if title.split() else "step"
        key = base or "step"
        suffix = 2
        while key in seen or key.isdigit():
            key = f"{base}{suffix}"
            suffix += 1
        seen.add(key)
        filled = [fill_command(c, literal, shell) for c in rewritten]
        needs: list[str] = []
        for c in filled:
            for var in re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", c):
                if var in _AMBIENT or var in needs or (var in shell.values() and var != "PROJECT_ID"):
                    continue
                needs.append(var)
        steps.append(_Step(key, title, filled, note, kind, needs, added))
    return steps


def _auto(steps: list[_Step]) -> list[_Step]:
    """The leading steps that only provision, install and launch: what ``./setup.sh`` runs."""
    out = []
    for s in steps:
        if s.kind == "training":  # a serving path's optional training step
            continue
        if s.kind != "auto" or s.added:
            break
        out.append(s)
    return out


def _comment(text: str, indent: str = "") -> list[str]:
    lines = textwrap.wrap(" ".join(text.split()), 76, break_on_hyphens=False, break_long_words=False)
    return [f"{indent}# {line}".rstrip() for line in lines]


def _indent_command(cmd: str) -> str:
    lines = cmd.split("\n")
    return "\n".join(["  " + lines[0], *lines[1:]])


def _verdict_line(spec: _Spec) -> str:
    est = spec.est
    if est is None:
        return f"{spec.device.upper()}: no accelerator"
    reps = f", {est.replicas} replicas" if est.mode == "inference" and (est.replicas or 1) > 1 else ""
    return f"{spec.device.upper()}, {est.accelerator} x {est.count} ({est.shape}){reps}"


def _hardware_line(spec: _Spec) -> str | None:
    v = spec.values
    if spec.acc is None:
        return None
    parts = [f"{k} {v[key]}" for k, key in (
        ("accelerator type", "accelerator_type"),
        ("topology", "topology"),
        ("runtime version", "runtime_version"),
        ("machine type", "machine_type"),
        ("GKE accelerator", "gke_accelerator"),
    ) if v.get(key)]
    return ", ".join(parts) if parts else None


def _setup_sh(spec: _Spec, steps: list[_Step]) -> str:
    body = "\n".join(c for s in steps for c in s.commands)
    used = [var for var in SHELL_VARS.values() if "${" + var + "}" in body]
    if "CLUSTER" in used and "NAME" not in used:
        used.insert(used.index("CLUSTER"), "NAME")
    externals = sorted({v for s in steps for v in s.needs if v not in SHELL_VARS.values()})
    auto = _auto(steps)
    v = spec.values
    defaults = {
        "PROJECT_ID": "",
        "REGION": v["region"],
        "ZONE": v["zone"],
        "NAME": spec.name,
        "CLUSTER": "${NAME}-cluster",
        "MODEL_ID": v["model"],
    }
    L: list[str] = ["#!/usr/bin/env bash"]
    L.append(f"# {spec.path.title}")
    L.append(f'# Generated by `advisor scaffold` for "{_one_line(spec.profile.name)}" from setup path {spec.path.id}')
    L.append(f"# (catalog as of {spec.rec.catalog_as_of}). Configuration: {_verdict_line(spec)}.")
    hw = _hardware_line(spec)
    if hw:
        L.extend(_comment(f"Hardware: {hw}."))
    L.append("#")
    L.append("# Usage:")
    L.append("#   PROJECT_ID=my-project ./setup.sh    run the steps marked * in ./setup.sh --list, in order")
    L.append("#   ./setup.sh STEP...                  run the named steps (a number or a name)")
    L.append("#   ./setup.sh --list                   list the steps")
    L.append("# Steps are not idempotent: after a failure, fix it and rerun from that step by name.")
    for w in spec.warnings:
        L.extend(_comment(f"Note: {w}"))
    L.append("set -euo pipefail")
    L.append("")
    if used or externals:
        L.append("# ---- settings: override any of them from the environment ---------------------")
        for var in used:
            default = defaults[var]
            value = "${NAME}-cluster" if var == "CLUSTER" else _sh_word(default)
            line = f"{var}=${{{var}:-{value}}}"
            comment = _VAR_COMMENTS.get(var, "")
            if var == "ZONE" and spec.acc is not None and spec.acc.deploy.zones:
                comment = f"{spec.acc.id} zones in the catalog: {', '.join(spec.acc.deploy.zones)}"
            L.append(f"{line}  # {comment}" if comment else line)
        for var in externals:
            comment = _VAR_COMMENTS.get(var, "needed by the steps that use it")
            L.append(f"{var}=${{{var}:-}}  # {comment}")
        L.append("")
    L += [
        "step() { printf '\\n==> %s\\n' \"$*\" >&2; }",
        "",
        "need() {  # need VAR...: stop with a message when a setting is empty",
        "  local var",
        '  for var in "$@"; do',
        '    if [[ -z "${!var:-}" ]]; then',
        '      echo "setup.sh: set $var first (export $var=...)" >&2',
        "      exit 2",
        "    fi",
        "  done",
        "}",
        "",
    ]
    if "wait_active " in body:
        L += [
            "wait_active() {  # wait_active DESCRIBE-COMMAND...: poll a queued resource until it is ACTIVE",
            "  local state",
            "  while :; do",
            "    state=$(\"$@\" --format='value(state.state)')",
            '    case "$state" in',
            "      ACTIVE) return 0 ;;",
            '      FAILED | SUSPENDED) echo "setup.sh: the queued resource is $state" >&2; return 1 ;;',
            "    esac",
            '    echo "    waiting for TPU capacity (state: ${state:-unknown}); Ctrl-C stops waiting, not the request" >&2',
            "    sleep 30",
            "  done",
            "}",
            "",
        ]
    for n, s in enumerate(steps, 1):
        L.append(f"# {n}. {s.title}")
        if s.note:
            L.extend(_comment(s.note))
        L.append(f"step_{s.key}() {{")
        L.append(f"  step {shlex.quote(f'{n}/{len(steps)} {s.title}')}")
        if s.needs:
            L.append("  need " + " ".join(s.needs))
        for c in s.commands:
            L.append(_indent_command(c))
        L.append("}")
        L.append("")
    L.append("list_steps() {")
    L.append("  cat <<'STEPS'")
    L.append("steps (* = run by ./setup.sh without arguments):")
    width = max(len(s.key) for s in steps)
    auto_keys = {s.key for s in auto}
    for n, s in enumerate(steps, 1):
        mark = "*" if s.key in auto_keys else " "
        tag = {"interactive": " [interactive]", "device": " [needs the device]", "provision": " [provisions cloud resources]", "training": " [trains; not needed to serve]", "cleanup": " [deletes resources]"}.get(s.kind, "")
        L.append(f"  {mark} {n:>2} {s.key:<{width}}  {_one_line(s.title)}{tag}")
    L.append("STEPS")
    L.append("}")
    L.append("")
    L.append("main() {")
    L.append('  cd "$(dirname "${BASH_SOURCE[0]}")"')
    L.append("  if [[ $# -eq 0 ]]; then")
    L.append("    set -- " + (" ".join(s.key for s in auto) if auto else "--list"))
    L.append("  fi")
    L.append("  local s")
    L.append('  for s in "$@"; do')
    L.append('    case "$s" in')
    for n, s in enumerate(steps, 1):
        L.append(f"      {n} | {s.key}) step_{s.key} ;;")
    L.append("      -l | --list | -h | --help) list_steps ;;")
    L.append('      *) echo "setup.sh: unknown step \'$s\'" >&2; list_steps >&2; exit 2 ;;')
    L.append("    esac")
    L.append("  done")
    L.append("}")
    L.append("")
    L.append('main "$@"')
    return "\n".join(L) + "\n"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# --------------------------------------------------------------------------- YAML


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


def _dump(data: Any, header: list[str]) -> str:
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000, allow_unicode=True)
    return "".join(f"# {h}\n".replace("# \n", "#\n") for h in header) + text


def _yaml_header(spec: _Spec, what: str) -> list[str]:
    return [
        f'{what}, generated by `advisor scaffold` for "{_one_line(spec.profile.name)}"',
        f"(setup path {spec.path.id}; catalog as of {spec.rec.catalog_as_of}). Configuration: {_verdict_line(spec)}.",
    ]


# --------------------------------------------------------------------------- Kubernetes


def _k8s(spec: _Spec) -> dict[str, str]:
    v, est, name = spec.values, spec.est, spec.name
    assert est is not None
    tpu = spec.device == "tpu"
    per_node = int(v.get("chips_per_host") or est.count)
    tp = est.count if tpu else min(est.count, per_node)
    resource = "google.com/tpu" if tpu else "nvidia.com/gpu"
    labels = {"app": name}
    container: dict[str, Any] = {
        "name": "vllm",
        "image": "vllm/vllm-tpu:latest" if tpu else "vllm/vllm-openai:latest",
        "command": [
            "vllm",
            "serve",
            v["model"],
            f"--tensor-parallel-size={tp}",
            f"--max-model-len={v['max_model_len']}",
            f"--port={VLLM_PORT}",
        ],
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-secret", "key": "hf_api_token"}}}],
        "ports": [{"name": "http", "containerPort": VLLM_PORT}],
        "startupProbe": {"httpGet": {"path": "/health", "port": VLLM_PORT}, "periodSeconds": 10, "failureThreshold": 180},
        "readinessProbe": {"httpGet": {"path": "/health", "port": VLLM_PORT}, "periodSeconds": 10},
        "resources": {"requests": {resource: str(per_node)}, "limits": {resource: str(per_node)}},
    }
    pod: dict[str, Any] = {}
    if tpu:
        pod["nodeSelector"] = {
            "cloud.google.com/gke-tpu-accelerator": v["gke_accelerator"],
            "cloud.google.com/gke-tpu-topology": v["topology"],
        }
        pod["tolerations"] = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    else:
        pod["nodeSelector"] = {"cloud.google.com/gke-accelerator": v["gke_accelerator"]}
        container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        pod["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    pod["containers"] = [container]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "selector": labels,
            "ports": [{"name": "http", "port": VLLM_PORT, "targetPort": VLLM_PORT, "protocol": "TCP"}],
        },
    }
    chips = "TPU chips" if tpu else "GPUs"
    files = {
        "k8s/deployment.yaml": _dump(
            deployment,
            [
                *_yaml_header(spec, "vLLM Deployment"),
                f"{spec.replicas} replica(s) of {tp}-way tensor parallelism on {per_node} {chips} each; the model",
                "comes from model.hf_id, the Hugging Face token from the secret hf-secret (setup.sh creates it).",
            ],
        ),
        "k8s/service.yaml": _dump(
            service,
            [*_yaml_header(spec, "Service for the vLLM OpenAI-compatible API"), f"kubectl port-forward service/{name} {VLLM_PORT}:{VLLM_PORT}"],
        ),
    }
    if spec.replicas > 1:
        batch = est.batch or 1
        hpa = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": 1,
                "maxReplicas": spec.replicas,
                "metrics": [
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": HPA_METRIC},
                            "target": {"type": "AverageValue", "averageValue": str(batch)},
                        },
                    }
                ],
            },
        }
        monitoring = {
            "apiVersion": "monitoring.googleapis.com/v1",
            "kind": "PodMonitoring",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "endpoints": [{"port": VLLM_PORT, "path": "/metrics", "interval": "15s"}],
            },
        }
        files["k8s/hpa.yaml"] = _dump(
            hpa,
            [
                *_yaml_header(spec, "HorizontalPodAutoscaler"),
                f"Scales between 1 and {spec.replicas} replicas (the estimate's count for peak_qps) on vLLM's running",
                f"requests per pod, targeting the batch of {batch} the estimate sized each replica for. It reads the",
                "metric through Cloud Monitoring: k8s/podmonitoring.yaml exports it (Managed Service for",
                "Prometheus), and the Custom Metrics Stackdriver Adapter must be installed (see README.md).",
            ],
        )
        files["k8s/podmonitoring.yaml"] = _dump(
            monitoring,
            [
                *_yaml_header(spec, "PodMonitoring (Google Cloud Managed Service for Prometheus)"),
                "Scrapes vLLM's /metrics so the HorizontalPodAutoscaler in hpa.yaml can read vllm:num_requests_running.",
            ],
        )
    return files


# --------------------------------------------------------------------------- train.py, Dockerfile


def _train_model_id(spec: _Spec) -> str | None:
    """The Hugging Face model train.py loads: a causal LM only (an LLM profile's model.hf_id)."""
    return spec.profile.model.hf_id if spec.profile.domain == "llm" else None


def _train_py(spec: _Spec) -> str:
    assert spec.stack is not None
    tmpl = string.Template((TEMPLATES / _STACK_TEMPLATE[spec.stack]).read_text(encoding="utf-8"))
    p = spec.profile
    t = p.training
    title = f"{_one_line(p.name)} ({p.task}, {p.model.params_b:g} B params"
    title += f", {_verdict_line(spec)})" if spec.est else ")"
    return tmpl.substitute(
        title=title.replace("\\", "/").replace('"""', "'''"),
        model_id=repr(_train_model_id(spec)) if _train_model_id(spec) else "None",
        method=repr(t.method if t else "full"),
        seq_len=str(t.seq_len if t else 2048),
        global_batch=str(spec.global_batch or 256),
        max_steps=str(spec.max_steps or 100),
    )


_PIP = {
    ("torch-xla", "tpu"): 'pip install torch "torch_xla[tpu]" transformers datasets peft tensorboard -f https://storage.googleapis.com/libtpu-releases/index.html',
    ("jax", "tpu"): 'pip install -U "jax[tpu]" optax tensorboardX',
    ("jax", "gpu"): 'pip install -U "jax[cuda12]" optax tensorboardX',
    ("tensorflow", "tpu"): "pip install tensorflow-tpu -f https://storage.googleapis.com/libtpu-tf-releases/index.html",
    ("tensorflow", "gpu"): 'pip install "tensorflow[and-cuda]"',
    ("cuda", "gpu"): "pip install torch transformers datasets peft tensorboard",
}


def _pip(spec: _Spec) -> str:
    cmd = _PIP.get((spec.stack or "", spec.device), "pip install torch tensorboard")
    if spec.stack == "cuda" and spec.profile.training and spec.profile.training.method == "qlora":
        cmd += " bitsandbytes"
    return cmd


def _dockerfile(spec: _Spec) -> str:
    tpu = spec.device == "tpu"
    base = "python:3.11-slim" if tpu or spec.stack != "cuda" else "pytorch/pytorch:latest"
    lines = [
        f"# Training container for {spec.path.id}, generated by `advisor scaffold`.",
        "# gcloud builds submit (setup.sh) builds it from this directory.",
        f"FROM {base}",
        "WORKDIR /app",
        f"RUN {_pip(spec)}" if spec.stack else "RUN pip install torch tensorboard",
        "COPY train.py .",
    ]
    if spec.stack == "torch-xla":
        lines.append("ENV PJRT_DEVICE=TPU")
    if spec.stack == "cuda":
        lines.append('ENTRYPOINT ["torchrun", "--standalone", "--nproc-per-node=gpu", "train.py"]')
    else:
        lines.append('ENTRYPOINT ["python3", "train.py"]')
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- SkyPilot


@dataclass
class _SkyEntry:
    est: Estimate
    accelerators: str
    nodes: int
    clouds: list[str]
    runtime_version: str | None
    verified: bool


def _sky_entry(spec: _Spec, acc: Accelerator, est: Estimate) -> _SkyEntry:
    kind = spec.profile.deployment.pricing
    rates: dict[str, float] = {}
    for cloud in spec.profile.deployment.clouds:
        price = acc.price([cloud], kind) if cloud in SKY_CLOUDS else None
        if price is not None:
            rates[cloud] = price.usd_per_chip_hour
    clouds = sorted(rates, key=lambda c: (c != est.price_cloud, rates[c], c))
    if acc.device == "tpu":
        sl = acc.slice_for(est.count) or max(acc.shapes.slices or [], key=lambda s: s.chips)
        sky = acc.deploy.skypilot
        name = sky.replace("{accelerator_type}", sl.accelerator_type) if sky else f"tpu-{sl.accelerator_type}"
        return _SkyEntry(est, name, 1, clouds or ["gcp"], acc.deploy.runtime_version, sky is not None)
    per = acc.shapes.gpus_per_node or 8
    gpu = acc.deploy.skypilot
    on_node = min(est.count, per)
    return _SkyEntry(est, f"{gpu or acc.id.upper()}:{on_node}", max(1, math.ceil(est.count / per)), clouds, None, gpu is not None)


def _fallbacks(spec: _Spec, ctx: Context, first: _SkyEntry) -> list[_SkyEntry]:
    """Next-best feasible accelerators of the same family (rec.table order), same node count."""
    out: list[_SkyEntry] = []
    chosen = first.est.accelerator
    for row in spec.rec.table:
        if len(out) >= MAX_FALLBACKS:
            break
        if row.accelerator == chosen or row.device != spec.device or not row.feasible or not row.priced:
            continue
        acc = ctx.catalog.accelerators.get(row.accelerator)
        if acc is None:
            continue
        options = [row] + [
            c for c in spec.rec.candidates
            if c.accelerator == row.accelerator and c.feasible and c.priced and c is not row
        ]
        for cand in options:
            entry = _sky_entry(spec, acc, cand)
            if not entry.verified or entry.nodes != first.nodes:
                continue
            if acc.device == "tpu" and acc.slice_for(cand.count) is None:
                continue
            out.append(entry)
            break
    return out


def _sky_scripts(spec: _Spec) -> tuple[str, str]:
    v = spec.values
    tpu = spec.device == "tpu"
    if spec.training:
        setup = _pip(spec)
        if spec.stack == "cuda":
            run = "\n".join(
                [
                    'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)',
                    "torchrun \\",
                    "  --nnodes=$SKYPILOT_NUM_NODES \\",
                    "  --nproc-per-node=$SKYPILOT_NUM_GPUS_PER_NODE \\",
                    "  --node-rank=$SKYPILOT_NODE_RANK \\",
                    "  --master-addr=$MASTER_ADDR \\",
                    "  --master-port=8008 \\",
                    "  train.py",
                ]
            )
        else:
            run = _launch(spec)
        return setup + "\n", run + "\n"
    if spec.vllm:
        tp = "$(python3 -c 'import jax; print(jax.local_device_count())')" if tpu else "$SKYPILOT_NUM_GPUS_PER_NODE"
        setup = "pip install vllm-tpu" if tpu else "pip install vllm"
        run = "\n".join(
            [
                'vllm serve "$MODEL_ID" \\',
                f"  --tensor-parallel-size={tp} \\",
                f"  --max-model-len={v['max_model_len']} \\",
                f"  --host=0.0.0.0 --port={VLLM_PORT}",
            ]
        )
        return setup + "\n", run + "\n"
    check = (
        "python3 -c 'import jax; print(jax.devices())'"
        if tpu and spec.profile.software.framework in ("jax", "keras", "tensorflow")
        else "PJRT_DEVICE=TPU python3 -c 'import torch_xla.core.xla_model as xm; print(xm.xla_device())'"
        if tpu
        else "nvidia-smi"
    )
    setup = (
        'pip install -U "jax[tpu]"'
        if tpu and spec.profile.software.framework in ("jax", "keras", "tensorflow")
        else 'pip install torch "torch_xla[tpu]" -f https://storage.googleapis.com/libtpu-releases/index.html'
        if tpu
        else "pip install torch"
    )
    run = f"# Replace with your serving program; this checks the accelerators.\n{check}"
    return setup + "\n", run + "\n"


def _sky_yaml(spec: _Spec, ctx: Context) -> tuple[str, list[_SkyEntry]]:
    assert spec.est is not None and spec.acc is not None
    first = _sky_entry(spec, spec.acc, spec.est)
    fallbacks = _fallbacks(spec, ctx, first)
    ordered: list[dict[str, Any]] = []
    for entry in [first, *fallbacks]:
        for cloud in entry.clouds or [""]:
            item: dict[str, Any] = {"accelerators": entry.accelerators}
            if cloud:
                item["infra"] = cloud
            if entry.runtime_version:
                item["accelerator_args"] = {"runtime_version": entry.runtime_version}
            ordered.append(item)
    resources: dict[str, Any] = {}
    if spec.profile.deployment.pricing == "spot":
        resources["use_spot"] = True
    if spec.vllm:
        resources["ports"] = VLLM_PORT
    resources["ordered"] = ordered
    task: dict[str, Any] = {"name": spec.name}
    if first.nodes > 1:
        task["num_nodes"] = first.nodes
    task["resources"] = resources
    task["workdir"] = "."
    envs: dict[str, Any] = {}
    if spec.vllm:
        envs["MODEL_ID"] = spec.values["model"]
    if spec.profile.model.hf_id:
        envs["HF_TOKEN"] = None  # required: pass it with --env HF_TOKEN
    if envs:
        task["envs"] = envs
    setup, run = _sky_scripts(spec)
    task["setup"] = setup
    task["run"] = run
    header = [
        *_yaml_header(spec, "SkyPilot task"),
        "Launch: sky launch -c " + spec.name + " sky.yaml" + (" --env HF_TOKEN" if "HF_TOKEN" in envs else ""),
        "resources.ordered tries the chosen accelerator first, then the next-best feasible ones of the same",
        "family (same node count) in the order of advisor's table:",
    ]
    for entry in [first, *fallbacks]:
        header.append(f"  {entry.accelerators} x {entry.nodes} node(s): {_cost_phrase(entry.est)}")
    if not first.verified:
        header.append(f"{first.accelerators} is not a SkyPilot accelerator name advisor knows: check `sky show-gpus`.")
    if spec.profile.deployment.pricing.startswith("committed"):
        header.append("The estimate uses committed-use prices; SkyPilot launches on-demand unless you reserve capacity.")
    if spec.slices > 1:
        header.append(f"The verdict is {spec.slices} slices; SkyPilot provisions one ({first.accelerators}).")
    return _dump(task, header), fallbacks


# --------------------------------------------------------------------------- README


def _cost_phrase(e: Estimate) -> str:
    if e.mode == "training":
        return f"{_hours(e.hours)} for {_money(e.cost_usd)}"
    reps = f" x {e.replicas} replicas" if (e.replicas or 1) > 1 else ""
    return f"{e.accelerator} x {e.count}{reps} at {_money(e.cost_usd)}/month"


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


def _estimate_lines(spec: _Spec) -> list[str]:
    e = spec.est
    if e is None:
        return ["No accelerator to pay for: see the steps below."]
    price = (
        f"at {_money(e.usd_per_chip_hour)} per chip-hour ({e.price_cloud} {e.price_kind})"
        if e.usd_per_chip_hour is not None
        else "unpriced on the allowed clouds"
    )
    out = [f"- Configuration: **{e.accelerator} x {e.count}** ({e.shape}) {price}."]
    if e.mode == "training":
        out.append(f"- Run time: **{_hours(e.hours)}** (range {_hours(e.hours_low)}–{_hours(e.hours_high)}).")
        out.append(f"- Cost: **{_money(e.cost_usd)}** (range {_money(e.cost_low)}–{_money(e.cost_high)}).")
        t = spec.profile.training
        if t is not None and t.deadline_hours:
            out.append(f"- Deadline {t.deadline_hours:g} h: {'met' if e.meets_deadline else 'missed'}.")
        if e.tokens_per_second:
            out.append(f"- Throughput: {e.tokens_per_second:,.0f} training tokens/s for the whole configuration.")
        out.append(
            f"- train.py runs {spec.max_steps:,} steps of {spec.global_batch} sequences x "
            f"{t.seq_len if t else 0} tokens (training.tokens_b / (seq_len x global batch))."
        )
    else:
        reps = e.replicas or 1
        out.append(
            f"- Cost: **{_money(e.cost_usd)} per month** for {reps} replica(s) of {e.count} chip(s) "
            f"(range {_money(e.cost_low)}–{_money(e.cost_high)}), {_money(e.usd_per_million_tokens)} per million generated tokens."
        )
        if e.latency_ms is not None:
            target = spec.profile.inference.latency_p99_ms if spec.profile.inference else None
            tgt = f" (target p99 {target:,.0f} ms)" if target else ""
            out.append(
                f"- Latency: {e.latency_ms:,.0f} ms per request{tgt}; time to first token {e.ttft_ms or 0:,.0f} ms, "
                f"{e.tpot_ms or 0:,.1f} ms per output token, batch {e.batch} per replica."
            )
        if e.tokens_per_second:
            out.append(f"- Throughput: {e.tokens_per_second:,.0f} generated tokens/s per replica.")
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
    "k8s/deployment.yaml": "vLLM Deployment",
    "k8s/service.yaml": "Service in front of it (port 8000, OpenAI-compatible API)",
    "k8s/hpa.yaml": "HorizontalPodAutoscaler on running requests per pod",
    "k8s/podmonitoring.yaml": "exports vLLM's metrics to Cloud Monitoring for the HPA",
}


def _readme(spec: _Spec, steps: list[_Step], files: Mapping[str, str], fallbacks: list[_SkyEntry]) -> str:
    p, path = spec.profile, spec.path
    accel = spec.device in ("tpu", "gpu")
    L: list[str] = [f"# {_one_line(p.name)}: {spec.device.upper()} setup", ""]
    L.append(
        f"Generated by `advisor scaffold` (catalog as of {spec.rec.catalog_as_of}). "
        f"Verdict: **{spec.rec.device.upper()}**"
        + (f" — {spec.rec.estimate.accelerator} x {spec.rec.estimate.count}" if spec.rec.estimate else "")
        + f", confidence {spec.rec.confidence:.2f}. "
        + f"Setup path: **{path.title}** (`{path.id}`"
        + (", chosen with `--path`" if spec.chosen_by_flag else "")
        + ")."
    )
    L.append("")
    L.append(_one_line(path.summary))
    L.append("")
    if not accel:
        L.append("## Nothing to provision")
        L.append("")
        if spec.device == "cpu":
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
    L.append("## Estimated cost and time" if accel else "## Estimate")
    L.append("")
    L.extend(_estimate_lines(spec))
    L.append("")
    L.append("`advisor recommend` on the profile explains every point of the verdict and the other candidates.")
    L.append("")
    L.append("## Files")
    L.append("")
    L.append("| file | what it is |")
    L.append("|---|---|")
    for name in files:
        role = _FILE_ROLES.get(name, "")
        if name == "train.py" and spec.stack:
            role = f"training script skeleton: {_STACK_TITLE[spec.stack]}"
        L.append(f"| `{name}` | {role} |")
    L.append("| `README.md` | this file |")
    L.append("")
    L.append("## Steps")
    L.append("")
    auto = {s.key for s in _auto(steps)}
    setting_vars = [var for var in ("PROJECT_ID", "REGION", "ZONE", "NAME", "MODEL_ID", "HF_TOKEN") if any(var in c for s in steps for c in s.commands)]
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
        }[s.kind]
        added = "; added by the scaffold" if s.added else ""
        L.append(f"{n}. **{_one_line(s.title)}** (`./setup.sh {s.key}`; {how}{added})")
        if s.note:
            L.append(f"   {_one_line(s.note)}")
        L.append("")
        L.append("   ```bash")
        for c in s.commands:
            for line in c.split("\n"):
                L.append(f"   {line}".rstrip())
        L.append("   ```")
        L.append("")
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
        L.append(
            f"`train.py` is a runnable skeleton for {_STACK_TITLE[spec.stack or 'cuda']}: it trains on synthetic "
            "data until you point it at yours and writes TensorBoard logs to `./runs`"
            + (" (or `$AIP_TENSORBOARD_LOG_DIR` on Vertex AI)" if "Dockerfile" in files else "")
            + ". Its defaults (model, sequence length, global batch, steps) come from the profile; "
            "`python3 train.py --help` lists them."
            + ("" if runs else " The setup path's own steps do not run it: it is the starting point for your own loop"
               + (" (`./setup.sh train` runs it on the slice)." if any(s.added for s in steps) else ", and `sky.yaml` runs it."))
        )
        L.append("")
        tb = [s for s in steps if any("tensorboard" in c for c in s.commands)]
        if tb:
            L.append(
                f"TensorBoard: `./setup.sh {tb[0].key}`, then open http://localhost:6006 "
                "(the step forwards the port from the machine that trains, or reads the logs locally)."
            )
        else:
            L.append("TensorBoard: run `tensorboard --logdir ./runs` where it trains, then open http://localhost:6006.")
        L.append("")
    if spec.serving:
        L.append("## Kubernetes manifests")
        L.append("")
        e = spec.est
        assert e is not None
        L.append(
            f"`k8s/deployment.yaml` runs `vllm serve {spec.values['model']}` with tensor parallelism over "
            f"{e.count} chip(s) per replica and {spec.replicas} replica(s) (the estimate's count for "
            f"{p.inference.peak_qps if p.inference else 0:g} requests/s at peak). `setup.sh` applies the whole "
            "`k8s/` folder with `kubectl apply -f k8s/`."
        )
        if "k8s/hpa.yaml" in files:
            L.append("")
            L.append(
                "The HorizontalPodAutoscaler scales on `vllm:num_requests_running` per pod, read from Cloud "
                "Monitoring: `k8s/podmonitoring.yaml` exports it through Google Cloud Managed Service for "
                "Prometheus (on by default in new GKE clusters), and the Custom Metrics Stackdriver Adapter must "
                "run in the cluster (https://cloud.google.com/kubernetes-engine/docs/how-to/machine-learning/inference/autoscaling). "
                "Until it does, the HPA keeps the replica count of the Deployment."
            )
        L.append("")
    if "sky.yaml" in files:
        e = spec.est
        assert e is not None
        L.append("## SkyPilot")
        L.append("")
        launch = f"sky launch -c {spec.name} sky.yaml" + (" --env HF_TOKEN" if p.model.hf_id else "")
        L.append(
            f"`{launch}` runs the same job through SkyPilot on any allowed cloud "
            f"({', '.join(c for c in p.deployment.clouds if c in SKY_CLOUDS) or 'none'}), trying the chosen "
            "accelerator first and then these fallbacks, in order (next-best feasible configurations of the same "
            "family with the same node count, so `setup` and `run` stay valid):"
        )
        L.append("")
        first = _sky_entry(spec, spec.acc, e) if spec.acc else None
        if first is not None:
            L.append(f"- `{first.accelerators}` x {first.nodes} node(s): {_cost_phrase(e)} (chosen)")
        for fb in fallbacks:
            L.append(f"- `{fb.accelerators}` x {fb.nodes} node(s): {_cost_phrase(fb.est)}")
        if not fallbacks:
            L.append("- no fallback: no other feasible configuration of the family fits the same node count")
        L.append("")
    L.append("## Assumptions")
    L.append("")
    L.append(f"- Names: resources are named after `{spec.name}` (from the profile name); region `{spec.values['region']}`, zone `{spec.values['zone']}`.")
    L.append(f"- Pricing: {p.deployment.pricing} on {', '.join(p.deployment.clouds)}; prices and shapes from the catalog as of {spec.rec.catalog_as_of}.")
    if spec.est is not None:
        for key, value in spec.est.assumptions.items():
            L.append(f"- {key.replace('_', ' ').capitalize()}: {_fmt(value)}.")
    L.append("")
    if spec.warnings or spec.rec.warnings:
        L.append("## Warnings")
        L.append("")
        L.extend(f"- {_one_line(w)}" for w in spec.warnings)
        L.extend(f"- From the recommendation: {_one_line(w)}" for w in spec.rec.warnings)
        L.append("")
    L.append("## Sources")
    L.append("")
    L.extend(f"- {s}" for s in path.sources)
    return "\n".join(L).rstrip("\n") + "\n"
