variable "nodepools" {
  type = map(object({
    vm_size   = string
    min_count = number
    max_count = number
  }))
}
resource "azurerm_kubernetes_cluster_node_pool" "this" {
  for_each              = var.nodepools
  name                  = each.key
  kubernetes_cluster_id = "x"
  vm_size               = each.value.vm_size
  auto_scaling_enabled  = true
  min_count             = each.value.min_count
  max_count             = each.value.max_count
}
