# Constructed after aibrix deployment/terraform/kubernetes/main.tf: the module applies its sample model only where the
# caller asks for it (count from an input), with the GPUs per replica an input too.
variable "deploy_example_model" {
  type    = bool
  default = true
}
variable "gpus" {
  type    = number
  default = 1
}
variable "replicas" {
  type    = number
  default = 1
}

resource "kubernetes_deployment_v1" "model" {
  count = var.deploy_example_model ? 1 : 0
  metadata {
    name      = "model"
    namespace = "serving"
  }
  spec {
    replicas = var.replicas
    selector {
      match_labels = { app = "model" }
    }
    template {
      metadata {
        labels = { app = "model" }
      }
      spec {
        node_selector = { "cloud.google.com/gke-accelerator" = "nvidia-l4" }
        container {
          name  = "vllm"
          image = "vllm/vllm-openai"
          resources {
            limits = { "nvidia.com/gpu" = var.gpus }
          }
        }
      }
    }
  }
}
