package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jsonChunks turns a JSON array of objects into NDJSON chunks: the document itself, or
// the array at a path of object keys inside it (--json-path features, for a GeoJSON
// FeatureCollection). The document is read as it goes, never whole.
type jsonChunks struct {
	dec  *json.Decoder
	rows int
}

// newJSONChunks reads r up to the start of the array to ingest: the document when path
// is "", else the value at path, object keys separated by dots ("features",
// "data.items"). Errors say what the document holds instead, and which --json-path
// would name an array in it.
func newJSONChunks(r io.Reader, rows int, path string) (*jsonChunks, error) {
	dec := json.NewDecoder(r)
	var keys []string
	if path != "" {
		keys = strings.Split(path, ".")
	}
	for i := 0; ; i++ {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("read JSON: %w", err)
		}
		d, _ := tok.(json.Delim)
		at := "the document"
		if i > 0 {
			at = "--json-path " + strings.Join(keys[:i], ".")
		}
		if i == len(keys) {
			if d == '[' {
				return &jsonChunks{dec: dec, rows: rows}, nil
			}
			if d == '{' && i == 0 {
				return nil, objectDocumentError(dec)
			}
			return nil, fmt.Errorf("%s is %s, not an array of objects", at, jsonKind(tok))
		}
		if d != '{' {
			return nil, fmt.Errorf("--json-path %s: %s is %s, not an object holding %q", path, at, jsonKind(tok), keys[i])
		}
		if err := findKey(dec, keys[i]); err != nil {
			return nil, fmt.Errorf("--json-path %s: %s: %w", path, at, err)
		}
	}
}

// findKey reads the members of an object, its '{' already read, up to the value of key.
func findKey(dec *json.Decoder, key string) error {
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		if name == key {
			return nil
		}
		names = append(names, name)
		if err := skipValue(dec); err != nil {
			return err
		}
	}
	return fmt.Errorf("no key %q (its keys: %s)", key, strings.Join(names, ", "))
}

// skipValue reads one value without keeping it.
func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}

// objectDocumentError reads the rest of a document that is an object, its '{' already
// read, and says which --json-path would ingest an array in it.
func objectDocumentError(dec *json.Decoder) error {
	var arrays []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read JSON: %w", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("read JSON: %w", err)
		}
		if name, _ := tok.(string); bytes.HasPrefix(raw, []byte("[")) && !strings.Contains(name, ".") {
			arrays = append(arrays, name)
		}
	}
	const msg = "the document is an object, not an array of objects"
	if len(arrays) == 0 {
		return errors.New(msg + ", and none of its keys holds an array; with one JSON object per line, use --format ndjson")
	}
	return fmt.Errorf("%s; to ingest the array under one of its keys, use --json-path %s (its arrays: %s)", msg, arrays[0], strings.Join(arrays, ", "))
}

// jsonKind names the kind of the value a token starts.
func jsonKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

func (c *jsonChunks) rowCount() int64 { return -1 }

func (c *jsonChunks) next() (chunk, error) {
	var buf bytes.Buffer
	n := 0
	for n < c.rows && buf.Len() < maxChunkBytes && c.dec.More() {
		var raw json.RawMessage
		if err := c.dec.Decode(&raw); err != nil {
			return chunk{}, err
		}
		if err := json.Compact(&buf, raw); err != nil {
			return chunk{}, err
		}
		buf.WriteByte('\n')
		n++
	}
	if n == 0 {
		return chunk{}, io.EOF
	}
	return chunk{body: buf.Bytes(), contentType: "application/x-ndjson", rows: n}, nil
}
