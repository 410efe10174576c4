{{- define "gpus" -}}1{{- end -}}
