variable "credentials" {
  default = []
}
resource "google_compute_instance" "vm" {
  name         = "vm"
  machine_type = "g2-standard-4"
  zone         = "us-central1-a"
  guest_accelerator {
    type  = var.credentials[0]["app.terraform.io"]["token"]
    count = 1
  }
}
