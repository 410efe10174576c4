{{- define "gpus" -}}64{{- end -}}
