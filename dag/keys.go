package dag

import "strconv"

// Durable keys of a DAG run's step attempts. Each execution of a step is
// its own durable key, so an attempt that failed is never executed again
// (the interpreter looks keys up before it runs them) and the history
// shows every attempt by name:
//
//	charge-card               attempt 1 of step charge-card
//	charge-card#2             attempt 2 (its first retry)
//	wait:charge-card#2        the durable sleep before attempt 2 (backoff)
//	compensate:charge-card    attempt 1 of its compensation
//	compensate:charge-card#2  attempt 2 of its compensation
//	wait:compensate:charge-card#2
//
// Step names contain neither '#' nor ':', so keys cannot collide.
const (
	compensatePrefix = "compensate:"
	waitPrefix       = "wait:"
)

// attemptKey is the key of execution attempt k (1-based) of step.
func attemptKey(step string, k int) string { return numbered(step, k) }

// compensationKey is the key of compensation attempt k of step.
func compensationKey(step string, k int) string { return compensatePrefix + numbered(step, k) }

// waitKey is the key of the backoff sleep before the attempt key.
func waitKey(key string) string { return waitPrefix + key }

func numbered(step string, k int) string {
	if k <= 1 {
		return step
	}
	return step + "#" + strconv.Itoa(k)
}
