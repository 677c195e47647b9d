package prr

import (
	"fmt"
	"sort"

	"github.com/labrunner/labrunner/bitstreams"
)

// The address decoder follows the design's manifest
// (bitstreams/catalogue/prr.yaml): every register the manifest declares is
// decoded at its offset (arrays at their stride) with the access the
// manifest gives it. A few registers stand for a block of words (a batch
// slot's data, a port's egress FIFO window, the QSTAT and QTAGS windows);
// their spans are fixed here or taken from the manifest's window. The
// behaviour behind each name is in design.go.

type regID int

const (
	rID regID = iota
	rVERSION
	rSCRATCH
	rPORTS
	rSTAGE_S
	rFIFO_DEPTH
	rPKT_BITS
	rCLOCK_KHZ
	rCYCLE_LO
	rCYCLE_HI
	rCTRL
	rSTATUS
	rDRAIN_CYCLES
	rBATCH_PENDING
	rLAST_INS_CYCLE
	rLAST_ENQ_CYCLE
	rLAST_PLACED
	rLAST_DROPPED
	rPKTS_IN
	rPKTS_ENQ
	rPKTS_DROPPED
	rPKTS_OUT
	rEGRESS_LOST
	rTG_CTRL
	rTG_MODEL
	rTG_LOAD
	rTG_BURST
	rTG_NONUNIF_P
	rTG_SEED
	rTG_CYCLES
	rTG_WARMUP
	rTG_DRAIN_MAX
	rTG_STATUS
	rTG_OFFERED_LO
	rTG_OFFERED_HI
	rTG_DELIVERED_LO
	rTG_DELIVERED_HI
	rTG_DROPPED_LO
	rTG_DROPPED_HI
	rTG_LAT_SUM_LO
	rTG_LAT_SUM_HI
	rTG_LAT_MIN
	rTG_LAT_MAX
	rTG_WAIT_SUM_LO
	rTG_WAIT_SUM_HI
	rTG_WAIT_MAX
	rTG_WINDOW_OUT_LO
	rTG_WINDOW_OUT_HI
	rTG_RUN_CYCLES_LO
	rTG_RUN_CYCLES_HI
	rTG_STRANDED
	rTG_ORDER_ERRORS
	rTG_HIST
	rQREAD_SEL
	rQREAD_STATUS
	rQREAD_HDR
	rQREAD_TS_INS
	rQREAD_TS_ENQ
	rQREAD_DATA
	rPLACEMENT
	rOFFSET
	rARB_INDEX
	rEGRESS_COUNT
	rPORT_OUT
	rPORT_DROPPED
	rBATCH_CTRL
	rBATCH_DATA
	rEGRESS_POP
	rQSTAT
	rQTAGS
	numRegs
)

