package shoal

import (
	"math"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The prototype's arithmetic, figure by figure from §4, §4.1, §6.1, §6.2,
// §3.3.4.
func TestPrototypeArithmetic(t *testing.T) {
	c := Prototype()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"slot ns (12 cycles, §6.1)", c.SlotNS, 76.8},
		{"guard ns (1 cycle, §6.1)", c.GuardNS, 6.4},
		{"MAC overhead ns (24 B = 3 cycles, §6.1)", c.MACOverheadNS, 19.2},
		{"usable ns (8 cycles, §6.1)", c.UsableNS(), 51.2},
		{"cell bytes (64 B at 10 Gb/s, §6.1)", float64(c.CellBytes()), 64},
		{"payload bytes (Fig. 5 header 8 B)", float64(c.PayloadBytes()), 56},
		{"epoch slots (N-1)", float64(c.EpochSlots()), 7},
		{"epoch ns (0.53 us, §6.1)", c.EpochNS(), 537.6},
		{"guard overhead (~10%, §6.1)", c.GuardOverhead(), 1.0 / 12},
		{"propagation ns (1.57 us, §6.2)", c.PropNS, 1576},
		{"node Gb/s", c.NodeGbps(), 64 * 8 / 76.8},
		{"delay slots 1+ceil((1576+57.6)/76.8) (reading S3)", float64(c.DelaySlots()), 23},
		{"header ns (8 B at 10 Gb/s, Fig. 5)", c.HeaderNS(), 6.4},
		{"NIC pipelines (5 + 4 cycles, §4.2)", c.PipelineNS, 57.6},
		{"feedback slots ceil((6.4+1576+57.6)/76.8) (reading S2)", float64(c.FeedbackSlots()), 22},
		{"buffer bytes 7x8x64", float64(c.BufferBytes()), 3584},
		{"on-chip bytes 7x64", float64(c.OnChipBufferBytes()), 448},
	}
	for _, ch := range checks {
		if !near(ch.got, ch.want, 1e-9*math.Max(1, ch.want)) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	// The paper prints the epoch as 0.53 us and the latency as 1.57 us.
	if got := math.Floor(c.EpochNS()/10) / 100; got != 0.53 {
		t.Errorf("epoch %v µs does not print as 0.53", c.EpochNS()/1000)
	}
	if got := math.Floor(c.PropNS/10) / 100; got != 1.57 {
		t.Errorf("propagation %v µs does not print as 1.57", c.PropNS/1000)
	}
}

