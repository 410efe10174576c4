resource "google_compute_region_commitment" "c" {
  name   = "gpu-commit"
  region = "us-central1"
  plan   = "THIRTY_SIX_MONTH"
  type   = "ACCELERATOR_OPTIMIZED_A3"
  category = "MACHINE"
  resources {
    type   = "VCPU"
    amount = "208"
  }
  resources {
    type   = "MEMORY"
    amount = "1872"
  }
  resources {
    type             = "ACCELERATOR"
    accelerator_type = "nvidia-h100-80gb"
    amount           = "512"
  }
}
