data "aws_partition" "current" {}
variable "instance_groups" {
  type = list(object({
    name           = string
    instance_type  = string
    instance_count = number
  }))
  default = [{ name = "gpu", instance_type = "ml.p5.48xlarge", instance_count = 2 }]
}
locals {
  instance_groups_list = [
    for config in var.instance_groups : {
      instance_group_name = config.name
      instance_type       = config.instance_type
      instance_count      = config.instance_count
      execution_role      = "arn:${data.aws_partition.current.partition}:iam::123456789012:role/hp"
    }
  ]
}
resource "awscc_sagemaker_cluster" "hyperpod_cluster" {
  cluster_name    = "hp"
  instance_groups = local.instance_groups_list
}
