package tin

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Stitching (Aquila §6: "The collector can then stitch the path of the
// constituent cells of a packet"; docs/tin.md "Cell tracing"): the records
// of one cell share its identity (TYPE, DST, SRC and payload word 0, which
// do not change per hop); a path starts at the record with the injected
// bit and goes on, link by link, through the record of the board at the
// other end of the cable the previous one left on, whose hop count is one
// lower, to the record that ejects the cell into an endpoint.

// CellID is what identifies one cell across switches.
type CellID struct {
	Type     CellType
	Src, Dst Addr
	// Ptr is a DATA cell's reassembly pointer (its header's SRC field,
	// DecodeDataPtr). A data cell's header names no source: Stitch fills
	// Src of a DATA path with the TiN that injected it.
	Ptr Addr
	P0  uint64
}

// ID returns the record's cell identity.
func (r TraceRecord) ID() CellID {
	if r.Header.Type == CellData {
		return CellID{Type: r.Header.Type, Ptr: r.Header.Src, Dst: r.Header.Dst, P0: r.P0}
	}
	return CellID{Type: r.Header.Type, Src: r.Header.Src, Dst: r.Header.Dst, P0: r.P0}
}

// CellPath is the stitched path of one cell.
type CellPath struct {
	ID      CellID
	Records []TraceRecord // switch by switch, from injection
	// Complete: it starts with the injection at the source TiN and ends with
	// the ejection at the destination TiN.
	Complete bool
	// Problems are inconsistencies between consecutive records and the
	// cabling (a cell that left on a cage but was seen elsewhere, a VC or hop
	// count that does not follow, a record with a bad header CRC).
	Problems []string
}

// Text renders the path as golden/tin reads it: the source TiN, then each
// TiN reached with the VC the cell travelled on over that link (the header
// VC as the receiving TiN saw it): "p0t1->p0t0[vc9]->p1t0[vc9]".
func (p CellPath) Text() string {
	if len(p.Records) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.Records[0].At.Node().String())
	for _, r := range p.Records[1:] {
		b.WriteString("->")
		b.WriteString(r.At.Node().String())
		b.WriteString("[vc")
		b.WriteString(strconv.Itoa(r.Header.VC))
		b.WriteByte(']')
	}
	return b.String()
}

// Hops is the number of links the path crossed.
func (p CellPath) Hops() int { return max(len(p.Records)-1, 0) }

// LatencyNS is the time from the cell's arrival at the source switch to its
// grant into the destination endpoint, fabric ns (0 for an incomplete path).
func (p CellPath) LatencyNS() float64 {
	if !p.Complete {
		return 0
	}
	return float64(p.Records[len(p.Records)-1].GrantNS - p.Records[0].ArriveNS)
}

// Class is the traffic class of the cell at injection (VC / 3, §3.2).
func (p CellPath) Class() int {
	if len(p.Records) == 0 {
		return 0
	}
	return p.Records[0].Header.VC / 3
}

// Stitch groups the records of every board's collector into cell paths.
// Records that belong to no path starting at an injection (their injection
// record was lost to a full collector) come back as incomplete paths.
func Stitch(t *Topology, recs []TraceRecord) []CellPath {
	groups := map[CellID][]int{}
	var order []CellID
	for i, r := range recs {
		id := r.ID()
		if _, ok := groups[id]; !ok {
			order = append(order, id)
		}
		groups[id] = append(groups[id], i)
	}
	var out []CellPath
	for _, id := range order {
		idx := groups[id]
		sort.SliceStable(idx, func(a, b int) bool { return recs[idx[a]].GrantNS < recs[idx[b]].GrantNS })
		used := make([]bool, len(idx))
		for k, i := range idx {
			if used[k] || !recs[i].Injected {
				continue
			}
			used[k] = true
			p := CellPath{ID: id, Records: []TraceRecord{recs[i]}}
			for {
				cur := p.Records[len(p.Records)-1]
				if cur.Ejected() {
					break
				}
				peer, peerCage, ok := t.PeerOf(cur.Board, cur.Out)
				if !ok {
					p.Problems = append(p.Problems, fmt.Sprintf("%s (%s) sent the cell out of cage sfp%d, which is not cabled in the plan", cur.Board, cur.At.Node(), cur.Out))
					break
				}
				next := -1
				for k2, i2 := range idx {
					r := recs[i2]
					if used[k2] || r.Board != peer || r.Injected || r.ArriveNS < cur.GrantNS {
						continue
					}
					if r.In == peerCage && r.Header.Hop == cur.Header.Hop-1 {
						next = k2
						break
					}
				}
				if next < 0 {
					p.Problems = append(p.Problems, fmt.Sprintf("no record at %s (cage sfp%d, hop count %d) after %s sent the cell on sfp%d at %d ns",
						peer, peerCage, cur.Header.Hop-1, cur.Board, cur.Out, cur.GrantNS))
					break
				}
				used[next] = true
				r := recs[idx[next]]
				if r.Header.VC != cur.OutVC {
					p.Problems = append(p.Problems, fmt.Sprintf("%s sent the cell on VC %d, %s received it on VC %d", cur.Board, cur.OutVC, r.Board, r.Header.VC))
				}
				p.Records = append(p.Records, r)
				if len(p.Records) > 64 {
					p.Problems = append(p.Problems, "more than 64 hops: a routing loop")
					break
				}
			}
			last := p.Records[len(p.Records)-1]
			first := p.Records[0]
			if id.Type == CellData {
				// The source of a data cell is where it entered the fabric.
				p.ID.Src = first.At.Node().Addr()
			}
			if last.Ejected() && last.At.Node() != id.Dst.Node() {
				p.Problems = append(p.Problems, fmt.Sprintf("ejected at %s, but addressed to %s", last.At.Node(), id.Dst))
			}
			if first.At.Node() != p.ID.Src.Node() {
				p.Problems = append(p.Problems, fmt.Sprintf("injected at %s, but its source is %s", first.At.Node(), p.ID.Src))
			}
			for _, r := range p.Records {
				if !r.Header.CRCOK() {
					p.Problems = append(p.Problems, fmt.Sprintf("%s recorded header 0x%016x with CRC 0x%02x, want 0x%02x", r.Board, r.Header.Word(), r.Header.CRC, HeaderCRC(r.Header.Word())))
				}
			}
			p.Complete = len(p.Problems) == 0 && last.Ejected() && last.At.Node() == id.Dst.Node() && first.At.Node() == p.ID.Src.Node()
			out = append(out, p)
		}
		// Records no injection led to.
		var stray []TraceRecord
		for k, i := range idx {
			if !used[k] {
				stray = append(stray, recs[i])
			}
		}
		if len(stray) > 0 {
			out = append(out, CellPath{ID: id, Records: stray,
				Problems: []string{fmt.Sprintf("%d records of this cell follow no injection (a full collector, or a cell seen twice)", len(stray))}})
		}
	}
	return out
}

