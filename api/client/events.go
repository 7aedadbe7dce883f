package client

import "github.com/apache/arrow-go/v18/arrow"

// SchemaChange is a schema event: the table's schema at the start of a connection and
// again before the first batch after a column change (docs/design.md, "The stream").
type SchemaChange struct {
	// Cursor is the event's id: the cursor of the baseline or of the last complete batch
	// (a schema acknowledges no data, docs/design.md, "The stream"). Opaque: store it as is.
	Cursor string
	// Schema is the table's Arrow schema.
	Schema *arrow.Schema
}

// Batch is one commit of the table (docs/design.md, "The stream": one batch event per
// commit).
type Batch struct {
	// Cursor is the position after this commit: resuming from it continues with the
	// next commit. Opaque: store it as is, never parse or compare it.
	Cursor string
	// Schema is the schema of Records.
	Schema *arrow.Schema
	// Records holds the commit's rows in zero or more record batches. They are released
	// when OnBatch returns; Retain one to keep it longer.
	Records []arrow.RecordBatch
}
