package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/hangwatch/hangwatch/remedy"
)

func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Work with the RemedyConfiguration file"}
	var output string
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a " + remedy.Kind + " file",
		Long: `check decodes FILE strictly (unknown fields are errors) over the default policy
and reports every problem at once with its field path. -o yaml prints the
policy in effect. Exit code 0 when valid, 2 when not.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := remedy.LoadPolicyFile(args[0])
			if err != nil {
				return err
			}
			if output == "yaml" {
				out, err := yaml.Marshal(p)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "apiVersion: %s\nkind: %s\n%s", remedy.APIVersion, remedy.Kind, out)
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%s %s): %d condition types, maxUnhealthy %s, dryRun %v\n",
				args[0], remedy.APIVersion, remedy.Kind, len(p.Conditions), p.MaxUnhealthy.String(), p.DryRun)
			return err
		},
	}
	check.Flags().StringVarP(&output, "output", "o", "", "empty: one line saying the file is valid; yaml: the policy in effect")
	cmd.AddCommand(check)
	return cmd
}
