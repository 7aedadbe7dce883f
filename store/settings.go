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

// loadSettings reads the cursor key from the catalog, making and storing it at the first
// Open, and sets up db.cursors with it.
func (db *DB) loadSettings(ctx context.Context) error {
	var key []byte
	err := db.sqlDB.QueryRowContext(ctx, `SELECT value FROM ducktail_catalog.settings WHERE name = ?`, cursorKeySetting).Scan(&key)
	if err == nil && len(key) == CursorKeySize {
		db.cursors = NewCursors(key)
		return nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("load cursor key: %w", err)
	}
	if err == nil {
		return fmt.Errorf("load cursor key: stored key has %d bytes, want %d", len(key), CursorKeySize)
	}
	key = make([]byte, CursorKeySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if _, err := db.sqlDB.ExecContext(ctx, `INSERT INTO ducktail_catalog.settings VALUES (?, ?)`, cursorKeySetting, key); err != nil {
		return fmt.Errorf("store cursor key: %w", err)
	}
	db.cursors = NewCursors(key)
	return nil
}
