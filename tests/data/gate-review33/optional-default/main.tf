variable "pools" {
  type = list(object({
    name           = string
    node_locations = optional(string, "")
    location       = optional(string, "europe-west4")
  }))
  default = [{ name = "gpu-pool" }]
}
resource "google_container_node_pool" "gpu" {
  name           = var.pools[0].name
  location       = var.pools[0].location == "" ? "us-central1" : var.pools[0].location
  node_locations = var.pools[0].node_locations == "" ? null : split(",", var.pools[0].node_locations)
  autoscaling {
    min_node_count = 1
    max_node_count = 3
  }
  node_config {
    machine_type = "g2-standard-4"
    guest_accelerator {
      type  = "nvidia-l4"
      count = 1
    }
  }
}
