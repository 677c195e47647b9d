// Package strictyaml decodes YAML into Go structs the strict way the lab
// file and the design manifests need: it walks a go.yaml.in/yaml/v3 node
// tree itself so that every problem (an unknown key, a duplicate key, a
// value of the wrong type) is collected with its line, instead of stopping
// at the first one, and so that callers learn the line of every key they
// later validate.
//
// Struct fields are matched by their `yaml` tag (the name before any comma;
// "-" skips the field). Two untagged conventions fill positions: a field
// named Pos tagged `yaml:"-"` whose type is a struct with a string File and
// an int Line gets the file and the line of the mapping it was decoded from,
// and an int field named Line tagged `yaml:"-"` gets that line.
//
// Scalars: integers accept decimal and 0x/0o/0b prefixes (a leading zero is
// still decimal, unlike YAML 1.1), durations are strings such as "2s", bools
// are true or false, floats must be finite. A null value leaves a scalar
// field at its zero value, so required-field checks catch it. Merge keys
// (<<: *anchor) are honoured; alias cycles and alias bombs are refused.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a document.
type Problem struct {
	Line  int    // 1-based; never 0
	Field string // path of the key, e.g. boards[2].console.baud; "" for the document
	Msg   string
	Fix   string // what to do about it; may be empty
}

// Hook decodes a node into v (addressable, of the hooked type), reporting
// problems through d.
type Hook func(d *Decoder, n *yaml.Node, path string, v reflect.Value)

// MaxNodes bounds the nodes one Decode visits, counting every expansion of
// an alias, so that an alias bomb ("billion laughs") cannot make a small
// file take unbounded time and memory.
const MaxNodes = 1 << 20

// Decoder collects problems while decoding one document.
type Decoder struct {
	// File is written into Pos fields.
	File string
	// Problems found so far, in the order found.
	Problems []Problem
	// Lines maps the path of every key decoded (e.g. "boards[0].console.baud")
	// to its line, so that later validation can point at the exact line.
	Lines map[string]int
	// Hooks decode types that need more than their kind (labconfig.Params).
	Hooks map[reflect.Type]Hook

	visited  int
	exceeded bool
	active   map[*yaml.Node]bool // aliases being expanded, to refuse cycles
}

// NewDecoder returns a decoder for file.
func NewDecoder(file string) *Decoder {
	return &Decoder{File: file, Lines: map[string]int{}, Hooks: map[reflect.Type]Hook{}, active: map[*yaml.Node]bool{}}
}

// Add records a problem. A line below 1 is recorded as 1, so that every
// problem can be located.
func (d *Decoder) Add(line int, field, msg, fix string) {
	if line < 1 {
		line = 1
	}
	d.Problems = append(d.Problems, Problem{Line: line, Field: field, Msg: msg, Fix: fix})
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// Root parses data and returns its top-level node, which must be a mapping.
// A syntax error comes back as a Problem carrying the line the YAML parser
// named (line 1 when it named none).
func Root(data []byte, what string) (root *yaml.Node, prob *Problem) {
	var doc, next yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := decodeNext(dec, &doc)
	if err == nil {
		// A second document would be ignored silently: refuse it.
		switch err = decodeNext(dec, &next); {
		case errors.Is(err, io.EOF):
			err = nil
		case err == nil:
			return nil, &Problem{Line: max(next.Line, 1), Msg: "the file holds a second YAML document (after ---)", Fix: "keep one document per file"}
		}
	}
	if errors.Is(err, io.EOF) {
		return nil, &Problem{Line: 1, Msg: "the file is empty", Fix: "write the " + what + " as a YAML mapping"}
	}
	if err != nil {
		msg, line := splitYAMLError(err)
		return nil, &Problem{Line: locate(data, msg, line), Msg: "not valid YAML: " + msg, Fix: "check the indentation and quoting on that line and the one before"}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Problem{Line: 1, Msg: "the file is empty", Fix: "write the " + what + " as a YAML mapping"}
	}
	n := doc.Content[0]
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Problem{Line: max(n.Line, 1), Msg: "the " + what + " must be a mapping of keys, got " + describe(n), Fix: "start the file with key: value lines"}
	}
	return n, nil
}

func unmarshal(data []byte, n *yaml.Node) error {
	return decodeNext(yaml.NewDecoder(bytes.NewReader(data)), n)
}

func decodeNext(dec *yaml.Decoder, n *yaml.Node) (err error) {
	// The YAML library is fuzzed upstream, but a panic inside it must
	// still become an error for the person who wrote the file.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

// splitYAMLError separates the YAML library's message from the line it names
// (1 when it names none).
func splitYAMLError(err error) (msg string, line int) {
	line = 1
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil && n > 0 {
			line = n
		}
		msg = strings.TrimPrefix(msg, m[0]+": ")
	}
	return msg, line
}

