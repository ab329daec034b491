module hangwatch.local/csi

go 1.26.0

require (
	github.com/kubernetes-csi/external-attacher/v4 v4.13.0
	github.com/kubernetes-csi/external-provisioner/v6 v6.4.0
)
