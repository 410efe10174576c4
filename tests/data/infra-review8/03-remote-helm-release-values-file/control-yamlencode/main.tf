resource "helm_release" "vllm" {
  name       = "vllm"
  repository = "https://vllm-project.github.io/production-stack"
  chart      = "vllm-stack"
  values     = [yamlencode({ servingEngineSpec = { modelSpec = [{ name = "llama3", replicaCount = 1, requestGPU = 1 }] } })]
}
