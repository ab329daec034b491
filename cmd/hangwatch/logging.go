package main

import (
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/hangwatch/hangwatch/internal/cli"
)

// logFlags are klog's verbosity flags and the output format. They stand in
// for component-base/logs, which links zap for its JSON format: the JSON
// here is the standard library's slog handler under klog.
type logFlags struct {
	format string
	klog   *flag.FlagSet
}

func (l *logFlags) add(fs *pflag.FlagSet) {
	l.klog = cli.AddVerbosityFlags(fs)
	fs.StringVar(&l.format, "logging-format", "text", `"text" (klog's lines) or "json" (one JSON object a line: time, level, msg and the keys; slog levels: INFO, ERROR, and DEBUG+3 for V(1) lines, DEBUG+2 for V(2)…)`)
}

// apply sets the log format once the flags are parsed.
func (l *logFlags) apply() error {
	switch l.format {
	case "text":
		return nil
	case "json":
		v, err := strconv.Atoi(l.klog.Lookup("v").Value.String())
		if err != nil {
			return fmt.Errorf("--v %q: %w", l.klog.Lookup("v").Value.String(), err)
		}
		// klog filters by -v before a line reaches the logger; a logr
		// V(n) line is slog level -n, so the handler lets down to -v in.
		klog.SetSlogLogger(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-v)})))
		return nil
	}
	return fmt.Errorf("--logging-format %q: want text or json", l.format)
}

// initLogs sends the standard library's log package through klog, as
// component-base's InitLogs did.
func initLogs() {
	log.SetOutput(klogWriter{})
	log.SetFlags(0)
}

type klogWriter struct{}

func (klogWriter) Write(p []byte) (int, error) {
	klog.InfoDepth(1, string(p))
	return len(p), nil
}
