variable "itype" {
  default = "p5.48xlarge"
}
resource "aws_emr_cluster" "x" {
  name = "x"
  core_instance_group {
    instance_type  = var.itype
    instance_count = 2
  }
}
