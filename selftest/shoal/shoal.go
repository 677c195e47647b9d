// Package shoal holds the Shoal plan's tests: the eight-board DE5-Net
// prototype of Shoal (NSDI 2019, §6.1) brought up, synchronised and
// bootstrapped through registers, then scored against golden/shoal — the
// schedule the switches apply (§3.2, Fig. 3/4), the time sync and guard band
// (§3.4, §6.1), the 7:1 incast of Fig. 10, the permutation throughput
// against slot size of Fig. 9, max-min fairness (§3.3.2, §7.2), the queue
// bound of Eq. 5 under the §7.3/§7.4 random workloads and an outcast's
// queues (at most one local cell, §3.3.3), failed links and
// nodes (§3.5, Table 1) and cell corruption (App. D).
//
// The tests talk to the rack through traffic/shoal, which reads and writes
// registers only, so the plan runs on the emulated rack and on a real rack
// by changing only the lab file. Expectations come from golden/shoal: its
// closed forms and reference algorithms, and its slot simulation fed with
// the exact flows the traffic generator ran.
//
// The plan names each board's role in its board parameters (role: nic or
// role: switch). Node ids follow the NIC boards in plan order, four cages
// each (board k's cage sfpP is node 4k+P); leaves and spines, and which cage
// is which logical switch port, come from the lab's cables (see
// traffic/shoal.Fabric).
package shoal

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	gs "github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

const design = "shoal"

// rackState is the rack the setup brought up, for every test.
var rackState = selftest.State[*rack]{Key: "shoal"}

// rack is what setup learnt and built, for the tests.
type rack struct {
	r   *ts.Rack
	fab *ts.Fabric
	// base is the configuration the plan runs on; tests that change it
	// (slot sizes, failures, bit errors) put it back.
	base    ts.Setup
	master  int
	payload int
	cell    int
	// set is golden/shoal's configuration of this rack (Predict's --set
	// values): the prototype (§6.1) with the lab's node count, slot and
	// the wire latency of its cables.
	set map[string]string
}

// golden returns the golden configuration of the rack at a slot size.
func (k *rack) golden(slotCycles int) (gs.Config, error) {
	s := k.settings(map[string]string{"slot_cycles": strconv.Itoa(slotCycles)})
	return gs.ParseConfig(s)
}

// settings is the rack's golden settings with extra keys on top.
func (k *rack) settings(extra map[string]string) map[string]string {
	s := map[string]string{}
	for key, v := range k.set {
		s[key] = v
	}
	for key, v := range extra {
		s[key] = v
	}
	return s
}

func rackOf(env *selftest.Env) (*rack, error) {
	k, ok := rackState.Get(env)
	if !ok {
		return nil, drivers.Setup("", "shoal tests", "see the setup error above", fmt.Errorf("the shoal rack was not brought up"))
	}
	return k, nil
}

// scheduleParams are the schedule test's parameters.
type scheduleParams struct {
	Epochs int `param:"epochs" min:"2" doc:"epochs run before the trace is read (the trace holds the last complete epoch)"`
}

// syncParams are the sync test's parameters.
type syncParams struct {
	Slots int `param:"slots" min:"1" doc:"idle slots watched for a cell outside the guard band"`
}

// incastParams are the incast test's parameters.
type incastParams struct {
	Dst     int  `param:"dst" doc:"the destination node"`
	Senders *int `param:"senders" default:"N-1 (7:1 on 8 nodes, §6.2)" doc:"how many nodes send to dst"`
	Cells   int  `param:"cells" min:"1" doc:"cells per flow (§6.2: seven 64 B cells)"`
}

// permutationParams are the permutation test's parameters.
type permutationParams struct {
	SlotCycles   []int `param:"slot_cycles" doc:"slot sizes in cycles, one run each"`
	WarmupEpochs int   `param:"warmup_epochs" doc:"epochs before the measured window"`
	Epochs       int   `param:"epochs" min:"1" doc:"epochs measured"`
	Seed         int   `param:"seed" doc:"seed of the permutation"`
}

// fairnessParams are the fairness test's parameters.
type fairnessParams struct {
	Flows []string `param:"flows" doc:"competing flows, each src>dst"`
	Cells int      `param:"cells" min:"1" doc:"cells per flow"`
}

