package ingest

import (
	"encoding/binary"
	"fmt"

	"github.com/ducktail/ducktail/store"
)

// This file checks the FlatBuffers metadata of an Arrow IPC body before arrow-go reads
// it. arrow-go (v18.8.0) trusts that metadata: it sizes slices by vector lengths
// (Schema.fields, Field.children, custom_metadata, Union.typeIds), by the counts in
// RecordBatch.variadicBufferCounts, and recurses into Field.children without a limit,
// so a few hundred bytes could make it allocate terabytes or overflow the stack, which
// no recover can catch. The checks follow Message.fbs, Schema.fbs and File.fbs of the
// Arrow format and walk the body exactly as arrow-go's readers do.

// fbTable is a FlatBuffers table (FlatBuffers "Internals": tables, vtables, vectors),
// read with the uint32 offset arithmetic of the flatbuffers Go runtime, so that the
// bytes checked here are the bytes arrow-go's generated accessors read. Every method
// reports ok = false for a position outside the buffer.
type fbTable struct {
	buf []byte
	pos uint32
}

// fbU16, fbU32 and fbU64 read a little-endian integer at a position; ok is false
// when it does not lie in buf.
func fbU16(buf []byte, at uint32) (uint16, bool) {
	if uint64(at)+2 > uint64(len(buf)) {
		return 0, false
	}
	return binary.LittleEndian.Uint16(buf[at:]), true
}

func fbU32(buf []byte, at uint32) (uint32, bool) {
	if uint64(at)+4 > uint64(len(buf)) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(buf[at:]), true
}

func fbU64(buf []byte, at uint32) (uint64, bool) {
	if uint64(at)+8 > uint64(len(buf)) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(buf[at:]), true
}

// fbRoot returns the root table of a buffer.
func fbRoot(buf []byte) (fbTable, bool) {
	n, ok := fbU32(buf, 0)
	return fbTable{buf, n}, ok
}

// field returns the position of the field in slot i (the i-th field of the schema
// definition), and whether the table holds it.
func (t fbTable) field(i int) (at uint32, present, ok bool) {
	so, ok := fbU32(t.buf, t.pos)
	if !ok {
		return 0, false, false
	}
	vtable := uint32(int32(t.pos) - int32(so))
	size, ok := fbU16(t.buf, vtable)
	if !ok {
		return 0, false, false
	}
	vo := uint32(4 + 2*i)
	if vo >= uint32(size) {
		return 0, false, true
	}
	off, ok := fbU16(t.buf, vtable+vo)
	if !ok || off == 0 {
		return 0, false, ok
	}
	return t.pos + uint32(off), true, true
}

// sub returns the table an offset field points to.
func (t fbTable) sub(i int) (sub fbTable, present, ok bool) {
	at, present, ok := t.field(i)
	if !present {
		return fbTable{}, false, ok
	}
	rel, ok := fbU32(t.buf, at)
	return fbTable{t.buf, at + rel}, true, ok
}

// u8 returns a one-byte scalar field, 0 when absent.
func (t fbTable) u8(i int) (uint8, bool) {
	at, present, ok := t.field(i)
	if !present || !ok {
		return 0, ok
	}
	if uint64(at) >= uint64(len(t.buf)) {
		return 0, false
	}
	return t.buf[at], true
}

// i64 returns an eight-byte scalar field, 0 when absent.
func (t fbTable) i64(i int) (int64, bool) {
	at, present, ok := t.field(i)
	if !present || !ok {
		return 0, ok
	}
	v, ok := fbU64(t.buf, at)
	return int64(v), ok
}

// vector returns the position of the first element and the length of the vector in
// slot i, checking that n elements of elem bytes lie in the buffer; absent, it is
// empty.
func (t fbTable) vector(i int, elem uint32) (start, n uint32, ok bool) {
	at, present, ok := t.field(i)
	if !present || !ok {
		return 0, 0, ok
	}
	rel, ok := fbU32(t.buf, at)
	if !ok {
		return 0, 0, false
	}
	vec := at + rel
	n, ok = fbU32(t.buf, vec)
	start = vec + 4
	if !ok || uint64(start)+uint64(n)*uint64(elem) > uint64(len(t.buf)) {
		return 0, 0, false
	}
	return start, n, true
}

