package console

import (
	"bytes"
	"regexp"
	"testing"
)

func feedAll(chunks ...string) *screen {
	s := &screen{}
	for _, c := range chunks {
		s.feed([]byte(c))
	}
	return s
}

func TestScreenViews(t *testing.T) {
	cases := []struct {
		name       string
		in         []string
		raw, clean string
	}{
		{"crlf", []string{"a\r\nb\r\n"}, "a\nb\n", "a\nb\n"},
		{"kmsg line", []string{"x\n[    1.000000] foo: bar\ny\n"}, "x\n[    1.000000] foo: bar\ny\n", "x\ny\n"},
		{"kmsg mid line", []string{"roo[ 12.5] crng init\r\nt@emu:~# "}, "roo[ 12.5] crng init\nt@emu:~# ", "root@emu:~# "},
		{"kmsg split across chunks", []string{"ro", "o[  ", "12", ".", "5", "] crn", "g\r", "\nt# "}, "roo[  12.5] crng\nt# ", "root# "},
		{"not a header", []string{"a[1] b[ 2.x] c[3.4"}, "a[1] b[ 2.x] c[3.4", "a[1] b[ 2.x] c"},
		{"header then bracket", []string{"[[1.2] k\nz"}, "[[1.2] k\nz", "[z"},
		{"tab header", []string{"[\t7.25]\tmsg\nok"}, "[\t7.25]\tmsg\nok", "ok"},
		{"csi", []string{"\x1b[?2004hroot# \x1b[01;32mgreen\x1b[0m"}, "\x1b[?2004hroot# \x1b[01;32mgreen\x1b[0m", "root# green"},
		{"osc title", []string{"\x1b]0;user@host: ~\x07$ "}, "\x1b]0;user@host: ~\x07$ ", "$ "},
		{"osc st", []string{"\x1b]2;t\x1b\\ok"}, "\x1b]2;t\x1b\\ok", "ok"},
		{"charset", []string{"\x1b(Bx"}, "\x1b(Bx", "x"},
		{"broken csi", []string{"\x1b[12\nnext"}, "\x1b[12\nnext", "\nnext"},
		{"controls", []string{"a\x07b\x00c\x7fd\te"}, "a\x07b\x00c\x7fd\te", "abcd\te"},
		{"long bracket run", []string{"[" + string(bytes.Repeat([]byte(" "), 60)) + "1.2] x\n"}, "[" + string(bytes.Repeat([]byte(" "), 60)) + "1.2] x\n", "[" + string(bytes.Repeat([]byte(" "), 60)) + "1.2] x\n"},
	}
	for _, c := range cases {
		s := feedAll(c.in...)
		if string(s.raw) != c.raw {
			t.Errorf("%s: raw %q, want %q", c.name, s.raw, c.raw)
		}
		if string(s.clean) != c.clean {
			t.Errorf("%s: clean %q, want %q", c.name, s.clean, c.clean)
		}
	}
}

func TestScreenFindAndConsume(t *testing.T) {
	s := feedAll("boot\r\n[ 1.0] a\r\nlog", "in[ 2.0] b\r\n: ", "more")
	re := regexp.MustCompile(`login: `)
	m, end, ok := s.find(re, 0)
	if !ok {
		t.Fatal("no match across noise")
	}
	if m.raw != "boot\n[ 1.0] a\nlogin[ 2.0] b\n: " || m.clean != "boot\nlogin: " || m.cleanStart != 5 {
		t.Errorf("match %+v", m)
	}
	s.consume(end)
	if string(s.raw) != "more" || string(s.clean) != "more" || s.cpos[0] != 0 {
		t.Errorf("after consume: raw %q clean %q cpos %v", s.raw, s.clean, s.cpos)
	}
	// Raw-only match (a kernel message) consumes up to its end, and the
	// rest of the message stays out of clean.
	s = feedAll("x[ 3.5] usb: new device\nprompt# ")
	m, end, ok = s.find(regexp.MustCompile(`usb: new`), 0)
	if !ok || m.raw != "x[ 3.5] usb: new" || m.clean != "x" {
		t.Fatalf("raw match %+v %v", m, ok)
	}
	s.consume(end)
	if string(s.clean) != "prompt# " {
		t.Errorf("clean after raw match: %q", s.clean)
	}
	// A match that ends inside a pending header.
	s = feedAll("ab[ 1")
	_, end, _ = s.find(regexp.MustCompile(`b\[`), 0)
	s.consume(end)
	s.feed([]byte("x"))
	if string(s.raw) != " 1x" || string(s.clean) != " 1x" {
		t.Errorf("after a match inside a header: raw %q clean %q", s.raw, s.clean)
	}
}

