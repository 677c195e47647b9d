package prr_test

import (
	"encoding/binary"
	"testing"

	tp "github.com/labrunner/labrunner/traffic/prr"
)

// PLACEMENT words: decoding never panics, re-encoding gives back every
// defined bit (bits 28 and 29 are reserved), and the text names the state.
func FuzzDecodePlacement(f *testing.F) {
	for _, w := range []uint32{0, 1 << 31, 1 << 30, 0xC0000000, 0x8fff_ffff, 0xffff_ffff, 0x801f_0a05} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w uint32) {
		p := tp.DecodePlacement(w)
		const defined = 0xC0000000 | 0x0fffffff
		if got := p.Word(); got != w&defined {
			t.Fatalf("0x%08x decodes as %+v, which encodes as 0x%08x", w, p, got)
		}
		if p.Group > 255 || p.Queue > 255 || p.Pos > 4095 || p.String() == "" {
			t.Fatalf("0x%08x: %+v %q", w, p, p.String())
		}
	})
}

// QSTAT words: COUNT 12:0, NEXT 30, ARB 31; bits 13..29 are reserved.
func FuzzDecodeQStat(f *testing.F) {
	for _, w := range []uint32{0, 0xC0000000, 0x1fff, 0xffffffff} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w uint32) {
		q := tp.DecodeQStat(w)
		if got := q.Word(); got != w&0xC0001fff {
			t.Fatalf("0x%08x decodes as %+v, which encodes as 0x%08x", w, q, got)
		}
	})
}

// The traffic generator's result burst: any 20 words decode, low words
// first, and the derived figures stay finite.
func FuzzDecodeTGResults(f *testing.F) {
	f.Add(make([]byte, 4*tp.TGResultWords))
	seed := make([]byte, 4*tp.TGResultWords)
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 4*tp.TGResultWords {
			return
		}
		w := make([]uint32, tp.TGResultWords)
		for i := range w {
			w[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
		r := tp.DecodeTGResults(w)
		if r.Status != w[0] || r.Offered != uint64(w[2])<<32|uint64(w[1]) || r.OrderErrors != w[19] {
			t.Fatalf("decoded %+v from %x", r, w)
		}
		c := tp.DefaultTG()
		for _, v := range []float64{r.AvgLatency(), r.AvgWait(), r.DropRate(), r.Throughput(c, 16)} {
			if v != v || v < 0 {
				t.Fatalf("derived figure %g from %+v", v, r)
			}
		}
	})
}
