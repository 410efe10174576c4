"""setup.sh of a path that launches a machine runs the machine's steps on it, not on the workstation.

The setup path marks them ``host: instance`` (rules/setup/gpu-any-cloud.yaml); the scaffold adds a step after the
launch that copies the directory to the machine and runs them there (rules/provisioning.yaml ``remote``). These tests
run the generated script with every tool it calls replaced by a stub that records its arguments.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

PROFILES = ROOT / "tests" / "data" / "scaffold"
# the tools the generated steps call, on the workstation or on the machine
TOOLS = ("aws", "az", "gcloud", "ssh", "scp", "curl", "salloc", "srun", "squeue", "scancel", "scontrol",
         "nvidia-smi", "pip", "python3", "torchrun", "tensorboard", "vllm", "kubectl", "git")


def _scaffold(tmp_path: Path, profile: Path, *extra: str) -> Path:
    out = tmp_path / "out"
    r = run_cli("scaffold", str(profile), "-o", str(out), *extra)
    assert r.code == 0, r.err
    return out / "setup.sh"


def _run(tmp_path: Path, setup: Path, *args: str, _hook: str = "", **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run setup.sh with every tool stubbed: each call appends 'tool args' to a log and prints 'i-0abc' (``_hook``: bash
    each stub runs first, with $0 the tool's path)."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    for tool in TOOLS:
        f = stubs / tool
        # what it is sent (kubectl: appended, both ends of a pipe of two calls)
        keep = f'cat {">>" if tool == "kubectl" else ">"} "{tmp_path}/{tool}.stdin"\n' if tool in ("ssh", "gcloud", "kubectl") else ""
        f.write_text(f'#!{bash}\n{_hook}\n{keep}echo "{tool} $*" >> "{log}"\necho i-0abc\n')
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    path = f"{stubs}:/usr/bin:/bin"
    r = subprocess.run([bash, str(setup), *args], capture_output=True, text=True, timeout=60,
                       env={"PATH": path, "HOME": str(tmp_path), "USER": "me", **env})
    return r, (log.read_text().splitlines() if log.exists() else [])


def _default_steps(setup: Path) -> list[str]:
    m = re.search(r'if \[\[ \$# -eq 0 \]\]; then\n    set -- (.*)\n', setup.read_text())
    assert m, "no default run in setup.sh"
    return m.group(1).split()


def test_aws_training_runs_the_machine_steps_over_ssh(tmp_path: Path) -> None:
    """Before, ./setup.sh launched the instance and then ran nvidia-smi, pip install and torchrun on the workstation."""
    setup = _scaffold(tmp_path, ROOT / "profiles" / "aws-only-team.yaml")
    assert _default_steps(setup) == ["the", "launch", "run"]
    r, calls = _run(tmp_path, setup, KEY_NAME="k", KEY_FILE="/k.pem")
    assert r.returncode == 0, r.stderr
    tools = [c.split()[0] for c in calls]
    assert not {"nvidia-smi", "pip", "python3", "torchrun"} & set(tools), calls
    assert any(c.startswith("aws ec2 run-instances ") and "--security-groups llama-13b-finetune-aws-ssh" in c for c in calls)
    assert any(c.startswith("scp -i /k.pem ") and c.endswith(" -r . ubuntu@i-0abc:llama-13b-finetune-aws") for c in calls), calls
    # train.py loads a Hugging Face model: the token, where set, goes on the session's stdin
    assert calls[-1] == ("ssh -i /k.pem ubuntu@i-0abc cd llama-13b-finetune-aws && set -a && . /dev/stdin && set +a && "
                         "./setup.sh check train")


def test_the_machine_steps_need_the_key_file(tmp_path: Path) -> None:
    setup = _scaffold(tmp_path, ROOT / "profiles" / "aws-only-team.yaml")
    r, calls = _run(tmp_path, setup, "run")
    assert r.returncode == 2 and "set KEY_FILE first" in r.stderr
    assert calls == []


def test_the_machine_steps_run_there_by_name(tmp_path: Path) -> None:
    """On the machine, ./setup.sh check train runs the commands themselves."""
    setup = _scaffold(tmp_path, ROOT / "profiles" / "aws-only-team.yaml")
    r, calls = _run(tmp_path, setup, "check", "train")
    assert r.returncode == 0, r.stderr
    # a 13B model trained in full: Megatron-LM cloned at its release and installed (setuptools first), then torchrun
    assert [c.split()[0] for c in calls] == ["nvidia-smi", "python3", "git", "pip", "pip", "torchrun"]
    assert "--branch core_v0.15.0" in calls[2]


def test_terminate_needs_no_setting_it_reads_itself(tmp_path: Path) -> None:
    """Before, the stop step said 'need IDS' (a variable it sets with read -a) and so could never run."""
    setup = _scaffold(tmp_path, ROOT / "profiles" / "aws-only-team.yaml")
    assert "need IDS" not in setup.read_text()
    r, calls = _run(tmp_path, setup, "terminate")
    assert r.returncode == 0, r.stderr
    assert [c.split()[:3] for c in calls] == [["aws", "ec2", "describe-instances"], ["aws", "ec2", "terminate-instances"],
                                              ["aws", "ec2", "wait"], ["aws", "ec2", "delete-security-group"]]


def test_a_service_default_run_does_not_terminate_it(tmp_path: Path) -> None:
    """Before, a serving profile's default run ended with the stop step: it served on the workstation, then
    terminated the instance it had launched."""
    setup = _scaffold(tmp_path, PROFILES / "sglang-aws.yaml", "--path", "gpu-any-cloud")
    assert _default_steps(setup) == ["the", "launch", "run"]
    assert re.search(r"^\s+\d+ terminate\s+.*\[deletes resources\]$", setup.read_text(), re.M)
    assert re.search(r"^\s+\d+ serve\s+Serve with SGLang \[on the machine\]$", setup.read_text(), re.M)


def test_azure_single_vm_takes_no_count(tmp_path: Path) -> None:
    """az vm create takes --count for 2 to 250 VMs only; before, one VM was created with --count 1."""
    setup = _scaffold(tmp_path, PROFILES / "azure-gpu.yaml")
    create = next(line for line in setup.read_text().splitlines() if line.strip().startswith("az vm create "))
    assert "--count" not in create
    r, calls = _run(tmp_path, setup)
    assert r.returncode == 0, r.stderr
    assert calls[-1] == "ssh azureuser@i-0abc cd azure-finetune && set -a && . /dev/stdin && set +a && ./setup.sh check train"


def test_on_prem_runs_the_steps_on_the_allocation_and_releases_it(tmp_path: Path) -> None:
    setup = _scaffold(tmp_path, PROFILES / "onprem-serving.yaml", "--path", "gpu-any-cloud")
    text = setup.read_text()
    assert _default_steps(setup) == ["the", "reserve", "run"]
    r, calls = _run(tmp_path, setup)
    assert r.returncode == 0, r.stderr
    assert calls[-1].startswith("srun --jobid=i-0abc --nodes=1 --ntasks=1 --chdir=") and calls[-1].endswith(" ./setup.sh check serve")
    assert "scancel --name=${NAME}" in text


def test_readme_says_where_each_step_runs(tmp_path: Path) -> None:
    setup = _scaffold(tmp_path, ROOT / "profiles" / "aws-only-team.yaml")
    readme = (setup.parent / "README.md").read_text()
    assert "(`./setup.sh check`; on the machine: `./setup.sh run` runs it there)" in readme
    assert "`KEY_FILE`, `KEY_NAME`" in readme
    assert "```bash\n   ```" not in readme  # a step without commands shows no empty block


@pytest.mark.skipif(os.name != "posix", reason="POSIX shell")
def test_every_machine_step_of_every_cloud_is_reached(tmp_path: Path) -> None:
    """Each launching cloud of the path has a way to reach the machine (rules/provisioning.yaml remote)."""
    for profile, extra, machine in (
        (ROOT / "profiles" / "aws-only-team.yaml", (), "the instance"),
        (PROFILES / "azure-gpu.yaml", (), "the VM"),
        (PROFILES / "onprem-serving.yaml", ("--path", "gpu-any-cloud"), "the reserved node"),
    ):
        d = tmp_path / profile.stem
        d.mkdir()
        text = _scaffold(d, profile, *extra).read_text()
        assert re.search(rf"^# \d+\. Run steps [a-z, ]+ on {machine}$", text, re.M), profile


@pytest.mark.parametrize("profile", [
    ROOT / "profiles" / "llm-chatbot.yaml",  # GKE, vLLM TPU
    ROOT / "profiles" / "text-embeddings.yaml",  # GKE, vLLM GPU
    PROFILES / "int4-serving.yaml",  # a quantized checkpoint: no precision flag
    PROFILES / "latency-tuned-serving.yaml",  # a p99 target's prefill budget
])
def test_recommend_shows_the_server_flags_the_scaffold_runs(tmp_path: Path, profile: Path) -> None:
    """The vLLM manifest recommend shows (the setup path's step) and the scaffold's k8s/ Deployment start the server
    with the same flags. Before, recommend's had neither --max-num-seqs (the batch the estimate sized a replica for) nor
    the precision's --dtype / --quantization that k8s/ passes."""
    import json

    import yaml

    r = run_cli("recommend", str(profile), "--format", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    rec = data["results"][0] if "results" in data else data
    inline = next(line for s in rec["setup"]["steps"] for c in s["commands"] for line in c.splitlines()
                  if line.strip().startswith('command: ["vllm", "serve"'))
    shown = json.loads(inline.split("command:", 1)[1])
    out = tmp_path / "out"
    assert run_cli("scaffold", str(profile), "-o", str(out)).code == 0
    docs = list(yaml.safe_load_all((out / "k8s" / "deployment.yaml").read_text()))
    deploy = next(d for d in docs if d and d.get("kind") == "Deployment")
    runs = deploy["spec"]["template"]["spec"]["containers"][0]["command"]
    assert sorted(shown) == sorted(runs), (shown, runs)


def test_the_machine_gets_the_settings_on_stdin_never_on_a_command_line(tmp_path: Path) -> None:
    """The steps on the instance read MODEL_ID (and a gated model's HF_TOKEN): the workstation's values reach the
    machine on the SSH session's stdin, %q-quoted, and the remote shell reads them before setup.sh; the token never
    appears in a command's arguments."""
    setup = _scaffold(tmp_path, PROFILES / "sglang-aws.yaml", "--path", "gpu-any-cloud")
    token = "hf_a b$c'd"
    r, calls = _run(tmp_path, setup, KEY_NAME="k", KEY_FILE="/k.pem", HF_TOKEN=token, MODEL_ID="org/other")
    assert r.returncode == 0, r.stderr
    assert not any("hf_a" in c for c in calls), calls
    assert calls[-1].endswith("set -a && . /dev/stdin && set +a && ./setup.sh check serve")
    sent = (tmp_path / "ssh.stdin").read_text()
    bash = shutil.which("bash")
    assert bash is not None
    got = subprocess.run([bash, "-c", 'set -a && . /dev/stdin && set +a && printf "%s|%s" "$MODEL_ID" "$HF_TOKEN"'],
                         input=sent, capture_output=True, text=True, timeout=30)
    assert got.stdout == f"org/other|{token}", (sent, got.stdout, got.stderr)


def test_a_jetstream_tpu_vm_waits_for_its_queued_resource_and_runs_the_vm_steps_there(tmp_path: Path) -> None:
    """Before, the reserve step opened an interactive SSH session right after queued-resources create (before the
    slice was ACTIVE) and the next steps, meant for that session, ran on the workstation from a directory they did not
    cd into (bash ../JetStream/...); the start step needed UNSCANNED_CKPT_PATH, which the conversion script only prints."""
    setup = _scaffold(tmp_path, ROOT / "tests" / "data" / "scaffold" / "jetstream-13b.yaml")
    text = setup.read_text()
    assert _default_steps(setup)[:2] == ["reserve", "run"]
    reserve = text[text.index("step_reserve() {"):text.index("\n}\n", text.index("step_reserve() {"))]
    assert "wait_active gcloud compute tpus queued-resources describe" in reserve and "tpu-vm ssh" not in reserve
    assert ('--worker=all --command="cd ${NAME} && set -a && . ./.remote-env && set +a && rm -f .remote-env && '
            './setup.sh get convert start"') in text
    start = text[text.index("step_start() {"):text.index("\n}\n", text.index("step_start() {"))]
    assert "cd ~/maxtext" in start and "UNSCANNED_CKPT_PATH=${UNSCANNED_CKPT_PATH:-" in start and "need UNSCANNED" not in start
    assert "bash ~/JetStream/jetstream/tools/maxtext/model_ckpt_conversion.sh" in text


@pytest.mark.parametrize("profile", [PROFILES / "reserved-service.yaml", ROOT / "profiles" / "frontier-pretrain-405b.yaml"])
def test_setup_leads_with_the_step_that_obtains_reserved_capacity(tmp_path: Path, profile: Path) -> None:
    """A count beyond on-demand quota is priced under a reservation: recommend's setup leads with the step that obtains
    it, and so do setup.sh and the README. Before, the scaffold dropped that step (its files began with creating the
    cluster, as if the capacity were there)."""
    import json

    r = run_cli("recommend", str(profile), "--format", "json")
    data = json.loads(r.out)
    rec = data["results"][0] if "results" in data else data
    first = rec["setup"]["steps"][0]
    assert first["title"].startswith("Obtain the capacity: "), first
    setup = _scaffold(tmp_path, profile)
    text = setup.read_text()
    assert f"# 1. {first['title']}\n" in text
    assert _default_steps(setup)[0] == "obtain"
    readme = (setup.parent / "README.md").read_text()
    assert f"1. **{first['title']}**" in readme and first["note"].split(":")[0] in readme


def test_maxtext_steps_run_from_the_checkout_whichever_runs_alone(tmp_path: Path) -> None:
    """XPK puts the directory it runs from into the workload's image, so the workload is created from the MaxText
    checkout; each step enters it in a subshell (a step run alone, or after another, starts beside setup.sh) and the
    clone is made once. Before, the build step's cd maxtext was the only one: ./setup.sh run alone built the workload
    from setup.sh's own directory, and a second ./setup.sh failed on git clone."""
    setup = _scaffold(tmp_path, ROOT / "profiles" / "llm-pretrain-70b.yaml")
    text = setup.read_text()
    build = text[text.index("step_build() {"):text.index("\n}\n", text.index("step_build() {"))]
    run = text[text.index("step_run() {"):text.index("\n}\n", text.index("step_run() {"))]
    assert "[[ -d maxtext ]] || git clone --branch maxtext-v0.2.4" in build
    assert "(cd maxtext && bash src/dependencies/scripts/docker_build_dependency_image.sh" in build
    assert "(cd maxtext && xpk workload create " in run and run.rstrip().endswith(')')


def test_training_on_the_instance_gets_the_token_and_a_default_is_no_setting(tmp_path: Path) -> None:
    """train.py loads a Hugging Face model by id (a gated one needs HF_TOKEN): the step that reaches the machine sends
    the token where set; and a variable a command reads with a default of its own (${TRITON_TAG:-25.04}) is not a
    setting the step stops without."""
    setup = _scaffold(tmp_path, ROOT / "profiles" / "aws-only-team.yaml")
    run = setup.read_text().split("step_run() {", 1)[1].split("\n}\n", 1)[0]
    assert "printf 'HF_TOKEN=%q\\n'" in run
    triton = _scaffold(tmp_path / "t", PROFILES / "diffusion-triton.yaml")
    assert "need TRITON_TAG" not in triton.read_text() and "${TRITON_TAG:-25.04}" in triton.read_text()


def _several(tmp_path: Path) -> Path:
    """aws-only-team as a 70B pre-train: several p5-class instances."""
    profile = tmp_path / "multi.yaml"
    profile.write_text((ROOT / "profiles" / "aws-only-team.yaml").read_text()
                       .replace("params_b: 13", "params_b: 70").replace("tokens_b: 2", "tokens_b: 400")
                       .replace("deadline_hours: 72", "deadline_hours: 240").replace("budget_usd: 5000", "budget_usd: 5000000"))
    return profile


# the stubbed clouds list three machines: AWS's describe-instances, Azure's az vm list (name, address; NAME10 after NAME9)
_THREE = ('if [[ "$*" == *PublicDnsName* ]]; then printf "h0\\th1\\th2\\n"; echo "aws $*" >> "$(dirname "$0")/../calls.log"; exit 0; fi; '
          'if [[ "$*" == *"vm list"*publicIps* ]]; then printf "n10\\th10\\nn9\\th9\\nn0\\th0\\n"; exit 0; fi; '
          'if [[ "$*" == *"vm list"*privateIps* ]]; then printf "n10\\t10.0.0.10\\nn0\\t10.0.0.4\\n"; exit 0; fi; '
          'if [[ "$*" == *"vm list"* ]]; then printf "n0\\nn1\\n"; exit 0; fi')


def test_a_training_of_several_instances_runs_on_every_one_of_them(tmp_path: Path) -> None:
    """64 p5-class instances are launched: the step that reaches them copies the directory to each, installs the stack
    and starts train.py on all of them at once, torchrun meeting at the first one's private address. Before, only the
    first was set up and nothing trained (or torchrun --standalone on one of them, the others billed and idle)."""
    setup = _scaffold(tmp_path, _several(tmp_path))
    text = setup.read_text()
    hosts = int(re.search(r"hosts=(\d+)", text).group(1))  # type: ignore[union-attr]
    assert hosts > 1, "the profile must need several instances"
    assert re.search(rf"run-instances .*--count {hosts} ", text)
    assert f"torchrun --nnodes={hosts} --rdzv-backend=c10d --rdzv-endpoint=\"$MASTER_ADDR:29400\"" in text
    assert "--standalone" not in text.split("step_train() {", 1)[1].split("\n}\n", 1)[0]
    r, calls = _run(tmp_path, setup, "run", KEY_FILE="/k.pem", _hook=_THREE)
    assert r.returncode == 0, r.stderr
    copies = [c for c in calls if c.startswith("scp ")]
    runs = [c for c in calls if c.startswith("ssh ")]
    assert [c.split()[-1] for c in copies] == ["ubuntu@h0:llama-13b-finetune-aws", "ubuntu@h1:llama-13b-finetune-aws",
                                               "ubuntu@h2:llama-13b-finetune-aws"], calls
    assert sorted(c.split()[3] for c in runs) == ["ubuntu@h0", "ubuntu@h1", "ubuntu@h2"], calls
    # every machine meets at the first one's private address (the stub answers i-0abc), never the workstation's setting
    assert all(c.endswith("MASTER_ADDR=i-0abc ./setup.sh check train") for c in runs), runs
    # the train step run alone on a machine asks for the rendezvous
    (tmp_path / "alone").mkdir()
    r, calls = _run(tmp_path / "alone", setup, "train")
    assert r.returncode == 2 and "set MASTER_ADDR first" in r.stderr and calls == []
    # the security group admits traffic between the instances (rendezvous, NCCL)
    assert "--protocol -1 --source-group ${NAME}-ssh" in text


def test_azure_vms_get_their_driver_and_several_are_reached_by_their_names(tmp_path: Path) -> None:
    """Ubuntu2204 has no NVIDIA driver: the create step installs the NVIDIA GPU Driver extension on every VM of the
    group (before, on NAME0 only). Several VMs of one az vm create are named NAME0, NAME1, ...: every one is reached,
    in that order (NAME10 after NAME9)."""
    one = _scaffold(tmp_path / "one", PROFILES / "azure-gpu.yaml")
    r, calls = _run(tmp_path / "one", one, "create", _hook=_THREE)
    assert r.returncode == 0, r.stderr
    assert [c.split("--vm-name ")[1].split()[0] for c in calls if "extension set" in c] == ["n0", "n1"]
    profile = tmp_path / "serve.yaml"
    profile.write_text("name: aks-big\ntask: inference\ndomain: llm\nmodel: {params_b: 8, precision: bf16, "
                       "hf_id: meta-llama/Llama-3.1-8B-Instruct}\ninference: {peak_qps: 40, input_tokens: 1024, "
                       "output_tokens: 256}\nsoftware: {serving_stack: vllm}\ndeployment: {clouds: [azure]}\n")
    several = _scaffold(tmp_path / "several", profile, "--path", "gpu-any-cloud")
    assert re.search(r"az vm create .* --count [2-9]", several.read_text())
    r, calls = _run(tmp_path / "several", several, "run", _hook=_THREE)
    assert r.returncode == 0, r.stderr
    assert [c.split()[-1] for c in calls if c.startswith("scp ")] == ["azureuser@h0:aks-big", "azureuser@h9:aks-big",
                                                                        "azureuser@h10:aks-big"], calls
    assert sorted(c.split()[1] for c in calls if c.startswith("ssh ")) == ["azureuser@h0", "azureuser@h10", "azureuser@h9"]
    assert "MASTER_ADDR" not in several.read_text()  # replicas of a service, not one training


def test_a_training_over_several_slurm_nodes_installs_once_and_trains_on_all(tmp_path: Path) -> None:
    """On-prem Slurm: the stack goes once onto the shared file system, then train runs on every node of the allocation
    (one task each) with the first node as the rendezvous."""
    profile = tmp_path / "onprem.yaml"
    profile.write_text(_several(tmp_path).read_text().replace("clouds: [aws]", "clouds: [on-prem]"))
    setup = _scaffold(tmp_path, profile, "--path", "gpu-any-cloud")
    text = setup.read_text()
    hosts = int(re.search(r"hosts=(\d+)", text).group(1))  # type: ignore[union-attr]
    assert hosts > 1, text[:400]
    r, calls = _run(tmp_path, setup, "run")
    assert r.returncode == 0, r.stderr
    sruns = [c for c in calls if c.startswith("srun ")]
    assert sruns[0].startswith("srun --jobid=i-0abc --nodes=1 --ntasks=1 ") and sruns[0].endswith("./setup.sh check")
    assert f"--nodes={hosts} --ntasks-per-node=1" in sruns[1] and sruns[1].endswith("env MASTER_ADDR=i-0abc ./setup.sh train")


def test_no_step_is_run_after_a_server_that_runs_until_stopped(tmp_path: Path) -> None:
    """The hop runs JetStream's server in the foreground on the TPU VM: a step after it would start only once the server
    stops. Before, ./setup.sh without arguments ran reserve, run and send, and send (a test request to the server)
    never ran while the server served (rules/setup: ``until_stopped``)."""
    setup = _scaffold(tmp_path, PROFILES / "jetstream-13b.yaml")
    assert _default_steps(setup) == ["reserve", "run"]
    listing = setup.read_text()
    assert re.search(r"\n     6 send +Send a test request\n", listing), listing
    readme = (setup.parent / "README.md").read_text()
    assert "./setup.sh send" in readme


def test_every_host_of_a_tpu_slice_gets_the_settings_in_a_file_only_its_user_reads(tmp_path: Path) -> None:
    """gcloud ... tpu-vm ssh --worker=all reaches every host of a slice at once, and one stdin reaches one of them: the
    settings travel in .remote-env (mode 600) with the directory, each host reads and deletes it, and the workstation's
    copy is gone after the copy, whether it worked or not. The session's command names the file, not the values."""
    setup = _scaffold(tmp_path, PROFILES / "jetstream-13b.yaml")
    work = setup.parent
    # the stub of gcloud keeps what the copy sent: the file's mode and content while scp runs
    hook = (f'if [[ "$3 $4" == "tpu-vm scp" && -f .remote-env ]]; then stat -c %a .remote-env > "{tmp_path}/mode"; '
            f'cp .remote-env "{tmp_path}/sent"; fi')
    project = "p q$r'1"
    r, calls = _run(tmp_path, setup, "run", _hook=hook, PROJECT_ID=project)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "mode").read_text().strip() == "600"
    assert not (work / ".remote-env").exists()
    assert calls[-1].endswith("--command=cd jetstream-llama2-13b && set -a && . ./.remote-env && set +a && "
                              "rm -f .remote-env && ./setup.sh get convert start")
    bash = shutil.which("bash")
    assert bash is not None
    got = subprocess.run([bash, "-c", f'set -a && . "{tmp_path}/sent" && set +a && printf "%s" "$PROJECT_ID"'],
                         capture_output=True, text=True, timeout=30)
    assert got.stdout == project, got
    # a failed copy leaves no file behind either
    (tmp_path / "sent").unlink()
    fail = 'if [[ "$3 $4" == "tpu-vm scp" ]]; then exit 1; fi'
    r, calls = _run(tmp_path, setup, "run", _hook=fail, PROJECT_ID=project)
    assert r.returncode != 0 and not (work / ".remote-env").exists()


def test_the_hugging_face_token_is_never_a_command_argument(tmp_path: Path) -> None:
    """kubectl create secret --from-literal=hf_api_token=$HF_TOKEN put the token in kubectl's arguments (ps on the
    workstation), and huggingface-cli login --token $HF_TOKEN put it in gcloud's and the TPU hosts' (the seed's v5e
    route): the token now reaches kubectl on its stdin and the TPU hosts as the Hub library's token file."""
    token = "hf_s3cret value"
    gke = _scaffold(tmp_path / "gke", ROOT / "profiles" / "llm-chatbot.yaml")
    step = re.search(r"step_([a-z0-9]+)\(\) \{\n  step '[^']*Hugging Face token'", gke.read_text())
    assert step, "no step stores the token"
    r, calls = _run(tmp_path, gke, step.group(1), PROJECT_ID="p", HF_TOKEN=token)
    assert r.returncode == 0, r.stderr
    assert not any("s3cret" in c for c in calls), calls
    assert token in (tmp_path / "kubectl.stdin").read_text()
    assert any(c.startswith("kubectl create secret generic hf-secret --from-file=hf_api_token=/dev/stdin") for c in calls)
    tpu = _scaffold(tmp_path / "tpu", ROOT / "profiles" / "llama3-8b-lora.yaml")
    hook = f'if [[ "$3 $4" == "tpu-vm scp" ]]; then stat -c %a .hf-token > "{tmp_path}/mode"; cp .hf-token "{tmp_path}/tok"; fi'
    r, calls = _run(tmp_path, tpu, "install", _hook=hook, PROJECT_ID="p", HF_TOKEN=token)
    assert r.returncode == 0, r.stderr
    assert not any("s3cret" in c for c in calls), calls
    assert (tmp_path / "tok").read_text() == token and (tmp_path / "mode").read_text().strip() == "600"
    assert any(c.startswith("gcloud compute tpus tpu-vm scp .hf-token ") and ":.cache/huggingface/token " in c for c in calls)
    assert not (tpu.parent / ".hf-token").exists()
    # without a token (a model that is not gated) the step runs and copies nothing
    (tmp_path / "calls.log").unlink()
    r, calls = _run(tmp_path, tpu, "install", PROJECT_ID="p")
    assert r.returncode == 0, r.stderr
    assert not any("huggingface/token" in c for c in calls)


def test_a_service_priced_for_part_of_the_day_gets_a_pool_that_empties(tmp_path: Path) -> None:
    """Priced at 12 h a day, the AKS GPU pool was created with a fixed --node-count and no autoscaler, so scaling the
    Deployment to 0 left the VMs billed (twice the priced cost), while the README said the pool autoscales to zero. On
    EKS a managed node group does not shrink without the Cluster Autoscaler or Karpenter: the README says so."""
    aks = _scaffold(tmp_path / "aks", PROFILES / "aks-12h.yaml")
    add = next(line for line in aks.read_text().splitlines() if "az aks nodepool add" in line)
    assert "--enable-cluster-autoscaler --min-count 0 --max-count 7" in add, add
    readme = (aks.parent / "README.md").read_text()
    assert "cluster autoscaler (minimum 0 nodes)" in readme
    text = (PROFILES / "aks-12h.yaml").read_text().replace("clouds: [azure]", "clouds: [aws]").replace("eastus2", "us-east-1")
    (tmp_path / "eks.yaml").write_text(text)
    eks = _scaffold(tmp_path / "eks", tmp_path / "eks.yaml")
    create = next(line for line in eks.read_text().splitlines() if "eksctl create cluster" in line)
    assert "--nodes-min=0" in create, create
    readme = (eks.parent / "README.md").read_text()
    assert "autoscales to zero" not in readme and "Cluster Autoscaler or Karpenter" in readme
    assert "eksctl scale nodegroup" in (eks.parent / "k8s" / "schedule.yaml").read_text()


def test_the_step_that_reaches_the_machines_stops_when_none_runs(tmp_path: Path) -> None:
    """No instance found (launched elsewhere, or terminated): the step says so and fails, never 'done' with no machine
    reached."""
    setup = _scaffold(tmp_path, _several(tmp_path))
    # describe-instances answers nothing (review 30: "aws ec2 wait" then failed on an empty --instance-ids, exit 252)
    r, calls = _run(tmp_path, setup, "run", KEY_FILE="/k.pem", _hook='if [[ "$1" == "ec2" ]]; then echo; exit 0; fi')
    assert r.returncode == 1 and "no instance named ${NAME}" not in r.stderr and "is running in" in r.stderr, r.stderr
    assert not any(c.startswith(("ssh ", "scp ")) for c in calls)
    # Azure: no VM listed
    profile = tmp_path / "az.yaml"
    profile.write_text(_several(tmp_path).read_text().replace("clouds: [aws]", "clouds: [azure]"))
    az = _scaffold(tmp_path / "az", profile, "--path", "gpu-any-cloud")
    r, calls = _run(tmp_path / "az", az, "run", _hook='if [[ "$1" == "vm" ]]; then exit 0; fi')
    assert r.returncode == 1 and "no machine of this setup is running" in r.stderr, r.stderr


def test_gcp_vm_training_over_several_vms_creates_and_trains_on_each(tmp_path: Path) -> None:
    """A training priced on 16 Compute Engine VMs (research-custom-cuda: 128 x B200, 16 x a4-highgpu-8g): before,
    setup.sh created one VM and ran torchrun --standalone on its 8 GPUs."""
    setup = _scaffold(tmp_path, ROOT / "profiles" / "research-custom-cuda.yaml", "--path", "gpu-vm-pytorch")
    text = setup.read_text()
    assert "creates one VM of that shape" not in text
    r, calls = _run(tmp_path, setup, PROJECT_ID="p")
    assert r.returncode == 0, r.stderr
    vms = [f"hybrid-ssm-research-prototype-{i}" for i in range(16)]
    [create] = [c for c in calls if c.startswith("gcloud compute instances create ")]
    assert create.split()[4:20] == vms and "--machine-type=a4-highgpu-8g" in create
    for verb in ("scp train.py", "ssh"):
        reached = [c.split()[3 if verb == "ssh" else 4].rstrip(":") for c in calls if c.startswith(f"gcloud compute {verb} ")]
        assert sorted(set(reached)) == sorted(vms), (verb, reached)
    trains = [c for c in calls if "torchrun" in c]
    assert len(trains) == 16 and {c.split()[3] for c in trains} == set(vms)
    # each meets at the first VM's internal address (the stub answers i-0abc), none alone
    assert all("--nnodes=16 " in c and "--rdzv-endpoint=i-0abc:29400 " in c and "--standalone" not in c for c in trains)
    assert any(c.startswith("gcloud compute instances describe hybrid-ssm-research-prototype-0 ") for c in calls)
    r, calls = _run(tmp_path, setup, "delete", PROJECT_ID="p")
    assert r.returncode == 0 and calls[-1].split()[4:20] == vms


def test_gcp_vm_training_on_one_vm_keeps_its_name(tmp_path: Path) -> None:
    setup = _scaffold(tmp_path, ROOT / "profiles" / "gpt2-8gpu-day.yaml", "--path", "gpu-vm-pytorch")
    text = setup.read_text()
    assert "{0.." not in text and "torchrun --standalone" in text and "PIDS" not in text


def test_vertex_ai_training_over_several_machines_has_a_worker_pool_of_the_others(tmp_path: Path) -> None:
    """A Vertex AI custom job priced on 16 x a4-highgpu-8g, flex-start: before, job.yaml asked for one replica on demand
    and the container ran torchrun --standalone."""
    out = tmp_path / "out"
    r = run_cli("scaffold", str(ROOT / "profiles" / "research-custom-cuda.yaml"), "-o", str(out), "--path", "vertex-ai-gpu")
    assert r.code == 0, r.err
    import yaml

    sh = (out / "setup.sh").read_text()
    body = re.search(r"cat > job.yaml <<EOF\n(.*?)\nEOF\n", sh, re.S)
    assert body
    job = yaml.safe_load(body.group(1))
    pools = job["workerPoolSpecs"]
    assert [p["replicaCount"] for p in pools] == [1, 15]
    assert pools[0]["machineSpec"] == pools[1]["machineSpec"] and pools[0]["containerSpec"] == pools[1]["containerSpec"]
    assert job["scheduling"]["strategy"] == "FLEX_START"  # the kind it was priced at
    docker = (out / "Dockerfile").read_text()
    assert "--standalone" not in docker and "CLUSTER_SPEC" in docker
    # the container's launch: torchrun over every replica of CLUSTER_SPEC, meeting at the primary
    import json

    entry = json.loads(docker.split("ENTRYPOINT ", 1)[1])
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "torchrun").write_text('#!/bin/sh\necho "$@"\n')
    (stub / "torchrun").chmod(0o755)
    spec = {"cluster": {"workerpool1": [f"w-{i}:2222" for i in range(15)], "workerpool0": ["primary-0:2222"]},
            "task": {"type": "workerpool1", "index": 3}}
    ran = subprocess.run(entry, capture_output=True, text=True, timeout=30,
                         env={"PATH": f"{stub}:{os.environ['PATH']}", "CLUSTER_SPEC": json.dumps(spec), "CLOUD_ML_JOB_ID": "7"})
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["--nnodes=16", "--rdzv-backend=c10d", "--rdzv-endpoint=primary-0:29400", "--rdzv-id=7",
                                  "--rdzv-conf=join_timeout=1800", "--nproc-per-node=gpu", "train.py"]


def test_vertex_ai_training_on_one_machine_keeps_its_launch(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_cli("scaffold", str(ROOT / "profiles" / "gpt2-8gpu-day.yaml"), "-o", str(out), "--path", "vertex-ai-gpu")
    assert r.code == 0, r.err
    assert "--standalone" in (out / "Dockerfile").read_text() and "replicaCount: 1" in (out / "setup.sh").read_text()
    assert (out / "setup.sh").read_text().count("machineSpec:") == 1
