package api

import (
	"net/http"
	"time"

	"github.com/ducktail/ducktail/store"
)

// createTokenRequest is the body of POST /v1/tokens. TTL is a Go duration ("24h",
// "90m"); empty means the token does not expire.
type createTokenRequest struct {
	Purpose string `json:"purpose"`
	Table   string `json:"table"`
	TTL     string `json:"ttl"`
}

// tokenJSON is a token as the API shows it. Token, the secret, is present only in the
// answer to its creation.
type tokenJSON struct {
	ID        string     `json:"id"`
	Token     string     `json:"token,omitempty"`
	Purpose   string     `json:"purpose"`
	Table     string     `json:"table,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

func newTokenJSON(t store.Token, secret string) tokenJSON {
	j := tokenJSON{ID: t.ID, Token: secret, Purpose: string(t.Purpose), Table: t.Table, CreatedAt: t.CreatedAt}
	if !t.ExpiresAt.IsZero() {
		j.ExpiresAt = &t.ExpiresAt
	}
	if !t.RevokedAt.IsZero() {
		j.RevokedAt = &t.RevokedAt
	}
	return j
}

// createToken: POST /v1/tokens (admin). 201 with the token, whose secret is shown only
// here.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req createTokenRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	purpose, err := store.ParsePurpose(req.Purpose)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var ttl time.Duration
	if req.TTL != "" {
		if ttl, err = time.ParseDuration(req.TTL); err != nil || ttl <= 0 {
			s.writeError(w, r, &store.Error{Code: store.CodeInvalid, Field: "ttl", Message: `ttl must be a positive duration such as "24h" or "90m"`})
			return
		}
	}
	tok, secret, err := s.db.CreateToken(r.Context(), purpose, req.Table, ttl)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, newTokenJSON(tok, secret))
}

// listTokens: GET /v1/tokens (admin) lists every token, without secrets.
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	out := []tokenJSON{}
	for _, t := range s.db.Tokens() {
		out = append(out, newTokenJSON(t, ""))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// revokeToken: DELETE /v1/tokens/{id} (admin); 204. Open streams of the token end with
// failure {"code":"token_revoked"}.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.db.RevokeToken(r.Context(), pathParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
