package labconfig

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labrunner/labrunner/internal/strictyaml"
)

// A parameter struct declares what a test takes from its plan entry's
// params: one exported field per parameter, its defaults in the value the
// test registers. Field tags:
//
//	param:"name"       the YAML key (required on every exported field)
//	doc:"text"         what it sets, for `labrunner lab tests`
//	min:"1" max:"9"    inclusive limits of a number (of each element of a list)
//	above:"0"          an exclusive lower limit of a number
//	oneof:"a,b,c"      the values a text parameter (or each element) may take
//	default:"text"     the default as a person reads it, where the value is
//	                   decided at run time (a pointer field left nil)
//	required:"true"    the entry must set it: there is no default (a
//	                   board's place in a mesh); its field's value is unused
//
// Field types: int, float64, string, bool, time.Duration, a slice of the
// first three (a scalar in the plan gives a one-element list), or a pointer
// to int, float64 or string (nil when the plan does not set it). An
// embedded struct's fields count as the outer struct's.
//
// Decode fills such a struct from a plan entry strictly: an unknown key,
// a value of the wrong type or outside its limits is an error naming the
// file:line, the key, the value and what it takes. Check before any board
// is touched (`lab check`, the nightly) decodes every entry.

// ParamsChecker is a parameter struct with limits that tie its fields
// together (a warm-up shorter than the run, one of two keys given):
// Decode calls CheckParams once every field decoded, and reports the error
// it returns (a *ParamError says at which key).
type ParamsChecker interface {
	CheckParams() error
}

// ParamError is a problem CheckParams found: what is wrong, the fix, and
// the key it is reported at (that key's line; the entry's first line when
// the plan does not set it).
type ParamError struct {
	Key, Msg, Fix string
}

func (e *ParamError) Error() string { return e.Key + ": " + e.Msg }

// ParamField describes one parameter of a parameter struct.
type ParamField struct {
	Name    string // the YAML key
	Type    string // what it takes: "integer", "list of numbers", ...
	Default string // the default, rendered
	Doc     string
	Limits  string // "1..1000000", "one of a, b"; "" when any value of the type goes
	// Required is set when the entry must give the parameter (the tag
	// required:"true"); Default is then "required".
	Required bool

	index    []int
	kind     reflect.Type // the scalar type: of the field, its elements or its pointee
	list     bool
	pointer  bool
	min, max *float64
	above    *float64
	oneOf    []string
}

var durationType = reflect.TypeOf(time.Duration(0))

// paramTypes caches each parameter struct's fields by type.
var paramTypes sync.Map // reflect.Type -> paramStruct

type paramStruct struct {
	fields []ParamField
	err    error
}

// ParamFields describes the parameter struct of v (a struct or a pointer
// to one), in declaration order, with the defaults v holds. A struct that
// breaks the rules above is an error (a programming error: tests check
// their declarations when they register).
func ParamFields(v any) ([]ParamField, error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil, fmt.Errorf("parameters are declared as a struct, got %T", v)
	}
	fs, err := structFields(rv.Type())
	if err != nil {
		return nil, err
	}
	out := make([]ParamField, len(fs))
	for i, f := range fs {
		out[i] = f
		if out[i].Default == "" {
			out[i].Default = renderDefault(rv.FieldByIndex(f.index))
		}
	}
	return out, nil
}

func structFields(t reflect.Type) ([]ParamField, error) {
	if c, ok := paramTypes.Load(t); ok {
		ps := c.(paramStruct)
		return ps.fields, ps.err
	}
	var fs []ParamField
	err := collectFields(t, nil, &fs)
	if err == nil {
		seen := map[string]bool{}
		for _, f := range fs {
			if seen[f.Name] {
				err = fmt.Errorf("%s: two fields take the parameter %q", t, f.Name)
				break
			}
			seen[f.Name] = true
		}
	}
	if err != nil {
		fs = nil
	}
	paramTypes.Store(t, paramStruct{fs, err})
	return fs, err
}

