package snapshot

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/ducktail/ducktail/store"
)

// queryArgs converts the JSON values of a request's "params" into DuckDB positional
// parameters ($1 is params[0]): strings, booleans, float64 and nil pass through; a
// json.Number becomes an int64 when it is integral and fits (1, -7, 1e3), a uint64 when it
// is an integer beyond int64, and a float64 otherwise. Arrays, objects and other Go types
// are a CodeInvalid *store.Error naming the parameter.
func queryArgs(params []any) ([]any, error) {
	args := make([]any, len(params))
	for i, p := range params {
		switch v := p.(type) {
		case nil, string, bool, float64:
			args[i] = v
		case json.Number:
			n, err := numberArg(v)
			if err != nil {
				return nil, &store.Error{Code: store.CodeInvalid, Column: paramName(i), Message: fmt.Sprintf("parameter %s: %q is not a number", paramName(i), string(v))}
			}
			args[i] = n
		default:
			return nil, &store.Error{Code: store.CodeInvalid, Column: paramName(i),
				Message: fmt.Sprintf("parameter %s: a %s is not supported; use a string, number, boolean or null", paramName(i), jsonKind(v))}
		}
	}
	return args, nil
}

func numberArg(n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	if u, err := strconv.ParseUint(string(n), 10, 64); err == nil {
		return u, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return nil, err
	}
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	return f, nil
}

// paramName names the i-th (0-based) parameter as SQL does: $1, $2, ….
func paramName(i int) string { return "$" + strconv.Itoa(i+1) }

// jsonKind names the JSON kind of a decoded value, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "JSON array"
	case map[string]any:
		return "JSON object"
	}
	return fmt.Sprintf("Go %T", v)
}
