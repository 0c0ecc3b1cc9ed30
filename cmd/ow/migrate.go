package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the database schema",
		Long: `Apply the pending schema migrations to the configured database and print
the versions applied. Safe to run again, and from several processes at once.
(Workers and the other commands also migrate when they open the database.)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd)
			if err != nil {
				return err
			}
			m, err := cfg.Migrate(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(m)
			}
			if len(m.Applied) == 0 {
				fmt.Fprintf(a.stdout, "%s %s: schema is up to date (version %d)\n", m.Backend, m.Location, m.After)
				return nil
			}
			fmt.Fprintf(a.stdout, "%s %s: applied migrations %d to %d (schema version %d → %d)\n",
				m.Backend, m.Location, m.Applied[0], m.Applied[len(m.Applied)-1], m.Before, m.After)
			return nil
		},
	}
}
