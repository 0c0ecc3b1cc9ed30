package main

import (
	"net/http"
	"net/netip"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	owdashboard "github.com/openworkflow-go/openworkflow/dashboard"
)

// dashboard returns the web dashboard 'ow server' serves at /
// (server.Options.Dashboard), over the same client as the API and with
// the API's tokens and throttle: whoever may call the API may use the
// dashboard, with the same scope. proxies are the trusted reverse
// proxies (server.trusted_proxies).
func dashboard(c *ow.Client, opts api.Options, proxies []netip.Prefix) http.Handler {
	return owdashboard.New(c, owdashboard.Options{Tokens: opts.AllTokens(), Throttle: opts.Throttle, TrustedProxies: proxies, Logger: opts.Logger})
}
