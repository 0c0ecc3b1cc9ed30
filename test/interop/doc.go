// Package interop holds the tests that run the Go SDK and the TypeScript
// OpenWorkflow SDK (npm package openworkflow 0.10) against one PostgreSQL
// database: runs started on one side and executed on the other, runs begun
// by one side's worker and finished by the other's, child workflows and
// signals across languages, the TypeScript client's list, count and cancel
// on Go runs, both migration orders, and the storage details both must
// agree on (error and step-context JSON, timestamps, claim order, the
// idempotency window and its advisory lock, ids, generated strings written
// by either SDK, who receives a signal). mixed_test.go checks the
// recommended deployment of Go and TypeScript workers and, with
// OPENWORKFLOW_INTEROP_MEASURE=1, measures what happens when they share a
// namespace (the figures of docs/interop.md).
//
// The TypeScript side is harness/harness.mjs, run with node as a child
// process. TestMain installs its npm dependencies once into a directory
// under os.TempDir() keyed by version, so repeated runs are fast. The
// tests need node and npm on PATH and PostgreSQL at
// OPENWORKFLOW_TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
// OPENWORKFLOW_SKIP_POSTGRES=1 or OPENWORKFLOW_SKIP_INTEROP=1 skips them.
//
// docs/interop.md is the user-facing summary of what these tests found.
package interop
