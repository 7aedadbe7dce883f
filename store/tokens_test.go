package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ducktail/ducktail/store"
)

func TestTokenLifecycle(t *testing.T) {
	db, rec := openDB(t, "")
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }

	tok, secret, err := db.CreateToken(ctx, store.PurposeStream, "weather", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "dt_"+tok.ID+"_") {
		t.Fatalf("secret %q does not carry id %q", secret, tok.ID)
	}
	got, err := db.Authenticate(secret)
	if err != nil || got.ID != tok.ID || got.Purpose != store.PurposeStream || got.Table != "weather" {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	if !got.Allows(store.PurposeStream, "Weather") || got.Allows(store.PurposeStream, "other") || got.Allows(store.PurposeQuery, "weather") {
		t.Fatal("Allows is wrong")
	}
	for _, bad := range []string{"", "dt_", "nope", secret + "x", strings.Replace(secret, "dt_", "xx_", 1)} {
		if _, err := db.Authenticate(bad); !errors.Is(err, store.ErrTokenMalformed) {
			t.Errorf("Authenticate(%q) = %v, want ErrTokenMalformed", bad, err)
		}
	}
	forged := secret[:len(secret)-1] + "a"
	if forged == secret {
		forged = secret[:len(secret)-1] + "b"
	}
	if _, err := db.Authenticate(forged); !errors.Is(err, store.ErrTokenUnknown) {
		t.Fatalf("forged secret: %v", err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := db.Authenticate(secret); !errors.Is(err, store.ErrTokenExpired) {
		t.Fatalf("expired: %v", err)
	}

	_, admin, _ := db.CreateToken(ctx, store.PurposeAdmin, "", 0)
	adminTok, _ := db.Authenticate(admin)
	if err := db.RevokeToken(ctx, adminTok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(admin); !errors.Is(err, store.ErrTokenRevoked) {
		t.Fatalf("revoked: %v", err)
	}
	evs := rec.all()
	if len(evs) != 3 {
		t.Fatalf("events = %+v, want two TokenCreated and a TokenRevoked", evs)
	}
	for _, e := range evs[:2] {
		if c, ok := e.(store.TokenCreated); !ok || len(c.Token.SecretHash()) != 32 {
			t.Fatalf("event = %+v, want a TokenCreated with the secret's hash", e)
		}
	}
	if r, ok := evs[2].(store.TokenRevoked); !ok || r.TokenID != adminTok.ID || r.Token.RevokedAt.IsZero() {
		t.Fatalf("events = %+v", evs)
	}
	// A copy of the tokens, as a stream node keeps them, authenticates the same way.
	copied := map[string]store.Token{}
	lookup := func(id string) (store.Token, bool) { c, ok := copied[id]; return c, ok }
	created := evs[1].(store.TokenCreated).Token
	copied[created.ID] = store.Token{ID: created.ID, Purpose: created.Purpose}.WithSecretHash(created.SecretHash())
	if got, err := store.AuthenticateWith(lookup, admin, now); err != nil || got.ID != adminTok.ID {
		t.Fatalf("AuthenticateWith over a copy of the token = %+v, %v", got, err)
	}
	if _, err := store.AuthenticateWith(lookup, forged, now); !errors.Is(err, store.ErrTokenUnknown) {
		t.Fatalf("AuthenticateWith, another secret: %v", err)
	}
	copied[created.ID] = evs[2].(store.TokenRevoked).Token
	if _, err := store.AuthenticateWith(lookup, admin, now); !errors.Is(err, store.ErrTokenRevoked) {
		t.Fatalf("AuthenticateWith over a copy of the revoked token: %v", err)
	}
	if len(db.Tokens()) != 2 {
		t.Fatalf("Tokens() = %d, want 2", len(db.Tokens()))
	}
	if _, _, err := db.CreateToken(ctx, store.PurposeAdmin, "weather", 0); store.ErrorCode(err) != store.CodeInvalid {
		t.Fatalf("scoped admin: %v", err)
	}
	if err := db.RevokeToken(ctx, "nope"); store.ErrorCode(err) != store.CodeNotFound {
		t.Fatalf("revoke unknown: %v", err)
	}
}
