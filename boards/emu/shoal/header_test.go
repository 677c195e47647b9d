package shoal

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		h := Header{Kind: uint8(r.IntN(3)), Dst: uint16(r.IntN(1024)), Src: uint16(r.IntN(1024)), Hop: uint16(r.IntN(1024)),
			Seq: uint16(r.IntN(seqMod)), Feedback: uint16(r.IntN(1024)), SOP: r.IntN(2) == 1, EOP: r.IntN(2) == 1, LCD: r.IntN(2) == 1}
		got, err := DecodeHeader(h.Encode())
		if err != nil || got != h {
			t.Fatalf("round trip of %+v: %+v, %v", h, got, err)
		}
	}
	// Fig. 5 field positions: destination in the top bits after the kind,
	// CRC in the last byte.
	w := Header{Kind: KindData, Dst: 0x3FF}.Encode()
	if w>>52&0x3FF != 0x3FF || w>>62 != 0 {
		t.Errorf("destination field misplaced: %#016x", w)
	}
	if uint8(w) != crc8(w) {
		t.Errorf("CRC byte %#02x, want %#02x", uint8(w), crc8(w))
	}
	// CRC-8 with polynomial 0x07 over "123456789" is 0xF4 (the standard check value).
	var c uint8
	for _, b := range []byte("123456789") {
		c = crcTable[c^b]
	}
	if c != 0xF4 {
		t.Errorf("CRC-8 check value = %#02x, want 0xF4", c)
	}
}

// App. D relies on the header CRC to see a corrupted cell: every single-
// and double-bit error in the 64 header bits must fail the check.
func TestHeaderCRCDetectsOneAndTwoBitErrors(t *testing.T) {
	w := Header{Kind: KindData, Dst: 5, Src: 700, Hop: 3, Seq: 1500, Feedback: 9, SOP: true, LCD: true}.Encode()
	for i := 0; i < 64; i++ {
		if _, err := DecodeHeader(w ^ 1<<i); !errors.Is(err, ErrHeaderCRC) {
			t.Fatalf("bit %d flipped: err = %v", i, err)
		}
		for j := i + 1; j < 64; j++ {
			if _, err := DecodeHeader(w ^ 1<<i ^ 1<<j); !errors.Is(err, ErrHeaderCRC) {
				t.Fatalf("bits %d and %d flipped: err = %v", i, j, err)
			}
		}
	}
	// The fields still come out of a corrupted header (App. D reads them).
	h, err := DecodeHeader(w ^ 1)
	if err == nil || h.Feedback != 9 || !h.LCD {
		t.Errorf("corrupted CRC byte: %+v, %v", h, err)
	}
	k3 := Header{Kind: 3}.Encode()
	if _, err := DecodeHeader(k3); err == nil {
		t.Errorf("kind 3 accepted")
	}
}
