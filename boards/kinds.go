// Package boards holds the board kinds labrunner knows (their FPGA part,
// clocks, UART defaults, ports and the programmers that fit them) and the
// assembled Board: a lab file's board with its drivers opened.
package boards

import (
	"fmt"
	"sort"
	"strings"
)

// Kind is a model of board.
type Kind struct {
	Name   string // as written in lab files
	Title  string
	Vendor string // xilinx, intel
	// Part is the FPGA part, as Vivado or Quartus name it.
	Part string
	// RefClocksMHz are the oscillators a design can use, by name.
	RefClocksMHz map[string]float64
	// ConsoleBaud and BridgeBaud are the UART defaults.
	ConsoleBaud int
	BridgeBaud  int
	// Ports are the board's network cages, as named in lab links.
	Ports []string
	// Programmers that fit this kind, the first being the usual one.
	Programmers []string
	// Formats of bitstream files its programmers take.
	Formats []string
}

var kinds = map[string]Kind{
	"tebf0808": {
		Name: "tebf0808", Title: "Trenz TEBF0808 carrier with TE0808 (Zynq UltraScale+ ZU9EG)", Vendor: "xilinx",
		// ExaNet §3.1: the development platform is a Trenz TEBF0808 with an XCZU9EG.
		Part:         "xczu9eg-ffvc900-1-e",
		RefClocksMHz: map[string]float64{"gt_ref": 156.25, "pl_ref": 100, "ps_ref": 33.333},
		ConsoleBaud:  115200, BridgeBaud: 921600,
		// ExaNet §3.1: two SFP+ connectors per board.
		Ports:       []string{"sfp0", "sfp1"},
		Programmers: []string{"fpga_manager", "xsdb", "openfpgaloader", "emulated"},
		Formats:     []string{"bit", "bin"},
	},
	"zcu102": {
		Name: "zcu102", Title: "AMD Xilinx ZCU102 (Zynq UltraScale+ ZU9EG)", Vendor: "xilinx",
		Part:         "xczu9eg-ffvb1156-2-e",
		RefClocksMHz: map[string]float64{"gt_ref": 156.25, "user_si570": 300, "ps_ref": 33.333},
		ConsoleBaud:  115200, BridgeBaud: 921600,
		Ports:       []string{"sfp0", "sfp1", "sfp2", "sfp3"},
		Programmers: []string{"fpga_manager", "xsdb", "openfpgaloader", "emulated"},
		Formats:     []string{"bit", "bin"},
	},
	"ultra96": {
		Name: "ultra96", Title: "Avnet Ultra96 (Zynq UltraScale+ ZU3EG)", Vendor: "xilinx",
		// FPGA'20 switch paper §5: validated on an Ultra96 with an XCZU3EG.
		Part:         "xczu3eg-sbva484-1-e",
		RefClocksMHz: map[string]float64{"pl_ref": 100, "ps_ref": 33.333},
		ConsoleBaud:  115200, BridgeBaud: 921600,
		Ports:       nil,
		Programmers: []string{"fpga_manager", "xsdb", "openfpgaloader", "emulated"},
		Formats:     []string{"bit", "bin"},
	},
	// The Verilator co-simulation of rtl/ (the UART bridge and the design
	// bridge-example): its bridge UART is a pseudo-terminal the testbench
	// serves, its design is built into the simulator (programmer none).
	"verilator": {
		Name: "verilator", Title: "Verilator co-simulation of rtl/ (UART bridge + bridge-example)", Vendor: "sim",
		BridgeBaud:  921600,
		Programmers: []string{"none"},
	},
	"de5net": {
		Name: "de5net", Title: "Terasic DE5-Net (Stratix V GX 5SGXEA7N2F45C2)", Vendor: "intel",
		// Shoal §6.1: the prototype is built from DE5-Net boards.
		Part:         "5sgxea7n2f45c2",
		RefClocksMHz: map[string]float64{"sfp_ref": 644.53125, "osc_50": 50, "pcie_ref": 100},
		ConsoleBaud:  115200, BridgeBaud: 921600,
		Ports:       []string{"sfp0", "sfp1", "sfp2", "sfp3"},
		Programmers: []string{"quartus_pgm", "openfpgaloader", "emulated"},
		Formats:     []string{"rbf", "sof"},
	},
}

// Lookup returns the kind of that name.
func Lookup(name string) (Kind, error) {
	k, ok := kinds[strings.ToLower(name)]
	if !ok {
		return Kind{}, fmt.Errorf("unknown board kind %q (known: %s)", name, strings.Join(KindNames(), ", "))
	}
	return k, nil
}

// KindNames lists the known kinds, sorted.
func KindNames() []string {
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// PortsByKind maps each kind to its port names, for labconfig.Known.
func PortsByKind() map[string][]string {
	m := make(map[string][]string, len(kinds))
	for n, k := range kinds {
		m[n] = append([]string(nil), k.Ports...)
	}
	return m
}
