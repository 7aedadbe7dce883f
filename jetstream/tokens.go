package jetstream

import (
	"context"

	"github.com/ducktail/ducktail/store"
)

// tokenQueueSize bounds the token changes waiting for the catalog bucket; past it a change
// is left to the catalog sync that follows an overflow (syncCatalog).
const tokenQueueSize = 1024

// queueToken hands a created or revoked token to runTokens without blocking.
func (p *Publisher) queueToken(id string) {
	select {
	case p.tokens <- id:
	default:
		p.overflows.Add(1)
		p.behind.Store(true)
	}
}

// runTokens puts each created or revoked token in the catalog bucket, apart from the
// ordered queue of table events: nodes read tokens from the bucket only, so a revocation
// reaches every stream node within the bucket's delivery time even while the table events
// lag (docs/scaling.md, "Stream nodes"). It puts the token's state in the store at that
// moment, not the event's, so that puts running late, or beside a catalog sync, still end
// on the newest state. It starts once the bucket exists (ready closed) and runs until ctx
// ends.
func (p *Publisher) runTokens(ctx context.Context, ready <-chan struct{}) {
	select {
	case <-ready:
	case <-ctx.Done():
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-p.tokens:
			t, err := p.db.LookupToken(id)
			if err != nil {
				continue
			}
			if !p.retry(ctx, "put a token in the catalog bucket", func(ctx context.Context) error {
				return p.putJSON(ctx, tokenKeyPrefix+id, entryOf(t))
			}) {
				return
			}
		}
	}
}

// tokenOf returns the id of a token event, "" for other events.
func tokenOf(e store.Event) string {
	switch e := e.(type) {
	case store.TokenCreated:
		return e.Token.ID
	case store.TokenRevoked:
		return e.TokenID
	}
	return ""
}
