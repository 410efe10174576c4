"""The steps of ``setup.sh``: the setup path's commands, filled for the configuration.

The commands come from the setup path's data (``rules/setup``); a few
documented rewrites make them run as one script: a quoted ``kubectl apply``
heredoc becomes ``kubectl apply -f k8s/`` (when the path declares the
``kubernetes`` artefact); a serving node pool that must hold several replicas
gets autoscaling bounds; ``queued-resources describe`` becomes a wait until the
slice is ACTIVE; an SSH port forward followed by ``tensorboard`` becomes one SSH
command that runs TensorBoard remotely; copying the (possibly still empty)
``data/`` folder of the bucket does not stop the script; and a TPU VM path that
never runs ``train.py`` gets a step that does; the steps of the machine a step launches (``host: instance``) are run
there by a step the scaffold adds after the launch (rules/provisioning.yaml ``remote``), and a count beyond on-demand
quota leads with the step that obtains it. Placeholders are filled by ``fill``; the script around the steps is written
by ``setup_script``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor import capacity
from advisor.families import family
from advisor.knowledge import PLACEHOLDER, bundled_data
from advisor.scaffold.fill import fill_command
from advisor.scaffold.kubernetes import autoscaled, monitoring_for
from advisor.scaffold.spec import Spec, commands, remote_row, train_model_id
from advisor.setuppath import applicable_steps, multinode, provision, training_stack

# Placeholders that become shell variables in setup.sh (overridable from the environment).
SHELL_VARS = {
    "project": "PROJECT_ID",
    "region": "REGION",
    "zone": "ZONE",
    "name": "NAME",
    "cluster": "CLUSTER",
    "model": "MODEL_ID",
}
# Environment variables setup.sh may read without defining them.
_AMBIENT = {"HOME", "PATH", "USER", "PWD", "SHELL", "TMPDIR"}
# a shell variable a command reads ($VAR, ${VAR}, ${VAR:-...})
_VAR = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)")
# one read with a default of its own (${VAR:-x}, ${VAR-x}; not an empty one): never a setting the step stops without
_DEFAULTED = re.compile(r"\$\{([A-Z][A-Z0-9_]*):?-[^}]")
# a command that runs only where the setting is set (if [[ -n "${VAR:-}" ]]; then ... fi): not one the step stops without
_GUARDED = re.compile(r'if \[\[ -n "\$\{([A-Z][A-Z0-9_]*):-\}" \]\]; then .*; fi')


@dataclass
class Step:
    key: str
    title: str
    commands: list[str]  # filled, ready for bash
    note: str | None
    kind: str  # auto | interactive | device | provision | cleanup
    needs: list[str]
    added: bool = False  # added by the scaffold, not in the setup path
    remote: bool = False  # runs on the launched machine (the setup path's ``host: instance``), not where setup.sh runs
    runs: tuple[str, ...] = ()  # the steps this one runs on the launched machine (the step the scaffold adds for them)
    blocks: bool = False  # serves until stopped (the setup path's ``until_stopped``, or a hop that runs such a step)

    @property
    def runs_train(self) -> bool:
        """The step the scaffold adds to start train.py on every host (not in the default run)."""
        return self.added and self.key.startswith("train")


# Compute Engine machine families whose GPUs are attached with --accelerator (the others, A2/A3/A4/G2,
# include theirs): https://docs.cloud.google.com/compute/docs/gpus
GCE_ATTACHED_GPU_FAMILIES = ("n1-",)
LWS_MANIFESTS = "https://github.com/kubernetes-sigs/lws/releases/download/v0.7.0/manifests.yaml"
# the settings a hop carries to every host of a slice (rules/provisioning.yaml ``remote``, ``carries: file``)
REMOTE_ENV_FILE = ".remote-env"
# the setting a train step over several machines reads: the first machine's address, where torchrun's processes meet
RENDEZVOUS = "MASTER_ADDR"
# torchrun over several machines (https://docs.pytorch.org/docs/stable/elastic/run.html): c10d rendezvous at the first
# machine, each machine's rank assigned as it joins; the join waits up to 30 minutes (600 s by default) for machines
# that install their stack at once but finish at different times
TORCHRUN_NODES = ("--nnodes={hosts} --rdzv-backend=c10d --rdzv-endpoint=\"$" + RENDEZVOUS + ":29400\" --rdzv-id={name} "
                  "--rdzv-conf=join_timeout=1800")
_INTERACTIVE_SSH = re.compile(r"\b(?:compute|tpu-vm|queued-resources) ssh\b")
# a Compute Engine VM of the setup path, by the name the path gives it: created, reached (ssh, scp to it) and deleted
_GCE_VM = re.compile(r"^gcloud compute (?:instances (?:create|delete)|ssh|scp\b.*?) (\{name\})(?=[ :])")


def gce_vms(spec: Spec) -> int:
    """How many Compute Engine VMs setup.sh makes of a training that spans several (the path creates its VM with
    ``gcloud compute instances create {name}``): each of them, named NAME-0 .. NAME-(n-1), or 1 (the path's own VM)."""
    hosts = int(spec.values.get("hosts") or 1)
    creates = any(c.strip().startswith("gcloud compute instances create {name} ") for c in commands(spec.path))
    return hosts if spec.training and creates and hosts > 1 else 1


def _worker_pools(cmd: str, hosts: int) -> str:
    """A Vertex AI custom job's specification (``cat > job.yaml <<EOF``) of a training over ``hosts`` machines: its one
    worker pool is the primary replica (replicaCount 1, as Vertex AI requires of workerPoolSpecs[0]); the others are a
    second pool of the same machine and container, replicaCount hosts - 1
    (https://cloud.google.com/vertex-ai/docs/training/distributed-training)."""
    lines = cmd.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() == "- machineSpec:"), None)
    end = next((i for i, line in enumerate(lines) if line.strip() == "EOF"), None)
    if hosts <= 1 or start is None or end is None or end < start or sum(x.strip() == "replicaCount: 1" for x in lines) != 1:
        return cmd
    pool = [x.replace("replicaCount: 1", f"replicaCount: {hosts - 1}") if x.strip() == "replicaCount: 1" else x
            for x in lines[start:end]]
    return "\n".join([*lines[:end], *pool, *lines[end:]])


