resource "google_notebooks_runtime" "r" {
  name     = "r"
  location = "us-central1"
  virtual_machine {
    virtual_machine_config {
      machine_type = "n1-standard-8"
      data_disk { initialize_params { disk_size_gb = "100" } }
      accelerator_config {
        type       = "NVIDIA_TESLA_V100"
        core_count = 8
      }
    }
  }
}
