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
	// OpenTime is how long opening took. In JSON it is "openTimeMs", in
	// milliseconds with microsecond precision (e.g. 12.345).
	OpenTime time.Duration `json:"-"`
	// Integrity is the verdict of SQLite's own consistency check (PRAGMA
	// quick_check) of the file: "ok" or "damaged"; "" when not checked
	// (PostgreSQL). IntegrityProblems are the problems it reported, at
	// most [MaxIntegrityProblems].
	Integrity         string   `json:"integrity,omitempty"`
	IntegrityProblems []string `json:"integrityProblems,omitempty"`
	// SchemaVersion is MAX(version) of openworkflow_migrations, -1 when
	// unknown.
	SchemaVersion int `json:"schemaVersion"`
	// Counts are the runs of the namespace per status.
	Counts backend.RunCounts `json:"counts"`
	// Notifications says whether wake-up notifications work: "ok",
	// "in-process" (SQLite: only backends of one process notify each
	// other), or "unavailable: <reason>" (workers fall back to polling).
	Notifications string `json:"notifications"`
	// Replica is the read replica's state (read_replica_url) as measured
	// when the backend opened: up or not, and its replay lag in seconds
	// and bytes; nil without a replica.
	Replica *backend.ReplicaStatus `json:"replica,omitempty"`
}

// diagnosisJSON is the JSON form of [Diagnosis]: OpenTime becomes
// openTimeMs, a number of milliseconds.
type diagnosisJSON struct {
	diagnosisFields
	OpenTimeMs float64 `json:"openTimeMs"`
}

// diagnosisFields has Diagnosis's fields without its JSON methods.
type diagnosisFields Diagnosis

// MarshalJSON encodes d with OpenTime as "openTimeMs" (milliseconds), so
// that the unit is in the key rather than implied by Go's nanoseconds.
func (d Diagnosis) MarshalJSON() ([]byte, error) {
	return json.Marshal(diagnosisJSON{diagnosisFields(d), float64(d.OpenTime.Microseconds()) / 1000})
}

// UnmarshalJSON decodes what [Diagnosis.MarshalJSON] encodes.
func (d *Diagnosis) UnmarshalJSON(b []byte) error {
	var j diagnosisJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*d = Diagnosis(j.diagnosisFields)
	d.OpenTime = time.Duration(j.OpenTimeMs * float64(time.Millisecond))
	return nil
}

// NotificationProbeTimeout bounds the PostgreSQL notification round trip
// of [Config.Diagnose]: 3 s.
const NotificationProbeTimeout = 3 * time.Second

// Diagnose opens the configured backend and reports on it: reachable or
// not (and why), SQLite's own check of an SQLite file (before opening it,
// so that a damaged file is neither migrated nor written), schema
// version, run counts per status and whether wake-up notifications work.
// On PostgreSQL it sends one harmless "work available" notification
// through the database and waits for it to come back. It returns an error
// when the backend could not be opened or the SQLite file is damaged; the
// Diagnosis is filled as far as it got either way.
func (c *Config) Diagnose(ctx context.Context) (*Diagnosis, error) {
	d := &Diagnosis{
		File: c.File, Settings: c.Source(), Backend: c.Kind(), Location: c.Location(), SchemaVersion: -1,
	}
	checked, err := d.checkIntegrity(ctx, c)
	if err != nil {
		return d, err
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
	if !checked { // a new SQLite file: check what Open created
		if _, err := d.checkIntegrity(ctx, c); err != nil {
			return d, err
		}
	}
	if v, err := c.SchemaVersion(ctx, b); err == nil {
		d.SchemaVersion = v
	}
	if d.Counts, err = b.CountWorkflowRuns(ctx); err != nil {
		d.Error = "count runs: " + err.Error()
	}
	d.Notifications = probeNotifications(ctx, b)
	if rr, ok := b.(backend.ReadReplicas); ok && rr.HasReadReplica() {
		s := rr.ReplicaStatus()
		d.Replica = &s
	}
	return d, nil
}

// checkIntegrity fills Integrity and IntegrityProblems from
// [Config.CheckIntegrity] and reports whether the file was checked. A
// damaged file sets Error and returns the error saying what to do.
func (d *Diagnosis) checkIntegrity(ctx context.Context, c *Config) (bool, error) {
	problems, checked, err := c.CheckIntegrity(ctx)
	switch {
	case err != nil:
		d.Error = "integrity check: " + err.Error()
		return false, nil // opening will tell more
	case !checked:
		return false, nil
	case len(problems) == 0:
		d.Integrity = "ok"
		return true, nil
	}
	d.Integrity, d.IntegrityProblems = "damaged", problems
	d.Notifications = "unknown (database damaged)"
	err = c.damagedError(problems, nil)
	d.Error = err.Error()
	return true, err
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
