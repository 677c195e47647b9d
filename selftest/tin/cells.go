package tin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// runCellification sends one traced message of each length as a single
// packet and reads its data cells off the source switch's trace records
// (docs/tin.md "Cellification bit-exact against traced cells"): LEN in
// cell-index order, against golden/tin's cellification (§3.1, §3.3, §6)
// and against the cell format the manifest declares, from every board of
// the plan in turn.
func runCellification(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[cellificationParams](env)
	if err != nil {
		return err
	}
	lengths := prm.Packets
	// Every board's switch cuts cells (targets, as for the ordering tests: reading O60):
	// each board in turn is the source, towards the next board of the
	// plan, unless the plan names one pair.
	type pair struct{ src, dst string }
	var pairs []pair
	if prm.Src != nil || prm.Dst != nil {
		src, err := boardParam(env, c, "src", prm.Src, c.all.Boards[0])
		if err != nil {
			return err
		}
		dst, err := boardParam(env, c, "dst", prm.Dst, c.all.Boards[len(c.all.Boards)-1])
		if err != nil {
			return err
		}
		if src == dst {
			return fmt.Errorf("%s: cellification needs two boards, src and dst are both %s", env.Test.Pos, src)
		}
		pairs = append(pairs, pair{src, dst})
	} else {
		rot, err := env.Targets(c.all.Boards, env.PlanStart())
		if err != nil {
			return drivers.Setup("", env.Test.Pos.String(), "", err)
		}
		for _, src := range rot.Boards {
			pairs = append(pairs, pair{src, nextBoard(c.all, src)})
		}
	}
	strs := make([]string, len(lengths))
	for i, l := range lengths {
		if lim := tt.MaxPacketCells * int(c.timing.DataPayload); l < 1 || l > lim {
			return fmt.Errorf("%s: packet length %d: a packet is 1..%d bytes (%d cells of %d B, the RPTR's cell index)", env.Test.Pos, l, lim, tt.MaxPacketCells, c.timing.DataPayload)
		}
		strs[i] = strconv.Itoa(l)
	}
	es, err := c.golden(map[string]string{"packets": strings.Join(strs, ",")})
	if err != nil {
		return err
	}
	for _, pr := range pairs {
		if !c.up(pr.src, pr.dst) {
			continue // the runner reports the pair's cases (cellificationCases)
		}
		if err := cellifyPair(ctx, env, c, es, lengths, pr.src, pr.dst); err != nil {
			return err
		}
	}
	return nil
}

