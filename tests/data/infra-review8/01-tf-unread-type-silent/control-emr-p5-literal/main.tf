resource "aws_emr_cluster" "x" {
  name = "x"
  core_instance_group {
    instance_type  = "p5.48xlarge"
    instance_count = 2
  }
}
