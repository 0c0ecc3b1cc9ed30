package postgres

// Hooks for the external tests of this package.

// IdempotencyLockKey exposes idempotencyLockKey.
var IdempotencyLockKey = idempotencyLockKey

// ListenerPID returns the server PID of b's LISTEN connection, 0 when it is
// not connected.
func ListenerPID(b *Backend) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.listener == nil {
		return 0
	}
	return b.listener.pid.Load()
}
