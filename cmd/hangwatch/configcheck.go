package main

import (
	"fmt"
	"strings"

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
	var output string
	cmd := &cobra.Command{
		Use:   "check FILE [run flags]",
		Short: "Validate a " + configKind + " file",
		Long: `check decodes FILE strictly (unknown fields are errors), applies the run flags
given after it over the file as 'hangwatch run --config FILE' would, and
reports every invalid value at once with its field path. A valid file gets
one line saying so; -o yaml prints the effective configuration instead:
every setting, defaults filled in, and the condition rules with the
built-in ones merged. Exit code 0 when valid, 2 when not.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "yaml" {
				return fieldError("--output", output, "must be empty or yaml")
			}
			o.conds.config, o.conds.configArg = args[0], true
			if _, err := o.configure(cmd.Flags()); err != nil {
				return err
			}
			if o.kernel.enabled {
				if _, err := o.kernel.ruleSets(); err != nil {
					return err
				}
			}
			if output == "" {
				return printValid(cmd, args[0], o.conds.specs())
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
	cmd.Flags().StringVarP(&output, "output", "o", "", "empty: one line saying the file is valid; yaml: the effective configuration")
	return cmd
}

// printValid says the file is valid and which conditions it leaves on.
func printValid(cmd *cobra.Command, path string, specs []conditions.Spec) error {
	var on []string
	for _, s := range specs {
		if !s.Disabled {
			on = append(on, s.Type)
		}
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%s %s). 'hangwatch config check %s -o yaml' prints the effective configuration.\n",
		path, configAPIVersion, configKind, path)
	if err == nil {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "conditions: %s\n", strings.Join(on, ", "))
	}
	return err
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
