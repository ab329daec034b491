package harness

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ControlPlane is a real etcd (Debian's etcd-server) and kube-apiserver
// (built from k8s.io/kubernetes) on loopback ports, with Node,RBAC
// authorization and the NodeRestriction admission plugin, as on a kubeadm
// cluster.
type ControlPlane struct {
	Dir             string
	URL             string // https://127.0.0.1:<port>
	PKI             *PKI
	AdminKubeconfig string
	Admin           kubernetes.Interface
	// AuditLog is the API server's audit log (AuditEvents reads it).
	AuditLog        string
	etcd, apiserver *Process
	apiserverArgs   []string
	apiserverBin    string
}

// StartControlPlane starts etcd and kube-apiserver in a new temp dir and
// waits until the API server is ready.
func StartControlPlane(ctx context.Context) (*ControlPlane, error) {
	apiserverBin, err := KubeBinary("kube-apiserver")
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, fmt.Errorf("etcd not installed (apt-get install etcd-server): %w", err)
	}
	dir, err := os.MkdirTemp("", "hwk-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, apiserverBin: apiserverBin}
	if err := cp.start(ctx); err != nil {
		err = fmt.Errorf("%w\n%s", err, cp.logs())
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context) error {
	etcdURL, err := cp.startEtcd(ctx)
	if err != nil {
		return err
	}
	if err := cp.configureAPIServer(etcdURL); err != nil {
		return err
	}
	if err := cp.StartAPIServer(ctx); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		return err
	}
	cp.Admin, err = kubernetes.NewForConfig(cfg)
	return err
}

func (cp *ControlPlane) startEtcd(ctx context.Context) (string, error) {
	// Two distinct ports: two FreePort calls in a row may return the same
	// one, and etcd then fails to bind its second listener (seen in a run).
	ports, err := FreePorts(2)
	if err != nil {
		return "", err
	}
	clientURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cp.etcd, err = StartProcess(cp.Dir, "etcd", "etcd", "--name", "hw", "--data-dir", filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "hw="+peerURL)
	if err != nil {
		return "", err
	}
	return clientURL, waitHTTP(ctx, cp.etcd, http.DefaultClient, clientURL+"/health")
}

func (cp *ControlPlane) configureAPIServer(etcdURL string) error {
	var err error
	if cp.PKI, err = NewPKI(cp.Dir); err != nil {
		return err
	}
	cert, key, err := cp.PKI.Serving("apiserver")
	if err != nil {
		return err
	}
	saKey, err := cp.PKI.ServiceAccountKey()
	if err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	cp.apiserverArgs = []string{"--etcd-servers=" + etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--tls-cert-file=" + cert, "--tls-private-key-file=" + key,
		"--client-ca-file=" + cp.PKI.CAFile, "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey, "--service-cluster-ip-range=10.96.0.0/24",
		"--allow-privileged=true", "--cert-dir=" + filepath.Join(cp.Dir, "apiserver-certs"), "--endpoint-reconciler-type=none"}
	audit, auditFlags, err := auditArgs(cp.Dir)
	if err != nil {
		return err
	}
	cp.AuditLog, cp.apiserverArgs = audit, append(cp.apiserverArgs, auditFlags...)
	cp.AdminKubeconfig, err = cp.Kubeconfig("admin", "hangwatch-admin", "system:masters")
	return err
}

// StartAPIServer starts kube-apiserver (again, after StopAPIServer) on the
// same port and waits until /readyz answers ok.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	var err error
	if cp.apiserver, err = StartProcess(cp.Dir, "kube-apiserver", cp.apiserverBin, cp.apiserverArgs...); err != nil {
		return err
	}
	client, err := cp.httpClient("admin")
	if err != nil {
		return err
	}
	return waitHTTP(ctx, cp.apiserver, client, cp.URL+"/readyz")
}

// Processes are etcd and kube-apiserver as now running, for a wait to
// watch (UnlessExited).
func (cp *ControlPlane) Processes() []Watched { return []Watched{cp.etcd, cp.apiserver} }

// StopAPIServer stops kube-apiserver by PID; etcd keeps running.
func (cp *ControlPlane) StopAPIServer() { cp.apiserver.Stop(10 * time.Second) }

// Kubeconfig writes a kubeconfig for a client certificate of user and
// groups, referring to the certificate and key files (as the kubelet's
// kubeconfig does, so a rotated certificate is re-read).
func (cp *ControlPlane) Kubeconfig(name, user string, groups ...string) (string, error) {
	cert, key, err := cp.PKI.Client(name, user, groups...)
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: cp.URL, CertificateAuthority: cp.PKI.CAFile}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(cp.Dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// NodeKubeconfig writes a kubeconfig for the node identity
// system:node:<node> in group system:nodes, the kubelet's.
func (cp *ControlPlane) NodeKubeconfig(node string) (string, error) {
	return cp.Kubeconfig("node-"+node, "system:node:"+node, "system:nodes")
}

// Stop stops kube-apiserver and etcd by PID and removes the temp dir.
func (cp *ControlPlane) Stop() {
	cp.apiserver.Stop(10 * time.Second)
	cp.etcd.Stop(10 * time.Second)
	_ = os.RemoveAll(cp.Dir)
}

func (cp *ControlPlane) logs() string {
	out := ""
	for _, p := range []*Process{cp.etcd, cp.apiserver} {
		if p != nil {
			out += p.LogTail(20) + "\n"
		}
	}
	return out
}

// Metrics returns the API server's /metrics text, read as the admin.
func (cp *ControlPlane) Metrics(ctx context.Context) (string, error) {
	raw, err := cp.Admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	return string(raw), err
}

// Port is the API server's port on 127.0.0.1.
func (cp *ControlPlane) Port() string {
	u, err := url.Parse(cp.URL)
	if err != nil {
		return ""
	}
	return u.Port()
}
