package csi

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hangwatch/hangwatch/test/harness"
	"github.com/hangwatch/hangwatch/test/harness/kubelet"
	"github.com/hangwatch/hangwatch/test/harness/systemd"
)

// csiUnitTemplate runs one of the driver's node-side processes (%s: its
// command line) under a node's systemd, its output appended to a log (%s),
// as a node runs its CSI node plugin: in the node's mount namespace, so
// that what it mounts is what the kubelet and the pods there see.
const csiUnitTemplate = `[Unit]
Description=hangwatch test harness CSI node side
DefaultDependencies=no

[Service]
ExecStart=%s
StandardOutput=append:%s
StandardError=inherit
Restart=no
`

// AddNodeUnder starts k's node instance of the driver and its registrar
// as units of sd, the systemd k runs under (its node's mount namespace),
// serving and registering under k's root dir as AddNode does; it returns
// once the Node's CSINode lists the driver.
func (c *Driver) AddNodeUnder(ctx context.Context, sd *systemd.Systemd, k *kubelet.Kubelet) error {
	root := k.RootDir()
	socket := filepath.Join(root, "plugins", DriverName, "csi.sock")
	n := &csiNode{sd: sd}
	if err := c.claim(k.Node, n); err != nil {
		return err
	}
	for _, u := range []struct{ name, mode, arg string }{
		{"csi-node.service", "node", "-node-id=" + k.Node + " -data-dir=" + c.DataDir + " -calls=" + c.callLog(k.Node) + " -name=" + DriverName},
		{"csi-registrar.service", "registrar", "-registration-socket=" + filepath.Join(root, "plugins_registry", DriverName+"-reg.sock")},
	} {
		log := filepath.Join(c.Dir, strings.TrimSuffix(u.name, ".service")+"-"+k.Node+".log")
		line := c.driver + " -mode=" + u.mode + " -endpoint=" + socket + " " + u.arg
		if strings.ContainsAny(line+log, "\t\n\"'\\%$;") {
			return fmt.Errorf("csi unit %s: %q would need quoting", u.name, line)
		}
		if err := sd.SetUnit(ctx, u.name, fmt.Sprintf(csiUnitTemplate, line, log)); err != nil {
			return err
		}
		if err := sd.StartUnit(ctx, u.name); err != nil {
			return err
		}
		n.units, n.logs = append(n.units, u.name), append(n.logs, log)
	}
	return c.waitListed(ctx, k.Node, n.logTails)
}

// stopUnits stops a node instance run under systemd.
func (n *csiNode) stopUnits() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := len(n.units) - 1; i >= 0; i-- {
		_ = n.sd.StopUnit(ctx, n.units[i])
	}
}

func (n *csiNode) logTails() string {
	var tails []string
	for _, l := range n.logs {
		tails = append(tails, harness.FileTail(filepath.Base(l), l, 15))
	}
	return strings.Join(tails, "\n")
}
