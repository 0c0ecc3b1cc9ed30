package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of the API, written by
// hand and held to the route table and to the statuses the handlers
// answer by the package's tests.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3.1 document served at /v1/openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }

func (h *Handler) getOpenAPI(w http.ResponseWriter, r *http.Request) error {
	_, err := parseQuery(r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
	return nil
}
