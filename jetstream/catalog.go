package jetstream

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/store"
)

// The catalog is a JetStream key-value bucket the writer keeps, "<stream>_CATALOG", from
// which stream nodes learn what they cannot read from the table subjects: the cursor key,
// the live tables by name, the schema versions of each activation, the ended activations
// and the tokens (docs/scaling.md, "The catalog bucket"). Keys:
const (
	// keyCursorKey holds the writer's cursor key: every node encodes the same cursors.
	keyCursorKey = "cursor-key"
	// tableKeyPrefix + hex(store.FoldName(name)) holds a live table (tableEntry).
	tableKeyPrefix = "table."
	// "schema.<table id>.<activation>.<version>" holds a schema version (store.Schema).
	schemaKeyFormat = "schema.%d.%s.%d"
	// "activation.<table id>.<activation>" holds an ended activation (activationEntry).
	activationKeyFormat = "activation.%d.%s"
	// tokenKeyPrefix + id holds a token (tokenEntry).
	tokenKeyPrefix = "token."
)

// CatalogBucket returns the name of the catalog bucket of the stream named stream.
func CatalogBucket(stream string) string { return stream + "_CATALOG" }

// tableEntry is a live table in the catalog.
type tableEntry struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// activationEntry is an ended activation in the catalog: a cursor of it gets
// refresh-required with Reason.
type activationEntry struct {
	Table  string `json:"table"`
	Head   int64  `json:"head"`
	Reason string `json:"reason"`
}

