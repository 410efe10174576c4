# trimmed from GoogleCloudPlatform/ai-on-gke@8676d66d benchmarks/inference-server/triton/main.tf:17-40
locals {
  template_path = (
    var.gcs_model_path == null
    ? "${path.module}/manifest-templates/app.tftpl"
    : "${path.module}/manifest-templates/app.tftpl"
  )
}

resource "kubernetes_manifest" "default" {
  manifest = yamldecode(templatefile(local.template_path, {
    namespace = var.namespace
    gpu_count = var.gpu_count
  }))
}
