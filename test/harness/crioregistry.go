package harness

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// servePauseImage serves the pause image from a registry on loopback, as
// <host:port>/pause:test, for CRI-O's one pull: CRI-O takes images only
// by registry name (no archive or layout transport), and the tests reach
// no registry beyond this machine. Close it once the pull is done.
func servePauseImage() (*httptest.Server, error) {
	img, err := buildPauseImage()
	if err != nil {
		return nil, err
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	repo := strings.TrimPrefix(PauseImage, "hangwatch.local/")
	ref, err := name.ParseReference(srv.Listener.Addr().String()+"/"+repo, name.Insecure)
	if err == nil {
		err = remote.Write(ref, img)
	}
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("push the pause image to the harness's registry: %w", err)
	}
	return srv, nil
}
