module hangwatch.local/npd

go 1.26.5

require k8s.io/node-problem-detector v1.36.0
