package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/internal/cli"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/options"
)

func newRulesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Check kernel rules files and replay logs through them",
	}
	cmd.AddCommand(newRulesCheckCommand(), newRulesTestCommand())
	return cmd
}

func newRulesCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE...",
		Short: "Validate kernel rules files (node-problem-detector's format is accepted unchanged)",
		Long:  "check validates each rules file and names every bad rule and what is wrong with it. Exit code 1 if any file is invalid.",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var bad []error
			for _, path := range args {
				rs, err := options.LoadRuleSet(path)
				if err == nil {
					_, err = kernellog.NewMonitor([]*kernellog.RuleSet{rs}, clock.RealClock{}, kernellog.Options{})
				}
				if err != nil {
					bad = append(bad, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: source %s, %d rules, %d conditions\n", path, rs.Source, len(rs.Rules), len(rs.Conditions))
			}
			if len(bad) > 0 {
				return cli.Exit(1, errors.Join(bad...))
			}
			return nil
		},
	}
}

// testMatch is one line of `rules test -o json`.
type testMatch struct {
	Line      string `json:"line"`
	Seq       uint64 `json:"seq"` // kmsg sequence number, or the line number in other formats
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	Type      string `json:"type"`
	Condition string `json:"condition,omitempty"`
	Recovery  bool   `json:"recovery,omitempty"`
}

func newRulesTestCommand() *cobra.Command {
	cfg := config.Default()
	var output string
	cmd := &cobra.Command{
		Use:   "test [--kernel-rules FILE]... LOGFILE",
		Short: "Replay a saved kernel log through the rules and print every match",
		Long: `test replays LOGFILE (kmsg records as 'cat /dev/kmsg' prints them, dmesg lines, or
plain messages; - for standard input) through the rules (the built-in ones unless
--kernel-rules is given) and prints one JSON object per match. As the daemon, a rules
file matches kern-facility records only unless its "facilities" names others; a dmesg
line or a plain message has no facility and counts as kern.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "json" {
				return fieldError("--output", output, "must be json")
			}
			sets, err := options.RuleSets(cfg.Kernel)
			if err != nil {
				return cli.Exit(1, err)
			}
			return replayMatches(cmd.OutOrStdout(), args[0], sets)
		},
	}
	config.AddFlags(cmd.Flags(), cfg, "kernel-rules")
	cmd.Flags().StringVarP(&output, "output", "o", "json", "output format: json (one object per line)")
	return cmd
}

func replayMatches(w io.Writer, path string, sets []*kernellog.RuleSet) error {
	in := os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return cli.Exit(1, err)
		}
		defer f.Close()
		in = f
	}
	matchers, err := kernellog.NewMatchers(sets)
	if err != nil {
		return cli.Exit(1, err)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // kernel lines hold < and >; print them as they are
	var encErr error
	_, err = kernellog.Replay(in, func(r kernellog.Record) {
		matchers.Match(r, func(m kernellog.ScanMatch) {
			if encErr == nil {
				encErr = enc.Encode(testMatch{Line: m.Line, Seq: m.Seq, Rule: m.Rule, Reason: m.Reason,
					Type: m.Type, Condition: m.Condition, Recovery: m.Recovery})
			}
		})
	})
	if err = errors.Join(err, encErr); err != nil {
		return cli.Exit(1, fmt.Errorf("replay %s: %w", path, err))
	}
	return nil
}
