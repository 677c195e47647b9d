package prr

import (
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/labrunner/labrunner/bitstreams"
)

// VariantCatalogue writes into dir a catalogue holding the prr design built
// with cfg instead of the parameters the embedded catalogue lists, and
// loads it. The catalogue's bitstream files do not depend on the build
// parameters (the emulated FPGA reads them from the manifest), so the
// variant reuses them; only the manifest's params, clock and the reset
// values of the registers that report them change. Tests pass the result
// as emu.Options.Catalogue to run the switch with other P, S, FIFO depths
// or packet widths than the catalogue's bitstream. dir must exist.
func VariantCatalogue(dir string, base *bitstreams.Catalogue, cfg Config) (*bitstreams.Catalogue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := base.Design(DesignName)
	if err != nil {
		return nil, err
	}
	v := *m
	v.ClockMHz = cfg.ClockMHz
	v.Params = map[string]string{
		ParamPorts:      strconv.Itoa(cfg.Ports),
		ParamS:          strconv.Itoa(cfg.S),
		ParamFIFODepth:  strconv.Itoa(cfg.FIFODepth),
		ParamPacketBits: strconv.Itoa(cfg.PacketBits),
	}
	// The build declares what it was built with: its configuration values
	// follow the variant's parameters, as a real build's manifest would.
	v.Config = append([]bitstreams.ConfigValue(nil), m.Config...)
	for i := range v.Config {
		c := &v.Config[i]
		switch c.Name {
		case ParamPorts:
			c.Value = float64(cfg.Ports)
		case ParamS:
			c.Value = float64(cfg.S)
		case ParamFIFODepth:
			c.Value = float64(cfg.FIFODepth)
		case ParamPacketBits:
			c.Value = float64(cfg.PacketBits)
		case "clock_khz":
			c.Value = math.Round(cfg.ClockMHz * 1000)
		default:
			continue
		}
		if c.Paper != nil && *c.Paper != c.Value {
			c.Deviation = "a variant build for the emulator's own tests"
		}
	}
	v.Registers = append([]bitstreams.Register(nil), m.Registers...)
	for i := range v.Registers {
		r := &v.Registers[i]
		switch r.Name {
		case "PORTS":
			r.Reset = uint32(cfg.Ports)
		case "STAGE_S":
			r.Reset = uint32(cfg.S)
		case "FIFO_DEPTH":
			r.Reset = uint32(cfg.FIFODepth)
		case "PKT_BITS":
			r.Reset = uint32(cfg.PacketBits)
		case "CLOCK_KHZ":
			r.Reset = uint32(math.Round(cfg.ClockMHz * 1000))
		}
		if r.Counter != nil && r.Counter.ClockMHz != 0 {
			c := *r.Counter
			c.ClockMHz = cfg.ClockMHz
			r.Counter = &c
		}
	}
	catDir := filepath.Join(dir, "catalogue")
	filesDir := filepath.Join(dir, "files")
	for _, d := range []string{catDir, filesDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("prr variant: %w", err)
		}
	}
	v.Files = append([]bitstreams.File(nil), m.Files...)
	for i := range v.Files {
		f := &v.Files[i]
		_, _, data, err := base.FileFor(DesignName, f.Part)
		if err != nil {
			return nil, fmt.Errorf("prr variant: %w", err)
		}
		name := path.Base(f.Path)
		if err := os.WriteFile(filepath.Join(filesDir, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("prr variant: %w", err)
		}
		f.Path = "../files/" + name
	}
	out, err := yaml.Marshal(&v)
	if err != nil {
		return nil, fmt.Errorf("prr variant: encode the manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(catDir, DesignName+".yaml"), out, 0o644); err != nil {
		return nil, fmt.Errorf("prr variant: %w", err)
	}
	cat, err := bitstreams.Load(catDir)
	if err != nil {
		return nil, fmt.Errorf("prr variant for %+v: the written catalogue does not load: %w", cfg, err)
	}
	return cat, nil
}
