resource "google_cloud_run_v2_service" "s" {
  name = "s"
  location = "us-central1"
  template {
    node_selector { accelerator = "nvidia-l4" }
    containers {
      image = "x"
      resources { limits = { "nvidia.com/gpu" = "²", cpu = "4", memory = "16Gi" } }
    }
  }
}