// workloadParams are the parameters of the random-traffic tests
// (queue_bound, workload).
type workloadParams struct {
	Workload string   `param:"workload" oneof:"uniform,skewed,disaggregated" doc:"uniform pairs (§7.3) or the skewed disaggregated mix (§7.4)"`
	Flows    int      `param:"flows" doc:"flows drawn"`
	Load     float64  `param:"load" doc:"offered load L"`
	LoadGbps *float64 `param:"load_gbps" default:"half the node link" doc:"R of L = F/(R·N·τ), in Gb/s"`
	Seed     int      `param:"seed" doc:"seed of the workload"`
	MaxBytes int      `param:"max_bytes" doc:"cap on a flow's size in bytes (0: none)"`
	MaxSlots *int     `param:"max_slots" min:"1" default:"10x golden/shoal's slots for the same flows" doc:"slots the run may take before it is cut"`
}

// defaultWorkload is §7.3's workload at half load.
var defaultWorkload = workloadParams{Workload: "uniform", Flows: 150, Load: 0.5, Seed: 1, MaxBytes: 0}

// outcastParams are the outcast test's parameters.
type outcastParams struct {
	Senders []int `param:"senders" default:"every node" doc:"the nodes that take their turn as the sender"`
	Dests   *int  `param:"dests" default:"N-1" doc:"destinations of each sender's flows (2..N-1)"`
	Cells   int   `param:"cells" doc:"cells per flow (at least N, more than a flow's subflows)"`
}

// failureParams are the failure test's parameters.
type failureParams struct {
	Link         string `param:"link" default:"none" doc:"board:port of the cable to fail (give link or node)"`
	Node         *int   `param:"node" min:"0" default:"none" doc:"the node to fail (give link or node)"`
	SettleEpochs int    `param:"settle_epochs" min:"1" doc:"epochs for the failure to be detected"`
	Epochs       int    `param:"epochs" min:"1" doc:"epochs measured after it"`
	Cells        int    `param:"cells" min:"1" doc:"cells per flow of the traffic that continues"`
}

// CheckParams wants exactly one failure: a link or a node.
func (p failureParams) CheckParams() error {
	if (p.Link == "") == (p.Node == nil) {
		return &labconfig.ParamError{Key: "link", Msg: "give exactly one of link (a cable to fail) or node (a node to fail)",
			Fix: `write link: "board:port" or node: N`}
	}
	return nil
}

// planParams are what a Shoal plan takes in its params: the slot, its
// guard band and the node the others synchronise to (§3.4, §6.1).
type planParams struct {
	SlotCycles  int `param:"slot_cycles" min:"1" doc:"slot length in cycles, guard band included (§6.1: 12)"`
	GuardCycles int `param:"guard_cycles" min:"0" doc:"guard band in cycles (§3.4, §6.1: 1)"`
	SyncMaster  int `param:"sync_master" min:"0" doc:"the node every other synchronises its clock to (§3.4)"`
}

// GuardBandCycles is the plan's guard band in cycles, default included: the
// bring-up's TimeSync score reads it (selftest/bringup) without knowing the
// struct.
func (p planParams) GuardBandCycles() int { return p.GuardCycles }

// boardParams are what each board of a Shoal plan takes in its params:
// whether it holds NICs or is a switch.
type boardParams struct {
	Role string `param:"role" required:"true" doc:"nic (a board of NICs, node ids in plan order) or switch"`
}

// CheckBoards wants a rack: a board of NICs and a switch board at least
// (the setup builds the rack from the NICs cabled to switches, and a
// plan without both has no node to schedule).
func (p planParams) CheckBoards(boards []selftest.BoardParams) error {
	roles := map[string]int{}
	for _, b := range boards {
		roles[strings.ToLower(b.Params.(boardParams).Role)]++
	}
	if roles["nic"] == 0 || roles["switch"] == 0 {
		return &selftest.BoardParamError{Key: "boards", Msg: fmt.Sprintf("a Shoal rack needs a board of NICs and a switch board at least, the plan has %d nic and %d switch", roles["nic"], roles["switch"]),
			Fix: "give the plan NIC and switch boards cabled as docs/shoal.md prescribes; a single board is programmed and read with labrunner program and regs"}
	}
	return nil
}

// CheckParams wants nic or switch (in any case).
func (p boardParams) CheckParams() error {
	switch strings.ToLower(p.Role) {
	case "nic", "switch":
		return nil
	}
	return &labconfig.ParamError{Key: "role", Msg: fmt.Sprintf("%q is not nic or switch", p.Role), Fix: "write role: nic or role: switch"}
}

