package main

import (
	"net/http"

	ow "github.com/openworkflow-go/openworkflow"
	"github.com/openworkflow-go/openworkflow/api"
	owdashboard "github.com/openworkflow-go/openworkflow/dashboard"
)

// dashboard returns the web dashboard 'ow server' serves at /
// (server.Options.Dashboard), over the same client as the API and with
// the API's token: whoever may call the API may use the dashboard.
func dashboard(c *ow.Client, opts api.Options) http.Handler {
	return owdashboard.New(c, owdashboard.Options{Token: opts.Token, Logger: opts.Logger})
}
