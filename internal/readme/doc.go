// Package readme holds the test that the Go program in the repository's
// README.md builds and runs as shown, so that a new user can copy it. It
// has no code of its own.
package readme