// maxLocateLines and maxLocateBytes bound the re-parsing locate does
// (quadratic in the file's size).
const (
	maxLocateLines = 400
	maxLocateBytes = 64 << 10
)

// locate finds the line a syntax error is on. The YAML library names the
// line where the enclosing construct started (and counts it from 0 for
// parser errors), which for a mis-indented key is lines away from the
// mistake; the first prefix of the file that fails with the same message
// ends on the offending line.
func locate(data []byte, msg string, reported int) int {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > maxLocateLines || len(data) > maxLocateBytes {
		return reported
	}
	var b strings.Builder
	for k, l := range lines {
		b.WriteString(l)
		var n yaml.Node
		err := unmarshal([]byte(b.String()), &n)
		if err == nil {
			continue
		}
		if m, _ := splitYAMLError(err); m == msg {
			return k + 1
		}
	}
	return reported
}

// Decode decodes n into v, which must be a non-nil pointer. path names n in
// problems ("" for the document).
func (d *Decoder) Decode(n *yaml.Node, path string, v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("strictyaml: Decode needs a non-nil pointer")
	}
	d.decode(n, path, rv.Elem())
}

var durationType = reflect.TypeOf(time.Duration(0))

// Resolve follows n's aliases and counts the node against MaxNodes. It
// returns nil (and reports why) when decoding must stop. Hooks use it on the
// child nodes they walk themselves.
func (d *Decoder) Resolve(n *yaml.Node, path string) *yaml.Node { return d.resolve(n, path) }

func (d *Decoder) resolve(n *yaml.Node, path string) *yaml.Node {
	if d.exceeded {
		return nil
	}
	d.visited++
	if d.visited > MaxNodes {
		d.exceeded = true
		d.Add(n.Line, path, fmt.Sprintf("the document expands to more than %d values", MaxNodes), "use fewer aliases (*name)")
		return nil
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.Add(n.Line, path, "alias to an unknown anchor", "define the &anchor before using it")
			return nil
		}
		n = n.Alias
	}
	return n
}

func (d *Decoder) decode(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind == yaml.AliasNode {
		if d.active[n] {
			d.Add(n.Line, path, fmt.Sprintf("alias *%s refers to a value that contains it", n.Value), "remove the self-reference")
			return
		}
		d.active[n] = true
		defer delete(d.active, n)
	}
	line := n.Line
	n = d.resolve(n, path)
	if n == nil {
		return
	}
	if line < 1 {
		line = n.Line
	}
	if h, ok := d.Hooks[v.Type()]; ok {
		h(d, n, path, v)
		return
	}
	if v.Type() == durationType {
		d.duration(n, line, path, v)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if IsNull(n) && v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, path, v.Elem())
	case reflect.Struct:
		d.structure(n, line, path, v)
	case reflect.Map:
		d.mapping(n, line, path, v)
	case reflect.Slice:
		d.sequence(n, line, path, v)
	case reflect.String:
		if s, ok := d.Scalar(n, line, path, "text"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, ok := d.Scalar(n, line, path, "true or false")
		if !ok || IsNull(n) {
			return
		}
		b, err := ParseBool(s)
		if err != nil {
			d.Add(line, path, fmt.Sprintf("want true or false, got %q", s), "")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s, ok := d.Scalar(n, line, path, "an integer")
		if !ok || IsNull(n) {
			return
		}
		i, err := ParseInt(s)
		if err == nil && v.OverflowInt(i) {
			err = errors.New("out of range")
		}
		if err != nil {
			d.Add(line, path, fmt.Sprintf("want an integer that fits %d bits, got %q", v.Type().Bits(), s), "write a whole number, e.g. 42 or 0x2a")
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s, ok := d.Scalar(n, line, path, "an unsigned integer")
		if !ok || IsNull(n) {
			return
		}
		u, err := ParseUint(s)
		if err == nil && v.OverflowUint(u) {
			err = errors.New("out of range")
		}
		if err != nil {
			d.Add(line, path, fmt.Sprintf("want a non-negative integer that fits %d bits, got %q", v.Type().Bits(), s), "write a whole number, e.g. 4096 or 0x1000")
			return
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		s, ok := d.Scalar(n, line, path, "a number")
		if !ok || IsNull(n) {
			return
		}
		f, err := ParseFloat(s)
		if err != nil {
			d.Add(line, path, fmt.Sprintf("want a finite number, got %q", s), "write a number, e.g. 12.5")
			return
		}
		v.SetFloat(f)
	default:
		panic(fmt.Sprintf("strictyaml: cannot decode into %s (add a Hook)", v.Type()))
	}
}

// Scalar returns n's text, or reports that want was expected. A null is
// returned as "" with ok true.
func (d *Decoder) Scalar(n *yaml.Node, line int, path, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.Add(line, path, fmt.Sprintf("want %s, got %s", want, describe(n)), "write a single value after the colon")
		return "", false
	}
	if IsNull(n) {
		return "", true
	}
	return n.Value, true
}

func (d *Decoder) duration(n *yaml.Node, line int, path string, v reflect.Value) {
	s, ok := d.Scalar(n, line, path, "a duration")
	if !ok || IsNull(n) {
		return
	}
	dur, err := ParseDuration(s)
	if err != nil {
		d.Add(line, path, err.Error(), `write a number with a unit, e.g. "2s", "500ms" or "2m"`)
		return
	}
	v.SetInt(int64(dur))
}

// Pair is one key and value of a mapping, after merge keys are applied.
type Pair struct {
	Key   string
	Line  int // the key's line
	Value *yaml.Node
}

// Pairs returns the entries of mapping n in order, with merged (<<) entries
// first, overridden by entries written explicitly. It reports duplicate and
// non-scalar keys. It returns ok false (and reports why) when n is not a
// mapping.
func (d *Decoder) Pairs(n *yaml.Node, line int, path, want string) ([]Pair, bool) {
	if IsNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		d.Add(line, path, fmt.Sprintf("want %s, got %s", want, describe(n)), "write indented key: value lines, or {key: value, ...}")
		return nil, false
	}
	var merged, own []Pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			merged = append(merged, d.merge(val, path)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.Add(k.Line, path, "a key must be a plain name, got "+describe(k), "")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.Add(k.Line, Join(path, k.Value), fmt.Sprintf("key %q given twice (first on line %d)", k.Value, first), "keep one of them")
			continue
		}
		seen[k.Value] = k.Line
		own = append(own, Pair{Key: k.Value, Line: k.Line, Value: val})
	}
	out := make([]Pair, 0, len(merged)+len(own))
	taken := map[string]bool{}
	for _, p := range own {
		taken[p.Key] = true
	}
	for _, p := range merged {
		if !taken[p.Key] {
			taken[p.Key] = true
			out = append(out, p)
		}
	}
	return append(out, own...), true
}

