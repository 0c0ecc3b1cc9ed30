package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// templateFuncs are the functions the templates call. Times are shown
// relative to the render ("3m ago", "in 20s") inside a <time> element
// whose datetime the page's script keeps current and whose title is the
// absolute time.
var templateFuncs = template.FuncMap{
	"ago":      relTime,
	"abs":      absTime,
	"iso":      isoTime,
	"dur":      fmtDuration,
	"between":  between,
	"short":    shortID,
	"json":     prettyJSON,
	"jsonSize": func(raw json.RawMessage) int { return len(raw) },
	"pathEsc":  url.PathEscape,
	"queryEsc": url.QueryEscape,
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"add":    func(a, b int) int { return a + b },
	"pct":    func(f float64) string { return fmt.Sprintf("%.3f%%", f) },
	"num":    thousands,
	"num64":  func(n int64) string { return thousands(int(n)) },
	"addf":   func(a, b float64) float64 { return a + b },
	"dict":   dict,
	"timeEl": timeEl,
	"durEl":  durEl,
	// hasPrefix tells a fork's mark ("__fork:…") from a manual retry's.
	"hasPrefix": strings.HasPrefix,
	// words shows a state of the API ("not_run") as words ("not run").
	"words": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	// viewErr reads a stored error (an update's) for its message.
	"viewErr": viewError,
	// attrQuery is the run query selecting runs with attribute name's
	// value v (any member, for a keyword list).
	"attrQuery": func(name string, v any) string {
		if list, ok := v.([]any); ok {
			parts := make([]string, len(list))
			for i, m := range list {
				raw, _ := json.Marshal(m)
				parts[i] = string(raw)
			}
			return fmt.Sprintf("attrs.%s IN (%s)", name, strings.Join(parts, ", "))
		}
		raw, _ := json.Marshal(v)
		return fmt.Sprintf("attrs.%s = %s", name, raw)
	},
	// attrValue shows a search attribute's value as JSON (a keyword in
	// quotes, a keyword list as an array).
	"attrValue": func(v any) string {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(raw)
	},
}

// dict makes a map of its key, value arguments, to pass several values
// to a template.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict takes key, value pairs; got %d arguments", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// thousands writes n with thousands separators: 1,000,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// timeEl is a <time> element showing t relative to now (the script
// keeps it current), with the absolute time as its title. t is a
// time.Time or a *time.Time (nil: an em dash).
func timeEl(t any, now time.Time) template.HTML {
	var at time.Time
	switch v := t.(type) {
	case time.Time:
		at = v
	case *time.Time:
		if v == nil {
			return "—"
		}
		at = *v
	default:
		return ""
	}
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s" data-rel>%s</time>`,
		isoTime(at), html.EscapeString(absTime(at)), html.EscapeString(relTime(at, now))))
}

// durEl is the duration from start to end; with end nil it runs on
// (data-since: the script counts it up). start nil is an em dash.
func durEl(start, end *time.Time, now time.Time) template.HTML {
	if start == nil {
		return "—"
	}
	if end != nil {
		return template.HTML(html.EscapeString(fmtDuration(end.Sub(*start))))
	}
	return template.HTML(fmt.Sprintf(`<span data-since="%s">%s</span>`, isoTime(*start), html.EscapeString(fmtDuration(now.Sub(*start)))))
}

// relTime renders t relative to now: "just now", "42s ago", "5m ago",
// "3h ago", "2d ago", "in 10m"; beyond 30 days the date.
func relTime(t time.Time, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		if future {
			return "now"
		}
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	case d < 30*24*time.Hour:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	default:
		return t.UTC().Format("2006-01-02")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// absTime is the absolute UTC time, to the millisecond, for titles and
// tables.
func absTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") }

// isoTime is t for a datetime attribute.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// fmtDuration renders d compactly with two units at most: "850ms",
// "3.2s", "4m 12s", "2h 5m", "3d 4h".
func fmtDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), ".0") + "s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return twoUnits(d, time.Minute, "m", time.Second, "s")
	case d < 24*time.Hour:
		return twoUnits(d, time.Hour, "h", time.Minute, "m")
	default:
		return twoUnits(d, 24*time.Hour, "d", time.Hour, "h")
	}
}

