// Package criproxy is a CRI fault proxy for end-to-end tests: a gRPC server
// on a unix socket that the kubelet talks to instead of the runtime. It
// forwards every RuntimeService and ImageService call, unary or streaming,
// without knowing their types, and can hang or delay chosen calls until
// they are released, so a test can wedge exactly what the kubelet sees
// while hangwatch still talks to the runtime directly.
package criproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Proxy forwards CRI calls from its socket to the runtime's.
type Proxy struct {
	Socket   string // the proxy's socket path
	Endpoint string // unix:// endpoint of Socket, for the kubelet
	backend  *grpc.ClientConn
	server   *grpc.Server
	faults   *faults
	done     chan struct{}
}

// Start listens on socket and forwards to the runtime at backendSocket.
func Start(socket, backendSocket string) (*Proxy, error) {
	_ = os.Remove(socket)
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("criproxy listen: %w", err)
	}
	backend, err := grpc.NewClient("unix://"+backendSocket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(backendCodec{}), grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("criproxy backend: %w", err)
	}
	p := &Proxy{Socket: socket, Endpoint: "unix://" + socket, backend: backend, faults: newFaults(), done: make(chan struct{})}
	p.server = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.forward),
		grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	go func() {
		defer close(p.done)
		_ = p.server.Serve(lis)
	}()
	return p, nil
}

// Stop releases every held call, stops serving and closes the backend.
func (p *Proxy) Stop() {
	p.faults.releaseAll()
	p.server.Stop()
	<-p.done
	_ = p.backend.Close()
	_ = os.Remove(p.Socket)
}

// forward handles any method: it applies the faults to the first request,
// then relays messages both ways until the backend's stream ends.
func (p *Proxy) forward(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok {
		return errors.New("criproxy: no method")
	}
	ctx := in.Context()
	md, _ := metadata.FromIncomingContext(ctx)
	out, err := p.backend.NewStream(metadata.NewOutgoingContext(ctx, md),
		&grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	first := true
	errc := make(chan error, 1)
	go func() { // client to backend
		for {
			var f frame
			if err := in.RecvMsg(&f); err != nil {
				if errors.Is(err, io.EOF) {
					err = out.CloseSend()
				}
				errc <- err
				return
			}
			if first {
				first = false
				if err := p.faults.apply(ctx, method, f.data); err != nil {
					errc <- err
					return
				}
			}
			if err := out.SendMsg(&f); err != nil {
				errc <- err
				return
			}
		}
	}()
	return relayBack(in, out, errc)
}

// relayBack copies the backend's answers to the client until it ends.
func relayBack(in grpc.ServerStream, out grpc.ClientStream, errc <-chan error) error {
	sentHeader := false
	for {
		var f frame
		if err := out.RecvMsg(&f); err != nil {
			in.SetTrailer(out.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if !sentHeader {
			if h, err := out.Header(); err == nil {
				_ = in.SendHeader(h)
			}
			sentHeader = true
		}
		if err := in.SendMsg(&f); err != nil {
			return err
		}
		select {
		case err := <-errc:
			if err != nil {
				return err
			}
		default:
		}
	}
}

// frame is one message, passed on as it came.
type frame struct{ data []byte }

type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

// backendCodec is rawCodec toward the runtime, named "" so that the calls
// go out with the content-type the kubelet's do, application/grpc, not
// application/grpc+proto: CRI-O's listener (cmux) routes a connection to
// its gRPC server only on that exact value, and resets it otherwise.
type backendCodec struct{ rawCodec }

func (backendCodec) Name() string { return "" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("criproxy: cannot marshal %T", v)
	}
	return f.data, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("criproxy: cannot unmarshal into %T", v)
	}
	f.data = append([]byte(nil), data...)
	return nil
}
