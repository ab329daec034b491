package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hangwatch/hangwatch/internal/buildinfo"
	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print build information",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Get()
			switch output {
			case "json":
				data, _ := json.MarshalIndent(info, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(data))
			case "":
				fmt.Fprintf(cmd.OutOrStdout(), "hangwatch %s (commit %s, built %s, %s, %s)\n",
					info.GitVersion, orUnknown(info.GitCommit), orUnknown(info.BuildDate), info.GoVersion, info.Platform)
			default:
				return fieldError("--output", output, "must be empty or json")
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: empty for one line, or json")
	return cmd
}

func orUnknown(s string) string {
	if s == "" || strings.Contains(s, "$Format") || s == "1970-01-01T00:00:00Z" {
		return "unknown"
	}
	return s
}
