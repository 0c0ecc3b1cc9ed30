package backend

import (
	"context"
	"time"
)

// replicaReadsKey is the context key of [WithReplicaReads].
type replicaReadsKey struct{}

// WithReplicaReads marks ctx: the list, count and get reads a backend
// serves with it may come from a read replica, when the backend has one
// (see [ReadReplicas]). readAfter is the token of the caller's own last
// write ([ReadReplicas.ReadAfter], carried back by the caller); "" means
// the caller wrote nothing it must read back. A backend serves a marked
// read from the replica only once the replica has replayed readAfter
// (read-your-writes), and from the primary otherwise.
//
// Only the HTTP API and the dashboard mark their reads; workers and the
// in-process client never do, so they always read the primary.
func WithReplicaReads(ctx context.Context, readAfter string) context.Context {
	return context.WithValue(ctx, replicaReadsKey{}, readAfter)
}

// ReplicaReadsAllowed returns the token ctx was marked with by
// [WithReplicaReads], and whether it was marked at all.
func ReplicaReadsAllowed(ctx context.Context) (readAfter string, ok bool) {
	readAfter, ok = ctx.Value(replicaReadsKey{}).(string)
	return readAfter, ok
}

// ReadReplicas is implemented by backends that can serve reads from a
// read replica (the PostgreSQL backend with Options.ReadReplicaURL). The
// SQLite backend has none and does not implement it.
type ReadReplicas interface {
	// HasReadReplica reports whether a replica is configured; when false
	// every read goes to the primary and ReadAfter returns "".
	HasReadReplica() bool
	// ReadAfter returns a token covering every write committed on the
	// primary so far (for PostgreSQL its current WAL position, "0/16B3740").
	// A caller that just wrote hands it back with [WithReplicaReads] to
	// read its own writes. It returns "" without a replica.
	ReadAfter(ctx context.Context) (string, error)
	// ReplicaStatus returns the replica's state as last checked. It does
	// not query: a monitor owned by the backend refreshes it.
	ReplicaStatus() ReplicaStatus
}

// ReplicaStatus is the state of a read replica, for `ow doctor` and
// /metrics.
type ReplicaStatus struct {
	// Configured is false when the backend has no replica; the other
	// fields are then zero.
	Configured bool `json:"configured"`
	// Up is true when the last check reached the replica.
	Up bool `json:"up"`
	// Error is the last check's error, when it failed.
	Error string `json:"error,omitempty"`
	// LagSeconds is how far the replica's replay is behind the primary
	// in time: 0 when it has replayed all it received, else the age of
	// the last transaction it replayed.
	LagSeconds float64 `json:"lagSeconds"`
	// LagBytes is how far, in bytes of WAL, the replica's replay is
	// behind the primary's current WAL position.
	LagBytes int64 `json:"lagBytes"`
	// MaxLag is the bound past which reads go to the primary.
	MaxLag time.Duration `json:"maxLag"`
	// CheckedAt is when the last check ended; zero before the first.
	CheckedAt time.Time `json:"checkedAt"`
	// ReplicaReads and PrimaryReads count the marked reads served by the
	// replica and by the primary (fallbacks and read-your-writes
	// included) since the backend opened.
	ReplicaReads int64 `json:"replicaReads"`
	PrimaryReads int64 `json:"primaryReads"`
}
