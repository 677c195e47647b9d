package tin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
)

// The Go constants and the manifest are two descriptions of one map: every
// constant names a manifest register at the same address, and every
// manifest register is one the design decodes.
func TestManifestMatchesConstants(t *testing.T) {
	m, err := bitstreams.Default().Design(DesignName)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{
		"ID": regID, "VERSION": regVersion, "SCRATCH0": regScratch0, "SCRATCH1": regScratch1, "CAPS": regCaps,
		"CLOCK_KHZ": regClockKHz, "LINK_MBPS": regLinkMbps, "INJECT_MBPS": regInjectMbps,
		"FALLTHROUGH_NS": regFallthroughNS, "PCS_NS": regPCSNS, "FEC_NS": regFECNS, "FEC_OVERHEAD_PCT": regFECOverhead,
		"CELL_FORMAT": regCellFormat, "CELL_PAYLOAD": regCellPayload, "TIME_LO": regTimeLo, "TIME_HI": regTimeHi,
		"TIN_ADDR": regTinAddr, "PORT_ROLE": regPortRole, "HOP_LIMIT": regHopLimit, "ROUTE_MODE": regRouteMode,
		"AR_NONMIN_WEIGHT": regARWeight, "AR_NONMIN_BIAS": regARBias, "VC_FIFO_BYTES": regVCFifo,
		"OUTQ_BYTES": regOutqBytes, "QOS_STRICT": regQosStrict, "COS_TC": regCosTC, "RMA_TC": regRmaTC,
		"STALL_US": regStallUS, "CONFIG_STATUS": regConfigStatus, "QOS_WEIGHT": regQosWeight,
		"TG_CTRL": regTGCtrl, "TG_STATUS": regTGStatus, "TG_LIMIT_US": regTGLimitUS, "TG_BUDGET_KEVENTS": regTGBudgetK,
		"TG_RUN_NS": regTGRunNS, "TG_ELAPSED_US": regTGElapsedUS, "COUNTERS_CLEAR": regCountersClear,
		"TG_OPS_OPEN": regTGOpsOpen, "TG_KEVENTS": regTGKEvents,
		"PORT_STATUS": portBase + pStatus, "PORT_PEER": portBase + pPeer, "TX_CELLS": portBase + pTxCells,
		"TX_BYTES": portBase + pTxBytes, "RX_CELLS": portBase + pRxCells, "RX_BYTES": portBase + pRxBytes,
		"RX_CRC_ERRORS": portBase + pCRCErrors, "RX_PAYLOAD_ERRORS": portBase + pPayErrors,
		"FEC_CORRECTED": portBase + pFECFixed, "LINK_DROPS": portBase + pLinkDrops, "OUTQ_HWM": portBase + pOutqHWM,
		"INQ_HWM": portBase + pInqHWM, "CREDIT_INIT": portBase + pCreditInit, "CREDITS": regCredits,
		"IP_CTS_WINDOW": regIPCTSWindow, "IP_CTD_THRESHOLD": regIPCTDThreshold, "IP_ECN_THRESHOLD": regIPECNThreshold,
		"IP_INGRESS_BYTES": regIPIngressBytes, "IP_EGRESS_BYTES": regIPEgressBytes, "IP_REASM_TIMEOUT_US": regIPReasmUS,
		"IP_PORT_MBPS": regIPPortMbps, "IP_FETCH_TIMEOUT_US": regIPFetchUS, "IP_RTSQ_DEPTH": regIPRTSQDepth,
		"RMA_WINDOW": regRMAWindow, "RMA_MEM_NS": regRMAMemNS, "RMA_CPL_NS": regRMACplNS,
		"ORD_SRC_CONNS": regOrdSrcConns, "ORD_TGT_CONNS": regOrdTgtConns, "ORD_ROB_ENTRIES": regOrdROBEntries,
		"ORD_MAX_OUTSTANDING": regOrdMaxOut, "ORD_REPLAY_ENTRIES": regOrdReplay, "ORD_TIMEOUT_NS": regOrdTimeoutNS,
		"ORD_LIFETIME_NS": regOrdLifetimeNS, "ORD_MEM_NS": regOrdMemNS, "ORD_NACK_BACKOFF_NS": regOrdBackoffNS,
		"ORD_LOSS_REQ_PPM": regOrdLossReqPPM, "ORD_LOSS_ACK_PPM": regOrdLossAckPPM, "ORD_JITTER_NS": regOrdJitterNS,
		"ORD_DROP_EVERY": regOrdDropEvery, "ORD_ROB_OCCUPANCY": regOrdROBOccupied, "ORD_CONNS_OPEN": regOrdConnsOpen,
		"IPG_CTRL": regIPGCtrl, "IPG_RATE_MBPS": regIPGRate, "IPG_BYTES": regIPGBytes, "IPG_COUNT": regIPGCount,
		"IPG_DST_MASK_LO": regIPGDstLo, "IPG_DST_MASK_HI": regIPGDstHi, "IPG_DST_PORT": regIPGDstPort,
		"IPG_COS": regIPGCoS, "IPG_FLOWS": regIPGFlows, "IPG_REPLY_BYTES": regIPGReplyBytes, "IPG_SENT": regIPGSent,
		"IPG_COMPLETED": regIPGCompleted, "IPG_DROPPED": regIPGDropped,
		"BG_CTRL": regBGCtrl, "BG_DST": regBGDst, "BG_MSG_BYTES": regBGMsgBytes, "BG_RATE_MBPS": regBGRate,
		"BG_COUNT": regBGCount, "BG_MTU": regBGMTU, "BG_COS": regBGCoS, "BG_SENT": regBGSent, "BG_COMPLETED": regBGCompleted,
		"RG_CTRL": regRGCtrl, "RG_QPS": regRGQPS, "RG_BYTES": regRGBytes, "RG_COUNT": regRGCount,
		"RG_DST_MASK_LO": regRGDstLo, "RG_DST_MASK_HI": regRGDstHi, "RG_ISSUED": regRGIssued, "RG_COMPLETED": regRGCompleted,
		"OG_CTRL": regOGCtrl, "OG_DST": regOGDst, "OG_STREAMS": regOGStreams, "OG_LEN": regOGLen, "OG_BYTES": regOGBytes,
		"OG_GAP_NS": regOGGapNS, "OG_STREAM_GAP_NS": regOGStreamGap, "OG_CONCURRENT": regOGConc,
		"OG_STARTED": regOGStarted, "OG_COMPLETED": regOGCompleted,
		"TRACE_CTRL": regTraceCtrl, "TRACE_EVERY": regTraceEvery, "TRACE_COUNT": regTraceCount,
		"TRACE_DATA": regTraceData, "TRACE_OVERFLOW": regTraceOverflow, "TRACE_TOTAL": regTraceTotal,
		"DLOG_COUNT": regDLogCount, "DLOG_DATA": regDLogData, "DLOG_OVERFLOW": regDLogOverflow,
		"OREC_COUNT": regORecCount, "OREC_DATA": regORecData, "OREC_OVERFLOW": regORecOverflow,
		"IPLOG_COUNT": regIPLogCount, "IPLOG_DATA": regIPLogData, "IPLOG_OVERFLOW": regIPLogOverflw,
		"LAT_COUNT": regLatCount, "LAT_DATA": regLatData, "LAT_OVERFLOW": regLatOverflow, "LAT_MAX_NS": regLatMaxNS,
		"LAT_TOTAL":  regLatTotal,
		"TRACE_FIFO": logsBase + logsTrace*logsBlock, "DLOG_FIFO": logsBase + logsDLog*logsBlock,
		"OREC_FIFO": logsBase + logsORec*logsBlock, "IPLOG_FIFO": logsBase + logsIPLog*logsBlock,
		"LAT_FIFO": logsBase + logsLat*logsBlock,
	}
	sw := []string{"SW_CELLS", "SW_BYTES", "SW_NO_ROUTE", "SW_HOP_EXPIRED", "SW_VC_OVERFLOW", "AR_MINIMAL",
		"AR_NONMINIMAL", "AR_DETERMINISTIC", "SW_EJECTED", "SW_INJECTED"}
	ip := []string{"IP_PKTS_SENT", "IP_RTS_SENT", "IP_CTS_RECEIVED", "IP_CTD_RECEIVED", "IP_DATA_CELLS_SENT",
		"IP_RTS_RECEIVED", "IP_CTS_SENT", "IP_CTD_SENT", "IP_DATA_CELLS_RECEIVED", "IP_PKTS_DELIVERED",
		"IP_BYTES_DELIVERED", "IP_ECN_MARKED", "IP_OOO_PKTS", "IP_REASM_TIMEOUTS", "IP_HOST_BLOCKED",
		"IP_INGRESS_HWM", "IP_EGRESS_HWM", "IP_RTSQ_HWM", "IP_CTS_OUTSTANDING_HWM", "IP_FETCH_TIMEOUTS",
		"IP_PKTS_TOO_LONG", "IP_DATA_NO_CONTEXT", "IP_DATA_MISMATCH"}
	rma := []string{"RMA_READS_ISSUED", "RMA_READS_DONE", "RMA_REQS_SERVED", "RMA_RESP_CELLS_SENT",
		"RMA_RESP_CELLS_RECEIVED", "RMA_BLOCKED"}
	ord := []string{"ORD_REQS_SENT", "ORD_SLOW_REQS_SENT", "ORD_RETX", "ORD_TIMEOUTS", "ORD_NACKS_RECEIVED",
		"ORD_FALLBACKS", "ORD_NO_CID", "ORD_STREAMS_DONE", "ORD_EXECUTED", "ORD_DUP_SUPPRESSED", "ORD_DUP_EXECUTED",
		"ORD_NACK_NOCONN", "ORD_NACK_ROBFULL", "ORD_NACK_REPLAYFULL", "ORD_ROB_INSERTS", "ORD_ROB_HWM",
		"ORD_CONN_HWM", "ORD_DROPPED_REQ", "ORD_DROPPED_ACK", "ORD_AGED_DROPS", "ORD_REPLAY_MISS", "ORD_FINS"}
	for _, g := range []struct {
		names []string
		n     int
		base  uint64
	}{{sw, nSwCounters, swCountersBase}, {ip, nIPCounters, ipCountersBase}, {rma, nRMACounters, rmaCountersBase}, {ord, nOrdCounters, ordCountersBase}} {
		if len(g.names) != g.n {
			t.Fatalf("%d names for %d counters at 0x%x", len(g.names), g.n, g.base)
		}
		for i, c := range g.names {
			want[c] = g.base + uint64(4*i)
		}
	}
	seen := map[string]bool{}
	for _, r := range m.Registers {
		seen[r.Name] = true
		a, ok := want[r.Name]
		if !ok {
			t.Errorf("manifest register %s (0x%x) has no constant in regs.go", r.Name, r.Offset)
			continue
		}
		if r.Offset != a {
			t.Errorf("%s: manifest offset 0x%x, regs.go 0x%x", r.Name, r.Offset, a)
		}
		if r.Offset >= portBase && r.Offset < portEnd && (r.Count != nPorts || r.Stride != portStride) {
			t.Errorf("%s: a port register should be an array of %d with stride 0x%x", r.Name, nPorts, portStride)
		}
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("regs.go names %s, the manifest does not", n)
		}
	}
	if m.ID != designID || m.VersionWord != designVersionWord {
		t.Errorf("manifest id/version 0x%x/0x%x, design 0x%x/0x%x", m.ID, m.VersionWord, designID, designVersionWord)
	}
	params := map[string]int{"ext_ports": nExt, "switch_ports": nPorts, "vcs": nVC, "traffic_classes": nTC,
		"max_pods": maxPods, "max_tins_per_pod": maxTins, "route_entries": nRoute, "link_gbps": linkMbps / 1000,
		"inject_gbps": injectMbps / 1000, "fallthrough_ns": fallThroughCycles * cyclePS / 1000,
		"hop_ns": (fallThroughCycles*cyclePS + pcsPS) / 1000, "fec_ns": fecPS / 1000, "fec_overhead_pct": fecOverhead,
		"cell_min_bytes": MinCell, "cell_max_bytes": MaxCell, "header_bytes": HeaderSize, "data_tag_bytes": DataTag,
		"data_bytes_per_cell": DataPerCell, "resp_tag_bytes": RespTag, "rts_bytes": CtlCell, "req_bytes": ReqCell, "resp_data_bytes": RespData,
		"rts_queues": ipPorts * nCoS, "rob_entries_reset": resetROB,
		"max_packet_cells": MaxPacketCells, "max_packet_bytes": MaxPacket, "egress_slots": nEgSlots, "ingress_slots": nIngSlots}
	for k, v := range params {
		if m.Params[k] != fmt.Sprint(v) {
			t.Errorf("manifest param %s = %q, the design has %d", k, m.Params[k], v)
		}
	}
	if len(m.Params) != len(params) {
		t.Errorf("manifest has %d params, the test knows %d", len(m.Params), len(params))
	}
	if m.ClockMHz != 1e3/cyclePS*1000 {
		t.Errorf("manifest clock %g MHz, design cycle %d ps", m.ClockMHz, cyclePS)
	}
}

