package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/openworkflow-go/openworkflow/config"
)

func (a *app) doctorCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration and the backend",
		Long: `Print where every setting comes from, then open the backend and report
whether it is reachable, its schema version, the runs per status and
whether wake-up notifications work. An SQLite file is first checked with
SQLite's own PRAGMA quick_check (which reads the whole file). Exits 1
when the backend cannot be opened or the SQLite file is damaged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd)
			if err != nil {
				return err
			}
			d, derr := cfg.Diagnose(cmd.Context())
			if a.jsonOut {
				if err := a.printJSON(d); err != nil {
					return err
				}
			} else if err := a.printDiagnosis(cfg, d); err != nil {
				return err
			}
			return derr
		},
	}
}

func (a *app) printDiagnosis(cfg *config.Config, d *config.Diagnosis) error {
	w := a.stdout
	if d.File != "" {
		fmt.Fprintf(w, "config file:    %s\n", d.File)
	} else {
		fmt.Fprintf(w, "config file:    none (no %s in %s or its parents)\n", config.FileName, cfg.Dir)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range d.Settings {
		v := s.Value
		if v == "" {
			v = "(unset)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Key, v, s.From)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "backend:        %s %s\n", d.Backend, d.Location)
	switch d.Integrity {
	case "ok":
		fmt.Fprintf(w, "integrity:      ok (SQLite's PRAGMA quick_check found no problem)\n")
	case "damaged":
		fmt.Fprintf(w, "integrity:      DAMAGED: SQLite's PRAGMA quick_check reports:\n")
		for _, p := range d.IntegrityProblems {
			fmt.Fprintf(w, "                  %s\n", p)
		}
	}
	switch {
	case d.Integrity == "damaged":
		fmt.Fprintf(w, "opened:         no (a damaged file is not opened, so that nothing writes to it)\n")
		return nil
	case !d.Reachable:
		// The first line of the error says what failed: the server not
		// answering, or refusing the role, or having no such database.
		first, _, _ := strings.Cut(d.Error, "\n")
		fmt.Fprintf(w, "opened:         no: %s\n", first)
		return nil
	}
	fmt.Fprintf(w, "reachable:      yes (opened in %s)\n", formatDuration(d.OpenTime))
	fmt.Fprintf(w, "schema version: %d\n", d.SchemaVersion)
	c := d.Counts
	fmt.Fprintf(w, "runs:           %d pending, %d running, %d completed, %d failed, %d canceled\n",
		c.Pending, c.Running, c.Completed, c.Failed, c.Canceled)
	switch d.Notifications {
	case "in-process":
		fmt.Fprintf(w, "notifications:  in-process only (SQLite): a worker wakes at once for work created in its own process, and polls (at most every 1 s) for other processes' work\n")
	default:
		fmt.Fprintf(w, "notifications:  %s\n", d.Notifications)
	}
	if r := d.Replica; r != nil {
		if r.Up {
			fmt.Fprintf(w, "read replica:   up, replay lag %.3f s (%d bytes of WAL); the API's reads go to it while the lag is within %s\n", r.LagSeconds, r.LagBytes, r.MaxLag)
		} else {
			fmt.Fprintf(w, "read replica:   DOWN (reads go to the primary): %s\n", r.Error)
		}
	}
	if d.Error != "" {
		fmt.Fprintf(w, "warning:        %s\n", d.Error)
	}
	return nil
}
