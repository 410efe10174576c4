"""Readers of real infrastructure files for ``advisor check``: Terraform plan JSON and HCL,
Kubernetes / GKE manifests and SkyPilot tasks, normalised to one ``Request`` per accelerator
resource. Imported only when a file needs them (cold start)."""
