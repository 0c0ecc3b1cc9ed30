package openflow

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	ow "github.com/openworkflow-go/openworkflow"
)

// liveLogFlush is how long a script's output may wait before it is sent
// to the module's log stream; liveLogChunk the most bytes held.
const (
	liveLogFlush = 100 * time.Millisecond
	liveLogChunk = 64 << 10
)

// LogStream returns the name of the stream a module attempt's script
// output is written to live: "logs/" and the attempt's durable key (e.g.
// "logs/a", "logs/loop[2]/b#2"). Read it with Client.TailStream, `ow runs
// tail <run> --stream logs/a`, or GET /v1/runs/{id}/streams/logs%2Fa. The
// step's output keeps the last 256 KiB of the log as well.
func LogStream(attemptKey string) string { return "logs/" + attemptKey }

// liveLog sends what a script writes to a stream in chunks of up to
// liveLogChunk bytes, at most liveLogFlush after it was written: a script
// printing many lines costs a few commits a second, not one per line. A
// failing stream (the lease lost, the backend down) is dropped silently:
// the log in the step's output is the record; the stream is a view.
type liveLog struct {
	mu     sync.Mutex
	w      *ow.StreamWriter
	buf    bytes.Buffer
	broken bool
	stop   chan struct{}
	done   chan struct{}
}

// openLiveLog opens the log stream of attemptKey from a step's ctx, or
// returns nil when the backend has no streams or the name is too long.
func openLiveLog(ctx context.Context, attemptKey string) *liveLog {
	w, err := ow.OpenStream(ctx, LogStream(attemptKey))
	if err != nil {
		return nil
	}
	l := &liveLog{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go l.flushEvery(liveLogFlush) // stopped by close
	return l
}

func (l *liveLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf.Write(p)
	full := l.buf.Len() >= liveLogChunk
	l.mu.Unlock()
	if full {
		l.flush()
	}
	return len(p), nil
}

func (l *liveLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() == 0 || l.broken {
		l.buf.Reset()
		return
	}
	if _, err := l.w.Write(l.buf.Bytes()); err != nil {
		l.broken = true
	}
	l.buf.Reset()
}

func (l *liveLog) flushEvery(d time.Duration) {
	defer close(l.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.flush()
		}
	}
}

// close sends what is left and closes the stream.
func (l *liveLog) close() {
	close(l.stop)
	<-l.done
	l.flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.broken {
		_ = l.w.Close()
	}
}

var _ io.Writer = (*liveLog)(nil)
