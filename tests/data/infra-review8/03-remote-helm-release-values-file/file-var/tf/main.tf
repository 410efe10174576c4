# trimmed from vllm-project/production-stack tutorials/terraform/gke/production-stack/{helm.tf:18-29,variables.tf:21-25}
variable "setup_yaml" {
  type    = string
  default = "../production_stack_specification.yaml"
}
resource "helm_release" "vllm" {
  name       = "vllm"
  repository = "https://vllm-project.github.io/production-stack"
  chart      = "vllm-stack"
  values = [
    file(var.setup_yaml)
  ]
}
