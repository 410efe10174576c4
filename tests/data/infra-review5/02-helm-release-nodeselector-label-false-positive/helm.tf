resource "helm_release" "neuron" {
  name       = "neuron"
  repository = "oci://public.ecr.aws/neuron"
  chart      = "neuron-helm-chart"
  version    = "1.1.1"

  values = [
    <<-EOT
      nodeSelector:
        aws.amazon.com/neuron.present: 'true'
      npd:
        enabled: false
    EOT
  ]
}

resource "helm_release" "dcgm_exporter" {
  name       = "dcgm-exporter"
  repository = "https://nvidia.github.io/dcgm-exporter/helm-charts"
  chart      = "dcgm-exporter"

  values = [
    <<-EOT
      nodeSelector:
        nvidia.com/gpu.present: "true"
    EOT
  ]
}