var regNames = map[string]regID{
	"ID": rID, "VERSION": rVERSION, "SCRATCH": rSCRATCH, "PORTS": rPORTS, "STAGE_S": rSTAGE_S,
	"FIFO_DEPTH": rFIFO_DEPTH, "PKT_BITS": rPKT_BITS, "CLOCK_KHZ": rCLOCK_KHZ,
	"CYCLE_LO": rCYCLE_LO, "CYCLE_HI": rCYCLE_HI,
	"CTRL": rCTRL, "STATUS": rSTATUS, "DRAIN_CYCLES": rDRAIN_CYCLES, "BATCH_PENDING": rBATCH_PENDING,
	"LAST_INS_CYCLE": rLAST_INS_CYCLE, "LAST_ENQ_CYCLE": rLAST_ENQ_CYCLE,
	"LAST_PLACED": rLAST_PLACED, "LAST_DROPPED": rLAST_DROPPED,
	"PKTS_IN": rPKTS_IN, "PKTS_ENQ": rPKTS_ENQ, "PKTS_DROPPED": rPKTS_DROPPED, "PKTS_OUT": rPKTS_OUT,
	"EGRESS_LOST": rEGRESS_LOST,
	"TG_CTRL":     rTG_CTRL, "TG_MODEL": rTG_MODEL, "TG_LOAD": rTG_LOAD, "TG_BURST": rTG_BURST,
	"TG_NONUNIF_P": rTG_NONUNIF_P, "TG_SEED": rTG_SEED, "TG_CYCLES": rTG_CYCLES, "TG_WARMUP": rTG_WARMUP,
	"TG_DRAIN_MAX": rTG_DRAIN_MAX, "TG_STATUS": rTG_STATUS,
	"TG_OFFERED_LO": rTG_OFFERED_LO, "TG_OFFERED_HI": rTG_OFFERED_HI,
	"TG_DELIVERED_LO": rTG_DELIVERED_LO, "TG_DELIVERED_HI": rTG_DELIVERED_HI,
	"TG_DROPPED_LO": rTG_DROPPED_LO, "TG_DROPPED_HI": rTG_DROPPED_HI,
	"TG_LAT_SUM_LO": rTG_LAT_SUM_LO, "TG_LAT_SUM_HI": rTG_LAT_SUM_HI,
	"TG_LAT_MIN": rTG_LAT_MIN, "TG_LAT_MAX": rTG_LAT_MAX,
	"TG_WAIT_SUM_LO": rTG_WAIT_SUM_LO, "TG_WAIT_SUM_HI": rTG_WAIT_SUM_HI, "TG_WAIT_MAX": rTG_WAIT_MAX,
	"TG_WINDOW_OUT_LO": rTG_WINDOW_OUT_LO, "TG_WINDOW_OUT_HI": rTG_WINDOW_OUT_HI,
	"TG_RUN_CYCLES_LO": rTG_RUN_CYCLES_LO, "TG_RUN_CYCLES_HI": rTG_RUN_CYCLES_HI,
	"TG_STRANDED": rTG_STRANDED, "TG_ORDER_ERRORS": rTG_ORDER_ERRORS, "TG_HIST": rTG_HIST,
	"QREAD_SEL": rQREAD_SEL, "QREAD_STATUS": rQREAD_STATUS, "QREAD_HDR": rQREAD_HDR,
	"QREAD_TS_INS": rQREAD_TS_INS, "QREAD_TS_ENQ": rQREAD_TS_ENQ, "QREAD_DATA": rQREAD_DATA,
	"PLACEMENT": rPLACEMENT, "OFFSET": rOFFSET, "ARB_INDEX": rARB_INDEX, "EGRESS_COUNT": rEGRESS_COUNT,
	"PORT_OUT": rPORT_OUT, "PORT_DROPPED": rPORT_DROPPED,
	"BATCH_CTRL": rBATCH_CTRL, "BATCH_DATA": rBATCH_DATA, "EGRESS_POP": rEGRESS_POP,
	"QSTAT": rQSTAT, "QTAGS": rQTAGS,
}

// Fixed spans (bytes) of registers that stand for a block of words.
const (
	batchDataSpan = 0x80  // 32 data words of a batch slot
	egressSpan    = 0x400 // a port's egress FIFO window: any read pops
)

// windowSpan names the registers whose span is their manifest window.
var windowSpan = map[regID]string{rQSTAT: "qstat", rQTAGS: "qtags"}

// perPort lists the arrays indexed by port or batch slot: they must have
// MaxPorts elements, the decoder's layout.
var perPort = map[regID]bool{
	rPLACEMENT: true, rOFFSET: true, rARB_INDEX: true, rEGRESS_COUNT: true, rPORT_OUT: true,
	rPORT_DROPPED: true, rBATCH_CTRL: true, rBATCH_DATA: true, rEGRESS_POP: true,
}

// slot is one decoded address range: an element of a register (array).
type slot struct {
	base, span uint32
	id         regID
	idx        int // array element
	reg        *bitstreams.Register
	mask       uint32
}

func widthMask(w int) uint32 {
	if w <= 0 || w >= 32 {
		return ^uint32(0)
	}
	return 1<<w - 1
}

// decoder finds the slot of an address.
type decoder struct {
	slots []slot // sorted by base, not overlapping
	// reset values of rw registers, by register and element.
	reset map[regID][]uint32
}