func collectFields(t reflect.Type, at []int, out *[]ParamField) error {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		idx := append(append([]int(nil), at...), i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && sf.Tag.Get("param") == "" {
			if err := collectFields(sf.Type, idx, out); err != nil {
				return err
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		f, err := fieldOf(t, sf)
		if err != nil {
			return err
		}
		f.index = idx
		*out = append(*out, f)
	}
	return nil
}

func fieldOf(t reflect.Type, sf reflect.StructField) (ParamField, error) {
	f := ParamField{Name: sf.Tag.Get("param"), Doc: sf.Tag.Get("doc"), Default: sf.Tag.Get("default")}
	bad := func(format string, a ...any) (ParamField, error) {
		return ParamField{}, fmt.Errorf("%s.%s: %s", t, sf.Name, fmt.Sprintf(format, a...))
	}
	if f.Name == "" {
		return bad(`needs a param:"name" tag`)
	}
	if s, ok := sf.Tag.Lookup("required"); ok {
		if s != "true" || f.Default != "" {
			return bad(`required is written required:"true", on a field without a default:"..." tag`)
		}
		f.Required, f.Default = true, "required"
	}
	ft := sf.Type
	switch ft.Kind() {
	case reflect.Slice:
		f.list, ft = true, ft.Elem()
	case reflect.Pointer:
		f.pointer, ft = true, ft.Elem()
	}
	f.kind = ft
	switch {
	case ft == durationType:
		if f.list || f.pointer {
			return bad("a duration parameter is a plain time.Duration")
		}
	case ft.Kind() == reflect.Int, ft.Kind() == reflect.Float64, ft.Kind() == reflect.String:
	case ft.Kind() == reflect.Bool && !f.list && !f.pointer:
	default:
		return bad("type %s is not a parameter type (int, float64, string, bool, time.Duration, a slice of or a pointer to the first three)", sf.Type)
	}
	if f.pointer && f.Default == "" && !f.Required {
		return bad(`a pointer field (set at run time when absent) needs a default:"..." tag saying what it then is`)
	}
	number := ft.Kind() == reflect.Int || ft.Kind() == reflect.Float64
	for _, lim := range []struct {
		tag string
		to  **float64
	}{{"min", &f.min}, {"max", &f.max}, {"above", &f.above}} {
		s, ok := sf.Tag.Lookup(lim.tag)
		if !ok {
			continue
		}
		if !number {
			return bad("%s: limits are for numbers", lim.tag)
		}
		x, err := strictyaml.ParseFloat(s)
		if err != nil {
			return bad("%s:%q: %v", lim.tag, s, err)
		}
		*lim.to = &x
	}
	if s, ok := sf.Tag.Lookup("oneof"); ok {
		if ft.Kind() != reflect.String {
			return bad("oneof is for text parameters")
		}
		for _, o := range strings.Split(s, ",") {
			if o = strings.TrimSpace(o); o != "" {
				f.oneOf = append(f.oneOf, o)
			}
		}
		if len(f.oneOf) == 0 {
			return bad("oneof lists no value")
		}
	}
	f.Type = typeName(f)
	f.Limits = limitsText(f)
	return f, nil
}

func scalarName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Int:
		return "integer"
	case t.Kind() == reflect.Float64:
		return "number"
	case t.Kind() == reflect.Bool:
		return "true/false"
	}
	return "text"
}

func typeName(f ParamField) string {
	n := scalarName(f.kind)
	if f.list {
		if n == "text" {
			return "list of text values"
		}
		return "list of " + n + "s"
	}
	return n
}

