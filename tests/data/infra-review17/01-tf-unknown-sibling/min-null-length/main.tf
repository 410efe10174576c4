variable "instance_groups" {
  type = list(object({
    name           = string
    instance_type  = string
    instance_count = number
    labels         = optional(map(string))
  }))
  default = [{ name = "gpu", instance_type = "ml.p5.48xlarge", instance_count = 2 }]
}
locals {
  instance_groups_list = [
    for config in var.instance_groups : merge(
      {
        instance_group_name = config.name
        instance_type       = config.instance_type
        instance_count      = config.instance_count
      },
      config.labels != null && length(config.labels) > 0 ? { kubernetes_config = { labels = config.labels } } : {}
    )
  ]
}
resource "awscc_sagemaker_cluster" "hyperpod_cluster" {
  cluster_name    = "hp"
  instance_groups = local.instance_groups_list
}
