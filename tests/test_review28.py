"""Review 28: a fresh expert's profiles (residency pins, a startup on Spot, a region typo): what the verdict and the
setup files do with a pin nothing can meet."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import run_cli

_TRAIN = "name: {name}\ntask: training\nmodel: {{params_b: 8}}\ntraining: {{tokens_b: 1}}\ndeployment: {dep}\n"


def _write(tmp: Path, name: str, dep: str) -> Path:
    f = tmp / f"{name}.yaml"
    f.write_text(_TRAIN.format(name=name, dep=dep))
    return f


def test_a_pin_to_regions_of_clouds_the_profile_does_not_allow_is_an_input_error(tmp_path: Path) -> None:
    """clouds [aws] pinned to europe-west4 (a Google Cloud region): nothing may run. Before, the verdict was the
    'closest' b200 x 8,192 on AWS in us-east-1, and scaffold wrote files for it (REGION=us-east-1, 1,024 instances)."""
    f = _write(tmp_path, "aws-eu", "{clouds: [aws], regions: [europe-west4]}")
    for cmd in ("recommend", "scaffold"):
        args = [cmd, str(f)] + (["-o", str(tmp_path / "out")] if cmd == "scaffold" else [])
        r = run_cli(*args)
        assert r.code == 2, (cmd, r.out)
        assert f"{f}:5:" in r.err and "europe-west4 (gcp): none is a region of deployment.clouds (aws)" in r.err
    assert not (tmp_path / "out").exists()
    # a region of one of the listed clouds is fine
    ok = _write(tmp_path, "aws-eu2", "{clouds: [gcp, aws], regions: [europe-west4]}")
    assert run_cli("recommend", str(ok)).code == 0


def test_a_region_of_no_cloud_is_an_input_error_with_the_nearest(tmp_path: Path) -> None:
    f = _write(tmp_path, "nowhere", "{clouds: [gcp], regions: [europewest4]}")
    r = run_cli("recommend", str(f))
    # it has Azure's form: a region of Azure, which the profile does not allow, with the nearest known id
    assert r.code == 2 and "europewest4 (azure, unknown; did you mean 'europe-west4'?): none is a region of" in r.err, r.err


def test_an_unknown_region_is_said_and_nothing_is_set_up_there(tmp_path: Path) -> None:
    """europe-west44 (a typo) has Google Cloud's form: the verdict says the advisor does not know it, with the nearest,
    and scaffold writes nothing for a configuration no cloud offers there. Before, setup.sh said ZONE=europe-west44-a."""
    f = _write(tmp_path, "typo", "{clouds: [gcp], regions: [europe-west44]}")
    d = json.loads(run_cli("recommend", str(f), "--format", "json").out)
    assert any("europe-west44 is not a region the advisor knows" in w and "did you mean 'europe-west4'?" in w for w in d["warnings"])
    r = run_cli("scaffold", str(f), "-o", str(tmp_path / "out"))
    assert r.code == 2 and "cannot be obtained" in r.err and "not offered in europe-west44" in r.err
    assert not (tmp_path / "out").exists()


_EMBED = """name: embed-nightly
task: inference
domain: nlp
model: {params_b: 0.335, precision: bf16, family: bert-large, hf_id: BAAI/bge-large-en-v1.5}
inference: {mode: batch, requests_per_day: 2000000000, window_hours: 24, input_tokens: 512, output_tokens: 0}
software: {framework: pytorch, serving_stack: vllm}
deployment: {clouds: [gcp]}
goal: {optimize: cost}
"""


def test_an_encoder_family_caps_the_server_length_at_its_positions(tmp_path: Path) -> None:
    """BERT-large has 512 learned positions: vLLM refuses a longer --max-model-len. Before, the p99 length of a
    512-token mean (2,356) was passed, and the server could not start; and the README said the replicas were sized for
    '1 requests/s at peak' where the job is 2 billion requests a day within 24 h."""
    f = tmp_path / "embed.yaml"
    f.write_text(_EMBED)
    out = tmp_path / "out"
    r = run_cli("scaffold", str(f), "-o", str(out))
    assert r.code == 0, r.err
    files = [p.read_text() for p in out.rglob("*") if p.is_file()]
    assert any("--max-model-len=512" in t for t in files)
    assert not any("--max-model-len=2356" in t or "--max-model-len 2356" in t for t in files)
    readme = (out / "README.md").read_text()
    assert "2,000,000,000 requests a day within 24 h" in readme and "1 requests/s at peak" not in readme


_VIDEO = """name: wan-like-video
task: inference
domain: diffusion
model: {params_b: 14, architecture: diffusion, precision: bf16, flops_per_sample: 8.0e+15}
inference: {mode: online, peak_qps: 0.2, steps: 50, width: 1280, height: 720, frames: 81, latency_p99_ms: 600000,
            classifier_free_guidance: true}
