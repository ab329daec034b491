package main

import (
	"context"
	"fmt"
	"log"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// register does node-driver-registrar's work: it asks the node instance
// at endpoint its name, then serves the kubelet's plugin registration
// API on regSocket (in the kubelet's plugins_registry, whose watcher
// finds it), pointing the kubelet at endpoint, until ctx ends.
func register(ctx context.Context, endpoint, regSocket string) error {
	if endpoint == "" || regSocket == "" {
		return fmt.Errorf("-mode registrar needs -endpoint and -registration-socket")
	}
	conn, err := grpc.NewClient("unix://"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	_ = conn.Close()
	if err != nil {
		return fmt.Errorf("GetPluginInfo from %s: %w", endpoint, err)
	}
	log.Printf("driver %s at %s; registering it through %s", info.GetName(), endpoint, regSocket)
	serving, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registrar{name: info.GetName(), endpoint: endpoint, refused: cancel})
	if err := serve(serving, srv, regSocket); err != nil || ctx.Err() != nil {
		return err // nil when stopped
	}
	return context.Cause(serving)
}

type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	refused        context.CancelCauseFunc // ends the registrar with the kubelet's refusal
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	log.Printf("kubelet asked for the plugin's info")
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint,
		SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus ends the registrar, which then exits with an
// error, when the kubelet refused the registration, as
// node-driver-registrar does, so that it is seen.
func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.GetPluginRegistered() {
		r.refused(fmt.Errorf("the kubelet refused the registration: %s", s.GetError()))
		return &registerapi.RegistrationStatusResponse{}, nil
	}
	log.Printf("kubelet registered the plugin")
	return &registerapi.RegistrationStatusResponse{}, nil
}
