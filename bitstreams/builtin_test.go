package bitstreams

import (
	"strings"
	"testing"
)

// A builtin block (mgmt.yaml): a register map with no bitstream.
func TestBuiltinManifest(t *testing.T) {
	m, err := Default().Design("mgmt")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Builtin || len(m.Files) != 0 || len(m.Parts) != 0 || len(m.Registers) == 0 {
		t.Fatalf("mgmt: builtin %v, %d files, %d parts, %d registers", m.Builtin, len(m.Files), len(m.Parts), len(m.Registers))
	}
	if _, addr, err := m.Lookup("ROUTE[63]"); err != nil || addr != 0xF00001FC {
		t.Fatalf("ROUTE[63]: 0x%x %v", addr, err)
	}
	_, _, _, err = Default().FileFor("mgmt", "xczu9eg-ffvb1156-2-e")
	if err == nil || !strings.Contains(err.Error(), "built into every board") {
		t.Fatalf("FileFor(mgmt): %v", err)
	}
	builtin := strings.Replace(demo, "parts: [xczu9eg-ffvc900-1-e]", "builtin: true\nparts: []", 1)
	if _, err := ParseManifest("demo.yaml", []byte(builtin)); err != nil {
		t.Fatalf("a builtin manifest without parts: %v", err)
	}
	withFiles := strings.Replace(builtin, "files: []", "files:\n  - {path: demo.bit, part: xczu9eg-ffvc900-1-e, format: bit}", 1)
	if _, err := ParseManifest("demo.yaml", []byte(withFiles)); err == nil || !strings.Contains(err.Error(), "a builtin block has no bitstream") {
		t.Fatalf("a builtin manifest with files: %v", err)
	}
	noParts := strings.Replace(demo, "parts: [xczu9eg-ffvc900-1-e]", "parts: []", 1)
	if _, err := ParseManifest("demo.yaml", []byte(noParts)); err == nil || !strings.Contains(err.Error(), "lists no parts") {
		t.Fatalf("a design without parts: %v", err)
	}
}
