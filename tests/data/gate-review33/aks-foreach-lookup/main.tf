module "config" {
  source = "./config"
}
variable "nodepools" {
  type = map(object({
    vm_size   = string
    min_count = number
    max_count = number
  }))
  default = {
    nvidia1v1 = {
      vm_size   = "Standard_NC40ads_H100_v5"
      min_count = 0
      max_count = 1
    }
  }
}
module "aks" {
  source    = "./aks"
  for_each  = module.config.cluster
  nodepools = lookup(local.nodepools_variants, lookup(each.value, "nodepools", "nodepools"), var.nodepools)
}
locals {
  nodepools_variants = {
    nodepools    = var.nodepools
    nodepools_v1 = var.nodepools
  }
}
