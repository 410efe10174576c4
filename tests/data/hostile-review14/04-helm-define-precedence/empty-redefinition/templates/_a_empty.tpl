{{- define "c.gpus" }}
  {{/* left empty */}}
{{ end -}}
