data "aws_caller_identity" "current" {}
locals {
  groups = [
    for g in [{ name = "gpu", type = "p5.48xlarge", size = 4 }] : {
      name  = g.name
      type  = g.type
      size  = g.size
      role  = "arn:aws:iam::${data.aws_caller_identity.current.account_id}:role/nodes"
    }
  ]
}
resource "aws_eks_node_group" "this" {
  count           = length(local.groups)
  cluster_name    = "c"
  node_group_name = local.groups[count.index].name
  node_role_arn   = local.groups[count.index].role
  subnet_ids      = ["s"]
  instance_types  = [local.groups[count.index].type]
  scaling_config {
    desired_size = local.groups[count.index].size
    min_size     = local.groups[count.index].size
    max_size     = local.groups[count.index].size
  }
}
