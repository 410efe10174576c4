resource "google_dataproc_cluster" "c" {
  name   = "c"
  region = "us-central1"
  cluster_config {
    worker_config {
      num_instances = 32
      machine_type  = "n1-standard-32"
      accelerators {
        accelerator_type  = "nvidia-tesla-a100"
        accelerator_count = 8
      }
    }
  }
}
