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
	if len(evs) != 1 || evs[0] != (store.TokenRevoked{TokenID: adminTok.ID}) {
		t.Fatalf("events = %+v", evs)
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
