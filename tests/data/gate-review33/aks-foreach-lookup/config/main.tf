locals {
  config = yamldecode(file("${path.module}/../config.yaml"))
}
output "cluster" {
  value = lookup(local.config, "clusters", null)
}