// tokenEntry is a token in the catalog, with its secret's SHA-256, never the secret.
type tokenEntry struct {
	ID           string    `json:"id"`
	Purpose      string    `json:"purpose"`
	Table        string    `json:"table,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
	RevokedAt    time.Time `json:"revoked_at,omitzero"`
	Where        string    `json:"where,omitempty"`
	Columns      []string  `json:"columns,omitempty"`
	SecretSHA256 []byte    `json:"secret_sha256"`
}

func tableKey(name string) string {
	return tableKeyPrefix + hex.EncodeToString([]byte(store.FoldName(name)))
}

func schemaKey(tableID int64, activation uuid.UUID, version int) string {
	return fmt.Sprintf(schemaKeyFormat, tableID, activation, version)
}

func activationKey(tableID int64, activation uuid.UUID) string {
	return fmt.Sprintf(activationKeyFormat, tableID, activation)
}

func entryOf(t store.Token) tokenEntry {
	return tokenEntry{ID: t.ID, Purpose: string(t.Purpose), Table: t.Table, CreatedAt: t.CreatedAt,
		ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt, Where: t.Policy.Where, Columns: t.Policy.Columns,
		SecretSHA256: t.SecretHash()}
}

func (e tokenEntry) token() store.Token {
	return store.Token{ID: e.ID, Purpose: store.Purpose(e.Purpose), Table: e.Table, CreatedAt: e.CreatedAt,
		ExpiresAt: e.ExpiresAt, RevokedAt: e.RevokedAt,
		Policy: store.TokenPolicy{Where: e.Where, Columns: e.Columns}}.WithSecretHash(e.SecretSHA256)
}

// ensureCatalog creates or updates the catalog bucket, with the stream's replicas.
func (p *Publisher) ensureCatalog(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.PublishTimeout)
	defer cancel()
	kv, err := p.js.CreateOrUpdateKeyValue(ctx, njs.KeyValueConfig{
		Bucket: CatalogBucket(p.Stream), History: 1, Storage: njs.FileStorage, Replicas: max(p.Replicas, 1),
	})
	if err != nil {
		return err
	}
	p.kv = kv
	return nil
}

// putJSON puts v, as JSON, under key.
func (p *Publisher) putJSON(ctx context.Context, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.PublishTimeout)
	defer cancel()
	_, err = p.kv.Put(ctx, key, data)
	return err
}

// deleteKey deletes key; a key already gone is not an error.
func (p *Publisher) deleteKey(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, p.PublishTimeout)
	defer cancel()
	if err := p.kv.Delete(ctx, key); err != nil && !errors.Is(err, njs.ErrKeyNotFound) {
		return err
	}
	return nil
}

// syncCatalog makes the catalog match the store, after a catch-up has put every live
// table's activation on its subject: the cursor key, every live table whose activation
// the stream has, and its schema versions, every token; tables and tokens the store no
// longer has are deleted.
func (p *Publisher) syncCatalog(ctx context.Context) error {
	if err := p.putRaw(ctx, keyCursorKey, p.db.Cursors().Key()); err != nil {
		return err
	}
	live := map[string]bool{}
	for _, info := range p.db.Tables() {
		key := tableKey(info.Name)
		if st, ok := p.state[info.ID]; !ok || st.activation != info.Head.Activation {
			// Created (or reset) after the catch-up read the tables: its subject does
			// not show the activation yet, and a node must not see the table before it
			// does. Its queued ActivationStarted puts it.
			live[key] = true
			continue
		}
		var schemas map[int]*store.Schema
		err := p.db.Read(ctx, func(tx *store.ReadTx) error {
			a, err := tx.Activation(ctx, info.ID, info.Head.Activation)
			if err != nil {
				return err
			}
			schemas, err = tx.Schemas(ctx, a)
			return err
		})
		if errors.Is(err, store.ErrTableNotFound) || store.ErrorCode(err) == store.CodeNotFound {
			continue // dropped since Tables
		}
		if err != nil {
			return err
		}
		for _, s := range schemas {
			if err := p.putJSON(ctx, schemaKey(info.ID, info.Head.Activation, s.Version), s); err != nil {
				return err
			}
		}
		live[key] = true
		if err := p.putJSON(ctx, key, tableEntry{ID: info.ID, Name: info.Name, CreatedAt: info.CreatedAt}); err != nil {
			return err
		}
	}
	for _, t := range p.db.Tokens() {
		live[tokenKeyPrefix+t.ID] = true
		if err := p.putJSON(ctx, tokenKeyPrefix+t.ID, entryOf(t)); err != nil {
			return err
		}
	}
	keys, err := p.kv.ListKeys(ctx)
	if errors.Is(err, njs.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var gone []string
	for k := range keys.Keys() {
		if (strings.HasPrefix(k, tableKeyPrefix) || strings.HasPrefix(k, tokenKeyPrefix)) && !live[k] {
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		if err := p.endDropped(ctx, k); err != nil {
			return err
		}
		if err := p.deleteKey(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// endDropped publishes the end of the last activation of a table the catalog still lists
// but the store no longer has (dropped while the writer was down or its queue full), when
// the table's subject does not end with it: subscribers on stream nodes get
// refresh-required, table_dropped.
func (p *Publisher) endDropped(ctx context.Context, key string) error {
	if !strings.HasPrefix(key, tableKeyPrefix) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.PublishTimeout)
	e, err := p.kv.Get(ctx, key)
	cancel()
	if err != nil {
		return err
	}
	var t tableEntry
	if err := json.Unmarshal(e.Value(), &t); err != nil {
		return nil // not a table this package wrote: deleted without more
	}
	st, err := p.stateOf(ctx, t.ID)
	if err != nil || st.activation == uuid.Nil {
		return err
	}
	p.Logger.Warn("jetstream: a table was dropped while its changes could not be published; its end is published now", "table", t.Name)
	return p.sendEnded(ctx, t.Name, store.Position{TableID: t.ID, Activation: st.activation, Seq: st.seq}, store.ReasonTableDropped, uuid.Nil)
}

// putRaw puts value under key as it is.
func (p *Publisher) putRaw(ctx context.Context, key string, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, p.PublishTimeout)
	defer cancel()
	_, err := p.kv.Put(ctx, key, value)
	return err
}

// catalogAfter updates the catalog after event e reached the table subjects: a new table
// is put once its activation's first schema is on its subject, and a dropped table is
// deleted. Tokens are put by runTokens, apart from the table events.
func (p *Publisher) catalogAfter(ctx context.Context, e store.Event) error {
	switch e := e.(type) {
	case store.ActivationStarted:
		return p.putJSON(ctx, tableKey(e.TableName), tableEntry{ID: e.Position.TableID, Name: e.TableName, CreatedAt: e.CreatedAt})
	case store.ActivationEnded:
		if e.Reason == store.ReasonTableDropped {
			return p.deleteKey(ctx, tableKey(e.TableName))
		}
	}
	return nil
}
