package program

import (
	"fmt"
	"strings"
)

// tclQuote returns s as one Tcl word that evaluates to exactly s: a
// double-quoted word in which every character Tcl would substitute ($, [,
// \) or end the word on (") is backslash-escaped, braces too (a script
// reader counting braces must not be misled), control characters and all
// non-ASCII characters as \u or \U escapes. The result is pure ASCII, so it
// reads the same whatever encoding the Tcl shell assumes for the script.
func tclQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\', '"', '$', '[', ']', '{', '}', ';':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			switch {
			case r < 0x20 || r == 0x7f || r > 0x7f && r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			case r > 0xffff:
				fmt.Fprintf(&b, `\U%08x`, r)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