// corruptionParams are the corruption test's parameters.
type corruptionParams struct {
	BER   float64 `param:"ber" above:"0" doc:"injected bit-error rate"`
	Cells int     `param:"cells" min:"1" doc:"cells per flow"`
}

func init() {
	selftest.RegisterSetup(design, setup, selftest.DesignParams{
		Plan: planParams{SlotCycles: 12, GuardCycles: 1, SyncMaster: 0}, Board: boardParams{}}) // §6.1
	selftest.RegisterHealth(design, health)
	selftest.Register(selftest.Test{Name: "schedule", Design: design, Run: runSchedule,
		Params: scheduleParams{Epochs: 3},
		Doc: "every switch's multiplexers (sw_trace) hold, in every slot of an epoch, what its schedule memory says, " +
			"and that is golden/shoal's decomposition of the cyclic schedule (Decompose, CheckSlot; §3.2, Fig. 3/4); " +
			"every NIC's schedule memory sends to and hears from the golden peers"})
	selftest.Register(selftest.Test{Name: "sync", Design: design, Run: runSync,
		Params: syncParams{Slots: 20000},
		Doc: "time sync (§3.4, §6.1): one-way delay against the §6.2 propagation latency, residual offset within the " +
			"guard band, then idle slots with no cell outside the guard band (SW_MISALIGNED), corrupted, misrouted or missing"})
	selftest.Register(selftest.Test{Name: "incast", Design: design, Run: runIncast,
		Params: incastParams{Dst: 0, Cells: 7},
		Doc:    "N:1 synchronised incast (§6.2, Fig. 10): fastest, slowest and mean flow completion time and the largest queue, against golden/shoal's simulation of the same flows"})
	selftest.Register(selftest.Test{Name: "permutation", Design: design, Run: runPermutation,
		Params: permutationParams{SlotCycles: []int{12, 16, 24, 32, 48, 64, 96, 128}, WarmupEpochs: 200, Epochs: 2000, Seed: 1},
		Doc:    "full-permutation destination throughput against slot size (§6.2, Fig. 9), scored against golden/shoal's simulation of the same permutation and its max-min ceiling; the trend rises with the slot"})
	selftest.Register(selftest.Test{Name: "fairness", Design: design, Run: runFairness,
		Params: fairnessParams{Flows: []string{"1>0", "2>0", "3>0", "4>5"}, Cells: 2000},
		Doc:    "per-flow rates of competing flows against max-min water-filling over Shoal's virtual links (§3.3.2, §7.2)"})
	selftest.Register(selftest.Test{Name: "queue_bound", Design: design, Run: runQueueBound,
		Params: defaultWorkload,
		Doc: "random traffic (§7.3 Poisson arrivals, Pareto(1.05, mean 100 KB) sizes; §7.4 skewed mix): every queue within " +
			"Eq. 5 (1 + incast ≤ N) and every ready queue within Eq. 4 on every NIC, and every flow completes"})
	selftest.Register(selftest.Test{Name: "outcast", Design: design, Run: runOutcast,
		Params: outcastParams{Cells: 100},
		Doc: "an outcast from each sender in turn, long flows to `dests` nodes and nothing forwarded through the sender: " +
			"each node's largest queue against golden/shoal's band for the same flows (§3.3.3: at most one local cell in " +
			"a queue; §3.3.2: one cell per subflow at its intermediate; Eq. 5 taken apart, reading S62), and every flow completes"})
	selftest.Register(selftest.Test{Name: "workload", Design: design, Run: runWorkload,
		Params: defaultWorkload,
		Doc: "random traffic as queue_bound, scored against golden/shoal's simulation of the same flows: short-flow completion " +
			"times (median, 99th percentile), long-flow goodput and the largest aggregate queue of a node (§7.3, Fig. 15/16; §7.4, Fig. 18)"})
	selftest.Register(selftest.Test{Name: "failure", Design: design, Run: runFailure,
		Params: failureParams{SettleEpochs: 50, Epochs: 100, Cells: 40},
		Doc: "a failed link (taken out of service in the switch schedules) or a failed node (its NIC disabled): the slots it " +
			"costs are marked failed at the fraction golden/shoal counts (Table 1), detection is symmetric (§3.5), and " +
			"traffic between the pairs still connected completes"})
	selftest.Register(selftest.Test{Name: "corruption", Design: design, Run: runCorruption,
		Params: corruptionParams{BER: 1e-5, Cells: 200},
		Doc:    "cell corruption at an injected bit-error rate (App. D): corrupted cells are counted at the rate the BER gives, retransmitted, and every flow completes with each cell delivered once"})
}

