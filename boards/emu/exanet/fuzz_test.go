package exanet

import (
	"testing"
)

// FuzzWireHeader: the header ECC (§3.4) corrects any single-bit error and
// detects any double-bit error in the 108-bit codeword, and the decoder
// never panics on arbitrary wire words.
func FuzzWireHeader(f *testing.F) {
	f.Add(uint32(0x01020304), uint32(0x02000001), uint16(512), uint8(3), true, uint8(1), uint32(0xcafe), uint8(0), uint8(5), uint8(2))
	f.Add(uint32(0), uint32(0), uint16(1), uint8(0), false, uint8(0), uint32(0), uint8(107), uint8(107), uint8(1))
	f.Add(^uint32(0), ^uint32(0), uint16(1023), uint8(15), true, uint8(1), ^uint32(0), uint8(3), uint8(99), uint8(2))
	f.Fuzz(func(t *testing.T, dest, src uint32, length uint16, typ uint8, trace bool, vc uint8, tag uint32, b1, b2, nflip uint8) {
		h := header{dest: dest & addrMask, src: src & addrMask, length: uint32(length) & 0x3ff, typ: uint32(typ) & 0xf,
			trace: trace, vc: uint32(vc) & 1, tag: tag}
		w := h.wireWords()
		// Arbitrary words never panic, and whatever decodes re-encodes cleanly.
		raw := [4]uint32{dest, src, uint32(length) | uint32(typ)<<24 | uint32(b1)<<16, tag ^ uint32(b2)}
		if g, res := decodeWire(raw); res != eccUncorrectable {
			if g2, res2 := decodeWire(g.wireWords()); res2 != eccClean || g2 != g {
				t.Fatalf("decoded %+v re-encodes to %+v (%v)", g, g2, res2)
			}
		}
		i, j := int(b1)%len(codeBit), int(b2)%len(codeBit)
		flip := func(w *[4]uint32, k int) { w[codeBit[k][0]] ^= 1 << codeBit[k][1] }
		switch nflip % 3 {
		case 0:
			if g, res := decodeWire(w); res != eccClean || g != h {
				t.Fatalf("clean header %+v decoded as %+v (%v)", h, g, res)
			}
		case 1:
			flip(&w, i)
			if g, res := decodeWire(w); res != eccCorrected || g != h {
				t.Fatalf("bit %d flipped: decoded %+v (%v), want %+v corrected", i, g, res, h)
			}
		case 2:
			if i == j {
				return
			}
			flip(&w, i)
			flip(&w, j)
			if _, res := decodeWire(w); res != eccUncorrectable {
				t.Fatalf("bits %d and %d flipped: %v, want uncorrectable", i, j, res)
			}
		}
	})
}

// fuzzAddrs are the addresses the register fuzzer writes and reads: every
// decoded register plus some the map does not decode.
func fuzzAddrs(t testing.TB) []uint32 {
	m := testManifest(t)
	var out []uint32
	for _, in := range instances(m) {
		out = append(out, in.addr)
	}
	return append(out, 0x1004, 0x1008, 0x100c, 0x1024, 0x1028, 0x102c, 0x17fc, 0x1bfc, 0xffc, 0x5000)
}

// FuzzRegisterAccess drives a two-board fabric with arbitrary register
// traffic: nothing may panic, credits stay within [0, CREDIT_MAX], FIFOs
// within their §3.3 sizes.
func FuzzRegisterAccess(f *testing.F) {
	f.Add([]byte{0x40, 1, 0, 0, 0, 0x3f, 1, 0, 0, 0})
	f.Add([]byte{0x10, 0xff, 0xff, 0xff, 0xff, 0x11, 3, 0, 0, 0, 0x40, 7, 0, 0, 0})
	f.Add([]byte("\x05\x03\x00\x00\x00\x42\x01\x00\x00\x00\x43\x00\x02\x00\x00"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		rk := pair(t, rackSpec{})
		addrs := fuzzAddrs(t)
		ids := map[uint32]regID{}
		for a, s := range rk.nodes["a"].regs {
			ids[a] = s.id
		}
		for k := 0; k+5 <= len(ops); k += 5 {
			board := "a"
			if ops[k]&0x80 != 0 {
				board = "b"
			}
			n := rk.nodes[board]
			addr := addrs[int(ops[k]&0x7f)%len(addrs)]
			v := uint32(ops[k+1]) | uint32(ops[k+2])<<8 | uint32(ops[k+3])<<16 | uint32(ops[k+4])<<24
			// Keep each run short: bounded generator and ping-pong counts.
			switch ids[addr] {
			case rTG_COUNT:
				v &= 63
			case rPP_ITER:
				v &= 7
			}
			if v&1 == 0 {
				n.Read32(addr)
			} else {
				n.Write32(addr, v)
			}
			for _, nd := range rk.nodes {
				for _, l := range nd.links {
					if l.credits < 0 || l.credits > linkPayload || l.hdrCredits < 0 || l.hdrCredits > hdrFIFO {
						t.Fatalf("%s link %d: credits %d, header credits %d", nd.name, l.idx, l.credits, l.hdrCredits)
					}
					if l.txPay+l.txPayRes > linkPayload || l.txHdr+l.txHdrRes > hdrFIFO || l.rxPay > linkPayload || l.rxHdr > hdrFIFO {
						t.Fatalf("%s link %d: FIFO overflow: tx %d+%d/%d+%d rx %d/%d", nd.name, l.idx, l.txPay, l.txPayRes, l.txHdr, l.txHdrRes, l.rxPay, l.rxHdr)
					}
				}
				for i := range nd.tx {
					if nd.tx[i].data.len() > intraPayload32 || nd.tx[i].hdr.len() > hdrFIFO {
						t.Fatalf("%s port %d: TX FIFO overflow", nd.name, i)
					}
					if nd.rx[i].data.len()+nd.rx[i].resDat > intraPayload32 || nd.rx[i].hdr.len()+nd.rx[i].resHdr > hdrFIFO {
						t.Fatalf("%s port %d: RX FIFO overflow", nd.name, i)
					}
				}
			}
		}
	})
}
