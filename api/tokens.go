package api

import (
	"net/http"
	"time"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

// createTokenRequest is the body of POST /v1/tokens. TTL is a Go duration ("24h",
// "90m"); empty means the token does not expire.
type createTokenRequest struct {
	Purpose string `json:"purpose"`
	Table   string `json:"table"`
	TTL     string `json:"ttl"`
	// Where and Columns are the token's policy on its table (docs/design.md, "Shapes and
	// policies"): a row predicate and the columns it may read; both optional.
	Where   string   `json:"where"`
	Columns []string `json:"columns"`
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
	// Where and Columns are the token's policy: the predicate as DuckDB renders it, the
	// columns by their names.
	Where   string   `json:"where,omitempty"`
	Columns []string `json:"columns,omitempty"`
}

func newTokenJSON(t store.Token, secret string) tokenJSON {
	j := tokenJSON{ID: t.ID, Token: secret, Purpose: string(t.Purpose), Table: t.Table, CreatedAt: t.CreatedAt,
		Where: t.Policy.Where, Columns: t.Policy.Columns}
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
	policy, err := s.tokenPolicy(r, purpose, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tok, secret, err := s.db.CreatePolicyToken(r.Context(), purpose, req.Table, ttl, policy)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, newTokenJSON(tok, secret))
}

// tokenPolicy checks and compiles the policy a token request asks for against its
// table, which must exist: the predicate is stored as DuckDB renders it, the columns
// under their names in the table. Errors: CodeInvalid for a policy on a token that
// cannot have one, a bad predicate or column (Field "where" or "columns"); CodeNotFound
// for a missing table.
func (s *Server) tokenPolicy(r *http.Request, purpose store.Purpose, req createTokenRequest) (store.TokenPolicy, error) {
	if req.Where == "" && req.Columns == nil {
		return store.TokenPolicy{}, nil
	}
	if req.Table == "" || (purpose != store.PurposeQuery && purpose != store.PurposeStream) {
		return store.TokenPolicy{}, &store.Error{Code: store.CodeInvalid, Field: "where", Message: "a policy (where, columns) needs a query or stream token limited to a table"}
	}
	shape, err := s.reader.Shape(r.Context(), req.Table, snapshot.ShapeSpec{Where: req.Where, Columns: req.Columns}, store.TokenPolicy{})
	if err != nil || shape == nil {
		return store.TokenPolicy{}, err
	}
	policy := store.TokenPolicy{Where: shape.Where}
	for _, c := range shape.Columns {
		policy.Columns = append(policy.Columns, c.Name)
	}
	return policy, nil
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
