locals {
  machine = "a3-highgpu-8g"
}