// merge expands the value of a << key: an alias to a mapping, or a list of them.
func (d *Decoder) merge(val *yaml.Node, path string) []Pair {
	if d.active[val] {
		d.Add(val.Line, path, "merge key refers to a mapping that contains it", "remove the self-reference")
		return nil
	}
	d.active[val] = true
	defer delete(d.active, val)
	n := d.resolve(val, path)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		ps, _ := d.Pairs(n, n.Line, path, "a mapping")
		return ps
	case yaml.SequenceNode:
		var out []Pair
		taken := map[string]bool{}
		// Earlier mappings in the list win, as in YAML's merge-key spec.
		for _, e := range n.Content {
			for _, p := range d.merge(e, path) {
				if !taken[p.Key] {
					taken[p.Key] = true
					out = append(out, p)
				}
			}
		}
		return out
	}
	d.Add(val.Line, path, "<< must merge a mapping (<<: *anchor), got "+describe(n), "")
	return nil
}

type fieldInfo struct {
	name  string
	index int
}

func (d *Decoder) structure(n *yaml.Node, line int, path string, v reflect.Value) {
	t := v.Type()
	var fields []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			setPos(f, v.Field(i), d.File, line)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields = append(fields, fieldInfo{name: name, index: i})
	}
	pairs, ok := d.Pairs(n, line, path, "a mapping with keys "+keyList(fields))
	if !ok {
		return
	}
	for _, p := range pairs {
		fp := Join(path, p.Key)
		fi := -1
		for _, f := range fields {
			if f.name == p.Key {
				fi = f.index
			}
		}
		if fi < 0 {
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.name
			}
			d.UnknownKey(p.Line, path, p.Key, names)
			continue
		}
		d.Lines[fp] = p.Line
		d.decode(p.Value, fp, v.Field(fi))
	}
}

// UnknownKey reports key as not one of allowed, suggesting the nearest.
func (d *Decoder) UnknownKey(line int, path, key string, allowed []string) {
	fix := ""
	if near := Nearest(key, allowed); near != "" {
		fix = "did you mean " + near + "?"
	} else {
		fix = "remove it or check its indentation"
	}
	where := ""
	if path != "" {
		where = " in " + path
	}
	if len(allowed) == 0 {
		d.Add(line, path, fmt.Sprintf("unknown key %q%s (it takes no keys)", key, where), "write {} after the colon")
		return
	}
	d.Add(line, path, fmt.Sprintf("unknown key %q%s (allowed: %s)", key, where, strings.Join(allowed, ", ")), fix)
}

