package api_test

import (
	"context"
	"testing"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/store"
)

// TestOpenStackRefusesMissingParts: without a store, or with a store that cannot open,
// OpenStack returns an error rather than a half-wired stack.
func TestOpenStackRefusesMissingParts(t *testing.T) {
	if st, err := api.OpenStack(context.Background(), api.StackConfig{}); err == nil {
		st.Close()
		t.Fatal("OpenStack without a Store succeeded")
	}
	if st, err := api.OpenStack(context.Background(), api.StackConfig{Store: store.NewDB("")}); err == nil {
		st.Close()
		t.Fatal("OpenStack with a Store without Path succeeded")
	}
}
