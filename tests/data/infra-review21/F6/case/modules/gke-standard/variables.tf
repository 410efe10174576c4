variable "project_id" { type = string }
variable "enable_tpu" {
  type    = bool
  default = false
}
variable "enable_gpu" {
  type    = bool
  default = true
}
variable "cpu_pools" { type = list(map(any)) }
variable "gpu_pools" { type = list(map(any)) }
variable "tpu_pools" { type = list(map(any)) }
