# trimmed from GoogleCloudPlatform/ai-on-gke@8676d66d benchmarks/inference-server/vllm/main.tf:17-70
locals {
  wl_templates = [
    for f in fileset("${path.module}/manifest-templates", "*tftpl") :
    "${path.module}/manifest-templates/${f}"
  ]
}

resource "kubernetes_manifest" "default" {
  for_each = toset(local.wl_templates)
  manifest = yamldecode(templatefile(each.value, {
    namespace = var.namespace
    gpu_count = var.gpu_count
  }))
}