func keyList(fs []fieldInfo) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// setPos fills a Pos or Line field tagged `yaml:"-"`.
func setPos(f reflect.StructField, v reflect.Value, file string, line int) {
	switch {
	case f.Name == "Line" && v.Kind() == reflect.Int:
		v.SetInt(int64(line))
	case f.Name == "Pos" && v.Kind() == reflect.Struct:
		if fv := v.FieldByName("File"); fv.IsValid() && fv.Kind() == reflect.String {
			fv.SetString(file)
		}
		if lv := v.FieldByName("Line"); lv.IsValid() && lv.Kind() == reflect.Int {
			lv.SetInt(int64(line))
		}
	}
}

func (d *Decoder) mapping(n *yaml.Node, line int, path string, v reflect.Value) {
	if v.Type().Key().Kind() != reflect.String {
		panic("strictyaml: map keys must be strings")
	}
	pairs, ok := d.Pairs(n, line, path, "a mapping")
	if !ok {
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(v.Type(), len(pairs)))
	}
	for _, p := range pairs {
		fp := Join(path, p.Key)
		d.Lines[fp] = p.Line
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(p.Value, fp, e)
		v.SetMapIndex(reflect.ValueOf(p.Key).Convert(v.Type().Key()), e)
	}
}

func (d *Decoder) sequence(n *yaml.Node, line int, path string, v reflect.Value) {
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.Add(line, path, "want a list, got "+describe(n), "write [a, b] or one '- item' line per entry")
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, e := range n.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		d.Lines[ip] = max(e.Line, 1)
		d.decode(e, ip, s.Index(i))
		if d.exceeded {
			break
		}
	}
	v.Set(s)
}

// Join appends a key to a path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// IsNull reports whether n is a YAML null (~, null, or nothing).
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if IsNull(n) {
			return "nothing"
		}
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("%q", v)
	case yaml.AliasNode:
		return "an alias"
	}
	return "an empty document"
}

// Describe says what a node is, for messages ("a list", "\"abc\"").
func Describe(n *yaml.Node) string { return describe(n) }

// ParseInt parses a signed integer: decimal (leading zeros allowed, not
// octal), or with a 0x, 0o or 0b prefix. Underscores are not accepted.
func ParseInt(s string) (int64, error) {
	neg := false
	t := s
	switch {
	case strings.HasPrefix(t, "-"):
		neg, t = true, t[1:]
	case strings.HasPrefix(t, "+"):
		t = t[1:]
	}
	u, err := ParseUint(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	if neg {
		if u > 1<<63 {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return -int64(u), nil
	}
	if u > math.MaxInt64 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return int64(u), nil
}

// ParseUint parses a non-negative integer like ParseInt.
func ParseUint(s string) (uint64, error) {
	base, t := 10, s
	if len(t) > 2 && t[0] == '0' {
		switch t[1] {
		case 'x', 'X':
			base, t = 16, t[2:]
		case 'o', 'O':
			base, t = 8, t[2:]
		case 'b', 'B':
			base, t = 2, t[2:]
		}
	}
	if t == "" || strings.ContainsAny(t, "_+-") {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	u, err := strconv.ParseUint(t, base, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return u, nil
}

// ParseFloat parses a finite number.
func ParseFloat(s string) (float64, error) {
	if i, err := ParseInt(s); err == nil {
		return float64(i), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(s, "_xXpP") {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return f, nil
}

// ParseBool accepts true and false in any case.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", s)
}

// ParseDuration parses "2s", "500ms", "1m30s". A bare number is refused
// (which unit was meant?), except 0.
func ParseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, e := strconv.ParseFloat(s, 64); e == nil {
			return 0, fmt.Errorf("duration %q has no unit", s)
		}
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d, nil
}

// Nearest returns the candidate closest to word by edit distance, or "" when
// none is close enough to be a likely typo.
func Nearest(word string, candidates []string) string {
	best, bestD := "", 1<<30
	lw := strings.ToLower(word)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == lw {
			return c
		}
		dist := levenshtein(lw, lc)
		if dist < bestD {
			best, bestD = c, dist
		}
	}
	if best == "" {
		return ""
	}
	limit := max(2, len([]rune(best))/3)
	if bestD <= limit && bestD < len([]rune(word)) {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// SortProblems orders problems by line, keeping the order found within a line.
func SortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
}
