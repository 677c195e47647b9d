package influx

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Point is one InfluxDB point. Tags are kept sorted by key (the order
// InfluxDB stores them in, so the encoded line is canonical); fields keep the
// order they were added in.
type Point struct {
	Measurement string
	Tags        []Tag
	Fields      []Field
	Time        time.Time
}

// Tag is a tag key and value. Tags with an empty value are not written
// (line protocol has no empty tag values).
type Tag struct{ Key, Value string }

// Field is a field key and a value of one of the kinds line protocol knows.
type Field struct {
	Key   string
	Kind  FieldKind
	Float float64
	Int   int64
	Str   string
	Bool  bool
}

// FieldKind is the type of a field value.
type FieldKind uint8

// Field kinds. An InfluxDB field keeps its type per shard, so a key must
// always be written with the same kind (the schema in docs/influxdb.md
// fixes it).
const (
	FloatField FieldKind = iota
	IntField
	StringField
	BoolField
)

// maxStringField bounds string fields (InfluxDB refuses over 64 KiB).
const maxStringField = 16 << 10

// SetTag sets a tag, keeping tags sorted; an empty value removes it.
func (p *Point) SetTag(k, v string) {
	i := sort.Search(len(p.Tags), func(i int) bool { return p.Tags[i].Key >= k })
	if i < len(p.Tags) && p.Tags[i].Key == k {
		if v == "" {
			p.Tags = append(p.Tags[:i], p.Tags[i+1:]...)
			return
		}
		p.Tags[i].Value = v
		return
	}
	if v == "" {
		return
	}
	p.Tags = append(p.Tags, Tag{})
	copy(p.Tags[i+1:], p.Tags[i:])
	p.Tags[i] = Tag{k, v}
}

// TagValue returns the value of tag k ("" when absent).
func (p *Point) TagValue(k string) string {
	i := sort.Search(len(p.Tags), func(i int) bool { return p.Tags[i].Key >= k })
	if i < len(p.Tags) && p.Tags[i].Key == k {
		return p.Tags[i].Value
	}
	return ""
}

// AddFloat adds a float field; NaN and ±Inf, which line protocol cannot
// carry, are left out and reported false.
func (p *Point) AddFloat(k string, v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	p.Fields = append(p.Fields, Field{Key: k, Kind: FloatField, Float: v})
	return true
}

// AddInt adds an integer field.
func (p *Point) AddInt(k string, v int64) {
	p.Fields = append(p.Fields, Field{Key: k, Kind: IntField, Int: v})
}

// AddString adds a string field.
func (p *Point) AddString(k, v string) {
	p.Fields = append(p.Fields, Field{Key: k, Kind: StringField, Str: v})
}

// AddBool adds a boolean field.
func (p *Point) AddBool(k string, v bool) {
	p.Fields = append(p.Fields, Field{Key: k, Kind: BoolField, Bool: v})
}

// SeriesKey is what InfluxDB identifies a series by: the measurement and the
// tag set. Two points with the same series key and timestamp are one point
// (the later write replaces the fields), which is what makes re-sends safe.
func (p *Point) SeriesKey() string {
	b := appendMeasurement(nil, p.Measurement)
	for _, t := range p.Tags {
		if t.Value == "" {
			continue
		}
		b = append(b, ',')
		b = appendKey(b, t.Key)
		b = append(b, '=')
		b = appendKey(b, t.Value)
	}
	return string(b)
}

// seriesHash is FNV-1a over the measurement and tags (what SeriesKey
// renders), without building the string.
func (p *Point) seriesHash() uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
		h ^= 0xff // separator no string byte sequence can forge alone
		h *= prime
	}
	add(p.Measurement)
	for _, t := range p.Tags {
		if t.Value != "" {
			add(t.Key)
			add(t.Value)
		}
	}
	return h
}

// AppendLine appends the point as one line of line protocol (no trailing
// newline), with a nanosecond timestamp. A point without fields encodes to
// nothing (InfluxDB refuses such a line).
func (p *Point) AppendLine(b []byte) []byte {
	if len(p.Fields) == 0 || p.Measurement == "" {
		return b
	}
	b = appendMeasurement(b, p.Measurement)
	for _, t := range p.Tags {
		if t.Value == "" || t.Key == "" {
			continue
		}
		b = append(b, ',')
		b = appendKey(b, t.Key)
		b = append(b, '=')
		b = appendKey(b, t.Value)
	}
	b = append(b, ' ')
	n := 0
	for _, f := range p.Fields {
		if f.Key == "" {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendKey(b, f.Key)
		b = append(b, '=')
		switch f.Kind {
		case FloatField:
			// A float written without a point ("3") is still read as
			// a float; integers carry the 'i' suffix.
			b = strconv.AppendFloat(b, f.Float, 'g', -1, 64)
		case IntField:
			b = strconv.AppendInt(b, f.Int, 10)
			b = append(b, 'i')
		case StringField:
			b = appendString(b, f.Str)
		case BoolField:
			if f.Bool {
				b = append(b, 't')
			} else {
				b = append(b, 'f')
			}
		}
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, p.Time.UnixNano(), 10)
	return b
}

// appendMeasurement escapes a measurement name: commas and spaces. Control
// characters (line breaks, which no escape can carry, tabs ...) become
// spaces (escaped). A name that
// starts with '#' would read as a comment: it gets a leading underscore.
func appendMeasurement(b []byte, s string) []byte {
	if strings.HasPrefix(s, "#") {
		b = append(b, '_')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ',', ' ':
			b = append(b, '\\', c)
		case '\\':
			// A backslash before an escapable character would change
			// its meaning; doubling it is read back as two, so map it.
			b = append(b, '/')
		default:
			if isControl(c) {
				b = append(b, '\\', ' ')
			} else {
				b = append(b, c)
			}
		}
	}
	return b
}

// appendKey escapes a tag key, tag value or field key: commas, equals signs
// and spaces. Control characters become escaped spaces; a trailing or escaping
// backslash is replaced by '/', since InfluxDB's parsers disagree on how to
// read it back.
func appendKey(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ',', '=', ' ':
			b = append(b, '\\', c)
		case '\\':
			b = append(b, '/')
		default:
			if isControl(c) {
				b = append(b, '\\', ' ')
			} else {
				b = append(b, c)
			}
		}
	}
	return b
}

// isControl: ASCII control characters (line breaks, tabs, vertical tabs
// ...) are read differently by different line-protocol parsers; names and
// tags get a space instead.
func isControl(c byte) bool { return c < 0x20 || c == 0x7f }

// appendString writes a quoted string field: quotes and backslashes are
// escaped, control characters (line breaks, tabs ...) become spaces, and the value is cut at
// maxStringField bytes (on a UTF-8 boundary).
func appendString(b []byte, s string) []byte {
	if len(s) > maxStringField {
		cut := maxStringField
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut]
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		default:
			if isControl(c) {
				b = append(b, ' ')
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// SanitizeKey returns a measurement name, tag key, tag value or field key as
// InfluxDB stores it after the escaping above: control characters become
// spaces and backslashes become '/'. Readers comparing what they wrote with
// what they read back use it.
func SanitizeKey(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f:
			return ' '
		case r == '\\':
			return '/'
		}
		return r
	}, s)
}

// SanitizeString returns a string field as InfluxDB stores it: control
// characters become spaces and the value is cut at 16 KiB.
func SanitizeString(s string) string {
	b := appendString(nil, s)
	out := make([]byte, 0, len(b))
	for i := 1; i < len(b)-1; i++ {
		if b[i] == '\\' {
			i++
		}
		out = append(out, b[i])
	}
	return string(out)
}
