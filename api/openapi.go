package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of every route of the router, written
// by hand beside docs/api.md; TestOpenAPIMatchesTheRouter keeps the two in step.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI: GET /openapi.json answers the OpenAPI 3.1 description of the API. It needs no
// token: it describes the API, it holds no data.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(openAPIDocument)
}
