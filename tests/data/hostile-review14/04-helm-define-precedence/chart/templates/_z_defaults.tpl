{{- define "c.gpus" -}}1{{- end -}}
