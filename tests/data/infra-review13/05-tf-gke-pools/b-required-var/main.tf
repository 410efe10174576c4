variable "gpu_pools" {
  type = list(object({
    name              = string
    machine_type      = string
    node_locations    = optional(string, "")
    accelerator_type  = optional(string, "nvidia-tesla-t4")
    accelerator_count = optional(number, 0)
    max_count         = optional(number, 3)
  }))
  default = [{ name = "gpu-pool", machine_type = "g2-standard-4", accelerator_type = "nvidia-l4", accelerator_count = 1, max_count = 3, node_locations = "" }]
}
module "gke" {
  source     = "terraform-google-modules/kubernetes-engine/google"
  version    = "31.0.0"
  project_id = "p"
  name       = "c"
  region     = "us-central1"
  zones      = ["us-central1-a"]
  regional   = false
  network    = "n"
  subnetwork = "s"
  ip_range_pods     = ""
  ip_range_services = ""
  node_pools = local.gpu_pools
}
variable "cluster_location" { type = string }
locals {
  gpu_pools = [for e in var.gpu_pools : var.cluster_location == "us-central1" ? merge(e, { node_locations = "us-central1-a" }) : e]
}
