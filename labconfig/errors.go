package labconfig

import (
	"strings"
)

// Error is one problem in a lab file: where, which field, what is wrong and
// what to do about it.
type Error struct {
	Pos   Pos
	Field string // e.g. boards[2].bus; "" for the file as a whole
	Msg   string
	Fix   string // may be empty
}

// Error renders file:line: field: message (fix).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString(" (")
		b.WriteString(e.Fix)
		b.WriteString(")")
	}
	return b.String()
}

// Errors is every problem found in a lab file, in line order. Load and Parse
// return it (as error) so that one run shows all the fixes to make.
type Errors struct {
	List []Error
}

// Error renders one problem per line.
func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i := range e.List {
		lines[i] = e.List[i].Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each problem, so errors.As finds the first *Error.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i := range e.List {
		out[i] = &e.List[i]
	}
	return out
}
