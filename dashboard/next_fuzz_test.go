package dashboard

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzSafeNext: whatever next a link carries, the sign-in redirect is a
// clean path of this site — it resolves, as a browser resolves a
// Location, to this site's origin — and checking it again changes
// nothing.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/runs/x?y=1", "/%09/evil.example", "//evil", "/\\evil", "https://evil/", "/a/../b", "/?q=%zz", "/\u2028x", "/%2e%2e/x", "http:evil"} {
		f.Add(s)
	}
	site, _ := url.Parse("https://site.example/login")
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\") {
			t.Fatalf("safeNext(%q) = %q: not a path of this site", next, got)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("safeNext(%q) = %q holds a control character", next, got)
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("safeNext(%q) = %q does not parse: %v", next, got, err)
		}
		if r := site.ResolveReference(u); r.Host != site.Host || r.Scheme != site.Scheme || r.User != nil {
			t.Fatalf("safeNext(%q) = %q leads to %s", next, got, r)
		}
		if again := safeNext(got); again != got {
			t.Fatalf("safeNext(%q) = %q, but safeNext of that = %q", next, got, again)
		}
	})
}
