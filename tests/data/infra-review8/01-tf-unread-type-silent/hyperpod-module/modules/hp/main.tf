# trimmed from .../modules/hyperpod_cluster/main.tf:10-41
variable "instance_groups" {
  type = map(object({
    instance_type  = string
    instance_count = number
  }))
}
locals {
  instance_groups_list = [
    for name, config in var.instance_groups : {
      instance_group_name = name
      instance_type       = config.instance_type
      instance_count      = config.instance_count
    }
  ]
}
resource "awscc_sagemaker_cluster" "hyperpod_cluster" {
  cluster_name    = "ml-cluster"
  instance_groups = local.instance_groups_list
}
