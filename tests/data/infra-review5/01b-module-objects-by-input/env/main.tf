module "prod" {
  source   = "../modules/app"
  gpus     = 4
  replicas = 2
}

module "dev" {
  source               = "../modules/app"
  deploy_example_model = false
}
