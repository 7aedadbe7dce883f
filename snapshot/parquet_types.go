package snapshot

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// This file maps the Arrow types Parquet cannot hold to ones it can, for writeParquet,
// without losing a value (docs/design.md, "Column types"): a month_day_nano interval becomes
// STRUCT(months INTEGER, days INTEGER, nanoseconds BIGINT), a sparse union DuckDB's own
// layout of a UNION, STRUCT(tag UTINYINT, member…) with tag the member's position, the
// other members NULL, and the struct NULL where the selected member is. Nested types are mapped member by member; other types are kept.

var intervalStruct = arrow.StructOf(
	arrow.Field{Name: "months", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	arrow.Field{Name: "days", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	arrow.Field{Name: "nanoseconds", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
)

// parquetType returns the type writeParquet writes for dt.
func parquetType(dt arrow.DataType) arrow.DataType {
	switch dt := dt.(type) {
	case *arrow.MonthDayNanoIntervalType:
		return intervalStruct
	case *arrow.SparseUnionType:
		fields := []arrow.Field{{Name: "tag", Type: arrow.PrimitiveTypes.Uint8, Nullable: true}}
		for _, f := range dt.Fields() {
			fields = append(fields, arrow.Field{Name: f.Name, Type: parquetType(f.Type), Nullable: true})
		}
		return arrow.StructOf(fields...)
	case *arrow.ListType:
		return arrow.ListOfField(parquetField(dt.ElemField()))
	case *arrow.FixedSizeListType:
		return arrow.FixedSizeListOfField(dt.Len(), parquetField(dt.ElemField()))
	case *arrow.MapType:
		return arrow.MapOf(parquetType(dt.KeyType()), parquetType(dt.ItemType()))
	case *arrow.StructType:
		fields := make([]arrow.Field, dt.NumFields())
		for i, f := range dt.Fields() {
			fields[i] = parquetField(f)
		}
		return arrow.StructOf(fields...)
	}
	return dt
}

func parquetField(f arrow.Field) arrow.Field {
	f.Type = parquetType(f.Type)
	return f
}

// parquetSchema is s with every field's type mapped by parquetType.
func parquetSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = parquetField(f)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// toParquetData returns d as parquetType(d.DataType()), sharing buffers where the layout
// is kept. The result is a new reference.
func toParquetData(d arrow.ArrayData) arrow.ArrayData {
	want := parquetType(d.DataType())
	if arrow.TypeEqual(want, d.DataType()) {
		d.Retain()
		return d
	}
	switch d.DataType().(type) {
	case *arrow.MonthDayNanoIntervalType:
		a := array.NewMonthDayNanoIntervalData(d)
		defer a.Release()
		b := array.NewStructBuilder(memory.DefaultAllocator, intervalStruct)
		defer b.Release()
		months := b.FieldBuilder(0).(*array.Int32Builder)
		days := b.FieldBuilder(1).(*array.Int32Builder)
		nanos := b.FieldBuilder(2).(*array.Int64Builder)
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				b.AppendNull()
				continue
			}
			v := a.Value(i)
			b.Append(true)
			months.Append(v.Months)
			days.Append(v.Days)
			nanos.Append(v.Nanoseconds)
		}
		out := b.NewStructArray()
		defer out.Release()
		out.Data().Retain()
		return out.Data()
	case *arrow.SparseUnionType:
		a := array.NewSparseUnionData(d)
		defer a.Release()
		n := a.Len()
		tags := make([]uint8, d.Offset()+n)
		valid := make([]byte, bitutil.BytesForBits(int64(d.Offset()+n)))
		nulls := 0
		for i := 0; i < n; i++ {
			k := a.ChildID(i)
			tags[d.Offset()+i] = uint8(k)
			if a.Field(k).IsNull(i) {
				nulls++
			} else {
				bitutil.SetBit(valid, d.Offset()+i)
			}
		}
		kids := []arrow.ArrayData{array.NewData(arrow.PrimitiveTypes.Uint8, d.Offset()+n, []*memory.Buffer{nil, memory.NewBufferBytes(tags)}, nil, 0, 0)}
		for _, c := range d.Children() {
			kids = append(kids, toParquetData(c))
		}
		out := array.NewData(want, n, []*memory.Buffer{memory.NewBufferBytes(valid)}, kids, nulls, d.Offset())
		for _, k := range kids {
			k.Release()
		}
		return out
	}
	kids := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		kids[i] = toParquetData(c)
	}
	out := array.NewData(want, d.Len(), d.Buffers(), kids, d.NullN(), d.Offset())
	for _, k := range kids {
		k.Release()
	}
	return out
}
