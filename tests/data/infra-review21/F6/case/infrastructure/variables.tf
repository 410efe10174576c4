# trimmed from GoogleCloudPlatform/ai-on-gke@8676d66d infrastructure/variables.tf
variable "project_id" { type = string }
variable "enable_tpu" {
  type    = bool
  default = false
}
variable "enable_gpu" {
  type    = bool
  default = true
}
variable "cpu_pools" {
  type = list(object({ name = string, machine_type = string }))
  default = [{ name = "cpu-pool", machine_type = "n1-standard-16" }]
}
variable "gpu_pools" {
  type = list(object({
    name              = string
    machine_type      = string
    autoscaling       = optional(bool, false)
    min_count         = optional(number, 1)
    max_count         = optional(number, 3)
    accelerator_count = optional(number, 0)
    accelerator_type  = optional(string, "nvidia-tesla-t4")
  }))
  default = [{
    name              = "gpu-pool"
    machine_type      = "n1-standard-16"
    autoscaling       = true
    min_count         = 1
    max_count         = 3
    accelerator_count = 2
    accelerator_type  = "nvidia-tesla-t4"
  }]
}
variable "tpu_pools" {
  type    = list(map(any))
  default = []
}
variable "cluster_location" {
  type = string
}
