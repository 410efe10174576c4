# trimmed from GoogleCloudPlatform/ai-on-gke@8676d66d modules/gke-standard-public-cluster/main.tf
locals {
  node_pools = concat((var.enable_gpu ? var.gpu_pools : []), (var.enable_tpu ? var.tpu_pools : []), var.cpu_pools)
}

module "gke" {
  source     = "terraform-google-modules/kubernetes-engine/google"
  version    = "33.0.0"
  project_id = var.project_id
  name       = "ml"
  region     = "us-central1"
  regional   = true
  network    = "default"
  subnetwork = "default"
  ip_range_pods     = ""
  ip_range_services = ""
  remove_default_node_pool = true
  node_pools = local.node_pools
}
