package main

import (
	"net/http"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
)

// dashboard returns the web dashboard 'ow server' and 'ow dev' serve at /
// (server.Options.Dashboard), over the same client and API options as
// the API (token, CORS, metrics); nil serves none.
func dashboard(c *ow.Client, opts api.Options) http.Handler {
	return nil // DASHBOARD: package dashboard (issue 13) returns its handler here.
}
