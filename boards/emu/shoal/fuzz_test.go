package shoal

import (
	"errors"
	"testing"
)

// FuzzHeader: decoding never panics; a header whose CRC checks out
// re-encodes to the same bits, and one that fails says so.
func FuzzHeader(f *testing.F) {
	f.Add(Header{Kind: KindData, Dst: 1, Src: 2, Hop: 3, Seq: 4, Feedback: 5, SOP: true}.Encode())
	f.Add(uint64(0))
	f.Add(^uint64(0))
	f.Add(Header{Kind: KindNotice, Dst: 1023}.Encode())
	f.Fuzz(func(t *testing.T, w uint64) {
		h, err := DecodeHeader(w)
		switch {
		case err == nil:
			if h.Encode() != w {
				t.Fatalf("%#016x decodes to %+v which encodes to %#016x", w, h, h.Encode())
			}
		case errors.Is(err, ErrHeaderCRC):
			if uint8(w) == crc8(w) {
				t.Fatalf("%#016x: CRC reported bad but matches", w)
			}
		default:
			if w>>62 != 3 {
				t.Fatalf("%#016x: unexpected error %v", w, err)
			}
		}
	})
}

// FuzzControl drives a brought-up rack with arbitrary register writes
// (schedules, flow descriptors, parameters, commands) and a short run: the
// emulator must neither panic nor hang, and every register must stay
// readable.
func FuzzControl(f *testing.F) {
	f.Add([]byte{0x24, 0x00, 0x0D, 0x00, 0x00, 0x00, 0x98, 0x00, 0x64, 0x00, 0x00, 0x00})
	f.Add([]byte{0x00, 0xA0, 0x88, 0x88, 0x00, 0x00, 0x10, 0x10, 0x03, 0x00, 0x00, 0x00})
	f.Add([]byte{0x00, 0x00, 0x10, 0x00, 0x05, 0x00, 0x07, 0x00, 0x9C, 0x00, 0x01, 0x00})
	f.Add([]byte{0x90, 0x00, 0x03, 0x00, 0x00, 0x00, 0x80, 0x00, 0x01, 0x00, 0x00, 0x00})
	tr := newTestRack(f, rackOpts{})
	tr.configure(setup{})
	boards := append(append([]string{}, nicBoards...), swBoards...)
	for _, b := range boards {
		tr.Write(b, "TG_LIMIT_SLOTS", 2000) // a START from any board runs the fabric
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i := 0; i+6 <= len(data) && i < 6*32; i += 6 {
			// 2 bytes of address (word index within the interesting
			// ranges), 4 of value; the board from the address's top bits.
			a := uint64(data[i]) | uint64(data[i+1])<<8
			v := uint32(data[i+2]) | uint32(data[i+3])<<8 | uint32(data[i+4])<<16 | uint32(data[i+5])<<24
			b := boards[int(a>>13)%len(boards)]
			addr := (a & 0x1FFF) * 4 % 0xB000
			if a&0x1000 != 0 && a&0x800 != 0 {
				addr = flowsBase + (a&0x7FF)*4
			}
			if addr == regRunSlots || addr == regTGCtrl {
				v = min(v, 3000) | v&1 // keep runs short
				if addr == regTGCtrl {
					v &= 1
				}
			}
			if addr == regTGLimit {
				v = min(v, 3000)
			}
			_ = tr.Bus(b).Write32(tr.Ctx, addr, v)
		}
		// Inside the target only t may fail the test: use the buses directly.
		bus := tr.Bus("shoal-nic0")
		st, err := bus.Read32(tr.Ctx, regBootStatus)
		if err != nil {
			t.Fatal(err)
		}
		if st&bootRunning != 0 {
			if err := bus.Write32(tr.Ctx, regRunSlots, 50); err != nil {
				t.Fatal(err)
			}
		}
		for _, el := range tr.M.Elements() {
			if el.Reg.Access.Readable() && !el.Reg.Access.ReadSideEffect() {
				if _, err := tr.Bus(boards[0]).Read32(tr.Ctx, el.Addr); err != nil {
					t.Fatalf("%s unreadable: %v", el.Name, err)
				}
			}
		}
	})
}
