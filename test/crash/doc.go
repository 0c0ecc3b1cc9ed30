// Package crash holds end-to-end tests that run workers as separate
// operating-system processes against a real backend file or database: a
// worker killed with SIGKILL in the middle of a step and recovered by
// another process, and several worker processes competing for the runs of
// one PostgreSQL namespace in a schema of the test's own.
//
// The tests re-execute their own test binary as the worker processes
// (-test.run=^TestWorkerProcess$ with the worker's configuration in the
// environment variable OW_CRASHTEST_WORKER). Every step execution is
// appended by the worker processes to a shared log file, one line per start
// and end, which the tests read to decide which process ran what and when.
//
// The package has no code outside its tests; this file only documents it.
package crash
