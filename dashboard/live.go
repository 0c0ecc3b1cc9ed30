package dashboard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/openworkflow-go/openworkflow/backend"
)

// Live views are Server-Sent Events: each "update" event carries the
// page's sections that changed, rendered on the server, as a JSON object
// of element id → HTML, which the page's script swaps in. The server
// re-reads what the page shows every Options.LiveInterval through the API
// and sends only when the API's answers changed (or, while the run is
// not finished, every few seconds, as its bars grow). A run's stream ends
// with an "end" event once the run is terminal, and the script closes it;
// a list's stream lasts while the page is open.

// runSections are the parts of a run's page a live update replaces.
var runSections = []string{"run-head", "run-approvals", "run-overview", "run-dag", "run-flow", "run-timeline", "run-steps", "run-hooks", "run-updates", "run-streams", "run-children"}

// refreshEvery is how often a live view resends its sections though
// nothing changed, so the growing bars of running steps move.
const refreshEvery = 5 * time.Second

func (d *Dashboard) runLive(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ev, ok := startEvents(w)
	if !ok {
		return
	}
	last := sinceParam(r)
	sent := time.Now()
	tick := time.NewTicker(d.opts.LiveInterval)
	defer tick.Stop()
	for {
		data, err := d.loadRun(r.Context(), id, time.Now())
		switch {
		case r.Context().Err() != nil:
			return
		case err != nil:
			// The page stays as it was; the next tick tries again.
			d.log.Warn("dashboard: live run view", "run", id, "err", err)
			ev.send("problem", map[string]string{"message": "Live updates paused: " + err.Error()})
		case data.fingerprint != last || (!data.Terminal && time.Since(sent) >= refreshEvery):
			v := d.view(r, "", "runs", data)
			sections := map[string]string{}
			for _, name := range runSections {
				html, err := d.fragment("run", name, v)
				if err != nil {
					d.log.Error("dashboard: render live section", "section", name, "err", err)
					return
				}
				sections[name] = html
			}
			if !ev.send("update", sections) {
				return
			}
			last, sent = data.fingerprint, time.Now()
		}
		if err == nil && data.Terminal {
			ev.send("end", map[string]string{"status": data.Run.Status})
			return
		}
		if !ev.keepAlive() {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// listRefresh is how often the runs list's live view re-reads: the first
// page every tick of Options.LiveInterval, at least every 2 s.
func (d *Dashboard) runsLive(w http.ResponseWriter, r *http.Request) {
	f := readRunsFilter(r.URL.Query())
	f.Cursor, f.Before = "", ""
	ev, ok := startEvents(w)
	if !ok {
		return
	}
	every := max(d.opts.LiveInterval, 2*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := sinceParam(r)
	var lastCounts backend.RunCounts
	for first := true; ; first = false {
		if !first {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
		counts, cerr := d.counts.get(r.Context(), d.api)
		data, err := d.loadRuns(r.Context(), f, time.Now())
		if r.Context().Err() != nil {
			return
		}
		if err != nil {
			d.log.Warn("dashboard: live runs view", "err", err)
			ev.send("problem", map[string]string{"message": "Live updates paused: " + err.Error()})
			continue
		}
		if cerr == nil {
			data.Counts, data.Total = counts, total(counts)
		}
		fp := fingerprintRows(data)
		sections := map[string]string{}
		v := d.view(r, "", "runs", data)
		if fp != last {
			html, err := d.fragment("runs", "runs-table", v)
			if err != nil {
				d.log.Error("dashboard: render live list", "err", err)
				return
			}
			sections["runs-table"] = html
		}
		if data.Counts != nil && (*data.Counts != lastCounts || first) {
			html, err := d.fragment("runs", "counts", v)
			if err != nil {
				d.log.Error("dashboard: render live counts", "err", err)
				return
			}
			sections["counts"] = html
			lastCounts = *data.Counts
		}
		if len(sections) > 0 && !ev.send("update", sections) || !ev.keepAlive() {
			return
		}
		last = fp
	}
}

// sinceParam reads ?since=, the fingerprint of what the page that opens
// a live view shows (zero when absent or malformed: the view then sends
// everything first).
func sinceParam(r *http.Request) [sha256.Size]byte {
	var fp [sha256.Size]byte
	if b, err := hex.DecodeString(r.URL.Query().Get("since")); err == nil && len(b) == len(fp) {
		copy(fp[:], b)
	}
	return fp
}

// fingerprintRows hashes what the list shows of its rows.
func fingerprintRows(data *runsData) [sha256.Size]byte {
	b, _ := json.Marshal(data.Rows)
	return sha256.Sum256(b)
}

// runStream relays a run's stream (?name=) as Server-Sent Events from
// the API's own event stream (GET /v1/runs/{id}/streams/{name} with
// Accept: text/event-stream): the stored chunks, live ones, then "end".
// EventSource cannot send a bearer token, and need not: the dashboard
// checked its visitor, then calls the API's handler in process.
func (d *Dashboard) runStream(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	path := "/v1/runs/" + url.PathEscape(r.PathValue("id")) + "/streams/" + url.PathEscape(name)
	u, err := url.Parse(path)
	if err != nil || name == "" {
		http.Error(w, "name the stream: ?name=<stream>", http.StatusBadRequest)
		return
	}
	req := r.Clone(r.Context())
	req.URL, req.RequestURI = u, ""
	req.Header = http.Header{"Accept": {"text/event-stream"}}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	d.apiH.ServeHTTP(w, req)
}

// events writes Server-Sent Events.
type events struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	last time.Time
}

// keepAliveAfter is the silence after which a live view sends a comment,
// so that proxies keep the connection open.
const keepAliveAfter = 15 * time.Second

// keepAlive sends a comment if nothing was sent for keepAliveAfter;
// false when the client is gone.
func (e *events) keepAlive() bool {
	if time.Since(e.last) < keepAliveAfter {
		return true
	}
	if _, err := fmt.Fprint(e.w, ": keep-alive\n\n"); err != nil {
		return false
	}
	e.last = time.Now()
	return e.rc.Flush() == nil
}

func startEvents(w http.ResponseWriter) (*events, bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ev := &events{w: w, rc: http.NewResponseController(w), last: time.Now()}
	// A reconnect after a dropped connection waits 2 s.
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return nil, false
	}
	return ev, ev.rc.Flush() == nil
}

// send writes one event of JSON data; false when the client is gone.
func (e *events) send(event string, data any) bool {
	b, err := json.Marshal(data)
	if err != nil {
		return false
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return false
	}
	e.last = time.Now()
	return e.rc.Flush() == nil
}
