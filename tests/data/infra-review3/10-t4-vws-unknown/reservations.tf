resource "google_compute_reservation" "t4" {
  name = "n1standard8-with-tesla-t4"
  zone = "europe-west1-d"
  specific_reservation {
    count = 1
    instance_properties {
      machine_type = "n1-standard-8"
      guest_accelerators {
        accelerator_type  = "nvidia-tesla-t4-vws"
        accelerator_count = 1
      }
    }
  }
}
