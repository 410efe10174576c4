module "app" {
  source = "../mod"
}
