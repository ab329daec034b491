// Package fakecri is a CRI runtime for measurements: a gRPC server on a
// unix socket that answers the calls hangwatch probes at once, from
// answers encoded before it starts, ListContainers with as many containers
// as asked. Its own memory stays flat: it sends the same bytes every time.
package fakecri

import (
	"errors"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// MaxMessageSize bounds what the server sends and receives: more than the
// 16 MiB a CRI client accepts, so an answer over it reaches the client.
const MaxMessageSize = 64 << 20

// Server serves one runtime's answers.
type Server struct {
	Socket   string // the socket's path
	Endpoint string // unix:// endpoint of Socket
	server   *grpc.Server
	answers  map[string][]byte // by full method name
	// byPod are the lists filtered to one pod (the per-pod calls of the
	// kubelet's relist), by method and sandbox id; podOfUID maps the
	// io.kubernetes.pod.uid label they may be filtered by to the id.
	byPod    map[string]map[string][]byte
	podOfUID map[string]string
	done     chan struct{}
}

// Start listens on socket and answers ListContainers with ctrs and
// ListPodSandbox with pods.
func Start(socket string, pods []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) (*Server, error) {
	answers, err := encodeAnswers(pods, ctrs)
	if err != nil {
		return nil, err
	}
	byPod, err := encodeByPod(pods, ctrs)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(socket)
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("fakecri listen: %w", err)
	}
	s := &Server{Socket: socket, Endpoint: "unix://" + socket, answers: answers, byPod: byPod, podOfUID: map[string]string{},
		done: make(chan struct{})}
	for _, p := range pods {
		s.podOfUID[p.GetMetadata().GetUid()] = p.Id
	}
	s.server = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(s.answer),
		grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize))
	go func() {
		defer close(s.done)
		_ = s.server.Serve(lis)
	}()
	return s, nil
}

// Stop stops serving.
func (s *Server) Stop() {
	s.server.Stop()
	<-s.done
	_ = os.Remove(s.Socket)
}

// Answer is the encoded ListContainers answer; it must not be changed.
func (s *Server) Answer() []byte { return s.answers[listContainers] }

const (
	runtimeService = "/runtime.v1.RuntimeService/"
	listContainers = runtimeService + "ListContainers"
	listPods       = runtimeService + "ListPodSandbox"
)

func encodeAnswers(pods []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) (map[string][]byte, error) {
	ready := func(t string) *runtimeapi.RuntimeCondition {
		return &runtimeapi.RuntimeCondition{Type: t, Status: true}
	}
	msgs := map[string]proto.Message{
		runtimeService + "Version": &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fakecri", RuntimeVersion: "1.0.0", RuntimeApiVersion: "v1"},
		runtimeService + "Status": &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{
			Conditions: []*runtimeapi.RuntimeCondition{ready(runtimeapi.RuntimeReady), ready(runtimeapi.NetworkReady)}}},
		runtimeService + "ListPodSandbox":      &runtimeapi.ListPodSandboxResponse{Items: pods},
		listContainers:                         &runtimeapi.ListContainersResponse{Containers: ctrs},
		runtimeService + "PodSandboxStatus":    &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: "p", State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		runtimeService + "ContainerStatus":     &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: "c", State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
		"/runtime.v1.ImageService/ImageFsInfo": &runtimeapi.ImageFsInfoResponse{},
	}
	out := make(map[string][]byte, len(msgs))
	for method, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("fakecri: encode %s: %w", method, err)
		}
		out[method] = b
	}
	return out, nil
}

// encodeByPod encodes, for each pod, the lists filtered by its id.
func encodeByPod(pods []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) (map[string]map[string][]byte, error) {
	podCtrs := map[string][]*runtimeapi.Container{}
	for _, c := range ctrs {
		podCtrs[c.PodSandboxId] = append(podCtrs[c.PodSandboxId], c)
	}
	out := map[string]map[string][]byte{listContainers: {}, listPods: {}}
	for _, p := range pods {
		var err error
		if out[listContainers][p.Id], err = proto.Marshal(&runtimeapi.ListContainersResponse{Containers: podCtrs[p.Id]}); err != nil {
			return nil, fmt.Errorf("fakecri: encode the containers of %s: %w", p.Id, err)
		}
		if out[listPods][p.Id], err = proto.Marshal(&runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{p}}); err != nil {
			return nil, fmt.Errorf("fakecri: encode sandbox %s: %w", p.Id, err)
		}
	}
	return out, nil
}

// answer serves any unary call from the answers, a list filtered by a
// sandbox's id from byPod; the list streams and everything else are
// Unimplemented (as containerd before 2.4).
func (s *Server) answer(_ any, stream grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(stream)
	if !ok {
		return errors.New("fakecri: no method")
	}
	b, ok := s.answers[method]
	if !ok {
		return status.Errorf(codes.Unimplemented, "fakecri: %s", method)
	}
	var req frame
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	if id, uid, filtered := podFilter(method, req.data); filtered {
		if id == "" {
			id = s.podOfUID[uid]
		}
		b = s.byPod[method][id] // nil (an empty list) for an unknown pod
	}
	return stream.SendMsg(&frame{data: b})
}

// podUIDLabel is the label the kubelet filters a pod's objects by.
const podUIDLabel = "io.kubernetes.pod.uid"

// podFilter is the sandbox id or the pod UID label a list request is
// filtered by; filtered is false for a request for everything.
func podFilter(method string, req []byte) (id, uid string, filtered bool) {
	switch method {
	case listContainers:
		var r runtimeapi.ListContainersRequest
		if proto.Unmarshal(req, &r) == nil {
			f := r.GetFilter()
			id, uid = f.GetPodSandboxId(), f.GetLabelSelector()[podUIDLabel]
		}
	case listPods:
		var r runtimeapi.ListPodSandboxRequest
		if proto.Unmarshal(req, &r) == nil {
			f := r.GetFilter()
			id, uid = f.GetId(), f.GetLabelSelector()[podUIDLabel]
		}
	}
	return id, uid, id != "" || uid != ""
}

// frame is an encoded message, passed through as it is.
type frame struct{ data []byte }

type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("fakecri: cannot marshal %T", v)
	}
	return f.data, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("fakecri: cannot unmarshal into %T", v)
	}
	f.data = append([]byte(nil), data...)
	return nil
}
