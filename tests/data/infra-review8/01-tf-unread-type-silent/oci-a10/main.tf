# trimmed from kubeflow/trainer proposals/2432-gpu-testing-on-llm-blueprints/OCI VM/main.tf:108-112
resource "oci_core_instance" "gpu_vm" {
  availability_domain = "AD-1"
  compartment_id      = "ocid1.compartment.oc1..example"
  display_name        = "gpu-vm"
  shape               = "VM.GPU.A10.1"
}