func limitsText(f ParamField) string {
	num := func(x float64) string {
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatFloat(x, 'f', -1, 64) // 16777216, not 1.6777216e+07
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	var parts []string
	switch {
	case f.min != nil && f.max != nil:
		parts = append(parts, num(*f.min)+".."+num(*f.max))
	case f.min != nil:
		parts = append(parts, "at least "+num(*f.min))
	case f.max != nil:
		parts = append(parts, "at most "+num(*f.max))
	}
	if f.above != nil {
		parts = append(parts, "above "+num(*f.above))
	}
	if len(f.oneOf) > 0 {
		parts = append(parts, "one of "+strings.Join(f.oneOf, ", "))
	}
	return strings.Join(parts, ", ")
}

// wants says what the parameter takes, for messages.
func (f ParamField) wants() string {
	var w string
	switch n := scalarName(f.kind); {
	case f.list && n == "text":
		w = "one or more text values"
	case f.list:
		w = "one or more " + n + "s"
	case n == "integer":
		w = "an integer"
	case n == "duration":
		w = "a duration with a unit, e.g. 2s or 500ms"
	case n == "true/false":
		w = "true or false"
	case n == "text":
		w = "one text value"
	default:
		w = "a " + n
	}
	if f.Limits != "" {
		if f.list {
			w += ", each " + f.Limits
		} else {
			w += ", " + f.Limits
		}
	}
	return w
}

// example is a value of the parameter's type, for fixes.
func (f ParamField) example() string {
	var one string
	switch {
	case len(f.oneOf) > 0:
		one = f.oneOf[0]
	case f.kind == durationType:
		one = "2s"
	case f.kind.Kind() == reflect.Bool:
		one = "true"
	case f.kind.Kind() == reflect.String:
		one = "TEXT"
	default:
		one = "N"
		if f.min != nil {
			one = strconv.FormatFloat(*f.min, 'g', -1, 64)
		}
	}
	if f.list {
		return "[" + one + ", ...]"
	}
	return one
}

func renderDefault(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "none"
		}
		return renderDefault(v.Elem())
	case reflect.Slice:
		s := make([]string, v.Len())
		for i := range s {
			s[i] = renderDefault(v.Index(i))
		}
		return strings.Join(s, ",")
	case reflect.String:
		if v.String() == "" {
			return `""`
		}
		return v.String()
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	return fmt.Sprint(v.Interface())
}

