instance_groups = [
  {
    name                      = "accelerated-instance-group-1"
    instance_type             = "ml.g5.8xlarge",
    instance_count            = 2,
    availability_zone_id      = "use1-az2",
    ebs_volume_size_in_gb     = 100,
    threads_per_core          = 1,
    enable_stress_check       = false,
    enable_connectivity_check = false,
    lifecycle_script          = "on_create.sh"
  }
]