// clampsToMaxPacket: the packet-length registers of the generators store
// at most 4864, the longest packet (32 cells of 152 B, the RPTR's 5-bit
// cell index); the manifest documents the clamp.
var clampsToMaxPacket = map[string]bool{"IPG_BYTES": true, "IPG_REPLY_BYTES": true, "BG_MTU": true}

func widthMask(w int) uint32 {
	if w >= 32 {
		return ^uint32(0)
	}
	return 1<<w - 1
}

// Every register behaves as the manifest says on a freshly programmed
// board: resets, access rights, widths, the FIFO pops, and addresses
// outside the map are bus errors.
func TestRegisterSemantics(t *testing.T) {
	tr := newTestRack(t, rackOpts{noConfig: true})
	const b = "tin-p0b0"
	bus := tr.Bus(b)
	// Values that are not the register's reset on a board whose ports are
	// down and whose run never started: the endpoint ports.
	special := map[string]uint32{}
	for p := nExt; p < nPorts; p++ {
		special[fmt.Sprintf("PORT_STATUS[%d]", p)] = psUp
		special[fmt.Sprintf("CREDIT_INIT[%d]", p)] = resetVCFifo
		for v := 0; v < nVC; v++ {
			special[fmt.Sprintf("CREDITS[%d]", p*nVC+v)] = resetVCFifo
		}
	}
	for p := 0; p < nExt; p++ {
		special[fmt.Sprintf("PORT_STATUS[%d]", p)] = psCabled | psPeerTiN
	}
	for _, el := range tr.M.Elements() {
		r := el.Reg
		if !r.Access.Readable() {
			if v := tr.ReadAddr(b, el.Addr); v != 0 {
				t.Errorf("%s (write-only) reads 0x%x, want 0", el.Name, v)
			}
			continue
		}
		v := tr.ReadAddr(b, el.Addr)
		want, ok := special[el.Name]
		if !ok {
			want = r.Reset
		}
		if v != want {
			t.Errorf("%s reads 0x%x after programming, want 0x%x", el.Name, v, want)
		}
		if v&^widthMask(r.Width) != 0 {
			t.Errorf("%s reads 0x%x, wider than its %d bits", el.Name, v, r.Width)
		}
		switch r.Access {
		case bitstreams.RO, bitstreams.RC, bitstreams.Pop:
			err := bus.Write32(tr.Ctx, el.Addr, 0xFFFFFFFF)
			if !errors.Is(err, emu.ErrReadOnly) {
				t.Errorf("write to read-only %s: err = %v, want ErrReadOnly", el.Name, err)
			}
		case bitstreams.RW:
			for _, pat := range []uint32{0xFFFFFFFF, 0xA5A5A5A5, 0x5A5A5A5A, 0} {
				tr.WriteAddr(b, el.Addr, pat)
				want := pat & widthMask(r.Width)
				if clampsToMaxPacket[el.Name] {
					want = min(want, 4864)
					if !strings.Contains(strings.ToLower(r.Doc), "clamp") || !strings.Contains(r.Doc, "4864") {
						t.Errorf("%s clamps writes to 4864, its manifest doc does not say so: %q", el.Name, r.Doc)
					}
				}
				if got := tr.ReadAddr(b, el.Addr); got != want {
					t.Errorf("%s: wrote 0x%x, read 0x%x, want 0x%x (width %d)", el.Name, pat, got, want, r.Width)
				}
			}
			tr.WriteAddr(b, el.Addr, r.Reset)
		}
	}
	// Routing-table words hold what is written.
	for _, a := range []uint64{rtBase, rtBase + 0x1004, rtEnd - 4} {
		tr.WriteAddr(b, a, 0x85848382)
		if got := tr.ReadAddr(b, a); got != 0x85848382 {
			t.Errorf("table word 0x%x reads 0x%x", a, got)
		}
		tr.WriteAddr(b, a, 0)
	}
	// Every decoded address is in the manifest or the table window; the
	// rest is a bus error.
	for a := uint64(0); a < 0x1000; a += 4 {
		_, err := bus.Read32(tr.Ctx, a)
		_, inMap := tr.M.At(a)
		switch {
		case err == nil && !inMap:
			t.Errorf("address 0x%x decodes but the manifest has no register there", a)
		case err != nil && inMap:
			t.Errorf("address 0x%x is in the manifest but reads %v", a, err)
		case err != nil && !errors.Is(err, emu.ErrBusError):
			t.Errorf("address 0x%x: err = %v, want ErrBusError", a, err)
		}
		if !inMap {
			if err := bus.Write32(tr.Ctx, a, 1); !errors.Is(err, emu.ErrBusError) {
				t.Errorf("write 0x%x outside the map: err = %v, want ErrBusError", a, err)
			}
		}
	}
	for _, a := range []uint64{0x1000, rtBase - 4, rtEnd, logsBase - 4, logsEnd} {
		if _, err := bus.Read32(tr.Ctx, a); !errors.Is(err, emu.ErrBusError) {
			t.Errorf("read 0x%x: err = %v, want ErrBusError", a, err)
		}
		w, inWin := tr.M.Window(a)
		if inWin {
			t.Errorf("0x%x is outside the design's map but inside window %s", a, w.Name)
		}
	}
	// Every counter and pop register is documented as such.
	for _, r := range tr.M.Registers {
		if strings.HasSuffix(r.Name, "_DATA") && r.Access != bitstreams.Pop {
			t.Errorf("%s pops a FIFO but is declared %s", r.Name, r.Access)
		}
	}
}