// tables calls visit for each table of the vector of tables in slot i, stopping at the
// first false.
func (t fbTable) tables(i int, visit func(fbTable) bool) bool {
	start, n, ok := t.vector(i, 4)
	for j := uint32(0); ok && j < n; j++ {
		x := start + 4*j
		rel, _ := fbU32(t.buf, x)
		ok = visit(fbTable{t.buf, x + rel})
	}
	return ok
}

// Arrow format constants (Message.fbs, Schema.fbs) and arrow-go's nesting limit.
const (
	headerSchema          = 1  // MessageHeader.Schema
	headerDictionaryBatch = 2  // MessageHeader.DictionaryBatch
	headerRecordBatch     = 3  // MessageHeader.RecordBatch
	typeUnion             = 14 // Type.Union
	maxFieldDepth         = 64 // arrow-go's kMaxNestingDepth
	ipcContinuation       = 0xFFFFFFFF
	fileMagic             = "ARROW1"
)

// ipcVerifier checks IPC metadata; fields counts the Field tables walked in one
// metadata buffer, which may not exceed what the buffer can hold, so that shared
// subtrees cannot make the walk (or arrow-go's) exponential.
type ipcVerifier struct {
	fields, maxFields int
}

// message checks one Message flatbuffer and returns its bodyLength.
func (v *ipcVerifier) message(meta []byte) (int64, bool) {
	v.fields, v.maxFields = 0, len(meta)/4
	m, ok := fbRoot(meta)
	if !ok || !v.keyValues(m, 4) {
		return 0, false
	}
	typ, ok := m.u8(1)
	if !ok {
		return 0, false
	}
	hdr, present, ok := m.sub(2)
	if !ok {
		return 0, false
	}
	if present {
		switch typ {
		case headerSchema:
			ok = v.schema(hdr)
		case headerDictionaryBatch:
			var data fbTable
			if data, present, ok = hdr.sub(1); present && ok {
				ok = v.recordBatch(data)
			}
		case headerRecordBatch:
			ok = v.recordBatch(hdr)
		}
	}
	if !ok {
		return 0, false
	}
	return m.i64(3)
}

// schema checks a Schema table: fields, custom_metadata, features.
func (v *ipcVerifier) schema(s fbTable) bool {
	if _, _, ok := s.vector(3, 8); !ok || !v.keyValues(s, 2) {
		return false
	}
	return s.tables(1, func(f fbTable) bool { return v.field(f, 1) })
}

// field checks a Field table: name, the Union type's typeIds, custom_metadata and
// children, at most maxFieldDepth deep.
func (v *ipcVerifier) field(f fbTable, depth int) bool {
	v.fields++
	if depth > maxFieldDepth || v.fields > v.maxFields {
		return false
	}
	if _, _, ok := f.vector(0, 1); !ok || !v.keyValues(f, 6) {
		return false
	}
	typ, ok := f.u8(2)
	if !ok {
		return false
	}
	if typ == typeUnion {
		u, present, ok := f.sub(3)
		if !ok {
			return false
		}
		if present {
			if _, _, ok := u.vector(1, 4); !ok {
				return false
			}
		}
	}
	return f.tables(5, func(c fbTable) bool { return v.field(c, depth+1) })
}

// keyValues checks a custom_metadata vector of KeyValue tables.
func (v *ipcVerifier) keyValues(t fbTable, slot int) bool {
	return t.tables(slot, func(kv fbTable) bool {
		_, _, ok1 := kv.vector(0, 1)
		_, _, ok2 := kv.vector(1, 1)
		return ok1 && ok2
	})
}

// recordBatch checks a RecordBatch table: nodes and buffers (16-byte structs), and
// variadicBufferCounts, each at most the number of buffers.
func (v *ipcVerifier) recordBatch(rb fbTable) bool {
	_, _, ok1 := rb.vector(1, 16)
	_, nbuf, ok2 := rb.vector(2, 16)
	start, n, ok3 := rb.vector(4, 8)
	if !ok1 || !ok2 || !ok3 {
		return false
	}
	for j := uint32(0); j < n; j++ {
		c, _ := fbU64(rb.buf, start+8*j)
		if int64(c) < 0 || int64(c) > int64(nbuf) {
			return false
		}
	}
	return true
}

// metadataError is the CodeInvalid error for metadata the verifier rejects.
func metadataError(format, where string) error {
	return &store.Error{Code: store.CodeInvalid, Message: "the body is not a valid Arrow IPC " + format + ": malformed metadata in " + where}
}

