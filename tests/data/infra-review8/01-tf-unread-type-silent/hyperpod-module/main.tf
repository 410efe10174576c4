# trimmed from aws-samples/awsome-distributed-training
# 1.architectures/5.sagemaker-hyperpod/terraform-modules/hyperpod-slurm-tf/{variables.tf:273-309,main.tf:113-132}
variable "instance_groups" {
  type = map(object({
    instance_type  = string
    instance_count = number
  }))
  default = {
    compute-nodes = {
      instance_type  = "ml.trn1.32xlarge"
      instance_count = 4
    }
  }
}
module "hyperpod_cluster" {
  source          = "./modules/hp"
  instance_groups = var.instance_groups
}
