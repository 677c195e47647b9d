package tin

import (
	"encoding/binary"
	"strings"
	"testing"
)

func words(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// FuzzStitch decodes arbitrary collector words as trace records (the
// runner reads them off hardware it does not trust) and stitches them:
// decoding never panics, a record that decodes re-encodes its header, and
// stitching ends with every record in exactly one path.
func FuzzStitch(f *testing.F) {
	tp := docTopology(f)
	seed := func(rs ...[]uint32) []byte {
		var b []byte
		for _, r := range rs {
			for _, w := range r {
				b = binary.LittleEndian.AppendUint32(b, w)
			}
		}
		return b
	}
	h := Header{Dst: 0x0441, Src: 0x0001, Len: 160, Type: CellData, VC: 9, Hop: 8, Trace: true}
	h2 := h
	h2.Hop = 7
	f.Add(uint8(0), seed(traceWords(h, 1<<44, 0x0000, PortIP, 3, 9, 1, 100, 116, 0, true), traceWords(h2, 1<<44, 0x0400, 3, PortIP, 9, 0, 250, 266, 0, false)))
	f.Add(uint8(5), seed(traceWords(h, 0, 0x0020, 0, 1, 3, 2, 0, 0, 9, true)))
	f.Add(uint8(1), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, boardSel uint8, data []byte) {
		ws := words(data)
		var recs []TraceRecord
		for i := 0; i+TraceWords <= len(ws) && i < 64*TraceWords; i += TraceWords {
			r, err := DecodeTrace(ws[i : i+TraceWords])
			if err != nil {
				continue
			}
			if DecodeHeader(r.Header.Word()) != r.Header {
				t.Fatalf("header %+v does not survive a round trip", r.Header)
			}
			r.Board = tp.Boards[(int(boardSel)+i/TraceWords)%len(tp.Boards)]
			recs = append(recs, r)
		}
		paths := Stitch(tp, recs)
		n := 0
		for _, p := range paths {
			n += len(p.Records)
			if p.Complete && len(p.Problems) > 0 {
				t.Fatalf("a complete path with problems %v", p.Problems)
			}
			_ = p.Text()
		}
		if n != len(recs) {
			t.Fatalf("%d records in paths, %d decoded", n, len(recs))
		}
		_ = Packets(paths)
	})
}

// FuzzDecodeLogs decodes arbitrary words as delivery-log, stream and IP
// records: never a panic, and what decodes keeps its fields in range.
func FuzzDecodeLogs(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(make([]byte, 30))
	f.Fuzz(func(t *testing.T, data []byte) {
		ws := words(data)
		if len(ws) >= DLogWords {
			if e, err := DecodeExecution(ws[:DLogWords]); err == nil && (e.Execs < 1 || e.Execs > 255 || e.Seq > 0xFFFF || e.CID > 255) {
				t.Fatalf("execution out of range: %+v", e)
			}
		}
		if len(ws) >= ORecWords {
			if s, err := DecodeStreamRecord(ws[:ORecWords]); err == nil && (s.Len < 1 || s.Retx > 0xFFFF) {
				t.Fatalf("stream record out of range: %+v", s)
			}
		}
		if len(ws) >= IPLogWords {
			if d, err := DecodeDelivery(ws[:IPLogWords]); err == nil && (d.Kind > 2 || d.CoS > 7 || d.Port > 3) {
				t.Fatalf("delivery out of range: %+v", d)
			}
			var log []Delivery
			for i := 0; i+IPLogWords <= len(ws); i += IPLogWords {
				if d, err := DecodeDelivery(ws[i : i+IPLogWords]); err == nil {
					log = append(log, d)
				}
			}
			for _, v := range Inversions(log) {
				if v.Seq > v.After || v.At >= len(log) {
					t.Fatalf("inversion %+v", v)
				}
			}
		}
		for _, n := range []int{0, 1, 3, 5} {
			if _, err := DecodeTrace(ws[:min(n, len(ws))]); err == nil {
				t.Fatalf("a %d-word trace record decoded", n)
			}
		}
	})
}

// FuzzTableWords: any rt window words decode into at most 8 minimal and 24
// non-minimal cages 0..7, and a decoded table packs back into words that
// decode to it.
func FuzzTableWords(f *testing.F) {
	f.Add([]byte{0x83, 0x80, 0x81, 0x82, 0, 0, 0, 0, 0x81, 0x83})
	f.Fuzz(func(t *testing.T, data []byte) {
		var w [tableWords]uint32
		copy(w[:], words(append(data, make([]byte, 32)...)))
		tb := DecodeTable(w)
		if len(tb.Minimal) > MinimalSlots || len(tb.NonMinimal) > NonMinSlots {
			t.Fatalf("table %+v too long", tb)
		}
		for _, c := range append(append([]int{}, tb.Minimal...), tb.NonMinimal...) {
			if c < 0 || c > 7 {
				t.Fatalf("cage %d", c)
			}
		}
		back := DecodeTable(tb.Words())
		if len(back.Minimal) != len(tb.Minimal) || len(back.NonMinimal) != len(tb.NonMinimal) {
			t.Fatalf("round trip %+v -> %+v", tb, back)
		}
	})
}

// FuzzParseCage: only sfp0..sfp3 are cages, whatever the lab file says.
func FuzzParseCage(f *testing.F) {
	for _, s := range []string{"sfp0", "sfp3", "sfp4", "SFP1", " sfp2", "sfp+1", "sfp00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseCage(s)
		if err != nil {
			return
		}
		if k < 0 || k >= Cages || strings.TrimSpace(strings.ToLower(s)) != "sfp"+string(rune('0'+k)) {
			t.Fatalf("%q parsed as cage %d", s, k)
		}
	})
}
