# the same node pool, the registry module called directly: read
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
  node_pools = [{
    name              = "gpu-pool"
    machine_type      = "g2-standard-4"
    accelerator_type  = "nvidia-l4"
    accelerator_count = 1
    autoscaling       = true
    min_count         = 1
    max_count         = 3
  }]
}