// The simulated rack of §7.1 and the buffers of §3.3.4.
func TestRackArithmetic(t *testing.T) {
	c := Rack()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"usable ns (20.5, §7.1)", c.UsableNS(), 20.5},
		{"cell bytes (64 B at 25 Gb/s, §3.4)", float64(c.CellBytes()), 64},
		{"guard = reconfig + sync (2.5 + 0.25, §7.1)", c.ReconfigNS + c.SyncNS, c.GuardNS},
		{"epoch slots ceil(511/4)", float64(c.EpochSlots()), 128},
		{"epoch ns", c.EpochNS(), 2976},
		{"node link 4x25", c.NodeLinkGbps(), 100},
		{"buffer bytes 511x512x64 (17 MB, §3.3.4)", float64(c.BufferBytes()), 16744448},
		{"on-chip 511x64 (32 KB, §3.3.4)", float64(c.OnChipBufferBytes()), 32704},
		{"delay slots 1+ceil(15/23.25)", float64(c.DelaySlots()), 2},
		{"header ns (8 B at 25 Gb/s)", c.HeaderNS(), 2.56},
		{"feedback slots ceil((2.75+15+0)/23.25) (reading S2: no NIC pipelines stated)", float64(c.FeedbackSlots()), 1},
	}
	for _, ch := range checks {
		if !near(ch.got, ch.want, 1e-9*math.Max(1, ch.want)) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	// "resulting in max throughput of 90 Gbps" and "guard band overhead
	// around 10%": 88.1 Gb/s and 11.8%.
	if g := c.NodeGbps(); g < 85 || g > 90 {
		t.Errorf("node rate %v Gb/s, want about 90 (§7.1)", g)
	}
	if o := c.GuardOverhead(); o < 0.09 || o > 0.13 {
		t.Errorf("guard overhead %v, want around 10%% (§7.1)", o)
	}
	if mb := float64(c.BufferBytes()) / 1e6; math.Round(mb) != 17 {
		t.Errorf("buffer %v MB, §3.3.4 says 17 MB", mb)
	}
	if kb := float64(c.OnChipBufferBytes()) / 1e3; math.Round(kb) != 33 && math.Floor(kb) != 32 {
		t.Errorf("on-chip buffer %v KB, §3.3.4 says 32 KB", kb)
	}
	// 1024 nodes on 4 channels doubles the epoch (§7.3's second experiment);
	// 2x50 Gb/s channels double it too (the first).
	big := c
	big.Nodes, big.Radix = 1024, 46
	if got := big.EpochSlots(); got != 256 {
		t.Errorf("1024-node epoch %d slots, want 256", got)
	}
	two := c
	two.Channels, two.ChannelGbps = 2, 50
	if got := two.EpochSlots(); got != 256 || two.CellBytes() != 128 {
		t.Errorf("2x50 Gb/s: epoch %d slots, cell %d B; want 256 and 128", got, two.CellBytes())
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Config)
		want string
	}{
		"nodes":        {func(c *Config) { c.Nodes = 1 }, "nodes"},
		"radix odd":    {func(c *Config) { c.Radix = 5 }, "radix"},
		"too many":     {func(c *Config) { c.Nodes = 9 }, "k²/2"},
		"channels":     {func(c *Config) { c.Channels = 0 }, "channels"},
		"slot":         {func(c *Config) { c.SlotNS = math.NaN() }, "slot"},
		"no usable":    {func(c *Config) { c.SlotNS = 20 }, "usable"},
		"tiny cell":    {func(c *Config) { c.SlotNS = 32 }, "header"},
		"reconfig":     {func(c *Config) { c.ReconfigNS = 7 }, "reconfiguration"},
		"prop":         {func(c *Config) { c.PropNS = -1 }, "propagation"},
		"schedule":     {func(c *Config) { c.Schedule = 7 }, "schedule"},
		"channel rate": {func(c *Config) { c.ChannelGbps = 0 }, "rate"},
	} {
		c := Prototype()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error mentioning %q", name, err, tc.want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig(map[string]string{"config": "prototype", "slot_cycles": "24", "schedule": "propagation"})
	if err != nil {
		t.Fatal(err)
	}
	if !near(c.SlotNS, 153.6, 1e-9) || c.Schedule != PropagationAware || c.EpochSlots() != 8 {
		t.Errorf("slot %v, schedule %v, epoch %d", c.SlotNS, c.Schedule, c.EpochSlots())
	}
	c, err = ParseConfig(map[string]string{"config": "rack", "nodes": "1024"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Radix*c.Radix/2 < 1024 || (c.Radix-2)*(c.Radix-2)/2 >= 1024 {
		t.Errorf("radix %d is not the smallest that connects 1024 nodes", c.Radix)
	}
	for set, want := range map[string]string{
		"config=rack slot_cycles=12":       "does not apply",
		"config=prototype slot_ns=20":      "does not apply",
		"config=moon":                      "unknown",
		"config=prototype guard_cycles=0":  "guard_cycles",
		"config=prototype nodes=x":         "nodes",
		"config=prototype nodes=9 radix=4": "k²/2",
		"config=rack schedule=random":      "schedule",
	} {
		s := map[string]string{}
		for _, kv := range strings.Fields(set) {
			k, v, _ := strings.Cut(kv, "=")
			s[k] = v
		}
		if _, err := ParseConfig(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(%s) = %v, want an error mentioning %q", set, err, want)
		}
	}
}
