variable "mt" {
  type    = string
  default = "g2-standard-16"
}
module "vm" {
  source       = "terraform-google-modules/vm/google//modules/instance_template"
  version      = "~> 12.0"
  machine_type = var.mt
}
