package nhc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hangwatch/hangwatch/test/harness"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// registerNHCWebhook registers the module's ValidatingWebhookConfiguration
// (config/webhook/manifests.yaml), its Service replaced by the
// controller's loopback address, so NodeHealthCheck's own validation
// judges what a test applies.
func registerNHCWebhook(t *testing.T, cp *harness.ControlPlane, nhc Operator) {
	t.Helper()
	cfg, err := nhcWebhookConfiguration(cp, nhc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nhcWebhookConfiguration is the module's webhook configuration, each
// webhook calling https://127.0.0.1:NHCWebhookPort at its Service's path
// and trusting the test's CA.
func nhcWebhookConfiguration(cp *harness.ControlPlane, nhc Operator) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	raw, err := os.ReadFile(filepath.Join(nhc.WebhookDir, "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("the webhook configuration: %w", err)
	}
	ca, err := os.ReadFile(cp.PKI.CAFile)
	if err != nil {
		return nil, err
	}
	if len(cfg.Webhooks) == 0 {
		return nil, errors.New("the module's webhook configuration has no webhook")
	}
	cfg.Name = "node-healthcheck-" + cfg.Name
	for i := range cfg.Webhooks {
		svc := cfg.Webhooks[i].ClientConfig.Service
		if svc == nil || svc.Path == nil {
			return nil, fmt.Errorf("webhook %s names no Service path", cfg.Webhooks[i].Name)
		}
		url := fmt.Sprintf("https://127.0.0.1:%d%s", NHCWebhookPort, *svc.Path)
		cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	}
	return &cfg, nil
}