// setup brings the rack up: roles, slot parameters, node ids, the cyclic
// schedule in every NIC and switch, the time sync and the bootstrap
// (docs/shoal.md, "Bring-up, register by register").
func setup(ctx context.Context, env *selftest.Env) error {
	pp, err := selftest.PlanParamsOf[planParams](env)
	if err != nil {
		return err
	}
	slot, guard, master := pp.SlotCycles, pp.GuardCycles, pp.SyncMaster
	var nics, switches []string
	regs := map[string]*selftest.Board{}
	for _, b := range env.Boards {
		bp, err := selftest.BoardParamsOf[boardParams](env, b)
		if err != nil {
			return err
		}
		if strings.EqualFold(bp.Role, "nic") {
			nics = append(nics, b.Name)
		} else {
			switches = append(switches, b.Name) // the decode took nic or switch only
		}
		regs[b.Name] = b
	}
	if n := len(env.Unhealthy); n > 0 {
		var names []string
		for b := range env.Unhealthy {
			names = append(names, b)
		}
		return drivers.Infra(strings.Join(names, ", "), "shoal setup", "every board of the rack is needed: a Shoal fabric has no spare path",
			fmt.Errorf("%d board(s) of the rack are out of the plan", n))
	}
	cables, err := cablesOf(env.Lab, func(b string) bool { return regs[b] != nil })
	if err != nil {
		return drivers.Setup("", "lab "+env.Lab.Name, "", err)
	}
	m := env.Design
	perBoard, radix, err := fabricSizes(m.Params)
	if err != nil {
		return drivers.Setup("", "design "+m.Name, "", err)
	}
	fab, err := ts.NewFabric(nics, perBoard, switches, radix, cables)
	if err != nil {
		return drivers.Setup("", "lab "+env.Lab.Name+" cabling", "cable the rack as docs/shoal.md prescribes", err)
	}
	rm := map[string]*regmap.Regs{}
	for n, b := range regs {
		rm[n] = b.Regs
	}
	tr, err := ts.NewRack(fab, nics, switches, rm)
	if err != nil {
		return drivers.Setup("", "shoal rack", "", err)
	}
	tr.Access = env.Deadlines.Register
	tr.Log = env.Log
	sched, err := ts.Cyclic(fab.N())
	if err != nil {
		return err
	}
	k := &rack{r: tr, fab: fab, master: master,
		base: ts.Setup{SlotCycles: slot, GuardCycles: guard, Schedule: sched},
		set: map[string]string{
			"config": "prototype", "nodes": strconv.Itoa(fab.N()), "radix": strconv.Itoa(radix),
			"slot_cycles": strconv.Itoa(slot), "guard_cycles": strconv.Itoa(guard), "schedule": "cyclic",
			// §6.2: node-to-node latency = wire + 3 switches + MAC/PHY at
			// the two ends; the wire is the lab's own cables.
			"prop_ns": strconv.FormatFloat(gs.PrototypePropNS(fab.PathWireNS(), gs.PrototypeSwitchHops, gs.SwitchCycles, gs.PrototypeNICNS), 'g', -1, 64),
		}}
	if _, err := k.golden(slot); err != nil {
		return drivers.Setup("", "plan "+env.Plan.Name, "", fmt.Errorf("golden/shoal refuses the rack's configuration: %w", err))
	}
	if err := k.bringUp(ctx); err != nil {
		return err
	}
	rackState.Set(env, k)
	return nil
}

// bringUp configures the base setup, synchronises and bootstraps.
func (k *rack) bringUp(ctx context.Context) error {
	if err := k.r.Configure(ctx, k.base); err != nil {
		return fmt.Errorf("configuring the rack: %w", err)
	}
	if _, err := k.r.Sync(ctx, k.master); err != nil {
		return err
	}
	if err := k.r.Boot(ctx); err != nil {
		return err
	}
	// The cell and payload the runner sizes flows with are golden's at the
	// plan's slot (reading S60), never the board's CELL_BYTES and
	// PAYLOAD_BYTES: the schedule test judges those registers.
	c, err := k.golden(k.base.SlotCycles)
	if err != nil {
		return err
	}
	k.cell, k.payload = c.CellBytes(), c.PayloadBytes()
	return nil
}