// COUNTERS_CLEAR zeroes this board's counters, logs and samples and leaves
// the other boards' alone; the pop registers pop record by record.
func TestCountersClearAndPops(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.ur(10000, 1000, 20, ipgLog)
	if st := tr.run(); st != tgDone {
		t.Fatalf("TG_STATUS = %#x, want DONE", st)
	}
	const a, b = "tin-p0b0", "tin-p1b2"
	if tr.Read(a, "IPLOG_COUNT") == 0 || tr.Read(a, "LAT_COUNT[0]") == 0 || tr.Read(a, "SW_CELLS") == 0 {
		t.Fatalf("no delivery log, samples or cells on %s", a)
	}
	// One record pops in four words; the count drops by one.
	n := tr.Read(a, "IPLOG_COUNT")
	for i := 0; i < iplogWords-1; i++ {
		tr.Read(a, "IPLOG_DATA")
	}
	if got := tr.Read(a, "IPLOG_COUNT"); got != n {
		t.Errorf("IPLOG_COUNT = %d after 3 of 4 words, want %d (the record is not gone yet)", got, n)
	}
	tr.Read(a, "IPLOG_DATA")
	if got := tr.Read(a, "IPLOG_COUNT"); got != n-1 {
		t.Errorf("IPLOG_COUNT = %d after a record, want %d", got, n-1)
	}
	tr.Write(a, "COUNTERS_CLEAR", 1)
	for _, r := range []string{"IPLOG_COUNT", "LAT_COUNT[0]", "LAT_TOTAL[0]", "SW_CELLS", "IP_PKTS_SENT", "TX_CELLS[0]", "IPG_SENT", "TRACE_TOTAL"} {
		if v := tr.Read(a, r); v != 0 {
			t.Errorf("%s = %d after COUNTERS_CLEAR", r, v)
		}
	}
	if tr.Read(a, "IPLOG_DATA") != 0 || tr.Read(a, "LAT_DATA[0]") != 0 {
		t.Errorf("an empty FIFO pops non-zero")
	}
	if tr.Read(b, "SW_CELLS") == 0 || tr.Read(b, "IPG_SENT") != 20 {
		t.Errorf("COUNTERS_CLEAR on %s cleared %s's counters", a, b)
	}
	if tr.Read(a, "CREDITS[0]") != resetVCFifo {
		t.Errorf("COUNTERS_CLEAR touched credits: CREDITS[0] = %d", tr.Read(a, "CREDITS[0]"))
	}
}

