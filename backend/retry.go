package backend

import "encoding/json"

// deadlineExceeded is the error stored on a run failed because its
// deadline passed, as in OpenWorkflow.
const deadlineExceeded = `{"message":"Workflow run deadline exceeded"}`

// DeadlineExceededError returns the error JSON stored on a run failed
// because its deadline passed, as in OpenWorkflow:
// {"message":"Workflow run deadline exceeded"}. Each call returns a fresh
// copy.
func DeadlineExceededError() json.RawMessage { return json.RawMessage(deadlineExceeded) }
