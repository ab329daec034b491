package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/conditions"
)

func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with the HangwatchConfiguration file",
	}
	cmd.AddCommand(newConfigCheckCommand())
	return cmd
}

func newConfigCheckCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "check FILE [run flags]",
		Short: "Validate a " + configKind + " file and print the effective configuration",
		Long: `check decodes FILE strictly (unknown fields are errors), applies the run flags
given after it over the file as 'hangwatch run --config FILE' would, reports
every invalid value at once with its field path, and prints the effective
configuration: every setting, defaults filled in, and the condition rules
with the built-in ones merged. Exit code 0 when valid, 2 when not.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.conds.config = args[0]
			if _, err := o.configure(cmd.Flags()); err != nil {
				return err
			}
			if o.kernel.enabled {
				if _, err := o.kernel.ruleSets(); err != nil {
					return err
				}
			}
			out, err := effectiveConfig(o, cmd)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	o.addFlags(cmd.Flags())
	_ = cmd.Flags().MarkHidden("config") // FILE is the argument
	return cmd
}

// effectiveConfig is the configuration `run` would use, as YAML.
func effectiveConfig(o *runOptions, cmd *cobra.Command) ([]byte, error) {
	s, err := effectiveSettings(cmd.Flags())
	if err != nil {
		return nil, err
	}
	body := struct {
		settings   `json:",inline"`
		Conditions []conditions.Spec `json:"conditions"`
	}{*s, o.conds.specs()}
	out, err := yaml.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("print the effective configuration: %w", err)
	}
	header := fmt.Sprintf("apiVersion: %s\nkind: %s\n", configAPIVersion, configKind)
	return append([]byte(header), out...), nil
}
