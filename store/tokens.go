package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Purpose is what a token may be used for (docs/design.md, "Limits and safety"). An admin
// token may do everything; the others only their own purpose.
type Purpose string

// Token purposes.
const (
	PurposeAdmin  Purpose = "admin"
	PurposeIngest Purpose = "ingest"
	PurposeQuery  Purpose = "query"
	PurposeStream Purpose = "stream"
)

// ParsePurpose returns the purpose named s, or a CodeInvalid *Error.
func ParsePurpose(s string) (Purpose, error) {
	switch p := Purpose(s); p {
	case PurposeAdmin, PurposeIngest, PurposeQuery, PurposeStream:
		return p, nil
	}
	return "", &Error{Code: CodeInvalid, Message: "unknown token purpose " + quoteForMessage(s) + "; use admin, ingest, query or stream", Field: "purpose"}
}

// Token is a token at rest: everything but its secret, of which only the SHA-256 is kept.
type Token struct {
	ID      string
	Purpose Purpose
	// Table limits the token to one table; "" means every table.
	Table     string
	CreatedAt time.Time
	// ExpiresAt is zero for a token that does not expire.
	ExpiresAt time.Time
	// RevokedAt is zero for a token that is not revoked.
	RevokedAt time.Time
	// Policy limits what the token reads of its table; zero for the whole table.
	Policy TokenPolicy

	secretHash []byte
}

// TokenPolicy is a row and column policy on a token scoped to one table: everything the
// token reads of it (snapshot, query, stream, replay) is the rows Where matches, with
// only Columns (docs/design.md, "Shapes and policies"). The api compiles it, as a shape,
// with package snapshot's sandbox; the store keeps it as text.
type TokenPolicy struct {
	// Where is a row predicate as DuckDB renders it back, "" for every row.
	Where string
	// Columns are column names; nil means every column.
	Columns []string
}

// Empty reports whether p limits nothing.
func (p TokenPolicy) Empty() bool { return p.Where == "" && p.Columns == nil }

// Expired reports whether t has expired at now.
func (t Token) Expired(now time.Time) bool { return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt) }

// Allows reports whether t may be used for purpose on table ("" for requests that name
// no table): admin tokens allow everything, others need the same purpose and, when
// scoped, the same table (case-insensitive, as table names are).
func (t Token) Allows(purpose Purpose, table string) bool {
	if t.Purpose == PurposeAdmin {
		return true
	}
	if t.Purpose != purpose {
		return false
	}
	return t.Table == "" || SameName(t.Table, table)
}

// Token errors returned by Authenticate, each inside an *Error: ErrTokenMalformed has
// CodeInvalid, the others CodeUnauthorized.
var (
	ErrTokenMalformed = errors.New("malformed token")
	ErrTokenUnknown   = errors.New("unknown token")
	ErrTokenExpired   = errors.New("token expired")
	ErrTokenRevoked   = errors.New("token revoked")
)

const tokenPrefix = "dt_"

var tokenEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// CreateToken makes a token for purpose, limited to table unless table is "", expiring
// after ttl unless ttl is 0. It returns the token and its secret, the string clients send
// ("dt_<id>_<secret>"), which is not stored and cannot be shown again.
// Errors: CodeInvalid (admin tokens cannot be scoped to a table, negative ttl, bad table
// name), ErrClosed.
func (db *DB) CreateToken(ctx context.Context, purpose Purpose, table string, ttl time.Duration) (Token, string, error) {
	return db.CreatePolicyToken(ctx, purpose, table, ttl, TokenPolicy{})
}