// verifyIPCStream walks the messages of an IPC stream as arrow-go's message reader
// does (Arrow columnar format, "Encapsulated message format": continuation marker,
// metadata length, the framing before 0.15 without the marker, end-of-stream marker)
// and checks each message's metadata and that its body lies within the stream.
func verifyIPCStream(body []byte) error {
	var v ipcVerifier
	p := 0
	for n := 1; p < len(body); n++ {
		cid, ok := fbU32(body, uint32(p))
		if !ok {
			return metadataError("stream", fmt.Sprintf("message %d", n))
		}
		p += 4
		msgLen := int64(int32(cid))
		switch cid {
		case 0:
			return nil
		case ipcContinuation:
			l, ok := fbU32(body, uint32(p))
			if !ok {
				return metadataError("stream", fmt.Sprintf("message %d", n))
			}
			p += 4
			if l == 0 {
				return nil
			}
			msgLen = int64(int32(l))
		}
		if msgLen < 4 || msgLen > int64(len(body)-p) {
			return metadataError("stream", fmt.Sprintf("message %d", n))
		}
		bodyLen, ok := v.message(body[p : p+int(msgLen)])
		p += int(msgLen)
		if !ok || bodyLen < 0 || bodyLen > int64(len(body)-p) {
			return metadataError("stream", fmt.Sprintf("message %d", n))
		}
		p += int(bodyLen)
	}
	return nil
}

// verifyIPCFile checks the footer of an IPC file (Arrow columnar format, "IPC File
// Format": magic, stream, footer, footer length, magic) and the metadata of every
// dictionary and record batch block arrow-go's file reader would accept. A file too
// damaged for arrow-go to find its footer is left for arrow-go to reject.
func verifyIPCFile(body []byte) error {
	const tailLen = len(fileMagic) + 4
	size := len(body)
	if size <= 2*len(fileMagic)+4 || string(body[size-len(fileMagic):]) != fileMagic {
		return nil
	}
	footerLen := int(binary.LittleEndian.Uint32(body[size-tailLen:]))
	if footerLen <= 0 || footerLen+2*len(fileMagic)+4 > size {
		return nil
	}
	footer := body[size-tailLen-footerLen : size-tailLen]
	v := ipcVerifier{maxFields: len(footer) / 4}
	f, ok := fbRoot(footer)
	if ok {
		var s fbTable
		var present bool
		if s, present, ok = f.sub(1); present && ok {
			ok = v.schema(s)
		}
	}
	if !ok || !v.keyValues(f, 4) {
		return metadataError("file", "the footer")
	}
	n := 0
	for _, slot := range []int{2, 3} {
		start, count, ok := f.vector(slot, 24)
		if !ok {
			return metadataError("file", "the footer")
		}
		for j := uint32(0); j < count; j++ {
			n++
			blk := start + 24*j
			offset, _ := fbU64(footer, blk)
			metaLen, _ := fbU32(footer, blk+8)
			bodyLen, _ := fbU64(footer, blk+16)
			meta, ok := fileBlockMeta(body, int64(offset), int32(metaLen), int64(bodyLen))
			if !ok {
				continue // arrow-go rejects the block before reading it
			}
			if _, ok := v.message(meta); !ok {
				return metadataError("file", fmt.Sprintf("block %d", n))
			}
		}
	}
	return nil
}

// fileBlockMeta returns the Message flatbuffer of a file block, or ok = false where
// arrow-go's validateFileBlock and validateFileBlockMetadata reject the block.
func fileBlockMeta(body []byte, offset int64, meta int32, bodyLen int64) ([]byte, bool) {
	size := int64(len(body))
	if offset < 0 || meta < 4 || bodyLen < 0 || bodyLen%8 != 0 || bodyLen > size || int64(meta) > size ||
		offset > size || int64(meta)+bodyLen > size-offset {
		return nil, false
	}
	buf := body[offset : offset+int64(meta)]
	prefix := 4
	switch binary.LittleEndian.Uint32(buf) {
	case 0:
		return nil, false
	case ipcContinuation:
		prefix = 8
	}
	if len(buf) < prefix || len(buf)-prefix < 4 || int64(binary.LittleEndian.Uint32(buf[prefix-4:])) != int64(len(buf)-prefix) {
		return nil, false
	}
	return buf[prefix:], true
}

// verifyIPC checks the metadata of a stream or file body.
func verifyIPC(body []byte, file bool) error {
	if file {
		return verifyIPCFile(body)
	}
	return verifyIPCStream(body)
}
