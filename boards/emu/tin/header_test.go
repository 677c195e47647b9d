package tin

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Dst: MakeAddr(5, 11, 4), Src: MakeAddr(0, 3, 1), Len: 160, Type: TypeData, VC: 29, Hop: 31, Trace: true}
	b := h.Bytes()
	got, err := DecodeHeader(b[:])
	if err != nil || got != h {
		t.Fatalf("DecodeHeader(%x) = %+v, %v; want %+v", b, got, err, h)
	}
	if got.Dst.Pod() != 5 || got.Dst.TiN() != 11 || got.Dst.EP() != 4 || got.Dst.Chip() != MakeAddr(5, 11, 0) {
		t.Errorf("address components of %v", got.Dst)
	}
	// The documented layout, bit by bit (docs/tin.md).
	w := binary.BigEndian.Uint64(b[:])
	if w>>48 != uint64(h.Dst) || w>>32&0xFFFF != uint64(h.Src) || w>>24&0xFF != 160 || w>>20&0xF != TypeData ||
		w>>15&0x1F != 29 || w>>10&0x1F != 31 || w>>9&1 != 1 || w>>8&1 != 0 {
		t.Errorf("header word %016x does not have the documented layout", w)
	}
}

// CRC-8/SMBUS: polynomial 0x07, init 0; the check value of "123456789" is
// 0xF4. Over the header's first seven bytes.
func TestHeaderCRC(t *testing.T) {
	var c uint8
	for _, x := range []byte("123456789") {
		c = crcTable[c^x]
	}
	if c != 0xF4 {
		t.Fatalf("CRC-8 check value 0x%02x, want 0xF4", c)
	}
	h := Header{Dst: 0x1234, Src: 0x5678, Len: 16, Type: TypeRTS}
	b := h.Bytes()
	var want uint8
	for _, x := range b[:7] {
		want = crcTable[want^x]
	}
	if b[7] != want {
		t.Errorf("header CRC 0x%02x, CRC-8 of bytes 0-6 is 0x%02x", b[7], want)
	}
	// Every single-bit error in the header is caught.
	for bit := 0; bit < 64; bit++ {
		bad := b
		bad[bit/8] ^= 1 << (bit % 8)
		if _, err := DecodeHeader(bad[:]); err == nil {
			t.Errorf("flipping header bit %d went unnoticed", bit)
		}
	}
}

func TestDecodeHeaderRejects(t *testing.T) {
	mk := func(w uint64) []byte {
		w = w&^0xFF | uint64(crc8Word(w))
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], w)
		return b[:]
	}
	good := Header{Dst: 1, Src: 2, Len: 48, Type: TypeReq}.Word()
	for name, b := range map[string][]byte{
		"short":        {1, 2, 3},
		"reserved bit": mk(good | 1<<8),
		"length 8":     mk(good&^(0xFF<<24) | 8<<24),
		"length 200":   mk(good&^(0xFF<<24) | 200<<24),
		"type 0":       mk(good &^ (0xF << 20)),
		"type 15":      mk(good | 0xF<<20),
	} {
		if _, err := DecodeHeader(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := DecodeHeader(mk(good)); err != nil {
		t.Errorf("a good header: %v", err)
	}
}

// Cellification (§3.3, Fig. 3): 148 B of the packet per 160 B cell, the
// last cell holds the rest plus 12 B of header and tag, at least 16 B.
func TestCellify(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []int
	}{
		{0, nil},
		{1, []int{16}},
		{4, []int{16}},
		{5, []int{17}},
		{64, []int{76}},
		{148, []int{160}},
		{149, []int{160, 16}},
		{1500, []int{160, 160, 160, 160, 160, 160, 160, 160, 160, 160, 32}},
		{4096, nil},
	} {
		got := Cellify(c.n)
		if c.n == 4096 {
			if len(got) != 28 || got[27] != 12+4096-27*148 {
				t.Errorf("Cellify(4096) = %d cells, last %d; want 28, last %d", len(got), got[len(got)-1], 12+4096-27*148)
			}
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("Cellify(%d) = %v, want %v", c.n, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("Cellify(%d) = %v, want %v", c.n, got, c.want)
				break
			}
		}
	}
	if r := RespCells(4096); len(r) != 32 || r[31] != RespCell {
		t.Errorf("RespCells(4096) = %v: want 32 cells of %d", r, RespCell)
	}
}

// FuzzDecodeHeader: any 8 bytes either decode to a header that encodes back
// to the same bytes, or are refused; nothing panics.
func FuzzDecodeHeader(f *testing.F) {
	for _, h := range []Header{{Dst: 1, Src: 2, Len: 16, Type: TypeRTS}, {Dst: 0xFFFF, Src: 0, Len: 160, Type: TypeOCtl, VC: 31, Hop: 31, Trace: true}} {
		b := h.Bytes()
		f.Add(b[:])
	}
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if err != nil {
			return
		}
		if h.Len < MinCell || h.Len > MaxCell || h.Type <= 0 || h.Type >= numTypes {
			t.Fatalf("accepted out-of-range header %+v", h)
		}
		enc := h.Bytes()
		if !bytes.Equal(enc[:], b[:8]) {
			t.Fatalf("decode(%x) = %+v encodes to %x", b[:8], h, enc)
		}
	})
}

// FuzzCellify: the cells cover the packet exactly and respect the limits.
func FuzzCellify(f *testing.F) {
	for _, n := range []int{0, 1, 147, 148, 149, 9000} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int) {
		if n > 1<<20 {
			n %= 1 << 20
		}
		cells := Cellify(n)
		sum := 0
		for i, c := range cells {
			if c < MinCell || c > MaxCell {
				t.Fatalf("Cellify(%d): cell %d is %d B", n, i, c)
			}
			if i < len(cells)-1 && c != MaxCell {
				t.Fatalf("Cellify(%d): cell %d of %d is not full", n, i, len(cells))
			}
			sum += min(c-HeaderSize-DataTag, DataPerCell)
		}
		if n > 0 && (sum < n || sum-n >= MinCell) {
			t.Fatalf("Cellify(%d) = %v carries %d B", n, cells, sum)
		}
	})
}
