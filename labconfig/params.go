package labconfig

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/labrunner/labrunner/internal/strictyaml"
)

// Has reports whether the parameter was given.
func (ps Params) Has(key string) bool {
	_, ok := ps[key]
	return ok
}

// Keys returns the parameter names, sorted.
func (ps Params) Keys() []string {
	out := make([]string, 0, len(ps))
	for k := range ps {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Check reports every parameter that is not one of allowed, suggesting the
// nearest allowed name, so that a typo ("payload" for "payloads") is an
// error instead of a silently ignored setting.
func (ps Params) Check(allowed ...string) error {
	var errs []Error
	for _, k := range ps.Keys() {
		found := false
		for _, a := range allowed {
			found = found || a == k
		}
		if found {
			continue
		}
		fix := "remove it"
		if n := strictyaml.Nearest(k, allowed); n != "" {
			fix = "did you mean " + n + "?"
		}
		msg := fmt.Sprintf("unknown parameter %q (allowed: %s)", k, strings.Join(allowed, ", "))
		if len(allowed) == 0 {
			msg = fmt.Sprintf("unknown parameter %q (this takes no parameters)", k)
		}
		errs = append(errs, Error{Pos: ps[k].Pos, Field: k, Msg: msg, Fix: fix})
	}
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Pos.Line < errs[j].Pos.Line })
	return &Errors{List: errs}
}

func (ps Params) bad(key string, p Param, msg, fix string) error {
	return &Error{Pos: p.Pos, Field: key, Msg: msg, Fix: fix}
}

// one returns the single value of a scalar parameter (a one-element list
// counts as a scalar).
func (ps Params) one(key string, p Param, want string) (string, error) {
	if len(p.Values) != 1 {
		return "", ps.bad(key, p, fmt.Sprintf("want %s, got a list of %d values", want, len(p.Values)), "write "+key+": VALUE")
	}
	return p.Values[0], nil
}

// Int returns an integer parameter (decimal, or 0x/0o/0b prefixed), or def
// when it is absent.
func (ps Params) Int(key string, def int) (int, error) {
	p, ok := ps[key]
	if !ok {
		return def, nil
	}
	s, err := ps.one(key, p, "one integer")
	if err != nil {
		return 0, err
	}
	return ps.toInt(key, p, s)
}

func (ps Params) toInt(key string, p Param, s string) (int, error) {
	i, err := strictyaml.ParseInt(s)
	if err != nil || i < math.MinInt || i > math.MaxInt {
		return 0, ps.bad(key, p, fmt.Sprintf("%q is not an integer", s), "write a whole number, e.g. 64 or 0x40")
	}
	return int(i), nil
}

// Ints returns an integer or list-of-integers parameter, or def when it is
// absent. A scalar gives a one-element list.
func (ps Params) Ints(key string, def []int) ([]int, error) {
	p, ok := ps[key]
	if !ok {
		return def, nil
	}
	out := make([]int, len(p.Values))
	for i, s := range p.Values {
		v, err := ps.toInt(key, p, s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Float returns a number parameter, or def when it is absent.
func (ps Params) Float(key string, def float64) (float64, error) {
	p, ok := ps[key]
	if !ok {
		return def, nil
	}
	s, err := ps.one(key, p, "one number")
	if err != nil {
		return 0, err
	}
	return ps.toFloat(key, p, s)
}

func (ps Params) toFloat(key string, p Param, s string) (float64, error) {
	f, err := strictyaml.ParseFloat(s)
	if err != nil {
		return 0, ps.bad(key, p, fmt.Sprintf("%q is not a finite number", s), "write a number, e.g. 0.5 or 1e-9")
	}
	return f, nil
}

// Floats returns a number or list-of-numbers parameter, or def.
func (ps Params) Floats(key string, def []float64) ([]float64, error) {
	p, ok := ps[key]
	if !ok {
		return def, nil
	}
	out := make([]float64, len(p.Values))
	for i, s := range p.Values {
		v, err := ps.toFloat(key, p, s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// String returns a text parameter, or def when it is absent.
func (ps Params) String(key string, def string) (string, error) {
	p, ok := ps[key]
	if !ok {
		return def, nil
	}
	return ps.one(key, p, "one value")
}

// Strings returns a text or list-of-text parameter, or def when it is absent.
func (ps Params) Strings(key string, def []string) ([]string, error) {
	p, ok := ps[key]
	if !ok {
		return def, nil
	}
	return append([]string(nil), p.Values...), nil
}

// Duration returns a duration parameter written like "2s" or "500ms", or
// def when it is absent.
func (ps Params) Duration(key string, def time.Duration) (time.Duration, error) {
	p, ok := ps[key]
	if !ok {
		return def, nil
	}
	s, err := ps.one(key, p, "one duration")
	if err != nil {
		return 0, err
	}
	d, err := strictyaml.ParseDuration(s)
	if err != nil {
		return 0, ps.bad(key, p, err.Error(), `write a number with a unit, e.g. "2s" or "500ms"`)
	}
	return d, nil
}

// Bool returns a true/false parameter, or def when it is absent.
func (ps Params) Bool(key string, def bool) (bool, error) {
	p, ok := ps[key]
	if !ok {
		return def, nil
	}
	s, err := ps.one(key, p, "true or false")
	if err != nil {
		return false, err
	}
	b, err := strictyaml.ParseBool(s)
	if err != nil {
		return false, ps.bad(key, p, err.Error(), "write true or false")
	}
	return b, nil
}

var paramsType = reflect.TypeOf(Params(nil))

// decodeParams is the strictyaml hook for Params: a mapping whose values are
// scalars or lists of scalars.
func decodeParams(d *strictyaml.Decoder, n *yaml.Node, path string, v reflect.Value) {
	pairs, ok := d.Pairs(n, n.Line, path, "a mapping of parameters (name: value or name: [values])")
	if !ok {
		return
	}
	ps := Params{}
	for _, pr := range pairs {
		fp := strictyaml.Join(path, pr.Key)
		d.Lines[fp] = pr.Line
		val := d.Resolve(pr.Value, fp)
		if val == nil {
			return
		}
		p := Param{Pos: Pos{File: d.File, Line: max(pr.Line, 1)}}
		switch val.Kind {
		case yaml.ScalarNode:
			if strictyaml.IsNull(val) {
				d.Add(pr.Line, fp, "parameter has no value", "write a value after the colon or remove the key")
				continue
			}
			p.Values = []string{val.Value}
		case yaml.SequenceNode:
			p.List = true
			p.Values = make([]string, 0, len(val.Content))
			good := true
			for i, e := range val.Content {
				e = d.Resolve(e, fp)
				if e == nil {
					return
				}
				if e.Kind != yaml.ScalarNode || strictyaml.IsNull(e) {
					d.Add(max(e.Line, pr.Line), fmt.Sprintf("%s[%d]", fp, i), "a parameter list holds plain values, got "+strictyaml.Describe(e), "write [1, 2, 3]")
					good = false
					continue
				}
				p.Values = append(p.Values, e.Value)
			}
			if !good {
				continue
			}
		default:
			d.Add(pr.Line, fp, "a parameter is a value or a list of values, got "+strictyaml.Describe(val), "write name: value or name: [a, b]")
			continue
		}
		ps[pr.Key] = p
	}
	v.Set(reflect.ValueOf(ps))
}
