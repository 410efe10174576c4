{{- define "c.gpus" -}}64{{- end -}}
