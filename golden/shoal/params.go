package shoal

import (
	"fmt"
	"math"
	"strings"

	"github.com/labrunner/labrunner/golden/param"
)

// Config parameters of Predict and their meaning; prototype-only and
// rack-only knobs are refused under the other configuration, so that a slot
// set in cycles is never silently ignored.
var (
	prototypeOnly = []string{"slot_cycles", "guard_cycles", "mac_cycles", "perm_slot_cycles"}
	rackOnly      = []string{"slot_ns", "guard_ns", "reconfig_ns", "sync_ns"}
)

// ParseConfig builds the rack configuration from Predict's parameters
// (already merged with defaults by golden.Settings): the base configuration
// named by "config" with every knob that is set applied. The runner calls it
// with the same --set values it gives Predict, to build the same rack.
func ParseConfig(s map[string]string) (Config, error) {
	var c Config
	name := strings.ToLower(strings.TrimSpace(s["config"]))
	switch name {
	case "prototype", "":
		c = Prototype()
	case "rack":
		c = Rack()
	default:
		return c, fmt.Errorf("parameter config: %q unknown (want prototype or rack)", s["config"])
	}
	refused := rackOnly
	if c.Name == "rack" {
		refused = prototypeOnly
	}
	for _, k := range refused {
		if v, ok := s[k]; ok && strings.TrimSpace(v) != "" {
			return c, fmt.Errorf("parameter %s does not apply to config=%s (slots are counted in cycles only on the prototype, §6.1; in ns on the rack, §7.1)", k, c.Name)
		}
	}
	var err error
	setInt := func(key string, dst *int, lo, hi int) {
		if err != nil {
			return
		}
		if v, ok := s[key]; ok && strings.TrimSpace(v) != "" {
			n, e := param.Int(v, lo, hi)
			if e != nil {
				err = fmt.Errorf("parameter %s: %w", key, e)
				return
			}
			*dst = n
		}
	}
	setFloat := func(key string, dst *float64, lo, hi float64) {
		if err != nil {
			return
		}
		if v, ok := s[key]; ok && strings.TrimSpace(v) != "" {
			f, e := param.Float(v, lo, hi)
			if e != nil {
				err = fmt.Errorf("parameter %s: %w", key, e)
				return
			}
			*dst = f
		}
	}
	radixSet := strings.TrimSpace(s["radix"]) != ""
	setInt("nodes", &c.Nodes, 2, MaxNodes)
	setInt("radix", &c.Radix, 2, 2*MaxNodes)
	setInt("channels", &c.Channels, 1, MaxChannels)
	setFloat("channel_gbps", &c.ChannelGbps, 1e-3, 1e4)
	if c.Name == "prototype" {
		slot, guard, mac := 12, 1, 3
		setInt("slot_cycles", &slot, 1, 1<<20)
		setInt("guard_cycles", &guard, 0, 1<<20)
		setInt("mac_cycles", &mac, 0, 1<<20)
		c.SlotNS = float64(slot) * c.CycleNS
		c.GuardNS = float64(guard) * c.CycleNS
		c.MACOverheadNS = float64(mac) * c.CycleNS
		// The switch reconfigures in one cycle (§4.1); a guard band of
		// zero cycles leaves it no time, which Validate reports.
		c.ReconfigNS = CycleNS
		c.SyncNS = math.Max(c.GuardNS, 0)
	} else {
		setFloat("slot_ns", &c.SlotNS, 1e-3, 1e9)
		setFloat("guard_ns", &c.GuardNS, 0, 1e9)
		setFloat("reconfig_ns", &c.ReconfigNS, 0, 1e9)
		c.SyncNS = c.GuardNS - c.ReconfigNS
		setFloat("sync_ns", &c.SyncNS, 0, 1e9)
	}
	setFloat("prop_ns", &c.PropNS, 0, 1e9)
	setFloat("pipeline_ns", &c.PipelineNS, 0, 1e9)
	if err != nil {
		return c, err
	}
	if v := strings.TrimSpace(s["schedule"]); v != "" {
		if c.Schedule, err = ParseScheduleKind(v); err != nil {
			return c, fmt.Errorf("parameter schedule: %w", err)
		}
	}
	if !radixSet && c.Nodes > c.Radix*c.Radix/2 {
		// More nodes than the configuration's switches connect: the
		// smallest even radix that does (§3.2: k²/2 nodes).
		for c.Radix*c.Radix/2 < c.Nodes {
			c.Radix += 2
		}
	}
	if c.Name == "prototype" && c.ReconfigNS > c.GuardNS {
		return c, fmt.Errorf("parameter guard_cycles: the switch needs one cycle to reconfigure (§4.1, §6.1); want guard_cycles ≥ 1")
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}
