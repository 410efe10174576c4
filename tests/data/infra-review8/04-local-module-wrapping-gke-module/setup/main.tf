# trimmed from NVIDIA/nim-deploy .../gke/terraform/infra/2-setup/{main.tf:94-123,terraform.auto.tfvars:29-55}
module "gke-cluster" {
  source = "../modules/gke-cluster"
  cpu_pools = [{
    name         = "cpu-pool"
    machine_type = "e2-standard-2"
    autoscaling  = false
    min_count    = 1
    max_count    = 3
  }]
  enable_gpu = true
  gpu_pools = [{
    name              = "gpu-pool"
    machine_type      = "g2-standard-4"
    accelerator_type  = "nvidia-l4"
    accelerator_count = 1
    autoscaling       = true
    min_count         = 1
    max_count         = 3
  }]
}
