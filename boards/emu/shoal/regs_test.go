package shoal

import (
	"errors"
	"fmt"
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
		"CLOCK_KHZ": regClockKHz, "FLOW_TABLE_SIZE": regFlowTableSize, "RECORD_FIFO_DEPTH": regRecDepth,
		"ROLE": regRole, "SLOT_CYCLES": regSlotCycles, "GUARD_CYCLES": regGuardCycles, "EPOCH_SLOTS": regEpochSlots,
		"NODES": regNodes, "SYNC_SLOT": regSyncSlot, "SYNC_MASTER": regSyncMaster, "BER_INJECT": regBERInject,
		"TG_LIMIT_SLOTS": regTGLimit, "CELL_BYTES": regCellBytes, "PAYLOAD_BYTES": regPayloadBytes,
		"RECONF_CYCLES": regReconfCycles, "SW_LATENCY_CYCLES": regSwLatency, "NIC_TX_CYCLES": regNICTx,
		"NIC_RX_CYCLES": regNICRx, "CC_PIPE_CYCLES": regCCPipe, "CYCLE_LO": regCycleLo, "CYCLE_HI": regCycleHi,
		"SLOT_LO": regSlotLo, "SLOT_HI": regSlotHi, "SYNC_CTRL": regSyncCtrl, "SYNC_STATUS": regSyncStatus,
		"SYNC_OWD_PS": regSyncOWD, "SYNC_MAX_RESIDUAL_PS": regSyncMaxResid, "BOOT_CTRL": regBootCtrl,
		"BOOT_STATUS": regBootStatus, "RUN_SLOTS": regRunSlots, "TG_CTRL": regTGCtrl, "TG_STATUS": regTGStatus,
		"TG_RUN_SLOTS": regTGRunSlots, "COUNTERS_CLEAR": regCountersClear, "TG_FLOWS_TOTAL": regTGFlowsTotal,
		"TG_FLOWS_DONE": regTGFlowsDone,
		"NIC_CTRL":      nicBase + nicCtrl, "NODE_ID": nicBase + nicNodeID, "QUEUE_CAP": nicBase + nicQueueCap,
		"CC_CTRL": nicBase + nicCCCtrl, "FLOW_COUNT": nicBase + nicFlowCount, "NIC_STATUS": nicBase + nicStatus,
		"SYNC_OFFSET_PS": nicBase + nicSyncOffset, "SYNC_RESIDUAL_PS": nicBase + nicSyncResidual,
		"FAILED_PEERS_LO": nicBase + nicFailedLo, "FAILED_PEERS_HI": nicBase + nicFailedHi,
		"REC_COUNT": nicBase + nicRecCount, "REC_DATA": nicBase + nicRecData, "REC_OVERFLOW": nicBase + nicRecOverflow,
		"MAX_QUEUE_ANY": nicBase + nicMaxQueueAny, "MAX_QUEUE_TOTAL": nicBase + nicMaxQueueTotal,
		"MAX_READY_ANY": nicBase + nicMaxReadyAny,
		"MAX_QUEUE":     queuesMaxQueue, "QUEUE_LEN": queuesQueueLen, "MAX_READY": queuesMaxReady,
		"SW_CTRL": regSwCtrl, "SW_STATUS": regSwStatus, "SW_SLOTS": regSwSlots, "SW_MISALIGNED": regSwMisaligned,
		"SW_DEAD_ENDS": regSwDeadEnds, "SW_TRACE_EPOCH": regSwTraceEpoch, "SW_CELLS_IN": regSwCellsIn,
		"SW_CELLS_OUT": regSwCellsOut,
	}
	counters := []string{"TX_CELLS", "TX_LOCAL_CELLS", "TX_FWD_CELLS", "TX_EMPTY_CELLS", "TX_RETX_CELLS",
		"TX_NOTICE_CELLS", "RX_CELLS", "RX_DELIVERED_CELLS", "RX_FWD_CELLS", "RX_EMPTY_CELLS", "RX_CORRUPT_CELLS",
		"RX_DUPLICATE_CELLS", "RX_MISROUTED_CELLS", "FAILED_SLOTS", "SKIPPED_SLOTS", "DROPS", "FAIL_DISCARDS",
		"FLOWS_STARTED", "FLOWS_COMPLETED", "BAD_DESCRIPTORS", "LCD_SENT", "NOTICES_RECEIVED", "FB_SLOTS_SUM",
		"FB_COUNT", "TX_SLOTS", "RX_SLOTS"}
	if len(counters) != nCounters {
		t.Fatalf("%d counter names for %d counters", len(counters), nCounters)
	}
	for i, c := range counters {
		want[c] = nicBase + nicCountersBase + uint64(4*i)
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
		if strings.HasPrefix(r.Name, "TX_") || strings.HasPrefix(r.Name, "RX_") || r.Name == "NIC_CTRL" {
			if r.Count != nicsPerBoard || r.Stride != nicStride {
				t.Errorf("%s: a NIC register should be an array of %d with stride 0x%x", r.Name, nicsPerBoard, nicStride)
			}
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
	if m.Params["max_nodes"] != fmt.Sprint(maxNodes) || m.Params["max_slots"] != fmt.Sprint(maxSlots) ||
		m.Params["flow_table_entries"] != fmt.Sprint(flowTableSize) || m.Params["nics_per_board"] != fmt.Sprint(nicsPerBoard) {
		t.Errorf("manifest params %v disagree with the design's sizes", m.Params)
	}
}

func widthMask(w int) uint32 {
	if w >= 32 {
		return ^uint32(0)
	}
	return 1<<w - 1
}

// Every register behaves as the manifest says on a freshly programmed
// board: resets, access rights, widths, the FIFO pop, and addresses
// outside the map are bus errors.
func TestRegisterSemantics(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	const b = "shoal-nic0"
	bus := tr.Bus(b)
	for _, el := range tr.M.Elements() {
		r := el.Reg
		if !r.Access.Readable() {
			if v := tr.ReadAddr(b, el.Addr); v != 0 {
				t.Errorf("%s (write-only) reads 0x%x, want 0", el.Name, v)
			}
			continue
		}
		v := tr.ReadAddr(b, el.Addr)
		if r.Counter == nil && r.Name != "CYCLE_LO" && v != r.Reset {
			t.Errorf("%s reads 0x%x after programming, the manifest's reset is 0x%x", el.Name, v, r.Reset)
		}
		if r.Counter != nil && r.Name != "CYCLE_LO" && v != 0 {
			t.Errorf("counter %s reads %d after programming", el.Name, v)
		}
		switch r.Access {
		case bitstreams.RO, bitstreams.RC, bitstreams.Pop:
			err := bus.Write32(tr.Ctx, el.Addr, 0xFFFFFFFF)
			if !errors.Is(err, emu.ErrReadOnly) {
				t.Errorf("write to read-only %s: err = %v, want ErrReadOnly", el.Name, err)
			}
		case bitstreams.RW:
			if r.Name == "ROLE" {
				continue // changes what the board is; tested in the fabric tests
			}
			for _, pat := range []uint32{0xFFFFFFFF, 0xA5A5A5A5, 0x5A5A5A5A, 0} {
				tr.WriteAddr(b, el.Addr, pat)
				want := pat & widthMask(r.Width)
				if r.Name == "FLOW_COUNT" {
					want = min(want, flowTableSize) // the table holds 4096
				}
				if got := tr.ReadAddr(b, el.Addr); got != want {
					t.Errorf("%s: wrote 0x%x, read 0x%x, want 0x%x (width %d)", el.Name, pat, got, want, r.Width)
				}
			}
			tr.WriteAddr(b, el.Addr, r.Reset)
		}
	}
	// CELL_BYTES follows the slot (§6.1: 12 cycles, 1 guard, 3 MAC -> 64 B).
	tr.Write(b, "SLOT_CYCLES", 24)
	if got := tr.Read(b, "CELL_BYTES"); got != 160 {
		t.Errorf("CELL_BYTES at 24-cycle slots = %d, want (24-1-3)*8 = 160", got)
	}
	if got := tr.Read(b, "PAYLOAD_BYTES"); got != 152 {
		t.Errorf("PAYLOAD_BYTES = %d, want 152", got)
	}
	tr.Write(b, "SLOT_CYCLES", 12)
	// Memory windows hold what is written; the trace and queue windows do not take writes.
	for _, a := range []uint64{nicSchedBase + 0x404, swSchedBase + 0x3FC, flowsBase + 0x3FFFC} {
		tr.WriteAddr(b, a, 0x8001A003)
		if got := tr.ReadAddr(b, a); a == swSchedBase+0x3FC && got != 0xA003 || a != swSchedBase+0x3FC && got != 0x8001A003 {
			t.Errorf("window word 0x%x reads 0x%x", a, got)
		}
	}
	for _, a := range []uint64{swTraceBase, queuesMaxQueue + 4} {
		if err := bus.Write32(tr.Ctx, a, 1); !errors.Is(err, emu.ErrReadOnly) {
			t.Errorf("write 0x%x: err = %v, want ErrReadOnly", a, err)
		}
	}
	// Every decoded address is in the manifest or one of its memory windows.
	for a := uint64(0); a < 0xB000; a += 4 {
		_, err := bus.Read32(tr.Ctx, a)
		_, inMap := tr.M.At(a)
		w, inWin := tr.M.Window(a)
		memory := inWin && (w.Name == "nic_sched" || w.Name == "sw_sched" || w.Name == "sw_trace")
		switch {
		case err == nil && !inMap && !memory:
			t.Errorf("address 0x%x decodes but the manifest has no register there", a)
		case err != nil && (inMap || memory):
			t.Errorf("address 0x%x is in the manifest but reads %v", a, err)
		case err != nil && !errors.Is(err, emu.ErrBusError):
			t.Errorf("address 0x%x: err = %v, want ErrBusError", a, err)
		}
	}
	if _, err := bus.Read32(tr.Ctx, flowsBase+nicsPerBoard*flowsStride); !errors.Is(err, emu.ErrBusError) {
		t.Errorf("read past the flow tables: err = %v, want ErrBusError", err)
	}
}

// COUNTERS_CLEAR zeroes this board's counters and records, not the
// others', and REC_DATA pops a record word by word.
func TestCountersClearAndRecordPop(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	tr.loadFlows([]flow{{src: 1, dst: 4, bytes: 1000, tag: 77}, {src: 5, dst: 2, bytes: 56, startNS: 500, tag: 78}})
	if st := tr.runTraffic(0); st != tgDone {
		t.Fatalf("TG_STATUS = %#x, want DONE", st)
	}
	if got := tr.nodeReg(4, "REC_COUNT"); got != 1 {
		t.Fatalf("node 4 REC_COUNT = %d, want 1", got)
	}
	recs := tr.records(4)
	if r := recs[0]; r.tag != 77 || r.src != 1 || r.dst != 4 || r.bytes != 1000 || r.end <= r.start || r.firstTx < r.start || r.firstTx > r.end {
		t.Errorf("record = %+v", r)
	}
	if got := tr.nodeReg(4, "REC_COUNT"); got != 0 {
		t.Errorf("REC_COUNT after popping = %d", got)
	}
	if v := tr.Read("shoal-nic1", "REC_DATA[0]"); v != 0 {
		t.Errorf("REC_DATA on an empty FIFO = %#x, want 0", v)
	}
	if tr.nodeReg(2, "REC_COUNT") != 1 || tr.nodeReg(2, "FLOWS_COMPLETED") != 1 {
		t.Fatalf("node 2 did not complete its flow")
	}
	tr.Write("shoal-nic0", "COUNTERS_CLEAR", 1)
	if tr.nodeReg(2, "REC_COUNT") != 0 || tr.nodeReg(2, "FLOWS_COMPLETED") != 0 || tr.nodeReg(1, "TX_CELLS") != 0 {
		t.Errorf("COUNTERS_CLEAR on shoal-nic0 left counters of its NICs")
	}
	if tr.nodeReg(4, "TX_CELLS") == 0 || tr.nodeReg(5, "FLOWS_STARTED") != 1 {
		t.Errorf("COUNTERS_CLEAR on shoal-nic0 cleared shoal-nic1's counters")
	}
}
