package emu

import (
	"bytes"
	"testing"
)

func TestMOSWordEncodeDecode(t *testing.T) {
	f := mosFields{Ch: mosChRaw, N: 6, Data: [6]byte{'H', 'e', 'l', 'l', 'o', '!'}}
	w := encodeMOS(f)
	if uint64(w) != 0x4D4648656c6c6f21 {
		t.Fatalf("raw word %016x", uint64(w))
	}
	g, err := decodeMOS(w)
	if err != nil || g != f {
		t.Fatalf("decode %+v %v", g, err)
	}
	// docs/pmos.md: an ACK is one word with SOF and EOF
	ack := frameToWords(nil, appendPMOS(nil, pmosFrame{Type: pmosAck, Session: 5, Seq: 3}))
	if len(ack) != 1 || uint64(ack[0]) != 0x4d3612050300ccac {
		t.Fatalf("ACK words %x", ack)
	}
	for _, tc := range []struct {
		w   uint64
		bad string
	}{
		{0x5436000000000000, "not MOS"},
		{0x4D3E000000000000, "reserved"},
		{0x4D30000000000000, "gives 0 data bytes"},
		{0x4D37000000000000, "gives 7 data bytes"},
		{0x4D25000000000000, "must carry 6 bytes"}, // PMOS SOF word with 5 bytes, not EOF
	} {
		if _, err := decodeMOS(mosWord(tc.w)); err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.bad)) {
			t.Errorf("%016x: %v, want %q", tc.w, err, tc.bad)
		}
	}
	// a raw (CH=1) word may carry fewer than 6 bytes without EOF
	if _, err := decodeMOS(0x4D42414200000000); err != nil {
		t.Errorf("short raw word: %v", err)
	}
	if mosWordsFor(6) != 1 || mosWordsFor(7) != 2 || mosWordsFor(pmosMaxFrame) != 41 {
		t.Error("mosWordsFor")
	}
}

func FuzzMOSWord(f *testing.F) {
	f.Add(uint64(0x4d3612050300ccac))
	f.Add(uint64(0x4d26112100131010))
	f.Add(uint64(0x4D4648656c6c6f21))
	f.Add(uint64(0))
	f.Fuzz(func(t *testing.T, x uint64) {
		g, err := decodeMOS(mosWord(x))
		if err != nil {
			return
		}
		if w := encodeMOS(g); uint64(w) != x {
			t.Fatalf("%016x decodes to %+v which encodes to %016x", x, g, uint64(w))
		}
		if g.N < 1 || g.N > 6 || g.Ch > 3 {
			t.Fatalf("accepted %+v", g)
		}
	})
}

// mosWordsFor is how many MOS words a frame of n bytes takes.
func mosWordsFor(n int) int { return (n + mosDataBytes - 1) / mosDataBytes }
