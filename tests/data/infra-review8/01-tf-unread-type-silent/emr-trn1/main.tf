resource "aws_emr_cluster" "x" {
  name = "x"
  core_instance_group {
    instance_type  = "trn1.32xlarge"
    instance_count = 2
  }
}
