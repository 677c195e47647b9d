package emu

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/internal/strictyaml"
	"github.com/labrunner/labrunner/labconfig"
)

// faultOrigin is where a fault was registered (file:line of the
// RegisterFault call), so that a name registered twice names both places.
var faultOrigin = map[string]string{}

// RegisterFault declares a fault that can be injected by name. Design
// packages call it from init. A name registered twice is a programming
// error that would make one fault unreachable: RegisterFault panics naming
// both registrations. A fault without a name, with an unknown scope or
// with a parameter whose default its own Check refuses panics too.
func RegisterFault(fi FaultInfo) {
	where := "unknown place"
	if _, file, line, ok := runtime.Caller(1); ok {
		where = fmt.Sprintf("%s:%d", trimModulePath(file), line)
	}
	if fi.Name == "" {
		panic(fmt.Sprintf("emu.RegisterFault at %s: fault without a name", where))
	}
	switch fi.Scope {
	case "board", "link", "rack":
	default:
		panic(fmt.Sprintf("emu.RegisterFault at %s: fault %s: scope %q is not board, link or rack", where, fi.Name, fi.Scope))
	}
	if fi.Check != nil {
		if err := fi.Check(defaultParams(fi)); err != nil {
			panic(fmt.Sprintf("emu.RegisterFault at %s: fault %s: its defaults fail its own check: %v", where, fi.Name, err))
		}
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if old, dup := faults[fi.Name]; dup {
		panic(fmt.Sprintf("emu.RegisterFault: fault %q registered twice: at %s (design %q) and at %s (design %q); fault names must be unique across designs",
			fi.Name, faultOrigin[fi.Name], designLabel(old.Design), where, designLabel(fi.Design)))
	}
	faults[fi.Name] = fi
	faultOrigin[fi.Name] = where
}

func designLabel(d string) string {
	if d == "" {
		return "any"
	}
	return d
}

// trimModulePath keeps the repository-relative part of a source path.
func trimModulePath(file string) string {
	if i := strings.Index(file, "/boards/"); i >= 0 {
		return file[i+1:]
	}
	return file
}

func defaultParams(fi FaultInfo) labconfig.Params {
	ps := labconfig.Params{}
	for k, v := range fi.Params {
		ps[k] = labconfig.Param{Values: []string{v}}
	}
	return ps
}

// Faults lists every known fault, sorted by name.
func Faults() []FaultInfo {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]FaultInfo, 0, len(faults))
	for _, f := range faults {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupFault returns the registered fault of that name.
func LookupFault(name string) (FaultInfo, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	fi, ok := faults[name]
	return fi, ok
}

// CheckFault validates a fault as a lab file or a --fault flag gives it,
// without a rack: the name is a registered fault (else the nearest names),
// the target fits the fault's scope (a board for "board", board:port for
// "link"), every parameter is one the fault takes (an unknown one such as
// `evry=3` is refused with "did you mean every?"), each value is a single
// value, a number where the default is one, and passes the fault's own
// Check (ranges, enumerations). Errors name the fault's position (lab file
// line or the --fault text) and say how to fix it. Rack.Start runs it on
// every fault it injects, so a fault the check refuses is never injected.
func CheckFault(f labconfig.Fault) error {
	fi, ok := LookupFault(f.Name)
	if !ok {
		names := []string{}
		for _, k := range Faults() {
			names = append(names, k.Name)
		}
		fix := "run `labrunner faults` for the list"
		if n := strictyaml.Nearest(f.Name, names); n != "" {
			fix = "did you mean " + n + "?"
		}
		return &labconfig.Error{Pos: f.Pos, Field: "fault", Msg: fmt.Sprintf("unknown fault %q (known: %s)", f.Name, strings.Join(names, ", ")), Fix: fix}
	}
	switch fi.Scope {
	case "board":
		if f.Board == "" {
			return &labconfig.Error{Pos: f.Pos, Field: "fault " + f.Name, Msg: "this fault needs a board", Fix: "write " + f.Name + "@BOARD"}
		}
	case "link":
		if f.Link == "" {
			return &labconfig.Error{Pos: f.Pos, Field: "fault " + f.Name, Msg: "this fault needs a cable end", Fix: "write " + f.Name + "@BOARD:PORT (lab file: link: BOARD:PORT)"}
		}
	}
	allowed := make([]string, 0, len(fi.Params))
	for k := range fi.Params {
		allowed = append(allowed, k)
	}
	sort.Strings(allowed)
	field := "fault " + f.Name
	for _, k := range f.Params.Keys() {
		p := f.Params[k]
		at := posOr(p.Pos, f.Pos)
		def, known := fi.Params[k]
		if !known {
			msg := fmt.Sprintf("unknown parameter %q (parameters: %s)", k, strings.Join(allowed, ", "))
			fix := "remove it"
			if len(allowed) == 0 {
				msg = fmt.Sprintf("unknown parameter %q (this fault takes no parameters)", k)
			} else if n := strictyaml.Nearest(k, allowed); n != "" {
				fix = "did you mean " + n + "?"
			}
			return &labconfig.Error{Pos: at, Field: field, Msg: msg, Fix: fix}
		}
		if len(p.Values) != 1 {
			return &labconfig.Error{Pos: at, Field: field, Msg: fmt.Sprintf("parameter %s: want one value, got %d", k, len(p.Values)), Fix: "write " + k + "=VALUE"}
		}
		if isNumber(def) && !isNumber(p.Values[0]) {
			return &labconfig.Error{Pos: at, Field: field,
				Msg: fmt.Sprintf("parameter %s=%q is not a number", k, p.Values[0]), Fix: fmt.Sprintf("write a number (default %s)", def)}
		}
	}
	if fi.Check != nil {
		if err := fi.Check(f.Params); err != nil {
			return &labconfig.Error{Pos: f.Pos, Field: field, Msg: err.Error(), Fix: "`labrunner faults` lists its parameters and their ranges"}
		}
	}
	return nil
}

func posOr(p, def labconfig.Pos) labconfig.Pos {
	if p.File == "" {
		return def
	}
	return p
}

func isNumber(s string) bool {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseInt(s, 0, 64); err == nil {
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// Values of the `report` parameter of a fault that changes a configured
// timing or size: what the configuration register that declares it reads.
const (
	// ReportDeclared: the register reads the value the manifest declares
	// while the hardware behaves otherwise (a bug): only a measurement of the
	// behaviour catches it.
	ReportDeclared = "declared"
	// ReportActual: the register reads what the hardware really does (a
	// build with other timings): a check of the configuration registers
	// against the manifest catches it.
	ReportActual = "actual"
)

// ReportsActual reads a fault's `report` parameter (default declared).
func ReportsActual(f labconfig.Fault) (bool, error) {
	v, err := f.Params.String("report", ReportDeclared)
	if err != nil {
		return false, err
	}
	switch v {
	case ReportDeclared:
		return false, nil
	case ReportActual:
		return true, nil
	}
	return false, fmt.Errorf("%s: fault %s: report=%q: want %s (the register reads the declared value) or %s (it reads the real one)", f.Pos, f.Name, v, ReportDeclared, ReportActual)
}

// ParamCheck is one rule of a fault's Check.
type ParamCheck func(labconfig.Params) error

// Checks combines rules into a FaultInfo.Check.
func Checks(rules ...ParamCheck) func(labconfig.Params) error {
	return func(p labconfig.Params) error {
		for _, r := range rules {
			if err := r(p); err != nil {
				return err
			}
		}
		return nil
	}
}

// IntIn: parameter key, when given, is a whole number in [lo, hi].
func IntIn(key string, lo, hi int) ParamCheck {
	return func(p labconfig.Params) error {
		if !p.Has(key) {
			return nil
		}
		v, err := p.Int(key, 0)
		if err != nil || v < lo || v > hi {
			return fmt.Errorf("parameter %s=%s: want a whole number from %d to %d", key, strings.Join(p[key].Values, ","), lo, hi)
		}
		return nil
	}
}

// FloatIn: parameter key, when given, is a number in [lo, hi].
func FloatIn(key string, lo, hi float64) ParamCheck {
	return func(p labconfig.Params) error {
		if !p.Has(key) {
			return nil
		}
		v, err := p.Float(key, 0)
		if err != nil || v < lo || v > hi {
			return fmt.Errorf("parameter %s=%s: want a number from %g to %g", key, strings.Join(p[key].Values, ","), lo, hi)
		}
		return nil
	}
}

// OneOf: parameter key, when given, is one of the values.
func OneOf(key string, values ...string) ParamCheck {
	return func(p labconfig.Params) error {
		if !p.Has(key) {
			return nil
		}
		v := strings.Join(p[key].Values, ",")
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("parameter %s=%s: want one of %s", key, v, strings.Join(values, ", "))
	}
}

// ReportCheck is the rule of the `report` parameter.
var ReportCheck = OneOf("report", ReportDeclared, ReportActual)
