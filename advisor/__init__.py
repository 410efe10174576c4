"""advisor: decide between TPUs and GPUs for an AI workload, with numbers and a setup path."""

__version__ = "0.1.0"
