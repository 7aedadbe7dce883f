package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ducktail/ducktail/store"
)

type tokenKey struct{}

// authenticate is middleware that resolves the Authorization: Bearer token (RFC 6750) of
// every /v1 request, applies the token's rate limit, and puts the token in the context.
// Missing or unknown, expired or revoked tokens get 401 with WWW-Authenticate; malformed
// tokens 400 (docs/design.md, "The stream": status codes).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, ok := bearer(r)
		if !ok {
			s.metrics.authFailures.WithLabelValues("missing").Inc()
			w.Header().Set("WWW-Authenticate", `Bearer realm="ducktail"`)
			s.writeError(w, r, &store.Error{Code: store.CodeUnauthorized, Message: "missing Authorization: Bearer token"})
			return
		}
		tok, err := s.checkToken(w, secret)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, tok)))
	})
}

// checkToken authenticates secret and takes one request from its rate limit.
func (s *Server) checkToken(w http.ResponseWriter, secret string) (store.Token, error) {
	tok, err := s.backend.Authenticate(secret)
	if err != nil {
		s.metrics.authFailures.WithLabelValues(authFailureReason(err)).Inc()
		if store.ErrorCode(err) == store.CodeUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ducktail", error="invalid_token"`)
		}
		return store.Token{}, err
	}
	if wait, ok := s.limits.allow(tok.ID); !ok {
		s.metrics.authFailures.WithLabelValues(string(store.CodeRateLimited)).Inc()
		return store.Token{}, &store.Error{Code: store.CodeRateLimited, Message: "this token is over its request rate; retry later",
			RetryAfter: time.Duration(wait) * time.Second}
	}
	return tok, nil
}

func authFailureReason(err error) string {
	switch {
	case errors.Is(err, store.ErrTokenMalformed):
		return "malformed"
	case errors.Is(err, store.ErrTokenExpired):
		return "expired"
	case errors.Is(err, store.ErrTokenRevoked):
		return "revoked"
	}
	return "unknown"
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// tokenFrom returns the token authenticate put in the request's context.
func tokenFrom(r *http.Request) store.Token {
	tok, _ := r.Context().Value(tokenKey{}).(store.Token)
	return tok
}

// allow checks that the request's token may act for purpose on table ("" for requests
// that name no table). Errors: a CodeForbidden *store.Error naming what is missing.
func allow(tok store.Token, purpose store.Purpose, table string) error {
	if tok.Allows(purpose, table) {
		return nil
	}
	if tok.Purpose != store.PurposeAdmin && tok.Purpose != purpose {
		return &store.Error{Code: store.CodeForbidden, Message: "this token's purpose is " + string(tok.Purpose) + "; this request needs " + article(string(purpose)) + " " + string(purpose) + " token"}
	}
	// Another table answers exactly as a missing one: the token learns nothing about
	// whether it exists (docs/design.md, "Shapes and policies").
	if err := store.ValidateTableName(table); err != nil {
		return err
	}
	return store.TableNotFound(table)
}

// tokenLimiters holds one token-bucket limiter (golang.org/x/time/rate) per token id.
type tokenLimiters struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex
	byID  map[string]*rate.Limiter
}

func newTokenLimiters(perSecond float64, burst int) *tokenLimiters {
	l := rate.Limit(perSecond)
	if perSecond < 0 {
		l = rate.Inf
	}
	return &tokenLimiters{limit: l, burst: burst, byID: map[string]*rate.Limiter{}}
}

// allow takes one request from the token's bucket; when empty it returns false and the
// whole seconds until a request would be allowed.
func (t *tokenLimiters) allow(id string) (int, bool) {
	t.mu.Lock()
	l, ok := t.byID[id]
	if !ok {
		l = rate.NewLimiter(t.limit, t.burst)
		t.byID[id] = l
	}
	t.mu.Unlock()
	if l.Allow() {
		return 0, true
	}
	wait := l.Reserve()
	d := wait.Delay()
	wait.Cancel()
	return int(math.Ceil(max(d.Seconds(), 1))), false
}

// article is the indefinite article for a purpose name: "an admin", "a query".
func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
