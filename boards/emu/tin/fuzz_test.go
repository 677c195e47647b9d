package tin

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// FuzzRegisterWrites drives a two-board fabric with arbitrary register
// writes (the control block and the routing tables, TG_CTRL included, with
// the per-write event budget kept small): the design must never panic,
// refuse only with the bus errors of the emulator's API, keep answering
// reads, and keep its credit accounting within the FIFO sizes.
func FuzzRegisterWrites(f *testing.F) {
	seed := func(ws ...[2]uint32) []byte {
		var b []byte
		for _, w := range ws {
			b = binary.LittleEndian.AppendUint32(b, w[0])
			b = binary.LittleEndian.AppendUint32(b, w[1])
		}
		return b
	}
	f.Add(seed([2]uint32{regTinAddr, 0x20}, [2]uint32{regPortRole, 1}, [2]uint32{regIPGCtrl, 1},
		[2]uint32{regIPGCount, 5}, [2]uint32{regIPGRate, 1000}, [2]uint32{regIPGDstLo, 3}, [2]uint32{regTGCtrl, 1}))
	f.Add(seed([2]uint32{regOGCtrl, 0xF}, [2]uint32{regOGDst, 0x20}, [2]uint32{regOGLen, 9}, [2]uint32{regTGCtrl, 1},
		[2]uint32{regTGCtrl, 2}, [2]uint32{regTGCtrl, 4}))
	f.Add(seed([2]uint32{rtBase, 0x80808080}, [2]uint32{regRouteMode, 0x3FFF}, [2]uint32{regVCFifo, 1}, [2]uint32{regTGCtrl, 1}))
	lab := func() *labconfig.Lab {
		return &labconfig.Lab{Name: "fuzz", Seed: 1,
			Boards: []labconfig.Board{{Name: "a", Kind: "zcu102", Emulated: &labconfig.Emulated{}}, {Name: "b", Kind: "zcu102", Emulated: &labconfig.Emulated{}}},
			Links: []labconfig.Link{
				{A: labconfig.Endpoint{Board: "a", Port: "sfp0"}, B: labconfig.Endpoint{Board: "b", Port: "sfp0"}, LatencyNS: 5},
				{A: labconfig.Endpoint{Board: "a", Port: "sfp3"}, B: labconfig.Endpoint{Board: "b", Port: "sfp3"}, LatencyNS: 50, BER: 1e-5}}}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8*64 {
			data = data[:8*64]
		}
		r, err := emu.Start(lab(), emu.Options{NoPTY: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var boards []*emu.Board
		for _, b := range r.Boards() {
			img, _ := catalogueImage(t, b.Kind().Part)
			if err := b.Programmer().Program(ctx, img); err != nil {
				t.Fatal(err)
			}
			boards = append(boards, b)
		}
		for _, b := range boards {
			if err := b.Bus().Write32(ctx, regTGBudgetK, 20); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i+8 <= len(data); i += 8 {
			a := binary.LittleEndian.Uint32(data[i:])
			v := binary.LittleEndian.Uint32(data[i+4:])
			b := boards[a>>31]
			if a&(1<<30) != 0 {
				a = rtBase + a%(rtEnd-rtBase)
			} else {
				a %= ctrlEnd
			}
			a &^= 3
			switch a {
			case regTGBudgetK:
				v = v%20 + 1 // keep every run short
			case regTGLimitUS:
				v %= 200
			}
			err := b.Bus().Write32(ctx, uint64(a), v)
			if err != nil && !errors.Is(err, emu.ErrBusError) && !errors.Is(err, emu.ErrReadOnly) {
				t.Fatalf("write 0x%x=0x%x: %v", a, v, err)
			}
		}
		for _, b := range boards {
			if _, err := b.Bus().Read32(ctx, regTGStatus); err != nil {
				t.Fatalf("TG_STATUS read after the writes: %v", err)
			}
			fifo, _ := b.Bus().Read32(ctx, regVCFifo)
			for p := 0; p < nPorts; p++ {
				for v := 0; v < nVC; v++ {
					c, err := b.Bus().Read32(ctx, uint64(regCredits+4*(p*nVC+v)))
					if err != nil {
						t.Fatal(err)
					}
					if c > 0xFFFF || p >= nExt && c > max(fifo&0xFFFF, MaxCell) {
						t.Fatalf("%s CREDITS[%d] = %d, more than any FIFO", b.Name(), p*nVC+v, c)
					}
				}
			}
		}
	})
}
