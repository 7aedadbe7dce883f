package api

import (
	"net/http"
)

// healthz: GET /healthz answers 200 while the process serves HTTP (liveness).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz: GET /readyz answers 200 when the backend answers (the store a read, a stream
// node's JetStream a request), and 503 while it does not or while the server drains
// (readiness).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.backend.Ping(r.Context()); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": s.backendName() + ": " + err.Error()})
		return
	}
	if s.hub.Draining() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
