package api

import (
	"mime"
	"net/http"
	"strings"
	"testing"
)

// FuzzRequireJSON: a Content-Type is taken as JSON only when it parses
// to application/json or a structured "+json" type — never one of the
// types a browser sends without a preflight; everything else is a 415
// whose message says what to send.
func FuzzRequireJSON(f *testing.F) {
	for _, s := range []string{"application/json", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/vnd.x+json", "+json", "application/json;", "APPLICATION/JSON"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		err := requireJSON(ct)
		if err == nil {
			mt, _, perr := mime.ParseMediaType(ct)
			if perr != nil || !(mt == "application/json" || (strings.HasSuffix(mt, "+json") && strings.Contains(mt, "/"))) {
				t.Fatalf("%q taken as JSON (media type %q, %v)", ct, mt, perr)
			}
			switch mt { // the CORS-safelisted types: a page of another site sends them unasked
			case "text/plain", "application/x-www-form-urlencoded", "multipart/form-data":
				t.Fatalf("%q, a type a page may send unasked, taken as JSON", ct)
			}
			return
		}
		e, ok := err.(*Error)
		if !ok || e.Status != http.StatusUnsupportedMediaType || e.Code != CodeUnsupportedMediaType || !strings.Contains(e.Message, "application/json") {
			t.Fatalf("requireJSON(%q) = %#v, want a 415 saying to send application/json", ct, err)
		}
	})
}