// decodeMap builds the decoder from the manifest. A register the emulator
// has no behaviour for, or one it needs that the manifest lacks, is an
// error: the emulated hardware implements the whole map and nothing else.
func decodeMap(m *bitstreams.Manifest, cfg Config) (*decoder, error) {
	d := &decoder{reset: map[regID][]uint32{}}
	seen := map[regID]bool{}
	windows := map[string]bitstreams.Window{}
	for _, w := range m.Windows {
		windows[w.Name] = w
	}
	for i := range m.Registers {
		r := &m.Registers[i]
		id, ok := regNames[r.Name]
		if !ok {
			return nil, fmt.Errorf("register %s (line %d) has no emulated behaviour: extend boards/emu/prr or remove it from the manifest", r.Name, r.Line)
		}
		seen[id] = true
		count := max(r.Count, 1)
		if perPort[id] && count != MaxPorts {
			return nil, fmt.Errorf("register %s (line %d) has %d elements; the switch's decoder has one per port up to %d: declare count: %d", r.Name, r.Line, count, MaxPorts, MaxPorts)
		}
		span := uint64(4)
		switch id {
		case rBATCH_DATA:
			span = batchDataSpan
		case rEGRESS_POP:
			span = egressSpan
		}
		if wn, ok := windowSpan[id]; ok {
			w, ok := windows[wn]
			if !ok || w.Base != r.Offset {
				return nil, fmt.Errorf("register %s (line %d) must start window %q", r.Name, r.Line, wn)
			}
			span = w.Size
		}
		for e := 0; e < count; e++ {
			base := r.Offset + uint64(e)*r.Stride
			if base%4 != 0 || base+span > 1<<32 {
				return nil, fmt.Errorf("register %s (line %d): offset 0x%x is not a 32-bit word address", r.Name, r.Line, base)
			}
			d.slots = append(d.slots, slot{base: uint32(base), span: uint32(span), id: id, idx: e, reg: r, mask: widthMask(r.Width)})
			if r.Access == bitstreams.RW {
				rs := d.reset[id]
				for len(rs) <= e {
					rs = append(rs, 0)
				}
				rs[e] = r.Reset & widthMask(r.Width)
				d.reset[id] = rs
			}
		}
	}
	for name, id := range regNames {
		if !seen[id] {
			return nil, fmt.Errorf("the manifest lacks register %s, which the switch implements: restore it in %s", name, m.Source)
		}
	}
	if need := uint64(cfg.Ports*cfg.Ports) * 4; windows["qstat"].Size < need {
		return nil, fmt.Errorf("window qstat is 0x%x bytes; %d ports need 0x%x (one word per queue)", windows["qstat"].Size, cfg.Ports, need)
	}
	if need := uint64(cfg.Ports*cfg.Ports*cfg.FIFODepth) * 4; windows["qtags"].Size < need {
		return nil, fmt.Errorf("window qtags is 0x%x bytes; %d ports x depth %d need 0x%x (one word per queue entry)", windows["qtags"].Size, cfg.Ports, cfg.FIFODepth, need)
	}
	sort.Slice(d.slots, func(i, j int) bool { return d.slots[i].base < d.slots[j].base })
	for i := 1; i < len(d.slots); i++ {
		a, b := d.slots[i-1], d.slots[i]
		if uint64(a.base)+uint64(a.span) > uint64(b.base) {
			return nil, fmt.Errorf("register %s (line %d) at 0x%x overlaps %s (line %d), which spans 0x%x..0x%x",
				b.reg.Name, b.reg.Line, b.base, a.reg.Name, a.reg.Line, a.base, uint64(a.base)+uint64(a.span)-1)
		}
	}
	return d, nil
}

// find returns the slot holding addr.
func (d *decoder) find(addr uint32) (*slot, bool) {
	i := sort.Search(len(d.slots), func(i int) bool { return d.slots[i].base > addr }) - 1
	if i < 0 {
		return nil, false
	}
	s := &d.slots[i]
	if addr-s.base >= s.span {
		return nil, false
	}
	return s, true
}

func (s *slot) label() string {
	if s.reg.Count > 1 {
		return fmt.Sprintf("%s[%d]", s.reg.Name, s.idx)
	}
	return s.reg.Name
}
