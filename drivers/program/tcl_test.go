package program

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// tclUnquote reads one double-quoted Tcl word the way the Tcl parser does
// (Tcl(n) rules 4, 6 and 9: backslash substitution inside double quotes)
// and returns its value. It refuses what a quoted literal must never
// contain: an unescaped '"' before the end, variable substitution ($) and
// command substitution ([).
func tclUnquote(w string) (string, error) {
	if len(w) < 2 || w[0] != '"' || w[len(w)-1] != '"' {
		return "", errors.New("not a double-quoted word")
	}
	body := w[1 : len(w)-1]
	var b strings.Builder
	hex := func(i, max int) (rune, int) {
		n, v := 0, rune(0)
		for n < max && i+n < len(body) {
			d, err := strconv.ParseUint(body[i+n:i+n+1], 16, 8)
			if err != nil {
				break
			}
			v = v*16 + rune(d)
			n++
		}
		return v, n
	}
	for i := 0; i < len(body); {
		c := body[i]
		switch c {
		case '"':
			return "", fmt.Errorf("unescaped quote at %d ends the word early", i)
		case '$':
			return "", fmt.Errorf("variable substitution at %d", i)
		case '[':
			return "", fmt.Errorf("command substitution at %d", i)
		case '\\':
			i++
			if i >= len(body) {
				return "", errors.New("backslash escapes the closing quote")
			}
			e := body[i]
			i++
			switch e {
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte(8)
			case 'f':
				b.WriteByte(12)
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte(11)
			case 'x':
				v, n := hex(i, 2)
				if n == 0 {
					b.WriteByte('x')
				} else {
					b.WriteRune(v)
				}
				i += n
			case 'u', 'U':
				max := 4
				if e == 'U' {
					max = 8
				}
				v, n := hex(i, max)
				if n == 0 {
					b.WriteByte(e)
				} else {
					b.WriteRune(v)
				}
				i += n
			case '\n':
				for i < len(body) && (body[i] == ' ' || body[i] == '\t') {
					i++
				}
				b.WriteByte(' ')
			default:
				if e >= '0' && e <= '7' {
					v, n := rune(e-'0'), 1
					for n < 3 && i < len(body) && body[i] >= '0' && body[i] <= '7' {
						v = v*8 + rune(body[i]-'0')
						i++
						n++
					}
					b.WriteRune(v & 0xff)
					continue
				}
				// Any other character stands for itself (a whole UTF-8
				// sequence if it starts one).
				r, size := utf8.DecodeRuneInString(body[i-1:])
				b.WriteRune(r)
				i += size - 1
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

var tclCases = []string{
	"",
	"/plain/path/design.bit",
	"/home/lab/my design [v2]/top {final}.bit",
	`C:\Xilinx\bits\top.bit`,
	`$HOME/$(x)/${y}/[exec rm -rf /]/"quoted"/a;b`,
	"tab\there\nnewline\rcr",
	"ünïcödé/設計.bit",
	"ctl\x01\x1f\x7f",
	"emoji 😀.bit",
	"\\u0041 is not A",
	"\\\n continued",
}

func TestTclQuote(t *testing.T) {
	for _, s := range tclCases {
		q := tclQuote(s)
		for i := 0; i < len(q); i++ {
			if q[i] < 0x20 || q[i] > 0x7e {
				t.Fatalf("quoted %q is not printable ASCII: %q", s, q)
			}
		}
		got, err := tclUnquote(q)
		if err != nil || got != s {
			t.Fatalf("tclQuote(%q) = %s reads back as %q (%v)", s, q, got, err)
		}
	}
	if q := tclQuote("a b"); q != `"a b"` {
		t.Fatalf("plain text is changed: %s", q)
	}
	if q := tclQuote("[x]$y"); q != `"\[x\]\$y"` {
		t.Fatalf("quote of [x]$y: %s", q)
	}
	// Where a Tcl shell is installed, it must agree with the reader above.
	tclsh, err := exec.LookPath("tclsh")
	if err != nil {
		t.Log("no tclsh here: checked against the Go reader of Tcl's rules only")
		return
	}
	var script strings.Builder
	script.WriteString("fconfigure stdout -translation binary -encoding utf-8\n")
	var want strings.Builder
	for _, s := range tclCases {
		if strings.ContainsRune(s, '😀') {
			continue // Tcl 8.6 cannot hold characters outside the BMP
		}
		fmt.Fprintf(&script, "puts -nonewline %s\nputs -nonewline \"|\\u0001|\"\n", tclQuote(s))
		want.WriteString(s + "|\x01|")
	}
	path := filepath.Join(t.TempDir(), "quote.tcl")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tclsh, path).Output()
	if err != nil {
		t.Fatalf("tclsh: %v", err)
	}
	if string(out) != want.String() {
		t.Fatalf("tclsh read the quoted words as\n%q\nwant\n%q", out, want.String())
	}
}

// FuzzTclQuote: every string quotes to printable ASCII that Tcl reads back
// as the same string, with no substitution.
func FuzzTclQuote(f *testing.F) {
	for _, s := range tclCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // refused before quoting (xsdb.Program)
		}
		q := tclQuote(s)
		for i := 0; i < len(q); i++ {
			if q[i] < 0x20 || q[i] > 0x7e {
				t.Fatalf("not printable ASCII: %q", q)
			}
		}
		got, err := tclUnquote(q)
		if err != nil || got != s {
			t.Fatalf("tclQuote(%q) = %s reads back as %q (%v)", s, q, got, err)
		}
	})
}

func BenchmarkTclQuote(b *testing.B) {
	s := "/home/lab/bitstreams/exanet v2 [final]/exanet_top_$build.bit"
	for b.Loop() {
		tclQuote(s)
	}
}
