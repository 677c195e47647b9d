package program

import (
	"os"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The embedded list is openFPGALoader 0.10.0's own: it knows the ZCU102's
// and TEBF0808's xczu9eg, neither the Ultra96's xczu3eg nor any Stratix V.
func TestOpenFPGALoaderKnownParts(t *testing.T) {
	l := KnownOpenFPGALoader()
	if len(l.FPGAs) < 100 {
		t.Fatalf("%d devices in the embedded list", len(l.FPGAs))
	}
	for part, want := range map[string]bool{
		"xczu9eg-ffvc900-1-e":  true,
		"xczu9eg-ffvb1156-2-e": true,
		"xczu3eg-sbva484-1-e":  false,
		"5sgxea7n2f45c2":       false,
		"xc7a35ticsg324-1L":    true,
		"5CGTFD5C5F23I7":       true, // "5CGT*5"
		"10CL025YU256C8G":      true,
		"":                     false,
	} {
		f, ok := l.Supports(part)
		if ok != want {
			t.Errorf("Supports(%q) = %v (%+v), want %v", part, ok, f, want)
		}
	}
	f, _ := l.Supports("xczu9eg-ffvc900-1-e")
	if f.IDCode != 0x04738093 || f.Family != "zynqmp" || f.Manufacturer != "xilinx" {
		t.Errorf("xczu9eg: %+v", f)
	}
	if f, _ := l.Supports("xc7a100tcsg324"); f.Family != "artix a7 100t" {
		t.Errorf("a family with spaces: %+v", f)
	}
}

func TestParseOpenFPGALoaderListings(t *testing.T) {
	cables, err := ParseListCables(readTestdata(t, "openfpgaloader-0.10.0-list-cables.txt"))
	if err != nil || len(cables) < 30 || !contains(cables, "digilent_hs2") || !contains(cables, "usb-blasterII") {
		t.Errorf("cables: %v %v", cables, err)
	}
	probes, err := ParseScanUSB(readTestdata(t, "openfpgaloader-0.10.0-scan-usb-none.txt"))
	if err != nil || len(probes) != 0 {
		t.Errorf("no probes: %v %v", probes, err)
	}
	// As openFPGALoader prints probes (a manufacturer longer than its
	// column pushes the serial along; a probe without a serial says none).
	scan := "empty\nBus device vid:pid       probe type      manufacturer serial               product\n" +
		"001 003    0x0403:0x6011 ft4232          Digilent     25163520B2FC         Digilent USB Device\n" +
		"001 005    0x0403:0x6010 FTDI2232        SecuringHardware.com TG110bb4             Tigard V1.1\n" +
		"020 005    0x0403:0x6010 FTDI2232        FTDI         none                 Dual RS232-HS\n"
	probes, err = ParseScanUSB(scan)
	if err != nil || len(probes) != 3 {
		t.Fatalf("probes: %+v %v", probes, err)
	}
	if p := probes[0]; p.Bus != 1 || p.Device != 3 || p.Serial != "25163520B2FC" || p.Product != "Digilent USB Device" || p.Type != "ft4232" {
		t.Errorf("probe 0: %+v", p)
	}
	if p := probes[1]; p.Manufacturer != "SecuringHardware.com" || p.Serial != "TG110bb4" {
		t.Errorf("probe 1: %+v", p)
	}
	if probes[2].Serial != "" {
		t.Errorf("probe 2: %+v", probes[2])
	}
	if v := ParseVersion(readTestdata(t, "openfpgaloader-0.10.0-version.txt")); v != "0.10.0" {
		t.Errorf("version %q", v)
	}
	if _, err := ParseListFPGA("usage: something else\n"); err == nil {
		t.Error("a listing without its header was accepted")
	}
}

func TestParseJTAGConfig(t *testing.T) {
	out := "1) USB-BlasterII [1-1.2]\n  02B040DD   5CGTFD9(A5|C5|D5|E5)/..\n  020A40DD   5M2210Z/EPM2210\n\n" +
		"2) DE5-Net [2-1.4]\n  029070DD   5SGXEA7H(1|2|3)/5SGXEA7K1/..\n" +
		"3) USB-Blaster [3-2]\n  Unable to read device chain - JTAG chain broken\n"
	cables, err := ParseJTAGConfig(out)
	if err != nil || len(cables) != 3 {
		t.Fatalf("%+v %v", cables, err)
	}
	if cables[1].Name != "DE5-Net [2-1.4]" || len(cables[1].Devices) != 1 || !strings.HasPrefix(cables[1].Devices[0], "029070DD 5SGXEA7") {
		t.Errorf("cable 2: %+v", cables[1])
	}
	if !strings.Contains(cables[2].Devices[0], "chain broken") {
		t.Errorf("cable 3: %+v", cables[2])
	}
	if c, err := ParseJTAGConfig("No JTAG hardware available\n"); err != nil || len(c) != 0 {
		t.Errorf("no hardware: %+v %v", c, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func FuzzParseToolListings(f *testing.F) {
	f.Add(openFPGALoaderList)
	f.Add("Bus device vid:pid       probe type      manufacturer serial               product\n001 003    0x0403:0x6011 ft4232          Digilent     25163520B2FC         Digilent USB Device\n")
	f.Add("cable name               vid:pid\ndigilent                 0x0403:6010\n")
	f.Add("1) DE5-Net [2-1.4]\n  029070DD   5SGXEA7H(1|2|3)/..\n")
	f.Add("openFPGALoader v0.10.0\n")
	f.Fuzz(func(t *testing.T, s string) {
		if l, err := ParseListFPGA(s); err == nil {
			pl := &PartList{FPGAs: l}
			pl.Supports("xczu9eg-ffvc900-1-e")
			pl.Supports(s)
		}
		ParseListCables(s)
		if ps, err := ParseScanUSB(s); err == nil {
			for _, p := range ps {
				if p.Serial == "none" {
					t.Fatalf("serial none kept: %+v", p)
				}
			}
		}
		ParseVersion(s)
		if cs, _ := ParseJTAGConfig(s); len(cs) > strings.Count(s, ")") {
			t.Fatalf("%d cables from %d parentheses", len(cs), strings.Count(s, ")"))
		}
	})
}