// PacketTrace is one IP packet's cells (§3.3, Fig. 3): its RTS from source
// to destination, the CTS back, and its data cells.
type PacketTrace struct {
	Src, Dst    Addr
	IngressSlot int
	EgressSlot  int
	Flow        uint16
	Length      int // from the RTS
	RTS, CTS    *CellPath
	Data        []CellPath // by cell index
}

// Packets gathers the stitched paths of IP packets: an RTS (ingress slot
// and flow label in its payload), the CTS that answers it (same ingress
// slot, and the egress slot), and the data cells addressed to that egress
// slot, in cell-index order.
func Packets(paths []CellPath) []PacketTrace {
	var out []PacketTrace
	ctsBy := map[[3]uint64][]int{}
	dataBy := map[[3]uint64][]int{}
	for i, p := range paths {
		if len(p.Records) == 0 {
			continue
		}
		switch p.ID.Type {
		case CellCTS:
			k := [3]uint64{uint64(p.ID.Dst.Node().Index()), uint64(p.ID.Src.Node().Index()), p.ID.P0 >> 52 & 0xFFF}
			ctsBy[k] = append(ctsBy[k], i)
		case CellData:
			ptr := DecodeDataPtr(p.ID.Ptr)
			k := [3]uint64{uint64(p.ID.Src.Node().Index()), uint64(p.ID.Dst.Node().Index()), uint64(ptr.Slot)}
			dataBy[k] = append(dataBy[k], i)
		}
	}
	for i := range paths {
		p := &paths[i]
		if p.ID.Type != CellRTS || len(p.Records) == 0 {
			continue
		}
		pt := PacketTrace{Src: p.ID.Src, Dst: p.ID.Dst, IngressSlot: int(p.ID.P0 >> 35 & 0xFFF),
			Flow: uint16(p.ID.P0 >> 15), Length: int(p.ID.P0 >> 50), RTS: p}
		k := [3]uint64{uint64(p.ID.Src.Node().Index()), uint64(p.ID.Dst.Node().Index()), uint64(pt.IngressSlot)}
		rtsAt := p.Records[0].GrantNS
		for _, j := range ctsBy[k] {
			c := &paths[j]
			if c.Records[0].ArriveNS >= rtsAt && (pt.CTS == nil || c.Records[0].ArriveNS < pt.CTS.Records[0].ArriveNS) {
				pt.CTS = c
			}
		}
		if pt.CTS != nil {
			pt.EgressSlot = int(pt.CTS.ID.P0 >> 40 & 0xFFF)
			ctsAt := pt.CTS.Records[0].GrantNS
			for _, j := range dataBy[[3]uint64{k[0], k[1], uint64(pt.EgressSlot)}] {
				if paths[j].Records[0].ArriveNS >= ctsAt {
					pt.Data = append(pt.Data, paths[j])
				}
			}
			sort.SliceStable(pt.Data, func(a, b int) bool {
				return DecodeDataPtr(pt.Data[a].ID.Ptr).Index < DecodeDataPtr(pt.Data[b].ID.Ptr).Index
			})
		}
		out = append(out, pt)
	}
	return out
}
