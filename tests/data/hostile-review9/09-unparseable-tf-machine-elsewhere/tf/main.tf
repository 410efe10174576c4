locals {
  enabled = !!true
}

resource "google_container_node_pool" "pool" {
  name       = "pool"
  cluster    = "c"
  location   = "us-central1-a"
  node_count = 100
  node_config {
    machine_type = local.machine
  }
}