// refClean is the clean view by regular expressions over the whole input,
// for inputs without escape sequences or other control characters.
var refKmsg = regexp.MustCompile(`\[[ \t]*[0-9]+\.[0-9]+\][^\n]*(\n|$)`)

var fuzzWord = regexp.MustCompile(`[a-z]+`)

func FuzzScreen(f *testing.F) {
	f.Add([]byte("roo[ 12.5] crng init\r\nt@emu:~# "), uint8(3))
	f.Add([]byte("\x1b[?2004h# \x1b]0;t\x07ok\n[1.2]"), uint8(1))
	f.Add([]byte("[[1.2] k\nz[3.4"), uint8(2))
	f.Add([]byte("a[1] b[ 2.x] c\n"), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		one := &screen{}
		one.feed(data)
		// Any chunking gives the same views.
		chunked := &screen{}
		step := int(split%17) + 1
		for i := 0; i < len(data); i += step {
			chunked.feed(data[i:min(i+step, len(data))])
		}
		if !bytes.Equal(one.raw, chunked.raw) || !bytes.Equal(one.clean, chunked.clean) {
			t.Fatalf("chunks of %d change the views: %q/%q vs %q/%q", step, one.raw, one.clean, chunked.raw, chunked.clean)
		}
		// raw is data without '\r'; clean is a subsequence of raw.
		if want := bytes.ReplaceAll(data, []byte("\r"), nil); !bytes.Equal(one.raw, want) {
			t.Fatalf("raw %q, want %q", one.raw, want)
		}
		if len(one.cpos) != len(one.clean) {
			t.Fatalf("cpos has %d entries for %d clean bytes", len(one.cpos), len(one.clean))
		}
		for i, p := range one.cpos {
			if p < 0 || p >= len(one.raw) || one.raw[p] != one.clean[i] || (i > 0 && p <= one.cpos[i-1]) {
				t.Fatalf("cpos[%d] = %d is not an increasing index of clean[%d] in raw", i, p, i)
			}
		}
		// Differential check against the regexp definition, on plain text
		// shorter than the header bound, with a final newline so that no
		// header is left pending.
		plain := len(data) < maxHeader
		for _, b := range data {
			if b != '\n' && b != '\t' && b != '\r' && (b < 0x20 || b == 0x7f) {
				plain = false
			}
		}
		if plain {
			s := &screen{}
			s.feed(append(append([]byte(nil), data...), '\n'))
			want := refKmsg.ReplaceAll(bytes.ReplaceAll(append(append([]byte(nil), data...), '\n'), []byte("\r"), nil), nil)
			if !bytes.Equal(s.clean, want) {
				t.Fatalf("clean %q, regexp reference %q", s.clean, want)
			}
		}
		// Matching and consuming keep the views consistent.
		if _, end, ok := one.find(fuzzWord, int(split)%(len(one.raw)+1)); ok {
			one.consume(end)
			for i, p := range one.cpos {
				if p < 0 || p >= len(one.raw) || one.raw[p] != one.clean[i] {
					t.Fatalf("after consume: cpos[%d] = %d does not index clean[%d]", i, p, i)
				}
			}
			one.feed(data)
		}
	})
}

func BenchmarkScreenFeed(b *testing.B) {
	var log []byte
	for len(log) < 64<<10 {
		log = append(log, "[    1.234567] some driver: probing device\r\nroot@emu:~# \x1b[?2004l\rls\r\n"...)
	}
	b.SetBytes(int64(len(log)))
	for i := 0; i < b.N; i++ {
		var s screen
		for off := 0; off < len(log); off += 64 {
			s.feed(log[off:min(off+64, len(log))])
		}
	}
}
