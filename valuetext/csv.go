package valuetext

// AppendCSVField appends field to dst as one non-NULL CSV field (RFC 4180 §2): quoted when
// it is empty (so "" is the empty string, told apart from NULL, which is an empty unquoted
// field), holds ',', '"', CR or LF, or starts with a space or tab; inside quotes each '"'
// is doubled.
func AppendCSVField(dst, field []byte) []byte {
	if !csvNeedsQuotes(field) {
		return append(dst, field...)
	}
	dst = append(dst, '"')
	for _, b := range field {
		if b == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, b)
	}
	return append(dst, '"')
}

// csvNeedsQuotes reports whether field must be quoted to read back as itself.
func csvNeedsQuotes(field []byte) bool {
	if len(field) == 0 || field[0] == ' ' || field[0] == '\t' {
		return true
	}
	for _, b := range field {
		if b == ',' || b == '"' || b == '\r' || b == '\n' {
			return true
		}
	}
	return false
}
