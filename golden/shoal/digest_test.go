package shoal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// simDigest is a SHA-256 of everything a simulation reports: every
// workload flow's result (times bit for bit) and every counter. The
// simulation is deterministic, so a digest pins its behaviour exactly:
// a change meant to make it faster must leave every digest below as it is.
func simDigest(r *SimResult) string {
	h := sha256.New()
	put := func(v uint64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	b2u := func(b bool) uint64 {
		if b {
			return 1
		}
		return 0
	}
	put(uint64(len(r.Flows)))
	for _, f := range r.Flows {
		put(uint64(f.Delivered))
		put(uint64(f.Window))
		put(b2u(f.Done))
		put(math.Float64bits(f.EndNS))
	}
	for _, v := range []int64{int64(math.Float64bits(r.EndNS)), r.Slots, int64(r.MaxQueue), int64(r.MaxNodeQueue),
		r.BoundViolations, int64(r.MaxIncast), int64(r.MaxOutcast), int64(r.Joined), int64(r.ShoalFlows),
		r.DataCells, r.EmptyCells, r.Forwarded} {
		put(uint64(v))
	}
	put(uint64(len(r.DeliveredPerNode)))
	for _, v := range r.DeliveredPerNode {
		put(uint64(v))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// digestCase is one pinned simulation.
type digestCase struct {
	name  string
	c     Config
	flows func() []Flow
	o     SimOptions
	want  string
	slow  bool // seconds of CPU: runs under -figures and in the benchmarks
}

func workloadFlows(c Config, w Workload) func() []Flow {
	return func() []Flow {
		f, err := w.Generate(c.PayloadBytes())
		if err != nil {
			panic(err)
		}
		return f
	}
}

func incastFlows(n, senders int, cells int64, dst int) func() []Flow {
	return func() []Flow {
		flows := make([]Flow, senders)
		for k := range flows {
			flows[k] = Flow{Src: (dst + 1 + k) % n, Dst: dst, Cells: cells}
		}
		return flows
	}
}

func permFlows(n, pairs int, seed uint64) func() []Flow {
	return func() []Flow {
		var flows []Flow
		for _, f := range permutationFlows(n, pairs, seed) {
			flows = append(flows, Flow{Src: f.Src, Dst: f.Dst, Cells: math.MaxInt64 / 4})
		}
		return flows
	}
}

// rack100k is the reference run of BenchmarkRack100kFlowsLoad05.
func rack100k() (Config, Workload) {
	c := Rack()
	return c, NewWorkload(Uniform, c.Nodes, 100000, 0.5, 1)
}

// rack100kDigest pins the result of the reference run.
const rack100kDigest = "2563bd74c6ffeec4aa22a57d25e73479"

// digestCases cover every rule of the simulation: the figures' incasts and
// permutations, random workloads on small and full racks, skewed traffic,
// failed nodes, the propagation-aware schedule, the options that turn the
// §3.3.3 optimisations off, the faulty NIC, measurement windows and runs
// cut short.
func digestCases() []digestCase {
	proto, rack, mid := Prototype(), Rack(), midRack()
	r64 := Rack()
	r64.Nodes, r64.Radix = 64, 16
	prop := r64
	prop.Schedule = PropagationAware
	prop65 := Rack()
	prop65.Nodes, prop65.Radix = 65, 16
	prop65.Schedule = PropagationAware
	p128 := Prototype()
	p128.SlotNS = 128 * CycleNS
	small := func(kind WorkloadKind, n, flows int, load float64, seed uint64) Workload {
		w := NewWorkload(kind, n, flows, load, seed)
		return w
	}
	protoW := small(Uniform, 8, 400, 0.7, 11)
	protoW.LoadGbps, protoW.MeanBytes = 5, 20000
	failedW := small(Skewed, 64, 1500, 0.7, 3)
	failedW.Failed = []int{5, 17, 40}
	c100k, w100k := rack100k()
	c07 := Rack()
	E := rack.EpochNS()
	return []digestCase{
		{name: "incast 7:1 prototype", c: proto, flows: incastFlows(8, 7, 7, 0), want: "d239dc199f64eaa46f29df9c067253f8"},
		{name: "incast 7:1 of 30 cells", c: proto, flows: incastFlows(8, 7, 30, 0), want: "8d1eb93639d9a646196fa6e96514ad56"},
		{name: "incast 7:1 of 30 cells no ready queues", c: proto, flows: incastFlows(8, 7, 30, 0), o: SimOptions{NoReadyQueues: true}, want: "5429069f68aacc8409e0f6c9a9cd393c"},
		{name: "incast 7:1 of 30 cells ignoring feedback", c: proto, flows: incastFlows(8, 7, 30, 0), o: SimOptions{IgnoreFeedback: true}, want: "ee3a3df3e771c75a89abaf6f79cfd095"},
		{name: "incast 16:1 mid rack", c: mid, flows: incastFlows(128, 16, 2032, 5), want: "cad067805fd7bce5169ff3db7bd4c3b7"},
		{name: "permutation prototype 128 cycles", c: p128, flows: permFlows(8, 8, 1),
			o: SimOptions{MeasureFromNS: 200 * p128.EpochNS(), UntilNS: 2200 * p128.EpochNS()}, want: "de0946dc8b4328b31aa101b759d4b9e2"},
		{name: "permutation prototype ignoring feedback", c: proto, flows: permFlows(8, 8, 1),
			o: SimOptions{IgnoreFeedback: true, MeasureFromNS: 100 * proto.EpochNS(), UntilNS: 700 * proto.EpochNS()}, want: "76b537b61c74afcb3a6c3ca75dc2b847"},
		{name: "permutation rack one pair", c: rack, flows: permFlows(512, 1, 1), o: SimOptions{MeasureFromNS: 15 * E, UntilNS: 55 * E}, want: "9e43cf896602e71fcd30640c0b7796d0"},
		{name: "permutation mid rack 128 pairs", c: mid, flows: permFlows(128, 128, 1), o: SimOptions{MeasureFromNS: 10 * mid.EpochNS(), UntilNS: 40 * mid.EpochNS()}, want: "b35348ae9b794c5c84404be575bca070"},
		{name: "permutation rack 512 pairs (Fig. 12)", c: rack, flows: permFlows(512, 512, 1), o: SimOptions{MeasureFromNS: 15 * E, UntilNS: 55 * E}, want: "2e874e0137fe2a08430a9c29c14d7db9", slow: true},
		{name: "random prototype", c: proto, flows: workloadFlows(proto, protoW), want: "c97fb2b44b5f96117c9185734366afc5"},
		{name: "random prototype ignoring feedback", c: proto, flows: workloadFlows(proto, protoW), o: SimOptions{IgnoreFeedback: true}, want: "1aa3aa1f6f80ca4fd54628f3d65766a9"},
		{name: "uniform 64 nodes load 0.9", c: r64, flows: workloadFlows(r64, small(Uniform, 64, 2000, 0.9, 2)), want: "386222168a0a010734d5f8a374ce2956"},
		{name: "uniform 64 nodes no ready queues", c: r64, flows: workloadFlows(r64, small(Uniform, 64, 1000, 0.5, 4)), o: SimOptions{NoReadyQueues: true}, want: "2ca9b1bc7356c0dd8ea7b1a6dca52c0b"},
		{name: "uniform 64 nodes no new-flow rule", c: r64, flows: workloadFlows(r64, small(Uniform, 64, 1000, 0.5, 4)), o: SimOptions{NoNewFlowRule: true}, want: "9680670361c88a7ec728582153ea79e0"},
		{name: "uniform 64 nodes ignoring feedback", c: r64, flows: workloadFlows(r64, small(Uniform, 64, 1000, 0.5, 4)), o: SimOptions{IgnoreFeedback: true}, want: "f2cee8589f0c1c4e7e656951a161e7c9"},
		{name: "skewed 64 nodes failed nodes", c: r64, flows: workloadFlows(r64, failedW), o: SimOptions{Failed: failedW.Failed}, want: "687ad193cfdecc7196b64faff565e736"},
		{name: "uniform 64 nodes propagation-aware", c: prop, flows: workloadFlows(prop, small(Uniform, 64, 1500, 0.7, 5)), want: "3f1b19525a373a36782a9326d2bd5555"},
		{name: "uniform 65 nodes propagation-aware", c: prop65, flows: workloadFlows(prop65, small(Uniform, 65, 1500, 0.7, 6)), want: "a458c8fd4ee73cf816195cbba0075e0a"},
		{name: "uniform 128 nodes window and cut", c: mid, flows: workloadFlows(mid, small(Uniform, 128, 3000, 0.6, 7)),
			o: SimOptions{MeasureFromNS: 100 * mid.EpochNS(), UntilNS: 1000 * mid.EpochNS()}, want: "d125d7f4d50771719249f6e07952dfef"},
		{name: "uniform rack load 0.5 2000 flows", c: rack, flows: workloadFlows(rack, small(Uniform, 512, 2000, 0.5, 1)), want: "80514967af6e24c1399c419af6c46cd2"},
		{name: "rack load 0.7 10,000 flows (Fig. 16)", c: c07, flows: workloadFlows(c07, NewWorkload(Uniform, 512, 10000, 0.7, 1)), want: "49906f119afeffe97ea38d19118ad3ad", slow: true},
		{name: "rack load 0.5 100,000 flows", c: c100k, flows: workloadFlows(c100k, w100k), want: rack100kDigest, slow: true},
	}
}

// The simulation's results are pinned bit for bit: every case's digest is
// the one recorded. The slow cases run under -figures (and the reference run
// in BenchmarkRack100kFlowsLoad05). Under the race detector one quick case
// a run, in rotation by day ($LABRUNNER_FAULT_ROTATION=N repeats day N);
// make test runs every quick case without it.
func TestSimulationDigests(t *testing.T) {
	cases := digestCases()
	if raceshare.Enabled && !*figures {
		rot := int(time.Now().UTC().Unix() / 86400)
		if s := os.Getenv("LABRUNNER_FAULT_ROTATION"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				t.Fatalf("LABRUNNER_FAULT_ROTATION=%q: want a number from 0", s)
			}
			rot = n
		}
		quick := slices.DeleteFunc(cases, func(c digestCase) bool { return c.slow })
		cases = quick[rot%len(quick) : rot%len(quick)+1]
		t.Logf("race detector on: case %q only (make test runs every case without it)", cases[0].name)
	}
	for _, tc := range cases {
		if tc.slow && !*figures {
			continue
		}
		r, err := Simulate(tc.c, tc.flows(), tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := simDigest(r); got != tc.want {
			t.Errorf("%s: digest %s, want %s (data %d, empty %d, forwarded %d, slots %d, max queue %d, joined %d)",
				tc.name, got, tc.want, r.DataCells, r.EmptyCells, r.Forwarded, r.Slots, r.MaxQueue, r.Joined)
		}
	}
}
