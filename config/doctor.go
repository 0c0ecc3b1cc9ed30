package config

import (
	"context"
	"encoding/json"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
	"github.com/openworkflow-go/openworkflow/backend/postgres"
)

// Diagnosis is what [Config.Diagnose] found; ow doctor prints it.
type Diagnosis struct {
	// File is the configuration file used, "" when none was found.
	File string `json:"file"`
	// Settings lists every setting with its origin, as [Config.Source].
	Settings []Setting `json:"settings"`
	// Backend and Location name the selected database.
	Backend  BackendKind `json:"backend"`
	Location string      `json:"location"`
	// Reachable is true when the backend opened (and migrated); Error
	// holds the reason when it did not, with what to do next.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// OpenTime is how long opening took (JSON: nanoseconds).
	OpenTime time.Duration `json:"openTime"`
	// SchemaVersion is MAX(version) of openworkflow_migrations, -1 when
	// unknown.
	SchemaVersion int `json:"schemaVersion"`
	// Counts are the runs of the namespace per status.
	Counts backend.RunCounts `json:"counts"`
	// Notifications says whether wake-up notifications work: "ok",
	// "in-process" (SQLite: only backends of one process notify each
	// other), or "unavailable: <reason>" (workers fall back to polling).
	Notifications string `json:"notifications"`
}

// NotificationProbeTimeout bounds the PostgreSQL notification round trip
// of [Config.Diagnose]: 3 s.
const NotificationProbeTimeout = 3 * time.Second

// Diagnose opens the configured backend and reports on it: reachable or
// not (and why), schema version, run counts per status and whether wake-up
// notifications work. On PostgreSQL it sends one harmless "work available"
// notification through the database and waits for it to come back. It
// returns an error only when the backend could not be opened; the
// Diagnosis is filled as far as it got either way.
func (c *Config) Diagnose(ctx context.Context) (*Diagnosis, error) {
	d := &Diagnosis{
		File: c.File, Settings: c.Source(), Backend: c.Kind(), Location: c.Location(), SchemaVersion: -1,
	}
	start := time.Now()
	b, err := c.OpenBackend(ctx)
	d.OpenTime = time.Since(start)
	if err != nil {
		d.Error = err.Error()
		d.Notifications = "unknown (backend unreachable)"
		return d, err
	}
	defer b.Close()
	d.Reachable = true
	if v, err := c.SchemaVersion(ctx, b); err == nil {
		d.SchemaVersion = v
	}
	if d.Counts, err = b.CountWorkflowRuns(ctx); err != nil {
		d.Error = "count runs: " + err.Error()
	}
	d.Notifications = probeNotifications(ctx, b)
	return d, nil
}

// probeNotifications checks that a notification sent through the database
// reaches a subscriber.
func probeNotifications(ctx context.Context, b backend.Backend) string {
	pb, ok := b.(*postgres.Backend)
	if !ok {
		return "in-process"
	}
	ctx, cancel := context.WithTimeout(ctx, NotificationProbeTimeout)
	defer cancel()
	events, err := pb.Subscribe(ctx)
	if err != nil {
		return "unavailable: " + err.Error()
	}
	// The payload format of the postgres backend's pg_notify calls.
	payload, _ := json.Marshal(map[string]string{"schema": pb.Schema(), "ns": pb.NamespaceID(), "kind": string(backend.EventWorkAvailable), "id": ""})
	if _, err := pb.Pool().Exec(ctx, `SELECT pg_notify('openworkflow', $1)`, string(payload)); err != nil {
		return "unavailable: pg_notify failed: " + err.Error()
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return "unavailable: no notification within " + NotificationProbeTimeout.String()
			}
			if ev.Kind == backend.EventWorkAvailable {
				return "ok"
			}
		case <-ctx.Done():
			return "unavailable: no notification within " + NotificationProbeTimeout.String()
		}
	}
}
