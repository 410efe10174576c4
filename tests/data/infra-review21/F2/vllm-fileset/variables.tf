variable "namespace" {
  type    = string
  default = "default"
}
variable "gpu_count" {
  type    = number
  default = 1
}
variable "gcs_model_path" {
  type     = string
  nullable = true
  default  = null
}
