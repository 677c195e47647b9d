package emu

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The examples of docs/pmos.md, byte for byte.
func TestPMOSSpecExamples(t *testing.T) {
	if c := crc16([]byte("123456789")); c != 0x29B1 {
		t.Fatalf("CRC check value 0x%04x", c)
	}
	if c := refCRC([]byte("123456789")); c != 0x29B1 {
		t.Fatalf("reference CRC check value 0x%04x", c)
	}
	cases := []struct {
		name  string
		frame pmosFrame
		hex   string
	}{
		{"ACK", pmosFrame{Type: pmosAck, Session: 5, Seq: 3}, "12 05 03 00 cc ac"},
		{"RST", pmosFrame{Type: pmosRst, Session: 9}, "13 09 00 00 9a 2a"},
		{"DATA REG_REQ", pmosFrame{Type: pmosData, Session: 0x21, Seq: 0,
			Payload: unhex(t, "10 10 ff ff ff fe 01 02 01 00 01 f0 00 00 00 00 00 00 00")},
			"11 21 00 13 10 10 ff ff ff fe 01 02 01 00 01 f0 00 00 00 00 00 00 00 ac 5a"},
		{"DATA REG_RESP", pmosFrame{Type: pmosData, Session: 7, Seq: 4,
			Payload: unhex(t, "11 10 ff fe 00 00 01 02 01 00 00 4d 47 4d 54")},
			"11 07 04 0f 11 10 ff fe 00 00 01 02 01 00 00 4d 47 4d 54 e8 be"},
	}
	for _, c := range cases {
		got := appendPMOS(nil, c.frame)
		if want := unhex(t, c.hex); !bytes.Equal(got, want) {
			t.Errorf("%s: % x, want % x", c.name, got, want)
		}
		back, err := decodePMOS(got)
		if err != nil || back.Type != c.frame.Type || back.Session != c.frame.Session || back.Seq != c.frame.Seq || !bytes.Equal(back.Payload, c.frame.Payload) {
			t.Errorf("%s: decoded %+v %v", c.name, back, err)
		}
	}
	words := frameToWords(nil, unhex(t, cases[2].hex))
	want := []uint64{0x4d26112100131010, 0x4d06fffffffe0102, 0x4d06010001f00000, 0x4d060000000000ac, 0x4d115a0000000000}
	for i := range want {
		if uint64(words[i]) != want[i] {
			t.Errorf("word %d: %016x, want %016x", i, uint64(words[i]), want[i])
		}
	}
	// The DISCOVER example.
	d := appendHeader(nil, msgHeader{Type: msgDiscover, TTL: 1, Dst: addrLinkLocal, Tag: 1})
	d = appendDiscover(d, discoverBody{DNA: 0x1234ABCD, Port: 1, NPorts: 4, Boots: 1, Name: "rack-b"})
	if want := unhex(t, "01 01 ff ff 00 00 00 01 12 34 ab cd 01 04 00 01 06 72 61 63 6b 2d 62"); !bytes.Equal(d, want) {
		t.Errorf("DISCOVER % x", d)
	}
}

