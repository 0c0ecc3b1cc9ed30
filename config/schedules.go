package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Schedule is one entry of the schedules section of the configuration,
// a schedule `ow server` and `ow worker` put when they start (upsert by
// name: starting again changes nothing, and an operator's pause stays):
//
//	schedules:
//	  - name: nightly-report
//	    workflow: send-report      # the workflow each tick starts
//	    version: v2                # optional
//	    cron: "0 2 * * *"          # 5 fields, 6 with seconds first, or @hourly, @every 90s
//	    time_zone: Europe/Paris    # IANA name; default UTC
//	    input: {team: ops}         # any YAML value, stored as JSON; default null
//	    overlap: skip              # skip (default), buffer_one or allow_all
//	    catchup_window: 5m         # default 1m, at least 1s
//	    priority: 10               # the priority of its runs; default 0
//	    paused: false              # a new schedule starts paused
//
// See the root package's ScheduleSpec for what each field means.
type Schedule struct {
	Name          string        `yaml:"name"`
	Workflow      string        `yaml:"workflow"`
	Version       string        `yaml:"version"`
	Cron          string        `yaml:"cron"`
	TimeZone      string        `yaml:"time_zone"`
	Input         any           `yaml:"input"`
	Overlap       string        `yaml:"overlap"`
	CatchupWindow time.Duration `yaml:"catchup_window"`
	Priority      int           `yaml:"priority"`
	Paused        bool          `yaml:"paused"`
}

// scheduleKeys maps the fields a backend names in a
// *backend.ScheduleFieldError to this file's keys.
var scheduleKeys = map[string]string{
	"name": "name", "workflowName": "workflow", "version": "version", "cron": "cron",
	"timeZone": "time_zone", "input": "input", "overlap": "overlap", "catchupWindow": "catchup_window",
	"priority": "priority",
}

// params returns the entry as the backend's put parameters, checked as
// every backend checks them; the error names the field by its key in the
// file.
func (s Schedule) params() (backend.PutScheduleParams, error) {
	p := backend.PutScheduleParams{
		Name: s.Name, WorkflowName: s.Workflow, Cron: s.Cron, TimeZone: s.TimeZone,
		Overlap: backend.OverlapPolicy(s.Overlap), CatchupWindow: s.CatchupWindow, Priority: s.Priority, Paused: s.Paused,
	}
	if s.Version != "" {
		p.Version = &s.Version
	}
	if s.Input != nil {
		in, err := json.Marshal(s.Input)
		if err != nil {
			return p, fmt.Errorf("input: %v (want a value JSON can hold: a map with string keys, a list, a string, a number, a boolean)", err)
		}
		p.Input = in
	}
	if _, _, err := p.Prepare(); err != nil {
		var fe *backend.ScheduleFieldError
		if errors.As(err, &fe) {
			return p, fmt.Errorf("%s %q: %s", scheduleKeys[fe.Field], fe.Value, fe.Reason)
		}
		return p, err
	}
	return p, nil
}

// validateSchedules checks every entry and that no name is taken twice;
// the error names the entry (schedules[i], and its name).
func validateSchedules(ss []Schedule) error {
	seen := map[string]int{}
	for i, s := range ss {
		at := fmt.Sprintf("schedules[%d]", i)
		if s.Name != "" {
			at += fmt.Sprintf(" (%s)", s.Name)
		}
		if _, err := s.params(); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if j, dup := seen[s.Name]; dup {
			return fmt.Errorf("%s: the name %q is taken by schedules[%d] too", at, s.Name, j)
		}
		seen[s.Name] = i
	}
	return nil
}

// ApplySchedules puts the configuration's schedules into b (see
// [Schedule]) and returns how many it put. It fails when b keeps no
// schedules (backend.ErrNotSupported) or a put fails, naming the schedule;
// the schedules put before stay.
func (c *Config) ApplySchedules(ctx context.Context, b backend.Backend) (int, error) {
	if len(c.Schedules) == 0 {
		return 0, nil
	}
	ss, ok := b.(backend.ScheduleStore)
	if !ok {
		return 0, fmt.Errorf("%s has schedules, but the backend (%T) keeps none: %w", c.File, b, backend.ErrNotSupported)
	}
	for i, s := range c.Schedules {
		p, err := s.params()
		if err == nil {
			_, err = ss.PutSchedule(ctx, p)
		}
		if err != nil {
			return i, fmt.Errorf("put schedules[%d] (%s) of %s: %w", i, s.Name, c.File, err)
		}
	}
	return len(c.Schedules), nil
}