// Decode fills the parameter struct into points at (holding the defaults)
// from ps. Every problem is reported, in line order, as *Errors: a key the
// struct does not declare (with the nearest one it does), a value that is
// not of the field's type or is outside its limits, a required parameter
// the entry does not give (at the entry's first line, or no line when the
// entry is empty: the caller knows the entry's; not reported when a
// mistyped key already points to it). A field the plan does not set keeps
// its default; a list field set in the plan gets a list of its own (the
// defaults' slices are never written).
func (ps Params) Decode(into any) error {
	rv := reflect.ValueOf(into)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("labconfig: Params.Decode wants a pointer to a parameter struct, got %T", into)
	}
	fs, err := structFields(rv.Elem().Type())
	if err != nil {
		return err
	}
	allowed := make([]string, len(fs))
	byName := map[string]ParamField{}
	for i, f := range fs {
		allowed[i] = f.Name
		byName[f.Name] = f
	}
	sort.Strings(allowed)
	var errs []Error
	meant := map[string]bool{} // the keys a mistyped one is taken for
	if err := ps.Check(allowed...); err != nil {
		errs = append(errs, err.(*Errors).List...)
		for _, k := range ps.Keys() {
			if _, ok := byName[k]; !ok {
				meant[strictyaml.Nearest(k, allowed)] = true
			}
		}
	}
	for _, f := range fs {
		if f.Required && !ps.Has(f.Name) && !meant[f.Name] {
			e := ps.checkError(&ParamError{Key: f.Name, Msg: "missing parameter " + f.Name + " (" + f.Doc + ")",
				Fix: "write " + f.Name + ": " + f.example()})
			errs = append(errs, e)
		}
	}
	for _, k := range ps.Keys() {
		f, ok := byName[k]
		if !ok {
			continue
		}
		p := ps[k]
		if e := decodeField(rv.Elem().FieldByIndex(f.index), f, k, p); e != nil {
			errs = append(errs, *e)
		}
	}
	if c, ok := into.(ParamsChecker); ok && len(errs) == 0 {
		if err := c.CheckParams(); err != nil {
			errs = append(errs, ps.checkError(err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Pos.Line < errs[j].Pos.Line })
	return &Errors{List: errs}
}

// checkError places an error of CheckParams: at its key's line when the
// plan sets the key, else at the entry's first line (no line when the
// entry is empty: the caller knows the entry's).
func (ps Params) checkError(err error) Error {
	e := Error{Msg: err.Error()}
	var pe *ParamError
	if errors.As(err, &pe) {
		e.Field, e.Msg, e.Fix = pe.Key, pe.Msg, pe.Fix
	}
	if p, ok := ps[e.Field]; ok {
		e.Pos = p.Pos
		return e
	}
	for _, p := range ps {
		if e.Pos.Line == 0 || p.Pos.Line < e.Pos.Line {
			e.Pos = p.Pos
		}
	}
	return e
}

func decodeField(dst reflect.Value, f ParamField, key string, p Param) *Error {
	bad := func(msg string) *Error {
		return &Error{Pos: p.Pos, Field: key, Msg: msg, Fix: "write " + f.wants()}
	}
	if !f.list && (p.List || len(p.Values) != 1) {
		return bad(fmt.Sprintf("got a list %s where %s goes", listText(p.Values), f.wants()))
	}
	if f.list && len(p.Values) == 0 {
		return bad("got an empty list")
	}
	vals := make([]reflect.Value, len(p.Values))
	for i, s := range p.Values {
		v, msg := parseScalar(f, s)
		if msg != "" {
			if f.list && len(p.Values) > 1 {
				msg = fmt.Sprintf("element %d of %s: %s", i+1, listText(p.Values), msg)
			}
			return bad(msg)
		}
		vals[i] = v
	}
	switch {
	case f.list:
		sl := reflect.MakeSlice(dst.Type(), len(vals), len(vals))
		for i, v := range vals {
			sl.Index(i).Set(v)
		}
		dst.Set(sl)
	case f.pointer:
		pv := reflect.New(f.kind)
		pv.Elem().Set(vals[0])
		dst.Set(pv)
	default:
		dst.Set(vals[0])
	}
	return nil
}

func listText(vs []string) string {
	return "[" + strings.Join(vs, ", ") + "]"
}

// parseScalar parses one value of f's scalar type and checks its limits;
// msg says what is wrong ("" when nothing is).
func parseScalar(f ParamField, s string) (reflect.Value, string) {
	v := reflect.New(f.kind).Elem()
	var x float64
	switch {
	case f.kind == durationType:
		d, err := strictyaml.ParseDuration(s)
		if err != nil {
			return v, err.Error()
		}
		v.SetInt(int64(d))
		return v, ""
	case f.kind.Kind() == reflect.Int:
		i, err := strictyaml.ParseInt(s)
		if err != nil || i < math.MinInt || i > math.MaxInt {
			return v, fmt.Sprintf("%q is not an integer", s)
		}
		v.SetInt(i)
		x = float64(i)
	case f.kind.Kind() == reflect.Float64:
		fl, err := strictyaml.ParseFloat(s)
		if err != nil {
			return v, fmt.Sprintf("%q is not a finite number", s)
		}
		v.SetFloat(fl)
		x = fl
	case f.kind.Kind() == reflect.Bool:
		b, err := strictyaml.ParseBool(s)
		if err != nil {
			return v, err.Error()
		}
		v.SetBool(b)
		return v, ""
	default:
		if len(f.oneOf) > 0 {
			found := false
			for _, o := range f.oneOf {
				found = found || o == s
			}
			if !found {
				msg := fmt.Sprintf("%q is not one of %s", s, strings.Join(f.oneOf, ", "))
				if n := strictyaml.Nearest(s, f.oneOf); n != "" {
					msg += " (did you mean " + n + "?)"
				}
				return v, msg
			}
		}
		v.SetString(s)
		return v, ""
	}
	if (f.min != nil && x < *f.min) || (f.max != nil && x > *f.max) || (f.above != nil && x <= *f.above) {
		return v, fmt.Sprintf("%s is outside %s", s, f.Limits)
	}
	return v, ""
}
