// Command image writes hangwatch's container image as an OCI image layout
// tarball, without a Docker daemon: the static binary built by
// hack/image.sh, a passwd file naming the non-root user, and OCI labels.
//
//	go run ./hack/image -binary bin/hangwatch -ref hangwatch.local/hangwatch:v0.1.0 -o _output/hangwatch-image.tar
//	ctr -n k8s.io images import _output/hangwatch-image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hangwatch/hangwatch/internal/ociimage"
)

// nonRoot is the image's default user, as distroless' "nonroot". The
// manifests run as root only where the runtime socket demands it.
const nonRoot = "65532"

func main() {
	binary := flag.String("binary", "bin/hangwatch", "the static hangwatch binary")
	ref := flag.String("ref", "hangwatch.local/hangwatch:dev", "image name and tag")
	out := flag.String("o", "_output/hangwatch-image.tar", "OCI layout tarball to write")
	version := flag.String("version", "", "org.opencontainers.image.version")
	revision := flag.String("revision", "", "org.opencontainers.image.revision")
	flag.Parse()
	if err := write(*binary, *ref, *out, *version, *revision); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Println(*out)
}

func write(binary, ref, out, version, revision string) error {
	img, err := ociimage.Build(ociimage.Spec{
		Binary: binary,
		Name:   "hangwatch",
		Cmd:    []string{"run"},
		User:   nonRoot + ":" + nonRoot,
		Files: map[string][]byte{
			"/etc/passwd": []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + nonRoot + ":" + nonRoot + ":nonroot:/home/nonroot:/sbin/nologin\n"),
			"/etc/group":  []byte("root:x:0:\nnonroot:x:" + nonRoot + ":\n"),
		},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "hangwatch",
			"org.opencontainers.image.description": "catches container runtime, PLEG, kubelet and kernel hangs before the node goes NotReady",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    revision,
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return ociimage.WriteLayoutTar(out, ref, img)
}
