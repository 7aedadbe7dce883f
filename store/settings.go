package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
)

// cursorKeySetting names the settings row holding the cursor MAC key.
const cursorKeySetting = "cursor_key"

// CursorKeySize is the length of the cursor MAC key in bytes (HMAC-SHA256 key).
const CursorKeySize = 32

// CursorKey returns the secret key the stream package MACs cursors with (DESIGN.md, "The
// cursor"). It is made once, at the first Open, and kept in the catalog so that cursors
// stay valid across restarts. Callers must not modify the returned slice.
func (db *DB) CursorKey() []byte { return db.cursorKey }

func (db *DB) loadSettings(ctx context.Context) error {
	err := db.sqlDB.QueryRowContext(ctx, `SELECT value FROM ducktail_catalog.settings WHERE name = ?`, cursorKeySetting).Scan(&db.cursorKey)
	if err == nil && len(db.cursorKey) == CursorKeySize {
		return nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("load cursor key: %w", err)
	}
	if err == nil {
		return fmt.Errorf("load cursor key: stored key has %d bytes, want %d", len(db.cursorKey), CursorKeySize)
	}
	key := make([]byte, CursorKeySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if _, err := db.sqlDB.ExecContext(ctx, `INSERT INTO ducktail_catalog.settings VALUES (?, ?)`, cursorKeySetting, key); err != nil {
		return fmt.Errorf("store cursor key: %w", err)
	}
	db.cursorKey = key
	return nil
}
