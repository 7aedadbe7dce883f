package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

// tableJSON is a table as the API shows it.
type tableJSON struct {
	Name       string    `json:"name"`
	ID         int64     `json:"id"`
	CreatedAt  time.Time `json:"created_at"`
	Activation string    `json:"activation"`
	// Seq is the seq of the last commit; Cursor is the cursor of that position, which
	// streams resume from.
	Seq    int64  `json:"seq"`
	Cursor string `json:"cursor"`
	// Rows is left out for a token with a policy: it would count rows outside it.
	Rows          *int64             `json:"rows,omitempty"`
	SchemaVersion int                `json:"schema_version"`
	Columns       []store.ColumnSpec `json:"columns"`
}

func (s *Server) tableJSON(t store.TableInfo) tableJSON {
	cols := make([]store.ColumnSpec, len(t.Schema.Columns))
	for i, c := range t.Schema.Columns {
		cols[i] = store.ColumnSpec{Name: c.Name, Type: string(c.Type)}
	}
	return tableJSON{
		Name: t.Name, ID: t.ID, CreatedAt: t.CreatedAt, Activation: t.Head.Activation.String(),
		Seq: t.Head.Seq, Cursor: s.codec.Encode(t.Head), Rows: &t.Rows,
		SchemaVersion: t.Schema.Version, Columns: cols,
	}
}

// tableJSONFor is the table as tok sees it: through its policy, only the policy's columns,
// no row count, and the cursor of the head through the policy (docs/design.md, "Shapes
// and policies"); a policy that no longer applies shows no column and no cursor.
func (s *Server) tableJSONFor(r *http.Request, tok store.Token, t store.TableInfo) tableJSON {
	j := s.tableJSON(t)
	policy := policyOn(tok, t.Name)
	if policy.Empty() {
		return j
	}
	j.Rows, j.Cursor, j.Columns = nil, "", []store.ColumnSpec{}
	shape, err := s.reader.Shape(r.Context(), t.Name, snapshot.ShapeSpec{}, policy)
	if err != nil {
		return j
	}
	for _, c := range shape.Project(&t.Schema).Columns {
		j.Columns = append(j.Columns, store.ColumnSpec{Name: c.Name, Type: string(c.Type)})
	}
	j.Cursor = s.shapedCursor(t.Head, shape.Tag())
	return j
}

// createTableRequest is the body of POST /v1/tables.
type createTableRequest struct {
	Name    string             `json:"name"`
	Columns []store.ColumnSpec `json:"columns"`
}

// createTable: POST /v1/tables (admin) creates a table from an explicit column list.
// 201 with the table; 400 for bad names or types, 409 when the name is taken.
func (s *Server) createTable(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req createTableRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.db.CreateTable(r.Context(), req.Name, req.Columns)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.tableJSON(info))
}

// listTables: GET /v1/tables lists the tables the token may see.
func (s *Server) listTables(w http.ResponseWriter, r *http.Request) {
	tok := tokenFrom(r)
	out := []tableJSON{}
	for _, t := range s.db.Tables() {
		if tok.Table == "" || tok.Allows(tok.Purpose, t.Name) {
			out = append(out, s.tableJSONFor(r, tok, t))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tables": out})
}

// describeTable: GET /v1/tables/{table}.
func (s *Server) describeTable(w http.ResponseWriter, r *http.Request) {
	name := pathParam(r, "table")
	tok := tokenFrom(r)
	if err := allow(tok, tok.Purpose, name); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.db.Table(name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.tableJSONFor(r, tok, info))
}

// dropTable: DELETE /v1/tables/{table} (admin); 204. Streams of the table end with
// refresh-required, reason "table_dropped".
func (s *Server) dropTable(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.db.DropTable(r.Context(), pathParam(r, "table")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// resetTable: POST /v1/tables/{table}/reset (admin) truncates the table into a new
// activation; streams end with refresh-required, reason "table_reset".
func (s *Server) resetTable(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.db.ResetTable(r.Context(), pathParam(r, "table"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.tableJSON(info))
}

// addColumn: POST /v1/tables/{table}/columns (admin) with {"name", "type"}; 201.
func (s *Server) addColumn(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	var spec store.ColumnSpec
	if err := s.decodeJSON(w, r, &spec); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.db.AddColumn(r.Context(), pathParam(r, "table"), spec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.tableJSON(info))
}

// renameColumnRequest is the body of PATCH /v1/tables/{table}/columns/{column}.
type renameColumnRequest struct {
	Name string `json:"name"`
}

// renameColumn: PATCH /v1/tables/{table}/columns/{column} (admin) with {"name": new}.
func (s *Server) renameColumn(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req renameColumnRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.db.RenameColumn(r.Context(), pathParam(r, "table"), pathParam(r, "column"), req.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.tableJSON(info))
}

// dropColumn: DELETE /v1/tables/{table}/columns/{column} (admin).
func (s *Server) dropColumn(w http.ResponseWriter, r *http.Request) {
	if err := allow(tokenFrom(r), store.PurposeAdmin, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.db.DropColumn(r.Context(), pathParam(r, "table"), pathParam(r, "column"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.tableJSON(info))
}

// decodeJSON decodes a JSON request body of at most MaxQueryBodyBytes into v, a pointer
// to a struct: one JSON object (RFC 8259) whose keys are exactly v's JSON field names,
// each at most once, with nothing after it. encoding/json alone would match keys
// case-insensitively and let a repeated key win silently ({"purpose":"query",
// "purpose":"admin"}). Errors name the field: CodeInvalid, or CodeTooLarge.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxQueryBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &store.Error{Code: store.CodeTooLarge, Message: fmt.Sprintf("request body is over %d bytes", tooBig.Limit)}
	}
	if err != nil {
		return &store.Error{Code: store.CodeInvalid, Message: "reading the request body failed: " + err.Error()}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return &store.Error{Code: store.CodeInvalid, Message: "request body is empty; send a JSON object"}
	}
	if err := checkObjectKeys(body, jsonFieldNames(reflect.TypeOf(v).Elem())); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err = dec.Decode(v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		return &store.Error{Code: store.CodeInvalid, Field: typeErr.Field, Message: fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, jsonTypeName(typeErr.Type), typeErr.Value)}
	case err != nil:
		return &store.Error{Code: store.CodeInvalid, Message: "bad request body: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &store.Error{Code: store.CodeInvalid, Message: "request body holds more than one JSON value"}
	}
	return nil
}

// checkObjectKeys checks that body is one JSON object whose keys are in names, each once.
func checkObjectKeys(body []byte, names map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	syntax := func(err error) error {
		return &store.Error{Code: store.CodeInvalid, Message: "request body is not valid JSON: " + err.Error()}
	}
	tok, err := dec.Token()
	if err != nil {
		return syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &store.Error{Code: store.CodeInvalid, Message: "request body must be a JSON object"}
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		key, _ := tok.(string)
		if !names[key] {
			return &store.Error{Code: store.CodeInvalid, Field: key, Message: fmt.Sprintf("unknown field %q; the fields are %s", key, strings.Join(slices.Sorted(maps.Keys(names)), ", "))}
		}
		if seen[key] {
			return &store.Error{Code: store.CodeInvalid, Field: key, Message: fmt.Sprintf("field %q appears twice", key)}
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return syntax(err)
		}
	}
	return nil
}

// jsonFieldNames returns the JSON names of a struct type's fields.
func jsonFieldNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}

// jsonTypeName names a Go type the way a JSON client thinks of it.
func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	}
	return "a number"
}
