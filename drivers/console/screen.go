package console

import (
	"regexp"
	"sort"
)

// screen holds what a console received since the last successful Expect, in
// two views that Expect matches against:
//
//   - raw: every byte received, with '\r' dropped so that patterns need not
//     care whether the board ends its lines with "\r\n" or "\n";
//   - clean: raw without complete kernel messages ("[   12.345678] ...\n",
//     wherever they start: the kernel writes them into the middle of a line a
//     program is printing, a prompt included), without terminal escape
//     sequences (colour, bracketed-paste mode) and without other control
//     characters except '\t' and '\n'.
//
// A pattern that spans injected noise matches in clean; a pattern that looks
// for a kernel message itself matches in raw. Both views are built
// incrementally as bytes arrive, so waiting for a prompt across a long boot
// log costs a regexp scan per check, not a rebuild.
type screen struct {
	raw   []byte
	off   int // bytes consumed so far: raw[0] is byte off of the stream
	clean []byte
	cpos  []int // cpos[i] is the index in raw of clean[i]; increasing

	st   int // cleaner state
	cand int // index in raw where a pending kernel-message header started
}

// Cleaner states. stOpen..stFrac recognise a kernel message header
// `\[[ \t]*\d+\.\d+\]`, whose bytes stay out of clean until it is complete
// (dropped with the message) or broken (flushed into clean).
const (
	stText    = iota
	stOpen    // "[" and blanks
	stInt     // digits before the '.'
	stDot     // the '.'
	stFrac    // digits after the '.'
	stMsg     // inside a kernel message, dropped up to and including '\n'
	stEsc     // after ESC
	stCSI     // ESC [ ... up to a final byte
	stOSC     // ESC ] ... up to BEL or ESC \
	stOSCEsc  // ESC inside an OSC
	stCharset // ESC ( or ESC ): one more byte
)

// maxHeader bounds a kernel message header ("[" blanks seconds "." micros
// "]" is at most ~20 bytes); a longer candidate is ordinary text.
const maxHeader = 48

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// feed appends received bytes to both views.
func (s *screen) feed(p []byte) {
	for _, b := range p {
		if b == '\r' {
			continue
		}
		s.raw = append(s.raw, b)
		s.step(b, len(s.raw)-1)
	}
}

// step runs the cleaner on raw[i] == b.
func (s *screen) step(b byte, i int) {
	switch s.st {
	case stText:
		switch {
		case b == '[':
			s.st, s.cand = stOpen, i
		case b == 0x1b:
			s.st = stEsc
		case b == '\n' || b == '\t' || (b >= 0x20 && b != 0x7f):
			s.emit(b, i)
		}
		// other control characters are dropped from clean
		return
	case stOpen, stInt, stDot, stFrac:
		next := -1
		switch {
		case s.st == stOpen && (b == ' ' || b == '\t'):
			next = stOpen
		case (s.st == stOpen || s.st == stInt) && isDigit(b):
			next = stInt
		case s.st == stInt && b == '.':
			next = stDot
		case (s.st == stDot || s.st == stFrac) && isDigit(b):
			next = stFrac
		case s.st == stFrac && b == ']':
			s.st = stMsg
			return
		}
		if next >= 0 && i-s.cand < maxHeader {
			s.st = next
			return
		}
		// Not a kernel header: the candidate was text. None of its bytes
		// ('[', blanks, digits, '.') can start a header but the first, so
		// only b needs another look.
		for j := s.cand; j < i; j++ {
			s.emit(s.raw[j], j)
		}
		s.st = stText
		s.step(b, i)
	case stMsg:
		if b == '\n' {
			s.st = stText
		}
	case stEsc:
		switch b {
		case '[':
			s.st = stCSI
		case ']':
			s.st = stOSC
		case '(', ')':
			s.st = stCharset
		default:
			s.st = stText // a two-byte sequence (ESC =, ESC M ...)
		}
	case stCSI:
		switch {
		case b >= 0x40 && b <= 0x7e:
			s.st = stText
		case b >= 0x20 && b <= 0x3f:
			// parameter or intermediate byte
		default: // broken sequence: b is text again
			s.st = stText
			s.step(b, i)
		}
	case stOSC:
		switch b {
		case 0x07:
			s.st = stText
		case 0x1b:
			s.st = stOSCEsc
		case '\n':
			s.st = stText
			s.step(b, i)
		}
	case stOSCEsc:
		s.st = stText // ESC \ ends the OSC; anything else ends it too
		if b != '\\' {
			s.step(b, i)
		}
	case stCharset:
		s.st = stText
	}
}

func (s *screen) emit(b byte, i int) {
	s.clean = append(s.clean, b)
	s.cpos = append(s.cpos, i)
}

// match is a successful search.
type match struct {
	raw        string // raw text up to and including the match
	clean      string // the clean view of the same span
	cleanFrom  int    // where the search started in clean
	cleanStart int    // where the match starts in clean
}

// find looks for re in both views, from raw index from on, and returns the
// match that ends first in the raw stream, without consuming it.
func (s *screen) find(re *regexp.Regexp, from int) (m match, end int, ok bool) {
	from = min(max(from, 0), len(s.raw))
	cfrom := s.cleanIndex(from)
	rawLoc := re.FindIndex(s.raw[from:])
	cleanLoc := re.FindIndex(s.clean[cfrom:])
	if rawLoc == nil && cleanLoc == nil {
		return match{}, 0, false
	}
	var start, cstart int
	end = -1
	if rawLoc != nil {
		start, end = from+rawLoc[0], from+rawLoc[1]
		cstart = s.cleanIndex(start)
	}
	if cleanLoc != nil {
		cend := from
		if cleanLoc[1] > 0 {
			cend = s.cpos[cfrom+cleanLoc[1]-1] + 1
		}
		if end < 0 || cend < end {
			end, cstart = cend, cfrom+cleanLoc[0]
		}
	}
	cend := s.cleanIndex(end)
	cstart = min(max(cstart, cfrom), cend)
	return match{raw: string(s.raw[:end]), clean: string(s.clean[:cend]), cleanFrom: cfrom, cleanStart: cstart}, end, true
}

// cleanIndex returns the number of clean bytes that come from raw[:i].
func (s *screen) cleanIndex(i int) int {
	return sort.SearchInts(s.cpos, i)
}

// consume drops raw[:n] and what came from it.
func (s *screen) consume(n int) {
	if n <= 0 {
		return
	}
	k := s.cleanIndex(n)
	s.off += n
	s.raw = append(s.raw[:0], s.raw[n:]...)
	s.clean = append(s.clean[:0], s.clean[k:]...)
	copy(s.cpos, s.cpos[k:])
	s.cpos = s.cpos[:len(s.cpos)-k]
	for j := range s.cpos {
		s.cpos[j] -= n
	}
	switch s.st {
	case stOpen, stInt, stDot, stFrac:
		// A match ended inside a pending header: what is left of it is
		// flushed (or dropped) from where the match ended.
		s.cand -= n
		if s.cand < 0 {
			s.cand = 0
		}
	}
}

func (s *screen) size() int { return len(s.raw) }
