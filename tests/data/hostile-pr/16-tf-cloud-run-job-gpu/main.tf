resource "google_cloud_run_v2_job" "j" {
  name     = "j"
  location = "us-central1"
  template {
    task_count  = 1000
    parallelism = 1000
    template {
      node_selector { accelerator = "nvidia-l4" }
      gpu_zonal_redundancy_disabled = true
      containers {
        image = "x"
        resources { limits = { cpu = "4", memory = "16Gi", "nvidia.com/gpu" = "1" } }
      }
    }
  }
}
