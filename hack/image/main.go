// Command image writes hangwatch's container image as an OCI image layout
// tarball, without a Docker daemon: a multi-platform image index with one
// image per static binary built by hack/image.sh (linux/amd64 and
// linux/arm64), each with a passwd file naming the non-root user, and OCI
// labels.
//
//	go run ./hack/image -binary amd64=bin/linux-amd64/hangwatch -binary arm64=bin/linux-arm64/hangwatch \
//	  -ref hangwatch.local/hangwatch:v0.1.0 -o _output/hangwatch-image.tar
//	ctr -n k8s.io images import _output/hangwatch-image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hangwatch/hangwatch/internal/ociimage"
)

// nonRoot is the image's default user, as distroless' "nonroot". The
// manifests run as root only where the runtime socket demands it.
const nonRoot = "65532"

// binaries is the repeated -binary GOARCH=PATH flag.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	arch, path, ok := strings.Cut(v, "=")
	if !ok || arch == "" || path == "" {
		return fmt.Errorf("-binary %q: want GOARCH=PATH, such as arm64=bin/linux-arm64/hangwatch", v)
	}
	b[arch] = path
	return nil
}

func main() {
	bins, remedies := binaries{}, binaries{}
	flag.Var(bins, "binary", "GOARCH=PATH of a static hangwatch binary; repeat for each platform")
	flag.Var(remedies, "remedy", "GOARCH=PATH of a static hangwatch-remedy binary, /hangwatch-remedy in the image; repeat for each platform")
	ref := flag.String("ref", "hangwatch.local/hangwatch:dev", "image name and tag")
	out := flag.String("o", "_output/hangwatch-image.tar", "OCI layout tarball to write")
	version := flag.String("version", "", "org.opencontainers.image.version")
	revision := flag.String("revision", "", "org.opencontainers.image.revision")
	flag.Parse()
	if len(bins) == 0 {
		fmt.Fprintln(os.Stderr, "image: no -binary GOARCH=PATH given")
		os.Exit(2)
	}
	if err := write(bins, remedies, *ref, *out, *version, *revision); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Println(*out)
}

func write(bins, remedies binaries, ref, out, version, revision string) error {
	var specs []ociimage.Spec
	for arch, binary := range bins {
		extra := map[string]string{}
		if r, ok := remedies[arch]; ok {
			extra["/hangwatch-remedy"] = r
		}
		specs = append(specs, ociimage.Spec{
			Binary:      binary,
			Executables: extra,
			Arch:        arch,
			Name:        "hangwatch",
			Cmd:         []string{"run"},
			User:        nonRoot + ":" + nonRoot,
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
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Arch < specs[j].Arch })
	idx, err := ociimage.BuildIndex(specs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return ociimage.WriteLayoutTarIndex(out, ref, idx)
}