def _each_vm(cmd: str, vms: int) -> list[str]:
    """The path's command on its one VM made a command on each of ``vms`` (gce_vms): created and deleted all in one
    command (brace expansion gives the names), the GPUs checked and the stack installed on each in turn, torchrun
    started on all at once (each meets the first VM's internal address, MASTER_ADDR) and every run waited for; an
    interactive session (TensorBoard) reaches the first."""
    m = _GCE_VM.match(cmd.strip())
    if m is None:
        return [cmd]
    names = "{name}-{0.." + str(vms - 1) + "}"
    line = cmd.strip()
    if line.startswith("gcloud compute instances "):
        return [line[: m.start(1)] + names + line[m.end(1):]]
    if _INTERACTIVE_SSH.search(line) and ("--command" not in line or " -- -L " in line):  # a session, a port forward
        return [line[: m.start(1)] + "{name}-0" + line[m.end(1):]]
    each = line[: m.start(1)] + '"$VM"' + line[m.end(1):]
    if "torchrun --standalone " not in each:
        return [f"for VM in {names}; do {each}; done"]
    nodes = TORCHRUN_NODES.replace(f'"${RENDEZVOUS}:29400"', f"${RENDEZVOUS}:29400")  # inside --command="..."
    return [
        f'{RENDEZVOUS}=$(gcloud compute instances describe {{name}}-0 --project={{project}} --zone={{zone}} '
        '--format="value(networkInterfaces[0].networkIP)")',
        f'PIDS=(); for VM in {names}; do {each.replace("torchrun --standalone ", f"torchrun {nodes} ", 1)} & PIDS+=("$!"); '
        'done; for PID in "${PIDS[@]}"; do wait "$PID"; done',
    ]