// The logs window pops the same FIFOs as the _DATA registers, one word
// per address of a block, so a burst reads a record stream: two racks
// given the same run give the same words through either path.
func TestLogsWindowPopsTheSameFIFOs(t *testing.T) {
	words := func(window bool) (iplog, lat []uint32) {
		tr := newTestRack(t, rackOpts{})
		tr.ur(10000, 1000, 20, ipgLog)
		if st := tr.run(); st != tgDone {
			t.Fatalf("TG_STATUS = %#x, want DONE", st)
		}
		const board = "tin-p0b0"
		read := func(countReg, dataReg, fifoReg string, per int) []uint32 {
			n := int(tr.Read(board, countReg)) * per
			if n == 0 || n > logsBlock/4 {
				t.Fatalf("%s: %d words waiting, want 1..%d for this test", countReg, n, logsBlock/4)
			}
			out := make([]uint32, n)
			for i := range out {
				if window {
					out[i] = tr.ReadAddr(board, tr.Addr(fifoReg)+uint64(4*i))
				} else {
					out[i] = tr.Read(board, dataReg)
				}
			}
			if c := tr.Read(board, countReg); c != 0 {
				t.Errorf("%s = %d after popping every word", countReg, c)
			}
			return out
		}
		return read("IPLOG_COUNT", "IPLOG_DATA", "IPLOG_FIFO", iplogWords), read("LAT_COUNT[0]", "LAT_DATA[0]", "LAT_FIFO[0]", 1)
	}
	ipData, latData := words(false)
	ipWin, latWin := words(true)
	if !slices.Equal(ipData, ipWin) {
		t.Errorf("IP delivery log: %d words through IPLOG_DATA, %d through the window, not the same", len(ipData), len(ipWin))
	}
	if !slices.Equal(latData, latWin) {
		t.Errorf("latency samples: %v through LAT_DATA[0], %v through the window", latData, latWin)
	}
}
