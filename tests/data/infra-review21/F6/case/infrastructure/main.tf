# trimmed from GoogleCloudPlatform/ai-on-gke@8676d66d infrastructure/main.tf:87-115
module "public-gke-standard-cluster" {
  source     = "../modules/gke-standard"
  project_id = var.project_id
  cpu_pools  = var.cpu_pools
  enable_gpu = var.enable_gpu
  # upstream: gpu_pools = local.gpu_pools, a for-expression whose element is a conditional on
  # local.regional, itself from var.cluster_location (no default). Reduced to the conditional:
  gpu_pools  = var.cluster_location == "" ? var.gpu_pools : var.gpu_pools
  enable_tpu = var.enable_tpu
  tpu_pools  = var.tpu_pools
}