// cellifyPair sends one traced packet of each length from src to dst and
// judges its cells.
func cellifyPair(ctx context.Context, env *selftest.Env, c *clique, es []results.Expectation, lengths []int, src, dst string) error {
	for _, l := range lengths {
		p := results.Params{"bytes": strconv.Itoa(l), "src": src, "dst": dst}
		cells, err := tracedCells(ctx, c, src, dst, l)
		if err != nil {
			env.Error("cellification", src, p, err)
			notJudged(env, src, p, "the traced packet was not delivered (cellification)", "cellification.cells", "cellification.design", "cellification.count")
			continue
		}
		var sizes []string
		var bad []string
		slot := -1
		for i, r := range cells {
			sizes = append(sizes, strconv.Itoa(r.Header.Len))
			ptr := tt.DecodeDataPtr(r.Header.Src)
			if ptr.Index != i {
				bad = append(bad, fmt.Sprintf("cell %d carries index %d in its RPTR", i, ptr.Index))
			}
			if i == 0 {
				slot = ptr.Slot
			} else if ptr.Slot != slot {
				bad = append(bad, fmt.Sprintf("cell %d points at reassembly slot %d, cell 0 at %d", i, ptr.Slot, slot))
			}
			if !r.Header.CRCOK() {
				bad = append(bad, fmt.Sprintf("cell %d header CRC 0x%02x, want 0x%02x (CRC-8/SMBUS of bytes 0-6)", i, r.Header.CRC, tt.HeaderCRC(r.Header.Word())))
			}
			if r.Header.Dst.Node() != c.topo.Node[dst] || r.At.Node() != c.topo.Node[src] {
				bad = append(bad, fmt.Sprintf("cell %d injected at %s addressed to %s", i, r.At.Node(), r.Header.Dst))
			}
		}
		text := strings.Join(sizes, ",")
		if len(cells) == 0 {
			bad = append(bad, "no data cell of the packet was traced at the source switch")
		}
		env.Check("cellification.cells", results.Measurement{Board: src, Params: p, Metric: "tin.cell.format", Value: float64(len(bad)), Text: firstLines(bad, 4)},
			len(bad) == 0, "RPTR indices 0..n-1 into one reassembly slot, header CRC-8 good, addressed to the packet's ends",
			"Aquila §3.1 (routing header), §3.3 (reassembly pointer), docs/tin.md (data cell RPTR)", fmt.Sprintf("%d-byte packet from %s to %s: %s", l, src, dst, firstLines(bad, 4)))
		// The cell format the manifest declares (config:).
		own := tt.Timing.DataCells(c.timing, l)
		ownText := joinInts(own)
		env.Check("cellification.design", results.Measurement{Board: src, Params: p, Metric: "tin.cell.sizes_design", Text: text}, text == ownText,
			ownText, fmt.Sprintf("the declared cell format (manifest config: %d B header, %d B tag, %d B per cell)", c.timing.Header, c.timing.DataTag, c.timing.DataPayload),
			fmt.Sprintf("%d-byte packet cut into cells %s, the declared cell format gives %s", l, text, ownText))
		// Against golden/tin, whose figures depend on the length only.
		gp := results.Params{"bytes": strconv.Itoa(l)}
		if e, ok := expectation(es, "tin.cell.sizes", gp); ok {
			env.Record("cellification", results.Measurement{Board: src, Params: p, Metric: "tin.cell.sizes", Text: text, Unit: "bytes"}, e)
		} else {
			env.Error("cellification", src, p, fmt.Errorf("golden/tin predicted no tin.cell.sizes for %d bytes", l))
		}
		if e, ok := expectation(es, "tin.cell.count", gp); ok {
			env.Record("cellification.count", results.Measurement{Board: src, Params: p, Metric: "tin.cell.count", Value: float64(len(cells)), Unit: "cells"}, e)
		}
	}
	return nil
}

// tracedCells sends one message of n bytes as one packet from src to dst
// with tracing on and returns its data cells as the source switch recorded
// their injection, in cell-index order.
func tracedCells(ctx context.Context, c *clique, src, dst string, n int) ([]tt.TraceRecord, error) {
	if err := c.fresh(ctx); err != nil {
		return nil, err
	}
	if err := c.r.Write(ctx, src, "TRACE_CTRL", tt.TraceBurst); err != nil {
		return nil, err
	}
	ws, err := tt.Bursts{Pairs: map[string]string{src: dst}, MsgBytes: n, RateMbps: 600, Count: 1, MTU: max(n, 64), Port: tt.EPNIC}.Writes(c.topo)
	if err != nil {
		return nil, err
	}
	if err := c.r.Load(ctx, ws); err != nil {
		return nil, err
	}
	rr, err := c.run(ctx)
	if err != nil {
		return nil, err
	}
	if !rr.Done() {
		return nil, fmt.Errorf("the traced %d-byte message from %s to %s did not complete: the run ended %s", n, src, dst, rr.Describe())
	}
	recs, err := c.r.Traces(ctx, src)
	if err != nil {
		return nil, err
	}
	var out []tt.TraceRecord
	for _, r := range recs {
		if r.Injected && r.Header.Type == tt.CellData {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return tt.DecodeDataPtr(out[i].Header.Src).Index < tt.DecodeDataPtr(out[j].Header.Src).Index
	})
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// nextBoard is the board after b in the plan's order (the first after the
// last): the destination of b's traced packets.
func nextBoard(all *tt.Topology, b string) string {
	i := slices.Index(all.Boards, b)
	return all.Boards[(i+1)%len(all.Boards)]
}
