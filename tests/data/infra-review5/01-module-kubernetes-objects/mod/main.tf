resource "kubectl_manifest" "model" {
  yaml_body = <<EOT
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai
          resources:
            limits:
              nvidia.com/gpu: "1"
EOT
}
