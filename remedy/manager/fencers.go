package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
)

// otherRemediations are the medik8s remediations that fence or reboot a
// node, each a CR named after its node: while one names a node, hangwatch
// does not fence it.
var otherRemediations = []string{
	"/apis/self-node-remediation.medik8s.io/v1alpha1/selfnoderemediations",
	"/apis/fence-agents-remediation.medik8s.io/v1alpha1/fenceagentsremediations",
}

// otherFencers names a medik8s remediation of node, "" when none; a
// resource the cluster does not serve (no such operator) is none.
func otherFencers(client kubernetes.Interface) func(ctx context.Context, node string) (string, error) {
	return func(ctx context.Context, node string) (string, error) {
		rc := client.Discovery().RESTClient()
		if rc == nil || reflect.ValueOf(rc).IsNil() {
			return "", nil // a fake Clientset serves no raw requests
		}
		for _, path := range otherRemediations {
			raw, err := rc.Get().AbsPath(path).Param("fieldSelector", "metadata.name="+node).DoRaw(ctx)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return "", fmt.Errorf("list %s: %w", path, err)
			}
			var list struct {
				Items []struct {
					Metadata struct{ Namespace string } `json:"metadata"`
				} `json:"items"`
			}
			if err := json.Unmarshal(raw, &list); err != nil {
				return "", fmt.Errorf("list %s: %w", path, err)
			}
			if len(list.Items) > 0 {
				return fmt.Sprintf("%s %s/%s", path, list.Items[0].Metadata.Namespace, node), nil
			}
		}
		return "", nil
	}
}
