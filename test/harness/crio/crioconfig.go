package crio

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hangwatch/hangwatch/test/harness"
)

// crioConfig is CRI-O 1.36's configuration with every path in the
// instance's directory (%[1]s), so nothing of the host's /etc/crio,
// /var/lib/crio or /run/crio is read or written. What differs from
// CRI-O's defaults, and why:
//   - cgroup_manager cgroupfs: systemd is not PID 1 here (cgroup v1);
//   - drop_infra_ctr (the default, kept on purpose): a pod that shares no
//     PID namespace runs no pause process, whose oom_score_adj of -998
//     this machine's root may not set (no CAP_SYS_RESOURCE). CRI-O has no
//     setting like containerd's restrict_oom_score_adj;
//   - vfs storage: no overlay mounts to leak;
//   - no NRI, no host-port mapping (no iptables), no irqbalance restore;
//   - runc and pinns built by the setup command, Debian's conmon; runc
//     through the harness's wrapper (test/runcwrap), which raises an
//     oom_score_adj below this machine's floor to it, as containerd's
//     restrict_oom_score_adj does: the kubelet gives a critical pod -997;
//   - the harness's images (the pause image, hangwatch's) pulled from a
//     registry of its own on loopback, which lives as long as the CRI-O
//     (registries.conf maps hangwatch.local to it);
//   - the kubelet's hugepage limits dropped by the same wrapper where the
//     hugetlb hierarchy is not mounted (runcwrap says why).
const crioConfig = `[crio]
root = "%[1]s/storage"
runroot = "%[1]s/run/storage"
storage_driver = "vfs"
log_dir = "%[1]s/logs"
version_file = "%[1]s/run/version"
version_file_persist = "%[1]s/lib/version"
clean_shutdown_file = "%[1]s/lib/clean.shutdown"

[crio.api]
listen = "%[1]s/crio.sock"
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
conmon_cgroup = "pod"
pinns_path = "%[2]s/pinns"
namespaces_dir = "%[1]s/run/ns"
container_exits_dir = "%[1]s/run/exits"
container_attach_socket_dir = "%[1]s/run/attach"
hooks_dir = ["%[1]s/hooks.d"]
cdi_spec_dirs = ["%[1]s/cdi"]
decryption_keys_path = "%[1]s/keys"
irqbalance_config_file = "%[1]s/irqbalance"
irqbalance_config_restore_file = "disable"
disable_hostport_mapping = true
drop_infra_ctr = true
log_level = "info"

[crio.runtime.runtimes.runc]
runtime_path = "%[5]s"
runtime_type = "oci"
runtime_root = "%[1]s/run/runc"
monitor_path = "%[3]s"
monitor_cgroup = "pod"

[crio.image]
pause_image = "%[4]s"
pause_command = "/pause"
signature_policy = "%[1]s/policy.json"
signature_policy_dir = "%[1]s/policies"
namespaced_auth_dir = "%[1]s/auth"
big_files_temporary_dir = "%[1]s/tmp"

[crio.network]
network_dir = "%[1]s/cni"
plugin_dirs = ["/usr/lib/cni"]

[crio.nri]
enable_nri = false
nri_listen = "%[1]s/run/nri.sock"
`

// crioStorageConf keeps containers/storage from merging in the host's
// /etc/containers/storage.conf.
const crioStorageConf = `[storage]
driver = "vfs"
graphroot = "%[1]s/storage"
runroot = "%[1]s/run/storage"
`

// crioRegistriesConf sends pulls of hangwatch.local/* to the harness's
// registry on loopback (%[1]s), over plain HTTP.
const crioRegistriesConf = `unqualified-search-registries = []

[[registry]]
prefix = "hangwatch.local"
location = "%[1]s"
insecure = true
`

// crioPolicy accepts any image: the only one is the harness's own.
const crioPolicy = `{"default": [{"type": "insecureAcceptAnything"}]}`

// writeConfig writes CRI-O's configuration, storage, registries, policy
// and CNI files into c.Dir; registry is the harness registry's host:port.
func (c *CRIO) writeConfig(registry string) error {
	for _, d := range []string{"cni", "tmp", "lib", "run"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"crio.conf":                fmt.Sprintf(crioConfig, c.Dir, c.Bin.Dir, c.Bin.Conmon, harness.PauseImage, c.wrapper),
		"storage.conf":             fmt.Sprintf(crioStorageConf, c.Dir),
		"registries.conf":          fmt.Sprintf(crioRegistriesConf, registry),
		"policy.json":              crioPolicy,
		"cni/10-loopback.conflist": harness.LoopbackCNI,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// crioArgs are crio's arguments: this configuration and no drop-ins.
func (c *CRIO) crioArgs() []string {
	return []string{"--config", filepath.Join(c.Dir, "crio.conf"), "--config-dir", "",
		"--registries-conf", filepath.Join(c.Dir, "registries.conf"), "--registries-conf-dir", filepath.Join(c.Dir, "registries.d")}
}

// crioEnv points containers/storage at the instance's storage.conf.
func (c *CRIO) crioEnv() []string {
	return []string{"CONTAINERS_STORAGE_CONF=" + filepath.Join(c.Dir, "storage.conf")}
}
