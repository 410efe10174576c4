# trimmed from NVIDIA/nim-deploy cloud-service-providers/google-cloud/gke/terraform/infra/terraform/modules/gke-cluster/{main.tf:15-43,variables.tf:108-120}
variable "enable_gpu" {
  type    = bool
  default = true
}
variable "gpu_pools" {
  type = list(map(any))
}
variable "cpu_pools" {
  type = list(map(any))
}
locals {
  node_pools = concat((var.enable_gpu ? var.gpu_pools : []), var.cpu_pools)
}
module "gke" {
  source     = "terraform-google-modules/kubernetes-engine/google"
  version    = "31.0.0"
  project_id = "my-project"
  name       = "nim-demo-gke"
  region     = "us-central1"
  zones      = ["us-central1-a"]
  regional   = false
  network    = "vpc"
  subnetwork = "subnet"
  ip_range_pods     = ""
  ip_range_services = ""
  remove_default_node_pool = true
  node_pools = local.node_pools
}
