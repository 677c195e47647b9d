package tin

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Dst: MakeAddr(5, 11, 4), Src: MakeAddr(0, 3, 1), Len: 160, Type: TypeResp, VC: 29, Hop: 31, Trace: true}
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
	if w>>48 != uint64(h.Dst) || w>>32&0xFFFF != uint64(h.Src) || w>>24&0xFF != 160 || w>>20&0xF != TypeResp ||
		w>>15&0x1F != 29 || w>>10&0x1F != 31 || w>>9&1 != 1 || w>>8&1 != 0 {
		t.Errorf("header word %016x does not have the documented layout", w)
	}
}

// A DATA cell's header carries its RPTR in the SRC field, bits 47:32: the
// egress reassembly slot in bits 47:37 (11 bits) and the cell's index in
// its packet in bits 36:32 (5 bits), so a packet has at most 32 cells of
// 160 - 8 = 152 B (§3.1, §6): 4864 B.
func TestDataRPTR(t *testing.T) {
	for _, c := range []struct{ slot, idx int }{{0, 0}, {1, 2}, {1234, 17}, {2047, 31}} {
		h := Header{Dst: MakeAddr(1, 2, 1), Src: DataRPTR(c.slot, c.idx), Len: 160, Type: TypeData, VC: 9, Hop: 8}
		b := h.Bytes()
		w := binary.BigEndian.Uint64(b[:])
		if int(w>>37&0x7FF) != c.slot || int(w>>32&0x1F) != c.idx {
			t.Errorf("slot %d, index %d: header word %016x carries slot %d, index %d in bits 47:37, 36:32", c.slot, c.idx, w, w>>37&0x7FF, w>>32&0x1F)
		}
		got, err := DecodeHeader(b[:])
		if err != nil {
			t.Fatalf("DecodeHeader(%x): %v", b, err)
		}
		if s, i := SplitRPTR(got.Src); s != c.slot || i != c.idx {
			t.Errorf("SplitRPTR(%#04x) = %d, %d; want %d, %d", uint16(got.Src), s, i, c.slot, c.idx)
		}
	}
	// Out-of-range values are truncated to their fields.
	if s, i := SplitRPTR(DataRPTR(2048+3, 32+1)); s != 3 || i != 1 {
		t.Errorf("DataRPTR(2051, 33) splits into %d, %d; want 3, 1", s, i)
	}
	if EgressSlots != 2048 || MaxPacketCells != 32 || MaxPacket != 4864 { // 32 x (160 - 8)
		t.Errorf("EgressSlots %d, MaxPacketCells %d, MaxPacket %d: want 2048, 32, 4864", EgressSlots, MaxPacketCells, MaxPacket)
	}
	if n := len(Cellify(MaxPacket)); n != MaxPacketCells {
		t.Errorf("the longest packet is %d cells, want %d", n, MaxPacketCells)
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

// Cellification (§3.3, Fig. 3): a data cell is the 8 B header and packet
// bytes only (§6: "an 8 byte GNet header for each 160 byte GNet cell"), so a
// full 160 B cell carries 152 B of the packet; the last cell holds the rest
// plus the header, at least 16 B (§3.1).
func TestCellify(t *testing.T) {
	const perCell = 160 - 8 // §3.1 cell size minus §6 header
	for _, c := range []struct {
		n    int
		want []int
	}{
		{0, nil},
		{1, []int{16}},
		{8, []int{16}},
		{9, []int{17}},
		{64, []int{72}},
		{148, []int{156}},
		{151, []int{159}},
		{152, []int{160}},
		{153, []int{160, 16}},
		// 1500 = 9 x 152 + 132.
		{1500, []int{160, 160, 160, 160, 160, 160, 160, 160, 160, 140}},
		{4096, nil},
	} {
		got := Cellify(c.n)
		if c.n == 4096 {
			// 4096 = 26 x 152 + 144: 27 cells, the last 8 + 144.
			if full := c.n / perCell; len(got) != full+1 || got[full] != 8+c.n-full*perCell || got[0] != 160 {
				t.Errorf("Cellify(4096) = %d cells, last %d; want %d, last %d", len(got), got[len(got)-1], full+1, 8+c.n-full*perCell)
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
	// Resp cells keep their 4 B tag: 8 + 4 + 128 (§3.4).
	if r := RespCells(4096); len(r) != 32 || r[31] != 140 {
		t.Errorf("RespCells(4096) = %v: want 32 cells of 140", r)
	}
	if r := RespCells(1); len(r) != 1 || r[0] != 16 {
		t.Errorf("RespCells(1) = %v: want one 16 B cell", r)
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
		// Any 16-bit SRC of a DATA cell is an RPTR: a slot below 2048 and
		// an index below 32 that give back the same field.
		if slot, idx := SplitRPTR(h.Src); slot >= EgressSlots || idx >= MaxPacketCells || DataRPTR(slot, idx) != h.Src {
			t.Fatalf("RPTR %#04x splits into slot %d, index %d", uint16(h.Src), slot, idx)
		}
	})
}

// FuzzCellify: the cells cover the packet exactly and respect the limits.
func FuzzCellify(f *testing.F) {
	for _, n := range []int{0, 1, 8, 9, 151, 152, 153, 9000} {
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
		switch {
		case n <= 0 && len(cells) != 0:
			t.Fatalf("Cellify(%d) = %v, want no cells", n, cells)
		case n > 0 && len(cells) != (n+DataPerCell-1)/DataPerCell:
			t.Fatalf("Cellify(%d): %d cells, want ceil(n/%d)", n, len(cells), DataPerCell)
		case n > 0 && (sum < n || sum-n > MinCell-HeaderSize-DataTag-1):
			// Only a last cell below the 16 B minimum is padded.
			t.Fatalf("Cellify(%d) = %v carries %d B", n, cells, sum)
		}
	})
}
