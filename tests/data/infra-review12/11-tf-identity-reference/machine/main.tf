resource "google_service_account" "gke_workload" {
  account_id = "gke-workload"
}

resource "google_container_node_pool" "tpu_slices" {
  count      = 1
  name       = "tpu-np-1"
  location   = "us-east5-b"
  cluster    = "ray-tpu"
  node_count = 1

  node_config {
    machine_type    = google_service_account.gke_workload.display_name
    service_account = google_service_account.gke_workload.email
    spot            = true
  }
}
