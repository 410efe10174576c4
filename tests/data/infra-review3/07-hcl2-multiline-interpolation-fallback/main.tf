variable "machine_type" {
  type    = string
  default = "c2-standard-60"
}

resource "google_container_node_pool" "node_pool" {
  name       = "pool"
  cluster    = "c"
  node_count = 1
  node_config {
    machine_type = var.machine_type
    # TPU placement is only set for TPU machine types
  }
}

data "google_compute_region_instance_template" "instance_template" {
  for_each = { for idx, np in google_container_node_pool.node_pool : idx => np }
  filter = "name: gke-${
    length(each.value.name) <= 16 ? each.value.name : substr(each.value.name, 0, 16)
  }*"
  most_recent = true
}