func TestPMOSFrameRefusals(t *testing.T) {
	good := appendPMOS(nil, pmosFrame{Type: pmosData, Session: 1, Seq: 2, Payload: []byte("hello")})
	mut := func(f func(p []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, p := range map[string][]byte{
		"short":       good[:5],
		"crc":         mut(func(p []byte) []byte { p[5] ^= 1; return p }),
		"ack payload": appendPMOS(nil, pmosFrame{Type: pmosAck, Payload: []byte{1}}),
		"empty data":  appendPMOS(nil, pmosFrame{Type: pmosData}),
		"type 4":      appendPMOS(nil, pmosFrame{Type: 4}),
		"too long":    appendPMOS(nil, pmosFrame{Type: pmosData, Payload: make([]byte, 241)}),
	} {
		if _, err := decodePMOS(p); err == nil {
			t.Errorf("%s: accepted % x", name, p)
		}
	}
	v2 := append([]byte(nil), good...)
	v2[0] = 0x21
	v2 = append(v2[:len(v2)-2], byte(crc16(v2[:len(v2)-2])>>8), byte(crc16(v2[:len(v2)-2])))
	if _, err := decodePMOS(v2); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("version 2: %v", err)
	}
}

func TestPMOSReassembly(t *testing.T) {
	long := appendPMOS(nil, pmosFrame{Type: pmosData, Session: 3, Seq: 9, Payload: bytes.Repeat([]byte{0xAB}, 100)})
	ack := appendPMOS(nil, pmosFrame{Type: pmosAck, Session: 4, Seq: 1})
	lw := frameToWords(nil, long)
	aw := frameToWords(nil, ack)
	var r pmosReassembler
	push := func(w mosWord) ([]byte, bool) {
		f, err := decodeMOS(w)
		if err != nil {
			t.Fatal(err)
		}
		return r.push(f)
	}
	// An ACK between two words of a long frame disturbs nothing.
	var got [][]byte
	for i, w := range lw {
		if i == 3 {
			if f, ok := push(aw[0]); ok {
				got = append(got, append([]byte(nil), f...))
			}
		}
		if f, ok := push(w); ok {
			got = append(got, append([]byte(nil), f...))
		}
	}
	if len(got) != 2 || !bytes.Equal(got[0], ack) || !bytes.Equal(got[1], long) {
		t.Fatalf("got %d frames", len(got))
	}
	// A lost middle word: the frame completes at its EOF one word short,
	// and its CRC (or its length) refuses it.
	// the short frame completed at EOF fails its CRC
	r = pmosReassembler{}
	var short []byte
	for i, w := range lw {
		if i == 5 {
			continue
		}
		if f, ok := push(w); ok {
			short = append([]byte(nil), f...)
		}
	}
	if _, err := decodePMOS(short); err == nil {
		t.Fatal("a frame with a lost word passed")
	}
	// stray words outside a frame are counted
	r = pmosReassembler{}
	push(lw[1])
	push(lw[2])
	if r.dropped != 2 {
		t.Fatalf("dropped %d", r.dropped)
	}
	// a frame that never ends is cut at the maximum size
	r = pmosReassembler{}
	push(lw[0])
	for range 50 {
		push(lw[1])
	}
	if r.inFrame || r.dropped == 0 {
		t.Fatal("oversize frame kept")
	}
}

// FuzzPMOSReassembly feeds arbitrary words to the reassembler and every frame
// it completes to the frame decoder: nothing panics, nothing completed is
// larger than a frame, and what decodes re-encodes to the same bytes.
func FuzzPMOSReassembly(f *testing.F) {
	seed := frameToWords(nil, appendPMOS(nil, pmosFrame{Type: pmosData, Session: 3, Seq: 9, Payload: []byte("hello, pmos")}))
	seed = append(seed, frameToWords(nil, appendPMOS(nil, pmosFrame{Type: pmosAck, Session: 4, Seq: 1}))...)
	var b []byte
	for _, w := range seed {
		for i := 7; i >= 0; i-- {
			b = append(b, byte(uint64(w)>>(8*uint(i))))
		}
	}
	f.Add(b)
	f.Add([]byte{0x4d, 0x36, 0x12, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		var r pmosReassembler
		for len(in) >= 8 {
			var x uint64
			for _, c := range in[:8] {
				x = x<<8 | uint64(c)
			}
			in = in[8:]
			mf, err := decodeMOS(mosWord(x))
			if err != nil || mf.Ch != mosChPMOS {
				continue
			}
			fr, ok := r.push(mf)
			if !ok {
				continue
			}
			if len(fr) > pmosMaxFrame {
				t.Fatalf("frame of %d bytes", len(fr))
			}
			d, err := decodePMOS(fr)
			if err != nil {
				continue
			}
			if again := appendPMOS(nil, d); !bytes.Equal(again, fr) {
				t.Fatalf("% x decodes to %+v, re-encodes to % x", fr, d, again)
			}
		}
	})
}
