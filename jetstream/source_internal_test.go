package jetstream

import (
	"testing"

	"github.com/google/uuid"
)

// TestEndedActivationsAreBounded records one more ended activation than maxEnded: the
// oldest is forgotten (its cursors are then judged from the catalog), the newest kept.
func TestEndedActivationsAreBounded(t *testing.T) {
	s := &Source{ended: map[uuid.UUID]activationEntry{}}
	ids := make([]uuid.UUID, maxEnded+1)
	for i := range ids {
		ids[i] = uuid.New()
		s.rememberEnded(ids[i], activationEntry{Reason: "table_reset"})
	}
	if len(s.ended) != maxEnded || len(s.endedOrder) != maxEnded {
		t.Fatalf("kept %d (%d in order), want %d", len(s.ended), len(s.endedOrder), maxEnded)
	}
	if s.endedActivation(ids[0]) || !s.endedActivation(ids[1]) || !s.endedActivation(ids[maxEnded]) {
		t.Fatal("not the oldest forgotten")
	}
}
