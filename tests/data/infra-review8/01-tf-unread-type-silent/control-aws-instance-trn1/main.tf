resource "aws_instance" "x" {
  instance_type = "trn1.32xlarge"
}
