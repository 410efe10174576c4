"""The CI gate: ``batch`` (a run over many files), ``judge`` (one proposal against the policy and the
recommendation), ``rules`` (the registered check rules), ``results``, ``diff`` (against a baseline), and
``infra/`` (the readers of Terraform plans, Kubernetes manifests and SkyPilot tasks)."""