func twoUnits(d, big time.Duration, bigName string, small time.Duration, smallName string) string {
	n := d / big
	rest := (d % big) / small
	if rest == 0 {
		return fmt.Sprintf("%d%s", n, bigName)
	}
	return fmt.Sprintf("%d%s %d%s", n, bigName, rest, smallName)
}

// between is the duration from a to b (b nil: until now).
func between(a *time.Time, b *time.Time, now time.Time) string {
	if a == nil {
		return ""
	}
	end := now
	if b != nil {
		end = *b
	}
	return fmtDuration(end.Sub(*a))
}

// shortID shortens a run or step id for dense tables: the prefix and the
// last 8 characters ("wrun_…7QKQRW16"). The full id is in the title and
// the link.
func shortID(id string) string {
	prefix, rest, ok := strings.Cut(id, "_")
	if !ok || len(rest) <= 10 {
		if len(id) > 14 {
			return id[:6] + "…" + id[len(id)-6:]
		}
		return id
	}
	return prefix + "_…" + rest[len(rest)-8:]
}

// maxShownJSON is the largest JSON value shown whole; beyond it the page
// shows the start and says how much was left out.
const maxShownJSON = 64 << 10

// prettyJSON indents a JSON value for display, cutting it at
// maxShownJSON bytes.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		buf.Reset()
		buf.Write(raw)
	} else {
		// A value stored with Go's HTML-safe escapes shows as it is:
		// html/template escapes the page's text anyway.
		buf = *bytes.NewBuffer(unescapeHTML(buf.Bytes()))
	}
	if buf.Len() > maxShownJSON {
		cut := buf.Bytes()[:maxShownJSON]
		return fmt.Sprintf("%s\n… (%s more not shown; the API has the whole value)", cut, byteSize(buf.Len()-maxShownJSON))
	}
	return buf.String()
}

// unescapeHTML rewrites the escapes \u003c, \u003e and \u0026 (of
// either case) in the strings of the valid JSON text raw as the
// characters <, > and &, which JSON allows as they are; every other
// escape is kept (so "\\u003e", an escaped backslash before "u003e",
// stays).
func unescapeHTML(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(`\u00`)) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			out = append(out, c)
			continue
		}
		if raw[i+1] == 'u' && i+5 < len(raw) {
			switch strings.ToLower(string(raw[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out = append(out, c, raw[i+1]) // any other escape, kept whole
		i++
	}
	return out
}

func byteSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// errorView is a stored error ({name, message, stack?, code?}) for
// display; values of another shape show as JSON.
type errorView struct {
	Name, Message, Code, Stack string
	Raw                        string
}

func viewError(raw json.RawMessage) *errorView {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var e struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Stack   string `json:"stack"`
		Code    any    `json:"code"`
	}
	v := &errorView{Raw: prettyJSON(raw)}
	if json.Unmarshal(raw, &e) == nil && (e.Message != "" || e.Name != "") {
		v.Name, v.Message, v.Stack = e.Name, e.Message, e.Stack
		if e.Code != nil {
			v.Code = fmt.Sprint(e.Code)
		}
	}
	return v
}

// niceStep picks a tick interval for an axis of span d with at most
// about n ticks.
func niceStep(d time.Duration, n int) time.Duration {
	steps := []time.Duration{
		time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
		50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
		2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 30 * 24 * time.Hour,
	}
	for _, s := range steps {
		if d/s <= time.Duration(n) {
			return s
		}
	}
	return time.Duration(math.Ceil(float64(d)/float64(n)/float64(24*time.Hour))) * 24 * time.Hour
}