def _kind(title: str, raw: list[str], device: str, task: str = "") -> str:
    first = title.split()[0].lower() if title.split() else ""
    if first in ("delete", "clean", "tear", "remove", "destroy", "terminate", "release"):
        return "cleanup"
    if title.endswith("a day)") and first in ("stop", "start"):
        return "schedule"
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
        if not family(device).setup.cloud_vm and line.startswith("gcloud "):
            return "provision"
    return "auto"


def _rewrite(spec: Spec, raw: list[str]) -> list[str]:
    """The documented rewrites that make a setup path's commands run as one script."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        cmd = raw[i]
        nxt = raw[i + 1] if i + 1 < len(raw) else None
        stripped = cmd.strip()
        if spec.serving and re.match(r"kubectl apply -f (-\s*<<|k8s/)", stripped):
            if spec.plan.hosts > 1 and not any(
                LWS_MANIFESTS in r for r in raw
            ):  # the LeaderWorkerSet controller (https://lws.sigs.k8s.io/docs/installation/)
                out.append(f"kubectl apply --server-side -f {LWS_MANIFESTS}")
            out.append("kubectl apply -f k8s/")
            mon = monitoring_for(spec)
            if autoscaled(spec) and mon.get("crd"):  # the metrics object, where the cluster has its CRD (else it fails)
                out.append(
                    f"if kubectl get crd {mon['crd']} >/dev/null 2>&1; then kubectl apply -f {mon['file']}; else echo "
                    f"\"setup.sh: no {mon['kind']} CRD in this cluster: install the Prometheus Operator and prometheus-adapter, "
                    f"then kubectl apply -f {mon['file']} (the HPA reads its metric)\" >&2; fi"
                )
        elif not spec.serving and stripped == "kubectl apply -f k8s/":
            out.append("# kubectl apply -f k8s/: advisor scaffold writes k8s/ for a serving workload only")
        elif (
            spec.serving
            and stripped.startswith("gcloud container node-pools create")
            and (spec.replicas > 1 or spec.plan.scheduled)
            and "--enable-autoscaling" not in stripped
        ):
            # the pool starts at its floor: --num-nodes below --min-nodes (one TPU host for a floor of two replicas) is a
            # pool under its own minimum (review 28)
            start = cmd.replace("--num-nodes={hosts}", "--num-nodes={min_nodes}")
            out.append(f"{start} --enable-autoscaling --min-nodes={{min_nodes}} --max-nodes={{max_nodes}}")
        elif (
            stripped.startswith("gcloud compute instances create")
            and spec.plan.machine_type.startswith(GCE_ATTACHED_GPU_FAMILIES)
            and spec.plan.gke_accelerator
            and "--accelerator" not in stripped
        ):
            out.append(f"{cmd} --accelerator=type={{gke_accelerator}},count={{chips_per_host}}")
        elif "maxtext.trainers.pre_train.train " in stripped and spec.profile.task == "fine-tuning" and "run_name={name} " in cmd:
            # a fine-tune starts from the base model's weights, converted to a MaxText checkpoint, with MaxText's own
            # model config (rope, norms) over the plan's dimensions; before, it trained from random weights (review 32)
            out.append(cmd.replace("run_name={name} ", "run_name={name} load_parameters_path=${MAXTEXT_CKPT_PATH} "
                                   "model_name={maxtext_model} override_model_config=True ", 1))
        elif stripped.startswith("torchrun --standalone ") and spec.training and int(spec.values.get("hosts") or 1) > 1:
            # one training over several machines: torchrun on each meets at the first (the step that reaches them sets
            # MASTER_ADDR), not a machine of its own
            out.append(cmd.replace("torchrun --standalone ", f"torchrun {TORCHRUN_NODES} ", 1))
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
        elif (
            stripped.startswith("cat > job.yaml <<")
            and spec.training
            and int(spec.values.get("hosts") or 1) > 1
            and not family(spec.device).sliced  # a TPU slice of several hosts is one replica of its topology
        ):
            out.append(_worker_pools(cmd, int(spec.values.get("hosts") or 1)))
        elif re.search(r"gs://\{project\}-\{name\}/data\b", stripped) and " cp " in stripped and "||" not in stripped:
            out.append(
                f'{cmd} || echo "setup.sh: nothing to copy from gs://{{project}}-{{name}}/data yet '
                '(upload your data there); continuing" >&2'
            )
        else:
            out.append(cmd)
        i += 1
    nodes = int(spec.values.get("tpu_nodes") or 1)
    if (vms := gce_vms(spec)) > 1:
        out = [each for c in out for each in _each_vm(c, vms)]
    return [multinode(provision(c, spec.plan.provisioning_kind, spec.plan.disk_gb), nodes) for c in out]


def launch(spec: Spec) -> str:
    """How train.py starts on one host (rules/training-stacks.yaml ``launch``)."""
    return str(training_stack(spec.stack)["launch"]) if spec.stack else "python3 train.py"


def _hf_secret_step() -> tuple[str, list[str], str | None, bool]:
    """Vertex AI jobs get the Hugging Face token from Secret Manager, readable by Vertex AI's
    Custom Code Service Agent (https://cloud.google.com/vertex-ai/docs/general/access-control#service-agents,
    https://cloud.google.com/secret-manager/docs/create-secret-quickstart)."""
    return (
        "Store the Hugging Face token in Secret Manager",
        [
            'printf %s "${HF_TOKEN}" | gcloud secrets create {name}-hf-token --project={project} '
            "--replication-policy=automatic --data-file=-",
            "gcloud secrets add-iam-policy-binding {name}-hf-token --project={project} "
            '--member="serviceAccount:service-$(gcloud projects describe {project} --format=\'value(projectNumber)\')'
            '@gcp-sa-aiplatform-cc.iam.gserviceaccount.com" --role=roles/secretmanager.secretAccessor',
        ],
        "The model is gated on Hugging Face: the job reads the token from this secret (HF_TOKEN_SECRET in "
        "job.yaml), which Vertex AI's Custom Code Service Agent may access; the token never enters the image.",
        True,
    )


def _schedule_steps(spec: Spec, cmds: list[str]) -> list[tuple[str, list[str], str | None, bool]]:
    """Stop and start steps for a service priced for part of the day (rules/provisioning.yaml
    ``schedule``, for the path's provisioning command), to run from cron."""
    table: dict[str, dict[str, str]] = bundled_data("provisioning.yaml")["schedule"]
    row = next((r for c in cmds for head, r in table.items() if c.strip().startswith(head + " ")), None)
    if row is None:
        return []
    from advisor.scaffold.kubernetes import schedule_hours

    start, stop = schedule_hours(spec.plan)
    hours = f"{spec.plan.hours_per_day:g} h a day"
    return [
        (f"Stop the machine outside the priced hours ({hours})", [row["stop"]],
         f"The estimate prices {hours}: run this step from cron at {stop:02d}:00 UTC "
         f"(0 {stop} * * * ./setup.sh stop) and the next one at {start:02d}:00 UTC.", True),
        (f"Start the machine for the priced hours ({hours})", [row["start"]],
         f"From cron at {start:02d}:00 UTC (0 {start} * * * ./setup.sh start); the server starts again with the machine "
         "only if you made it a service (systemd) after the serve step.", True),
    ]


# a placeholder whose value is a setting the user gives setup.sh (``${VAR}``: setuppath.jetstream_model where the model
# is not in its table) is that shell variable, expanded where it stands
_SHELL_VALUE = re.compile(r"\$\{([A-Z][A-Z0-9_]*)\}")


def build_steps(spec: Spec, files: Mapping[str, str]) -> list[Step]:
    shell = dict(SHELL_VARS)
    shell.update({k: m.group(1) for k, v in spec.values.items() if (m := _SHELL_VALUE.fullmatch(v))})
    literal = {k: v for k, v in spec.values.items() if k not in shell}
    for k in shell:
        literal.setdefault(k, spec.values.get(k, ""))
    def prose(text: str) -> str:  # titles and notes name the configuration too
        return PLACEHOLDER.sub(lambda m: str(spec.values.get(m.group(1), m.group(0))), text)

    applicable = applicable_steps(spec.path, spec.profile, spec.plan.cloud, spec.plan.server or None)
    raw_steps: list[tuple[str, list[str], str | None, bool]] = [
        (prose(s.title), list(s.commands), prose(s.note) if s.note else None, False) for s in applicable
    ]
    on_instance = {prose(s.title) for s in applicable if s.host == "instance"}
    until_stopped = {prose(s.title) for s in applicable if s.until_stopped}
    cmds = commands(spec.path)
    if (
        "train.py" in files
        and not any("train.py" in c for c in cmds)
        and any("tpus tpu-vm ssh" in c for c in cmds)
    ):
        extra = (
            "Run the generated train.py on every host",
            [
                "gcloud compute tpus tpu-vm scp train.py {name}: --project={project} --zone={zone} --worker=all",
                f'gcloud compute tpus tpu-vm ssh {{name}} --project={{project}} --zone={{zone}} --worker=all --command="{launch(spec)}"',
            ],
            "The setup path's own steps do not run train.py; this one copies the skeleton to every host of the "
            "slice and starts it there.",
            True,
        )
        at = next((i for i, s in enumerate(raw_steps) if _kind(s[0], s[1], spec.device) == "cleanup"), len(raw_steps))
        raw_steps.insert(at, extra)
    est = spec.est
    if est is not None and est.procurement not in (None, "", "on-demand", "spot"):
        # a count beyond on-demand quota: the step that obtains it leads, as recommend shows it (capacity.setup_step)
        title, text = capacity.setup_step(est.procurement or "", est.count * (est.replicas or 1), est.accelerator,
                                          float((est.capacity or {}).get("term_hours") or 0.0))
        raw_steps.insert(0, (title, [], text, True))
    if spec.plan.scheduled and "kubernetes" not in spec.path.artefacts:
        at = next((i for i, s in enumerate(raw_steps) if _kind(s[0], s[1], spec.device) == "cleanup"), len(raw_steps))
        raw_steps[at:at] = _schedule_steps(spec, cmds)
    if "Dockerfile" in files and train_model_id(spec) and any("ai custom-jobs create" in c for c in cmds):
        at = next(i for i, st in enumerate(raw_steps) if any("ai custom-jobs create" in c for c in st[1]))
        raw_steps.insert(at, _hf_secret_step())
    steps: list[Step] = []
    seen: set[str] = set()

    def make(title: str, raw: list[str], note: str | None, added: bool, values: Mapping[str, str] = literal) -> Step:
        rewritten = _rewrite(spec, raw)
        kind = _kind(title, rewritten, spec.device, spec.profile.task)
        base = "train" if added and "train.py" in title else re.sub(r"[^a-z0-9]", "", title.split()[0].lower()) if title.split() else "step"
        key = base or "step"
        suffix = 2
        while key in seen or key.isdigit():
            key = f"{base}{suffix}"
            suffix += 1
        seen.add(key)
        filled = [fill_command(c, values, shell) for c in rewritten]
        return Step(
            key, title, filled, note, kind, _needs(filled), added, remote=title in on_instance, blocks=title in until_stopped
        )

    for title, raw, note, added in raw_steps:
        steps.append(make(title, raw, note, added))
    remote = [s for s in steps if s.remote]
    row = remote_row([c for s in steps for c in s.commands])
    nodes = int(spec.values.get("max_nodes") or 1) if row is not None and not row.get("one_replica") else 1
    # a training over several machines starts its train step on every one of them at once (torchrun's rendezvous on the
    # first: the row's ``head``), where the row reaches them all (``hosts``) or says how (``several``)
    several = spec.training and nodes > 1
    together = several and row is not None and ("hosts" in row or "several" in row)
    names = [s.key for s in remote if s.kind == "auto" and (together or not (several and s.key.startswith("train")))]
    if names and row is not None:  # reach the launched machine and run its steps there, with this setup.sh
        carried = [v for v in _carried(remote, spec.training and "train.py" in files and train_model_id(spec) is not None)
                   if not (together and v == RENDEZVOUS)]  # set for each machine by the step, never the workstation's
        run = "./setup.sh " + " ".join(names)
        reach = _reach(row, nodes, together, bool(carried and row.get("carries") == "stdin"))
        machines = f"the {nodes} {row['machines']}" if nodes > 1 and "machines" in row else row["machine"]
        note = (f"Steps {', '.join(names)} run on the machine the steps before launched, not here: this copies the directory "
                f"there and runs them with its setup.sh"
                + (f", with this workstation's {', '.join(carried)} (those set)" if carried else "") + f". {row['note']}")
        if together:
            note += (f" The training spans {nodes} machines: each installs the stack and starts train.py at once, and "
                     "torchrun meets at the first one's private address (MASTER_ADDR), so the machines must reach each "
                     "other (the launch step's network); torchrun waits for all of them.")
        elif nodes > 1 and "hosts" in row:
            note += f" The configuration has {nodes} machines: this runs them on each at once."
        elif nodes > 1:
            note += (f" The configuration has {nodes} machines and this reaches the first: copy the directory to each of the "
                     f"others and run ./setup.sh {' '.join(names)} there.")
        trains = [n for n in names if n.startswith("train")]
        hop = make(f"Run steps {', '.join(names)} on {machines}", reach, note, True, {
            **literal, "remote_steps": " ".join(names), "train_steps": " ".join(trains),
            "install_steps": " ".join(n for n in names if n not in trains),
        })
        if carried and row.get("carries") == "stdin":  # the settings those steps read, on stdin (never on a command line)
            hop.commands = [_remote_env(carried), *hop.commands]
        elif carried and row.get("carries") == "file":  # in a file only its user reads, copied with the directory
            copy = next(i for i, c in enumerate(hop.commands) if run not in c and " scp " in c)
            hop.commands = (
                [_remote_env(carried), f"(umask 077 && printf '%s\\n' \"$REMOTE_ENV\" > {REMOTE_ENV_FILE})"]
                + [
                    f"if ! {c}; then rm -f {REMOTE_ENV_FILE}; exit 1; fi; rm -f {REMOTE_ENV_FILE}" if i == copy
                    else c.replace(run, f"set -a && . ./{REMOTE_ENV_FILE} && set +a && rm -f {REMOTE_ENV_FILE} && {run}")
                    for i, c in enumerate(hop.commands)
                ]
            )
        hop.runs = tuple(names)
        hop.blocks = any(s.blocks for s in remote if s.key in names)
        # what those steps stop without, asked for here, before the machine is reached
        # (never REMOTE_ENV, which the step sets; nor MASTER_ADDR of a training over several, which it sets on each)
        theirs = [v for s in remote if s.key in names for v in s.needs if not (together and v == RENDEZVOUS)]
        hop.needs = list(dict.fromkeys([v for v in hop.needs if v != "REMOTE_ENV"] + theirs))
        steps.insert(steps.index(remote[0]), hop)
    return steps


def _reach(row: Mapping[str, Any], nodes: int, together: bool, stdin: bool) -> list[str]:
    """The commands of the step that reaches the launched machines (rules/provisioning.yaml ``remote`` row ``row``) and
    runs the steps there (``./setup.sh {remote_steps}``): on the one machine (``commands``), on every machine
    (``hosts`` and ``each``: the directory to each, then the steps on all at once, each run waited for), or the row's
    own way for a training over several (``several``). ``together``: a training over several machines, whose train
    step meets at the first (MASTER_ADDR); ``stdin``: the settings go to each machine on its SSH session's stdin (REMOTE_ENV)."""
    run = "./setup.sh {remote_steps}"
    if "hosts" not in row:
        cmds = [str(c) for c in (row["several"] if together else row["commands"])]
        if not stdin:
            return cmds
        return [f"printf '%s\\n' \"$REMOTE_ENV\" | {c.replace(run, 'set -a && . /dev/stdin && set +a && ' + run)}"
                if run in c else c for c in cmds]
    env = "set -a && . /dev/stdin && set +a && " if stdin else ""
    *copy, start = (str(c) for c in row["each"])
    assert run in start, f"the last `each` command of a row runs {run}"
    start = start.replace(run, env + (f"{RENDEZVOUS}=$HEAD " if together else "") + run)
    if stdin:
        start = f"printf '%s\\n' \"$REMOTE_ENV\" | {start}"
    found = 'if [[ ${#HOSTS[@]} -eq 0 || -z "${HOSTS[0]}" ]]; then echo "setup.sh: no machine of this setup is running" >&2; exit 1; fi'
    out = [*(str(c) for c in row["hosts"]), found, *([str(row["head"])] if together else [])]
    if nodes == 1:
        return [*out, 'for HOST in "${HOSTS[@]}"; do ' + "; ".join([*copy, start]) + "; done"]
    return [
        *out,
        'for HOST in "${HOSTS[@]}"; do ' + "; ".join(copy) + "; done",
        'PIDS=(); for HOST in "${HOSTS[@]}"; do ' + start + ' & PIDS+=("$!"); done; for PID in "${PIDS[@]}"; do wait "$PID"; done',
    ]


def _remote_env(names: list[str]) -> str:
    """REMOTE_ENV: NAME=value lines (printf %q, for the machine's shell to read) of the settings among ``names`` that
    are set on this workstation."""
    lines = "; ".join(f'if [[ -n "${{{v}:-}}" ]]; then printf \'{v}=%q\\n\' "${v}"; fi' for v in names)
    return f"REMOTE_ENV=$({lines})"


def _carried(steps: list[Step], loads_model: bool = False) -> list[str]:
    """The settings of setup.sh that ``steps`` read (its variables and the ones they ask for), sorted; HF_TOKEN too where
    they load a Hugging Face model (MODEL_ID, or ``loads_model``: train.py's own model id), for a gated one."""
    defined = set(SHELL_VARS.values())
    used = {v for s in steps for c in s.commands for v in _VAR.findall(c) if v in defined}
    out = used | {v for s in steps for v in s.needs}
    if "MODEL_ID" in out or loads_model:  # the machine loads the model by id: a gated one needs the token, where set
        out.add("HF_TOKEN")
    return sorted(out)


def _needs(filled: list[str]) -> list[str]:
    """The settings a step's commands read that setup.sh does not define, the step does not set itself and no expansion
    gives a default."""
    assigned = {m for c in filled for m in re.findall(r"^([A-Z][A-Z0-9_]*)=", c, re.M)}
    assigned |= {m for c in filled for m in _DEFAULTED.findall(c)}
    assigned |= {m.group(1) for c in filled if (m := _GUARDED.fullmatch(c.strip()))}
    assigned |= {m for c in filled for m in re.findall(r"\b(?:mapfile\s+(?:-\w+\s+)*|for\s+)([A-Z][A-Z0-9_]*)\b", c)}
    assigned |= {m for c in filled for m in re.findall(r"\bread\s+(?:-\w+\s+)*([A-Z][A-Z0-9_]*)\b", c)}
    needs: list[str] = []
    for c in filled:
        for var in _VAR.findall(c):
            if var in _AMBIENT or var in needs or var in assigned or (var in SHELL_VARS.values() and var != "PROJECT_ID"):
                continue
            needs.append(var)
    return needs


def auto_steps(steps: list[Step]) -> list[Step]:
    """The leading steps that only provision, install and launch: what ``./setup.sh`` runs. None after a step that serves
    until stopped (or runs one on the machine): it would start only once the server stops."""
    out = []
    for s in steps:
        if s.kind == "training" or s.remote:  # a serving path's optional training step; a step run on the machine
            continue
        if s.kind != "auto" or s.runs_train:
            break
        out.append(s)
        if s.blocks:
            break
    return out
