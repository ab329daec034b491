module hangwatch.local/npd

go 1.26.0

require k8s.io/node-problem-detector v1.34.0