// CreatePolicyToken is CreateToken with a policy, which the caller has checked (package
// snapshot compiles it against the table). Errors: CreateToken's, and CodeInvalid for a
// policy on an admin token or on a token not limited to a table.
func (db *DB) CreatePolicyToken(ctx context.Context, purpose Purpose, table string, ttl time.Duration, policy TokenPolicy) (Token, string, error) {
	if !policy.Empty() && (purpose == PurposeAdmin || purpose == PurposeIngest || table == "") {
		return Token{}, "", &Error{Code: CodeInvalid, Message: "a policy (where, columns) needs a query or stream token limited to a table", Field: "where"}
	}
	if _, err := ParsePurpose(string(purpose)); err != nil {
		return Token{}, "", err
	}
	if purpose == PurposeAdmin && table != "" {
		return Token{}, "", &Error{Code: CodeInvalid, Message: "admin tokens cannot be limited to a table", Field: "table"}
	}
	if table != "" {
		if err := ValidateTableName(table); err != nil {
			return Token{}, "", err
		}
	}
	if ttl < 0 {
		return Token{}, "", &Error{Code: CodeInvalid, Message: "ttl must not be negative", Field: "ttl"}
	}
	idBytes := make([]byte, 8)
	secretBytes := make([]byte, 32)
	if _, err := rand.Read(idBytes); err != nil {
		return Token{}, "", err
	}
	if _, err := rand.Read(secretBytes); err != nil {
		return Token{}, "", err
	}
	secret := strings.ToLower(tokenEncoding.EncodeToString(secretBytes))
	hash := sha256.Sum256([]byte(secret))
	now := db.Now().UTC()
	t := Token{ID: hex.EncodeToString(idBytes), Purpose: purpose, Table: table, CreatedAt: now, Policy: policy, secretHash: hash[:]}
	if ttl > 0 {
		t.ExpiresAt = now.Add(ttl)
	}
	_, err := db.change(ctx, func(ctx context.Context, tx *writeTx) (func(), []Event, any, error) {
		var expires, scope, where, columns any
		if !t.ExpiresAt.IsZero() {
			expires = t.ExpiresAt
		}
		if table != "" {
			scope = table
		}
		if policy.Where != "" {
			where = policy.Where
		}
		if policy.Columns != nil {
			b, err := json.Marshal(policy.Columns)
			if err != nil {
				return nil, nil, nil, err
			}
			columns = string(b)
		}
		if err := tx.exec(ctx, `INSERT INTO ducktail_catalog.tokens (id, secret_sha256, purpose, table_name, created_at, expires_at, policy_where, policy_columns) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.secretHash, string(t.Purpose), scope, t.CreatedAt, expires, where, columns); err != nil {
			return nil, nil, nil, err
		}
		return func() { db.tokens[t.ID] = t }, []Event{TokenCreated{Token: t}}, nil, nil
	})
	if err != nil {
		return Token{}, "", err
	}
	return t, tokenPrefix + t.ID + "_" + secret, nil
}

// Tokens returns every token, revoked and expired ones included, oldest first.
func (db *DB) Tokens() []Token {
	db.mu.RLock()
	out := make([]Token, 0, len(db.tokens))
	for _, t := range db.tokens {
		out = append(out, t)
	}
	db.mu.RUnlock()
	slices.SortFunc(out, func(a, b Token) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// LookupToken returns the token with the given id, or a CodeNotFound *Error.
func (db *DB) LookupToken(id string) (Token, error) {
	db.mu.RLock()
	t, ok := db.tokens[id]
	db.mu.RUnlock()
	if !ok {
		return Token{}, &Error{Code: CodeNotFound, Message: "no token with id " + quoteForMessage(id)}
	}
	return t, nil
}

// RevokeToken revokes the token with the given id; open streams using it are told through
// a TokenRevoked. Revoking a revoked token is not an error.
// Errors: CodeNotFound, ErrClosed.
func (db *DB) RevokeToken(ctx context.Context, id string) error {
	_, err := db.change(ctx, func(ctx context.Context, tx *writeTx) (func(), []Event, any, error) {
		db.mu.RLock()
		t, ok := db.tokens[id]
		db.mu.RUnlock()
		if !ok {
			return nil, nil, nil, &Error{Code: CodeNotFound, Message: "no token with id " + quoteForMessage(id)}
		}
		if !t.RevokedAt.IsZero() {
			return nil, nil, nil, nil
		}
		t.RevokedAt = db.Now().UTC()
		if err := tx.exec(ctx, `UPDATE ducktail_catalog.tokens SET revoked_at = ? WHERE id = ?`, t.RevokedAt, id); err != nil {
			return nil, nil, nil, err
		}
		return func() { db.tokens[id] = t }, []Event{TokenRevoked{TokenID: id, Token: t}}, nil, nil
	})
	return err
}

// Authenticate returns the token whose secret is secret. The secret's SHA-256 is compared
// with the stored hash in constant time. Errors (inside an *Error): ErrTokenMalformed,
// ErrTokenUnknown, ErrTokenExpired, ErrTokenRevoked.
func (db *DB) Authenticate(secret string) (Token, error) {
	return AuthenticateWith(func(id string) (Token, bool) {
		db.mu.RLock()
		defer db.mu.RUnlock()
		t, ok := db.tokens[id]
		return t, ok
	}, secret, db.Now())
}

// AuthenticateWith is Authenticate over tokens kept elsewhere (a stream node's copy of the
// writer's, package jetstream): lookup returns the token of an id, with its secret's hash
// (WithSecretHash), and whether there is one; now decides expiry. Errors: Authenticate's.
func AuthenticateWith(lookup func(id string) (Token, bool), secret string, now time.Time) (Token, error) {
	id, sec, ok := splitToken(secret)
	if !ok {
		return Token{}, &Error{Code: CodeInvalid, Message: "malformed token", Err: ErrTokenMalformed}
	}
	t, found := lookup(id)
	hash := sha256.Sum256([]byte(sec))
	want := t.secretHash
	if !found {
		want = make([]byte, sha256.Size)
	}
	if subtle.ConstantTimeCompare(hash[:], want) != 1 || !found {
		return Token{}, &Error{Code: CodeUnauthorized, Message: "unknown token", Err: ErrTokenUnknown}
	}
	if !t.RevokedAt.IsZero() {
		return Token{}, &Error{Code: CodeUnauthorized, Message: "token revoked", Err: ErrTokenRevoked}
	}
	if t.Expired(now) {
		return Token{}, &Error{Code: CodeUnauthorized, Message: "token expired", Err: ErrTokenExpired}
	}
	return t, nil
}

// SecretHash returns the SHA-256 of t's secret, as the store keeps it; nil for a token
// not read from a store or a copy of one.
func (t Token) SecretHash() []byte { return t.secretHash }

// WithSecretHash returns t with the SHA-256 of its secret set to hash: a token copied from
// the writer (TokenCreated, SecretHash) that AuthenticateWith can check secrets against.
func (t Token) WithSecretHash(hash []byte) Token {
	t.secretHash = hash
	return t
}

// splitToken splits "dt_<16 hex id>_<52 base32 secret>".
func splitToken(s string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || len(id) != 16 || len(secret) != 52 {
		return "", "", false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", "", false
	}
	if _, err := tokenEncoding.DecodeString(strings.ToUpper(secret)); err != nil {
		return "", "", false
	}
	return id, secret, true
}

func (db *DB) loadTokens(ctx context.Context) error {
	rows, err := db.sqlDB.QueryContext(ctx, `SELECT id, secret_sha256, purpose, coalesce(table_name, ''), created_at, expires_at, revoked_at, coalesce(policy_where, ''), policy_columns FROM ducktail_catalog.tokens`)
	if err != nil {
		return fmt.Errorf("load tokens: %w", err)
	}
	defer rows.Close()
	tokens := map[string]Token{}
	for rows.Next() {
		var t Token
		var purpose string
		var expires, revoked sql.NullTime
		var columns sql.NullString
		if err := rows.Scan(&t.ID, &t.secretHash, &purpose, &t.Table, &t.CreatedAt, &expires, &revoked, &t.Policy.Where, &columns); err != nil {
			return fmt.Errorf("load tokens: %w", err)
		}
		if columns.Valid {
			if err := json.Unmarshal([]byte(columns.String), &t.Policy.Columns); err != nil {
				return fmt.Errorf("load tokens: policy columns of %s: %w", t.ID, err)
			}
		}
		t.Purpose = Purpose(purpose)
		t.ExpiresAt, t.RevokedAt = expires.Time, revoked.Time
		tokens[t.ID] = t
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load tokens: %w", err)
	}
	db.mu.Lock()
	db.tokens = tokens
	db.mu.Unlock()
	return nil
}
