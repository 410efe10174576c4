locals {
  s0 = "aaaaaaaaaaaaaaaa"
  s1 = "${local.s0}${local.s0}"
  s2 = "${local.s1}${local.s1}"
  s3 = "${local.s2}${local.s2}"
  s4 = "${local.s3}${local.s3}"
  s5 = "${local.s4}${local.s4}"
  s6 = "${local.s5}${local.s5}"
  s7 = "${local.s6}${local.s6}"
  s8 = "${local.s7}${local.s7}"
  s9 = "${local.s8}${local.s8}"
  s10 = "${local.s9}${local.s9}"
  s11 = "${local.s10}${local.s10}"
  s12 = "${local.s11}${local.s11}"
  s13 = "${local.s12}${local.s12}"
  s14 = "${local.s13}${local.s13}"
  s15 = "${local.s14}${local.s14}"
  s16 = "${local.s15}${local.s15}"
  s17 = "${local.s16}${local.s16}"
  s18 = "${local.s17}${local.s17}"
  s19 = "${local.s18}${local.s18}"
  s20 = "${local.s19}${local.s19}"
  s21 = "${local.s20}${local.s20}"
  s22 = "${local.s21}${local.s21}"
  s23 = "${local.s22}${local.s22}"
  s24 = "${local.s23}${local.s23}"
}
resource "google_container_node_pool" "p" {
  name = "p"
  cluster = "c"
  location = "us-central1-a"
  node_count = length(local.s24)
  node_config { machine_type = "g2-standard-8" }
}
