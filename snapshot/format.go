package snapshot

import (
	"errors"
	"strconv"
	"strings"

	"github.com/ducktail/ducktail/store"
)

// Format is an output format of a snapshot or query result; the package comment
// describes each one's bytes.
type Format string

// The output formats.
const (
	FormatArrow   Format = "arrow"
	FormatJSON    Format = "json"
	FormatNDJSON  Format = "ndjson"
	FormatCSV     Format = "csv"
	FormatParquet Format = "parquet"
)

// Media types of the formats: IANA registrations for Arrow IPC streams and Parquet,
// RFC 8259 for JSON, RFC 4180 (with its header parameter) for CSV, and the de-facto
// NDJSON media type the stream uses (docs/design.md, "The stream").
const (
	ContentTypeArrow   = "application/vnd.apache.arrow.stream"
	ContentTypeJSON    = "application/json"
	ContentTypeNDJSON  = "application/x-ndjson"
	ContentTypeCSV     = "text/csv; charset=utf-8; header=present"
	ContentTypeParquet = "application/vnd.apache.parquet"
)

// formats lists every format in the server's order of preference, which breaks ties
// between media ranges of equal quality in Negotiate.
var formats = []Format{FormatJSON, FormatArrow, FormatNDJSON, FormatCSV, FormatParquet}

// ErrNotAcceptable is wrapped by Negotiate's error when no format matches the Accept
// header (RFC 9110, section 12.5.1).
var ErrNotAcceptable = errors.New("not acceptable")

// ContentType returns f's media type with its parameters, or "" for an unknown format.
func (f Format) ContentType() string {
	switch f {
	case FormatArrow:
		return ContentTypeArrow
	case FormatJSON:
		return ContentTypeJSON
	case FormatNDJSON:
		return ContentTypeNDJSON
	case FormatCSV:
		return ContentTypeCSV
	case FormatParquet:
		return ContentTypeParquet
	}
	return ""
}

// check returns a CodeInvalid *store.Error for an unknown format.
func (f Format) check() error {
	if f.ContentType() == "" {
		return store.Errorf(store.CodeInvalid, "unknown output format %q; use arrow, json, ndjson, csv or parquet", string(f))
	}
	return nil
}

// Negotiate picks the output format for an Accept header (RFC 9110 §12.5.1) and returns it
// with the Content-Type to send. Quality values are honoured, and the most specific
// matching media range decides a format's quality (text/csv over text/* over */*);
// between equal qualities the order is JSON, Arrow, NDJSON, CSV, Parquet, so an empty
// header, "*/*" and "application/*" all give JSON, the friendliest format for both
// endpoints. Media-range parameters other than q are ignored, and so are malformed
// ranges. The error, when nothing acceptable can be produced, is a CodeNotAcceptable
// *store.Error wrapping ErrNotAcceptable.
func Negotiate(accept string) (Format, string, error) {
	if strings.TrimSpace(accept) == "" {
		return FormatJSON, ContentTypeJSON, nil
	}
	ranges := parseAccept(accept)
	var best Format
	bestQ := 0.0
	for _, f := range formats {
		if q := quality(ranges, f.ContentType()); q > bestQ {
			best, bestQ = f, q
		}
	}
	if bestQ == 0 {
		return "", "", &store.Error{Code: store.CodeNotAcceptable, Err: ErrNotAcceptable,
			Message: "no acceptable media type in Accept; this endpoint produces " + ContentTypeJSON + ", " + ContentTypeArrow + ", " +
				ContentTypeNDJSON + ", text/csv and " + ContentTypeParquet}
	}
	return best, best.ContentType(), nil
}

// mediaRange is one element of an Accept header.
type mediaRange struct {
	typ, sub string
	q        float64
}

func parseAccept(accept string) []mediaRange {
	var out []mediaRange
	for part := range strings.SplitSeq(accept, ",") {
		params := strings.Split(part, ";")
		typ, sub, ok := strings.Cut(strings.TrimSpace(params[0]), "/")
		if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
			continue
		}
		r := mediaRange{typ: strings.ToLower(typ), sub: strings.ToLower(sub), q: 1}
		for _, p := range params[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || q < 0 || q > 1 {
					ok = false
				}
				r.q = q
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// quality returns the q of the most specific range in ranges matching contentType, or 0.
func quality(ranges []mediaRange, contentType string) float64 {
	mt, _, _ := strings.Cut(contentType, ";")
	typ, sub, _ := strings.Cut(mt, "/")
	q, specificity := 0.0, 0
	for _, r := range ranges {
		s := 0
		switch {
		case r.typ == typ && r.sub == sub:
			s = 3
		case r.typ == typ && r.sub == "*":
			s = 2
		case r.typ == "*":
			s = 1
		}
		if s > specificity {
			q, specificity = r.q, s
		}
	}
	return q
}
