package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Retention is the retention section of the configuration: how long the
// finished runs of the namespace are kept before `ow server`'s pruner
// (and `ow runs prune`) deletes them.
//
//	retention:
//	  default: 30d               # every workflow without a period of its own
//	  workflows:
//	    nightly-report: 7d
//	    audit: 0                 # 0: kept forever
//	  interval: 1h               # ow server's pruner: time between prunes
//	  duty: 0.05                 # ow server's pruner: its largest share of the time
//
// Without the section nothing is deleted: `ow server` runs no pruner.
type Retention struct {
	// Default is how long a finished run is kept after it finished (YAML
	// retention.default); 0 keeps runs forever. Default 0.
	Default Duration `yaml:"default"`
	// Workflows overrides Default per workflow name (YAML
	// retention.workflows); 0 keeps that workflow's runs forever.
	Workflows map[string]Duration `yaml:"workflows"`
	// Interval is the time between two prunes of `ow server`'s pruner
	// (YAML retention.interval); 0 means the pruner's default, 1 h.
	Interval Duration `yaml:"interval"`
	// Duty is the largest share of the time `ow server`'s pruner spends
	// deleting, from 0 to 1 (YAML retention.duty): after a batch it rests
	// long enough to keep to it. 0 means the pruner's default, 0.05; 1
	// deletes without rest.
	Duty float64 `yaml:"duty"`
}

// Enabled reports whether the section deletes anything: a positive
// default or workflow period.
func (r Retention) Enabled() bool {
	if r.Default > 0 {
		return true
	}
	for _, d := range r.Workflows {
		if d > 0 {
			return true
		}
	}
	return false
}

// Periods returns the default period and the per-workflow ones as
// durations.
func (r Retention) Periods() (time.Duration, map[string]time.Duration) {
	ws := make(map[string]time.Duration, len(r.Workflows))
	for name, d := range r.Workflows {
		ws[name] = time.Duration(d)
	}
	return time.Duration(r.Default), ws
}

// String is the section as `ow doctor` and `ow server` show it:
// "default 30d, nightly-report 7d", or "keep forever".
func (r Retention) String() string {
	if !r.Enabled() {
		return "keep forever"
	}
	period := func(d Duration) string {
		if d == 0 {
			return "forever"
		}
		return d.String()
	}
	parts := []string{"default " + period(r.Default)}
	for _, name := range slices.Sorted(maps.Keys(r.Workflows)) {
		parts = append(parts, name+" "+period(r.Workflows[name]))
	}
	if r.Interval != 0 {
		parts = append(parts, "every "+r.Interval.String())
	}
	if r.Duty != 0 {
		parts = append(parts, fmt.Sprintf("duty %g", r.Duty))
	}
	return strings.Join(parts, ", ")
}

// Duration is a period in the configuration: a whole number of days
// ("30d"), or anything time.ParseDuration reads ("36h", "90m"); "0" is
// zero. Negative periods are refused.
type Duration time.Duration

// ParseDuration reads a [Duration]: "<n>d" for n whole days, else Go's
// duration syntax. The error says which forms are accepted.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("invalid period %q: want a whole number of days from 0 to 36500 (30d) or a Go duration (36h, 90m)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid period %q: want a whole number of days (30d) or a non-negative Go duration (36h, 90m)", s)
	}
	return d, nil
}

// UnmarshalYAML reads a Duration from a YAML scalar.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a period such as 30d or 12h", n.Line)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// String formats d as ParseDuration reads it: whole days as "<n>d".
func (d Duration) String() string {
	v := time.Duration(d)
	if v != 0 && v%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(v/(24*time.Hour)), 10) + "d"
	}
	return v.String()
}
