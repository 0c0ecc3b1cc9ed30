package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/openworkflow-go/openworkflow/dag"
)

// printDAGStatus prints, after a DAG run's attempts, its DAG status: one
// row per step in declaration order (after the compensation chain, once
// the run compensates), with its dependencies, status,
// attempts and the state of its compensation.
func (a *app) printDAGStatus(st *dag.RunStatus) error {
	fmt.Fprintf(a.stdout, "\nDAG status: %s\n", st.Status)
	if len(st.Compensations) > 0 {
		fmt.Fprintf(a.stdout, "Compensation chain: %s\n", strings.Join(st.Compensations, " → "))
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tDEPENDS ON\tSTATUS\tATTEMPTS\tSTARTED\tCOMPLETED\tCOMPENSATION\tRESULT")
	for _, def := range st.Definition.Steps {
		s := st.Steps[def.Name]
		deps := "-"
		if len(def.DependsOn) > 0 {
			deps = strings.Join(def.DependsOn, ",")
		}
		detail := clip(s.Output, 60)
		switch {
		case s.Error != "" && s.Status != dag.StatusCompleted:
			detail = "error: " + clipText(s.Error, 60)
		case s.NextAttemptAt != nil:
			detail = "next attempt " + formatTime(s.NextAttemptAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", def.Name, deps, s.Status, s.Attempts,
			formatTime(s.StartedAt), formatTime(s.CompletedAt), compensationText(def, s.Compensation), detail)
	}
	return tw.Flush()
}

// compensationText summarises a step's compensation for the table.
func compensationText(def dag.Step, c *dag.AttemptsStatus) string {
	switch {
	case def.Compensate == "":
		return "-"
	case c == nil:
		return "(" + def.Compensate + ")"
	}
	s := fmt.Sprintf("%s %s ×%d", def.Compensate, c.Status, c.Attempts)
	if c.Error != "" && c.Status != dag.StatusCompleted {
		s += ": " + clipText(c.Error, 40)
	}
	return s
}

// clipText cuts s to n bytes.
func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
