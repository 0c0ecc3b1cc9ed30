package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openworkflow-go/openworkflow/config"
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
			if len(m.Lines) > 1 {
				printMigrationLines(a, m)
				return nil
			}
			if len(m.Applied) == 0 {
				fmt.Fprintf(a.stdout, "%s %s: schema is up to date (version %d)\n", m.Backend, m.Location, m.After)
				return nil
			}
			fmt.Fprintf(a.stdout, "%s %s: applied migrations %d to %d (%s → schema version %d)\n",
				m.Backend, m.Location, m.Applied[0], m.Applied[len(m.Applied)-1], schemaVersionText(m.Before), m.After)
			return nil
		},
	}
}

// printMigrationLines prints a PostgreSQL migration: OpenWorkflow's line
// and the Go SDK's own, one line each, since a schema the TypeScript SDK
// migrated is up to date in the first and new in the second.
func printMigrationLines(a *app, m *config.Migration) {
	fmt.Fprintf(a.stdout, "%s %s:\n", m.Backend, m.Location)
	for _, l := range m.Lines {
		title := map[string]string{"openworkflow": "OpenWorkflow's migrations", "go": "the Go SDK's migrations"}[l.Name]
		if title == "" {
			title = l.Name + " migrations"
		}
		if len(l.Applied) == 0 {
			fmt.Fprintf(a.stdout, "  %s (%s): up to date (version %d)\n", title, l.Table, l.After)
			continue
		}
		before := "none yet"
		if l.Before >= 0 {
			before = fmt.Sprintf("version %d", l.Before)
		}
		fmt.Fprintf(a.stdout, "  %s (%s): applied migrations %d to %d (%s → version %d)\n",
			title, l.Table, l.Applied[0], l.Applied[len(l.Applied)-1], before, l.After)
	}
}

// schemaVersionText describes a schema version for people: "no schema yet"
// for -1 (the JSON value of an empty database), else "schema version N".
func schemaVersionText(v int) string {
	if v < 0 {
		return "no schema yet"
	}
	return fmt.Sprintf("schema version %d", v)
}
