package openflow

// RunSteps lists a run's steps for the package's external tests.
var RunSteps = runSteps
