package dashboard

import "testing"

// TestPrettyJSONShowsHTMLCharacters: a value stored with Go's HTML-safe
// escapes shows its characters, and only those escapes are rewritten.
func TestPrettyJSONShowsHTMLCharacters(t *testing.T) {
	for in, want := range map[string]string{
		`"a \u003e b \u003C c \u0026 d"`: `"a > b < c & d"`,
		`"\\u003e"`:                      `"\\u003e"`, // a backslash, then the text u003e
		`"\\\u003e"`:                     `"\\>"`,
		`"\u00e9 \"\u003e\""`:            `"\u00e9 \">\""`,
		`{"k\u003c":[1,"\n"]}`:           "{\n  \"k<\": [\n    1,\n    \"\\n\"\n  ]\n}",
	} {
		if got := prettyJSON([]byte(in)); got != want {
			t.Errorf("prettyJSON(%s) = %s, want %s", in, got, want)
		}
	}
}
