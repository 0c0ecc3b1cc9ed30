package main

import (
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openworkflow-go/openworkflow/config"
)

// nextPageCommand returns the command line that repeats cmd with every
// flag the user set (filters, --limit, the database and namespace), minus
// --cursor and --json, so that appending "--cursor <next>" lists the next
// page of the same query. Values are quoted for a POSIX shell; a password
// in --postgres-url is masked (as by [config.RedactURL]) so that the hint
// never prints a secret.
func nextPageCommand(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "cursor", "json", "help":
			return
		}
		if f.Value.Type() == "bool" {
			if f.Value.String() == "true" {
				parts = append(parts, "--"+f.Name)
			} else {
				parts = append(parts, "--"+f.Name+"=false")
			}
			return
		}
		v := f.Value.String()
		if f.Name == "postgres-url" {
			v = config.RedactURL(v)
		}
		parts = append(parts, "--"+f.Name, shellQuote(v))
	})
	return strings.Join(parts, " ")
}

// shellSafe matches the words a POSIX shell reads literally.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell: unchanged when it needs no
// quoting, else in single quotes (a pair of them for the empty string).
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