// restore puts the base configuration back after a test changed it: the
// base schedules, every NIC enabled, no injected bit errors, the base slot,
// and a fresh bootstrap.
func (k *rack) restore(ctx context.Context) error {
	if err := k.r.Stop(ctx); err != nil {
		return err
	}
	if err := k.r.Configure(ctx, k.base); err != nil {
		return err
	}
	for _, b := range append(append([]string{}, k.r.NICBoards...), k.r.SwitchBoards...) {
		if err := k.r.SetBER(ctx, b, 0); err != nil {
			return err
		}
	}
	if err := k.r.Boot(ctx); err != nil {
		return err
	}
	return k.r.ClearCounters(ctx)
}

// fabricSizes are the manifest's NICs per board and switch ports.
func fabricSizes(manifest map[string]string) (perBoard, radix int, err error) {
	perBoard, err = strconv.Atoi(manifest["nics_per_board"])
	if err != nil {
		return 0, 0, fmt.Errorf("manifest parameter nics_per_board: %w", err)
	}
	radix, err = strconv.Atoi(manifest["switch_ports"])
	if err != nil {
		return 0, 0, fmt.Errorf("manifest parameter switch_ports: %w", err)
	}
	return perBoard, radix, nil
}

// CheckCables wants the lab's cables between the plan's boards to make a
// rack (the fabric the setup builds, traffic/shoal), and the sync master
// to be one of its nodes.
func (p planParams) CheckCables(c selftest.Cabling) error {
	perBoard, radix, err := fabricSizes(c.Manifest)
	if err != nil {
		return err
	}
	var nics, switches []string
	for _, b := range c.Boards {
		if strings.EqualFold(b.Params.(boardParams).Role, "nic") {
			nics = append(nics, b.Name)
		} else {
			switches = append(switches, b.Name)
		}
	}
	cables, err := cablesOf(c.Lab, c.InPlan)
	if err != nil {
		return err
	}
	fab, err := ts.NewFabric(nics, perBoard, switches, radix, cables)
	if err != nil {
		return &selftest.BoardParamError{Key: "boards", Msg: err.Error(), Fix: "cable the rack as docs/shoal.md prescribes"}
	}
	if n := fab.N(); p.SyncMaster >= n {
		return &labconfig.ParamError{Key: "sync_master", Msg: fmt.Sprintf("%d is not a node of the rack (%d nodes)", p.SyncMaster, n),
			Fix: fmt.Sprintf("write sync_master: 0 .. %d", n-1)}
	}
	return nil
}

// cablesOf lists the lab's cables between the plan's boards (in).
func cablesOf(lab *labconfig.Lab, in func(board string) bool) ([]ts.Cable, error) {
	var out []ts.Cable
	for _, l := range lab.Links {
		if !in(l.A.Board) || !in(l.B.Board) {
			continue
		}
		a, err := ts.ParseCage(l.A.Port)
		if err != nil {
			return nil, fmt.Errorf("%s: cable %s:%s - %s:%s: %w", l.Pos, l.A.Board, l.A.Port, l.B.Board, l.B.Port, err)
		}
		b, err := ts.ParseCage(l.B.Port)
		if err != nil {
			return nil, fmt.Errorf("%s: cable %s:%s - %s:%s: %w", l.Pos, l.A.Board, l.A.Port, l.B.Board, l.B.Port, err)
		}
		out = append(out, ts.Cable{A: ts.Cage{Board: l.A.Board, Index: a}, B: ts.Cage{Board: l.B.Board, Index: b},
			LatencyNS: l.LatencyNS, BER: l.BER})
	}
	return out, nil
}

// health takes a board out of the plan when its clock is not locked to the
// rack's reference (§6.1) or it does not run the role setup gave it: a
// board, cable or power problem, not the design's. It does not look at
// anything the design's tests judge (the sync's figures, the switches'
// alignment), so that a design fault is never hidden as an unhealthy board.
func health(ctx context.Context, env *selftest.Env, b *selftest.Board) error {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	st, err := b.Regs.Read(ctx, "SYNC_STATUS")
	if err != nil {
		return err
	}
	if st&ts.SyncLocked == 0 {
		return fmt.Errorf("its core clock is not locked to the rack's reference clock (SYNC_STATUS.LOCKED clear): check the reference distribution (§6.1)")
	}
	want := uint32(ts.RoleSwitch)
	for _, n := range k.r.NICBoards {
		if n == b.Name {
			want = ts.RoleNIC
		}
	}
	role, err := b.Regs.Read(ctx, "ROLE")
	if err != nil {
		return err
	}
	if role != want {
		return fmt.Errorf("ROLE reads %d after setup wrote %d: the board does not hold its configuration", role, want)
	}
	return nil
}
