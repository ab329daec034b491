package podstarts

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"
)

// DefaultPodsAPISocket is where a kubelet with the default root directory
// serves its Pods API (<root>/pods-api/pods-api.sock).
const DefaultPodsAPISocket = "/var/lib/kubelet/pods-api/pods-api.sock"

// DefaultPodLogsDir is the kubelet's default podLogsDir.
const DefaultPodLogsDir = "/var/log/pods"

// PodsAPI is the kubelet's Pods API on its unix socket.
type PodsAPI struct {
	conn   *grpc.ClientConn
	client podsv1alpha1.PodsClient
}

// NewPodsAPI returns a client of the Pods API at socket; it dials when a
// stream starts.
func NewPodsAPI(socket string) (*PodsAPI, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("the kubelet's Pods API at %s: %w", socket, err)
	}
	return &PodsAPI{conn: conn, client: podsv1alpha1.NewPodsClient(conn)}, nil
}

// Close closes the connection.
func (a *PodsAPI) Close() error { return a.conn.Close() }

// Stream feeds t from one WatchPods stream until it ends, or ctx does:
// the kubelet lists every pod, says the listing is complete, then sends
// each change.
func (a *PodsAPI) Stream(ctx context.Context, t *Tracker) error {
	stream, err := a.client.WatchPods(ctx, &podsv1alpha1.WatchPodsRequest{})
	if err != nil {
		return fmt.Errorf("watch the kubelet's pods: %w", err)
	}
	t.Resync()
	defer t.Lost()
	for {
		ev, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("the kubelet's pod stream: %w", err)
		}
		if err := Apply(t, ev.GetType(), ev.GetPod()); err != nil {
			return err
		}
	}
}

// Apply applies one event of the stream to t. A pod that does not decode
// ends the stream with an error naming the event: the next stream lists
// every pod again, so nothing is lost.
func Apply(t *Tracker, typ podsv1alpha1.EventType, raw []byte) error {
	switch typ {
	case podsv1alpha1.EventType_INITIAL_SYNC_COMPLETE:
		t.Synced()
		return nil
	case podsv1alpha1.EventType_ADDED, podsv1alpha1.EventType_MODIFIED, podsv1alpha1.EventType_DELETED:
	default:
		return fmt.Errorf("the kubelet's pod stream sent an event of type %d (%s), which hangwatch does not know", typ, typ)
	}
	var pod corev1.Pod
	if err := pod.Unmarshal(raw); err != nil {
		return fmt.Errorf("the pod of a %s event of the kubelet's pod stream (%d bytes): %w", typ, len(raw), err)
	}
	if pod.UID == "" {
		return fmt.Errorf("the pod of a %s event of the kubelet's pod stream (%s/%s) has no metadata.uid", typ, pod.Namespace, pod.Name)
	}
	if typ == podsv1alpha1.EventType_DELETED {
		t.Delete(string(pod.UID))
	} else {
		t.Update(&pod)
	}
	return nil
}
