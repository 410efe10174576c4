"""Roofline estimates of time, cost, memory and latency for one configuration.

Pure functions of (profile, accelerator, count, constants). The model, with
its sources, is documented in docs/estimator.md:

* training: FLOPs = 6 x active params x tokens (x the LoRA/QLoRA factor);
  time = FLOPs / (chips x peak x MFU x scaling efficiency);
  memory per chip = sharded weights + gradients + optimiser state
  (ZeRO-3/FSDP-style full sharding) + checkpointed activations;
* LLM inference: prefill is compute-bound, decode is memory-bandwidth-bound
  (weights + KV cache read every step); the batch is the largest that fits
  memory and keeps the latency target; replicas cover ``peak_qps``;
* other inference domains: a per-request FLOPs model (diffusion: per
  denoising step; vision: per image; speech/recsys/other: 2 x params per
  token), with the weights read once per batch.
"""
