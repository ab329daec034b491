package agent

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangwatch/hangwatch/config"
)

func TestChangedSectionsNamesWhatAReloadDoesNotApply(t *testing.T) {
	period := metav1.Duration{Duration: 5 * time.Second}
	endpoint := "unix:///run/containerd/containerd.sock"
	running := config.Default()
	running.Runtime.Period = period
	edited := config.Default()
	edited.Runtime.Period, edited.Runtime.Endpoint = period, endpoint
	if got := changedSections(running, edited); !slices.Equal(got, []string{"runtime"}) {
		t.Fatalf("changed sections %v, want [runtime]", got)
	}
	if got := changedSections(running, running); len(got) != 0 {
		t.Fatalf("an unchanged file: %v", got)
	}
	if got := changedSections(nil, edited); !slices.Contains(got, "runtime") {
		t.Fatalf("no running file: %v", got)
	}
}
