package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/hangwatch/hangwatch/conditions"
	"github.com/hangwatch/hangwatch/config"
	"github.com/hangwatch/hangwatch/kernellog"
	"github.com/hangwatch/hangwatch/options"
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
	var output, unused string
	cmd := &cobra.Command{
		Use:   "check FILE [run flags]",
		Short: "Validate a " + config.Kind + " file",
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
			c, err := (&config.Loader{Path: args[0], Named: "FILE", Flags: cmd.Flags(), Check: options.Check}).Load()
			if err != nil {
				return err
			}
			if c.Kernel.Enabled {
				if err := checkKernelRules(c.Configuration); err != nil {
					return err
				}
			}
			if output == "" {
				return printValid(cmd, args[0], options.Specs(c.Configuration))
			}
			out, err := c.Effective(options.Specs(c.Configuration))
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	addRunFlags(cmd.Flags(), &unused)
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
		path, config.APIVersion, config.Kind, path)
	if err == nil {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "conditions: %s\n", strings.Join(on, ", "))
	}
	return err
}

// checkKernelRules loads the kernel rules files and compiles the condition
// rules with the condition types they raise known.
func checkKernelRules(c *config.Configuration) error {
	sets, err := options.RuleSets(c.Kernel)
	if err != nil {
		return err
	}
	m, err := kernellog.NewMonitor(sets, clock.RealClock{}, kernellog.Options{})
	if err != nil {
		return err
	}
	return options.CheckRules(c, m.ConditionTypes())
}
