resource "google_dataproc_cluster" "gpu" {
  name   = "gpu"
  region = "us-central1"
  cluster_config {
    worker_config {
      num_instances = 100
      machine_type  = "n1-standard-16"
      accelerators {
        accelerator_type  = var.gpu_type
        accelerator_count = 8
      }
    }
  }
}
variable "gpu_type" {}