deployment: {clouds: [gcp]}
"""


def test_a_video_request_is_split_over_its_replicas_gpus(tmp_path: Path) -> None:
    """A diffusion transformer's request is split by its latent tokens over the GPUs of one NVLink domain (Ulysses
    sequence parallelism, Wan2.1's --ulysses_size). Before, a profile that gave model.flops_per_sample, or whose width
    was approximated from params_b (41 'heads', a prime), took as long on 8 H100 as on one (899 s)."""
    f = tmp_path / "video.yaml"
    f.write_text(_VIDEO)
    lat = {}
    for n in (1, 8):
        d = json.loads(run_cli("estimate", str(f), "-a", "h100", "-n", str(n), "--format", "json").out)
        lat[n] = d["latency_ms"]
    assert lat[8] < lat[1] / 5, lat
    d = json.loads(run_cli("estimate", str(f), "-a", "h100", "-n", "8", "--format", "json").out)
    assert d["assumptions"]["memory"]["sequence_parallel"]["chips_per_request"] == 8


def test_an_autoscaled_tpu_node_pool_starts_at_its_floor(tmp_path: Path) -> None:
    """Before: --num-nodes=1 --enable-autoscaling --min-nodes=2 (a pool created under its own minimum)."""
    f = tmp_path / "chat.yaml"
    f.write_text("name: eu-chat\ntask: inference\ndomain: llm\nmodel: {params_b: 8, precision: bf16, hf_id: "
                 "meta-llama/Llama-3.1-8B-Instruct}\ninference: {peak_qps: 60, input_tokens: 1024, output_tokens: 256, "
                 "min_replicas: 2}\nsoftware: {framework: jax, serving_stack: vllm}\ndeployment: {clouds: [gcp], "
                 "accelerators: [tpu-v6e]}\n")
    out = tmp_path / "out"
    assert run_cli("scaffold", str(f), "-o", str(out)).code == 0
    import re

    pools = [ln for ln in (out / "setup.sh").read_text().splitlines() if "node-pools create" in ln and "--enable-autoscaling" in ln]
    assert pools, "an autoscaled pool"
    for ln in pools:
        start = int(re.search(r"--num-nodes=(\d+)", ln).group(1))  # type: ignore[union-attr]
        floor = int(re.search(r"--min-nodes=(\d+)", ln).group(1))  # type: ignore[union-attr]
        assert start >= floor, ln


def test_a_maxtext_mixture_of_experts_gets_its_experts_width(tmp_path: Path) -> None:
    """MaxText at the pinned maxtext-v0.2.4 stops a model with num_experts > 1 whose base_moe_mlp_dim is not positive
    (types.py, its default -1), and one of MoE layers only whose base_mlp_dim differs from it. Before, the command gave
    neither: a 1T MoE (384 experts, top 8, 32B active) did not start. Now both are the routed expert's width from the
    model's totals (2,048, Kimi K2's moe_intermediate_size); a dense model gets its MLP width in both."""
    import re

    moe = ("name: moe-1t\ntask: training\ndomain: llm\nmodel: {params_b: 1040, active_params_b: 32, architecture: moe, "
           "precision: bf16, layers: 61, hidden_size: 7168, experts: 384, experts_per_token: 8}\n"
           "training: {tokens_b: 15500, seq_len: 4096, method: full, global_batch: 16384, deadline_hours: 2160}\n"
           "software: {framework: jax}\ndeployment: {clouds: [gcp], procurement: [reservation, dws]}\n"
           "team: {tpu_experience: expert}\n")
    dense = moe.replace("params_b: 1040, active_params_b: 32, architecture: moe", "params_b: 8, architecture: transformer") \
        .replace("layers: 61, hidden_size: 7168, experts: 384, experts_per_token: 8", "layers: 32, hidden_size: 4096") \
        .replace("tokens_b: 15500", "tokens_b: 100").replace("global_batch: 16384", "global_batch: 512")
    for name, text, width in (("moe", moe, "2048"), ("dense", dense, "14336")):
        f = tmp_path / f"{name}.yaml"
        f.write_text(text)
        out = tmp_path / name
        r = run_cli("scaffold", str(f), "-o", str(out), "--path", "maxtext-tpu")
        assert r.code == 0, r.err
        m = re.search(r"base_mlp_dim=(\d+) base_moe_mlp_dim=(\d+)", (out / "setup.sh").read_text())
        assert m and m.group(1) == m.group(2) == width, (name, m and m.groups())
