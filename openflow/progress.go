package openflow

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// Event is one step of a flow run's progress, as [Watch] reports it.
type Event struct {
	// Module is the module's durable key: "a", "a#1" (its first retry),
	// "loop[2]/b" (b in iteration 2 of loop).
	Module string `json:"module"`
	// Status is "success", "failure" or "skipped" for a module attempt
	// that finished, "suspended" for a module waiting for a resume event,
	// "sleeping" for a durable sleep (a module's sleep or a retry's
	// delay).
	Status string `json:"status"`
	// Language is the script's, for a script module.
	Language string `json:"language,omitempty"`
	// Duration is the attempt's duration (start to finish).
	Duration time.Duration `json:"duration"`
	// Message is the error message of a failure.
	Message string `json:"message,omitempty"`
	// Until is when a sleep ends.
	Until time.Time `json:"until,omitzero"`
}

// watchPoll is how often Watch reads the run's steps.
const watchPoll = 100 * time.Millisecond

// Watch reports the progress of run runID to fn, each module attempt once
// when it finishes (and each suspension and durable sleep once when it
// begins), in the order the steps were recorded, until the run finishes
// (it returns nil) or ctx ends (ctx's error). It reads the run's steps
// periodically, and those of the chunk runs of its long loops, with the
// same module keys ("l[300]/a"), until each has finished; once the run
// has finished, it reads the chunk runs still followed once more.
func Watch(ctx context.Context, c *ow.Client, runID string, fn func(Event)) error {
	reported := map[string]bool{}
	following := map[string]bool{runID: true}
	runs := []string{runID}
	final := false // the run finished: read the others once more
	for {
		var next []string
		for _, id := range runs {
			run, err := c.GetRun(ctx, id)
			if err != nil {
				return err
			}
			done := run.Status.Normalize().Terminal()
			steps, err := runSteps(ctx, c, id)
			if err != nil {
				return err
			}
			for _, s := range steps {
				if child := s.ChildWorkflowRunID; child != nil && strings.Contains(s.StepName, "@chunk[") {
					if !following[*child] {
						following[*child] = true
						next = append(next, *child)
					}
					continue
				}
				key := s.ID + "/" + string(s.Status)
				if reported[key] {
					continue
				}
				if ev, ok := stepEvent(id, s.StepName, string(s.Kind), string(s.Status.Normalize()), s.Output, s.Context, s.StartedAt, s.FinishedAt); ok {
					reported[key] = true
					fn(ev)
				}
			}
			switch {
			case id == runID && done:
				final = true
			case !done && !final:
				next = append(next, id)
			}
		}
		runs = next
		if final {
			if len(runs) == 0 {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(watchPoll):
		}
	}
}

// stepEvent turns a step attempt into a progress event, if it is one.
func stepEvent(runID, name, kind, status string, output, stepCtx json.RawMessage, started, finished *time.Time) (Event, bool) {
	ev := Event{Module: name}
	if started != nil && finished != nil {
		ev.Duration = finished.Sub(*started)
	}
	last := name[strings.LastIndex(name, "/")+1:]
	switch {
	case kind == "hook-wait" && status == "running" && strings.Contains(last, "@resume."):
		// a suspended module waiting on its hook (see suspend.go)
		ev.Module, ev.Status = name[:strings.LastIndex(name, "@resume.")], "suspended"
		return ev, true
	case kind == "sleep" && status == "running":
		var wc struct {
			ResumeAt string `json:"resumeAt"`
		}
		_ = json.Unmarshal(stepCtx, &wc)
		ev.Module, ev.Status = name[:strings.LastIndex(name, "@")], "sleeping"
		ev.Until, _ = time.Parse(time.RFC3339Nano, wc.ResumeAt)
		return ev, true
	case kind == "function" && status == "completed" && (strings.HasSuffix(last, "@pre") || strings.HasSuffix(last, "@post")):
		// a container's evaluations: an event only when one failed
		var rec struct {
			Failure json.RawMessage `json:"failure"`
		}
		if json.Unmarshal(output, &rec) != nil || rec.Failure == nil {
			return ev, false
		}
		ev.Module, ev.Status, ev.Message = name[:strings.LastIndex(name, "@")], statusFailure, runError(rec.Failure).Error()
		return ev, true
	case kind != "function" || status != "completed" || strings.HasPrefix(name, "@") || strings.Contains(last, "@"):
		return ev, false
	}
	var rec leafRecord
	if json.Unmarshal(output, &rec) != nil || rec.Status == "" {
		return ev, false
	}
	ev.Status, ev.Language = rec.Status, rec.Language
	if rec.Status == statusFailure {
		if r := runError(rec.Result); r != nil {
			ev.Message = r.Error()
		}
	}
	return ev, true
}
