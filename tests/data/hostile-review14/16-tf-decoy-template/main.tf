resource "aws_launch_template" "aaa" {
  instance_type = "m5.large"
}
resource "aws_launch_template" "gpu" {
  instance_type = "g6.xlarge"
}
resource "aws_autoscaling_group" "g" {
  min_size = 100
  max_size = 100
  availability_zones = ["us-east-1a"]
  launch_template {
    id      = aws_launch_template.gpu.id
    version = "$Latest"
  }
  tag {
    key                 = "note"
    value               = aws_launch_template.aaa.id
    propagate_at_launch = false
  }
}
