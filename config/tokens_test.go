package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openworkflow-go/openworkflow/access"
)

// TestServerTokensFromTheFileAndTheEnvironment: server.tokens gives each
// token a name, a scope and maybe a namespace, its secret in the file or
// (better) in a variable; server.token stays the full-access token.
func TestServerTokensFromTheFileAndTheEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvAPIToken, "the-full-access-token-from-env")
	t.Setenv("GRAFANA_OW_TOKEN", "grafana-reads-everything-here")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, FileName), `server:
  tokens:
    - {name: grafana, token_env: GRAFANA_OW_TOKEN, scope: read}
    - {name: billing, token: billing-writes-its-namespace, scope: write, namespace: billing}
  trusted_proxies: [10.0.0.0/8, "::1", 192.168.1.7]
`)
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.Server.AccessTokens()
	if err != nil {
		t.Fatal(err)
	}
	want := []access.Token{
		{Name: "server.token", Secret: "the-full-access-token-from-env", Scope: access.ScopeWrite},
		{Name: "grafana", Secret: "grafana-reads-everything-here", Scope: access.ScopeRead},
		{Name: "billing", Secret: "billing-writes-its-namespace", Scope: access.ScopeWrite, Namespace: "billing"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tokens:\n got %+v\nwant %+v", got, want)
	}
	proxies, err := cfg.Server.Proxies()
	if err != nil || len(proxies) != 3 || proxies[1].String() != "::1/128" || proxies[2].String() != "192.168.1.7/32" {
		t.Errorf("trusted proxies %v, %v", proxies, err)
	}
}

// TestServerTokensThatAreRefused: a mistake in server.tokens, or a
// server.token too short, is an error naming the token and what to do.
func TestServerTokensThatAreRefused(t *testing.T) {
	const good = "a-good-long-secret-value"
	for _, c := range []struct {
		name   string
		server Server
		want   string
	}{
		{"a one-character server.token", Server{Token: "x"}, "openssl rand -hex 32"},
		{"a fifteen-byte server.token", Server{Token: strings.Repeat("x", 15)}, "shorter than 16 bytes"},
		{"a token without a name", Server{Tokens: []TokenConfig{{Token: good, Scope: "read"}}}, "no name"},
		{"a token without a secret", Server{Tokens: []TokenConfig{{Name: "wall", Scope: "read"}}}, "token_env"},
		{"a token with both token and token_env", Server{Tokens: []TokenConfig{{Name: "wall", Token: good, TokenEnv: "X", Scope: "read"}}}, "keep one"},
		{"a token_env that is not set", Server{Tokens: []TokenConfig{{Name: "wall", TokenEnv: "OW_TEST_UNSET_TOKEN_VARIABLE", Scope: "read"}}}, "OW_TEST_UNSET_TOKEN_VARIABLE"},
		{"a token without a scope", Server{Tokens: []TokenConfig{{Name: "wall", Token: good}}}, "give read or write"},
		{"a token of an unknown scope", Server{Tokens: []TokenConfig{{Name: "wall", Token: good, Scope: "admin"}}}, "not one of read, write"},
		{"a short scoped token", Server{Tokens: []TokenConfig{{Name: "wall", Token: "short", Scope: "read"}}}, "wall"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.server.AccessTokens()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("AccessTokens() = %v, want an error saying %q", err, c.want)
			}
		})
	}
	t.Run("a trusted proxy that is no address", func(t *testing.T) {
		if _, err := (Server{TrustedProxies: []string{"proxy.internal"}}).Proxies(); err == nil || !strings.Contains(err.Error(), "proxy.internal") {
			t.Errorf("Proxies() = %v", err)
		}
	})
}

// FuzzServerTokens: whatever a server.tokens entry holds, AccessTokens
// either refuses it or returns a token the server accepts, of the scope
// written, with its namespace.
func FuzzServerTokens(f *testing.F) {
	f.Add("wall", "a-good-long-secret-value", "read", "")
	f.Add("ops", "x", "write", "billing")
	f.Add("", " padded secret value here ", "Read", "ns")
	f.Fuzz(func(t *testing.T, name, secret, scope, namespace string) {
		toks, err := Server{Tokens: []TokenConfig{{Name: name, Token: secret, Scope: scope, Namespace: namespace}}}.AccessTokens()
		if err != nil {
			return
		}
		if len(toks) != 1 {
			t.Fatalf("one entry gave %d tokens", len(toks))
		}
		tok := toks[0]
		if err := tok.Validate(); err != nil {
			t.Fatalf("AccessTokens accepted a token the server refuses: %v", err)
		}
		if tok.Scope.String() != scope || tok.Namespace != namespace || tok.Secret != secret || tok.Name != name {
			t.Fatalf("entry {%q %q %q %q} gave %+v", name, secret, scope, namespace, tok)
		}
		if _, err := access.NewKeyring(namespace, toks, nil); err != nil {
			t.Fatalf("a keyring refuses the accepted token: %v", err)
		}
	})
}

// FuzzTrustedProxies: an accepted entry is a masked prefix containing
// the address it names.
func FuzzTrustedProxies(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "::1", "192.168.1.7", "10.1.2.3/8", "::ffff:10.0.0.1", "fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := Server{TrustedProxies: []string{s}}.Proxies()
		if err != nil {
			return
		}
		if len(ps) != 1 || !ps[0].IsValid() || ps[0] != ps[0].Masked() {
			t.Fatalf("%q gave %v", s, ps)
		}
	})
}
