package labrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// ServeOptions is what `sim serve` is asked to do.
type ServeOptions struct {
	// LabFile is the lab file; empty: the embedded default lab.
	LabFile   string
	Catalogue *bitstreams.Catalogue // nil: bitstreams.Default()
	// Faults are emulator faults to inject; Seed (0: the lab's) the
	// emulator's seed.
	Faults []string
	Seed   int64
	// NoProgram leaves the boards unprogrammed.
	NoProgram bool
	// LabOut, if set, is where a lab file whose boards reach the served
	// rack through its pseudo-terminals is written.
	LabOut string
	// JSON prints the board table as JSON.
	JSON bool
	Log  *slog.Logger
	// Stdout gets the board table, Stderr the notes. Nil: discarded.
	Stdout, Stderr io.Writer
}

// ServedBoard is one board of a served rack and where to reach it.
type ServedBoard struct {
	Board   string `json:"board"`
	Kind    string `json:"kind"`
	Design  string `json:"design,omitempty"`
	Console string `json:"console"`
	Bridge  string `json:"bridge"`
}

// Serve starts the lab's emulated boards, programs each plan's design on
// its boards (unless NoProgram), prints every board's console and
// UART-bridge pseudo-terminal and keeps the rack up until ctx ends.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Catalogue == nil {
		o.Catalogue = bitstreams.Default()
	}
	lab, err := LoadLab(o.LabFile, o.Catalogue)
	if err != nil {
		return err
	}
	rack, err := StartRack(lab, o.Catalogue, o.Log, o.Faults, o.Seed)
	if err != nil {
		return err
	}
	if rack == nil {
		return setupError(fmt.Errorf("lab %s has no emulated boards", lab.Name))
	}
	defer rack.Close()
	designs := map[string]string{}
	if !o.NoProgram {
		if designs, err = programRack(ctx, lab, o.Catalogue, rack); err != nil {
			return err
		}
	}
	if o.LabOut != "" {
		if err := writeServedLab(o.LabOut, lab, rack); err != nil {
			return setupError(err)
		}
		fmt.Fprintf(orDiscard(o.Stderr), "wrote %s: its boards reach this rack through the pseudo-terminals below (labrunner regs read --lab %s --board NAME ID)\n", o.LabOut, o.LabOut)
	}
	if err := writeServed(orDiscard(o.Stdout), servedBoards(rack, designs), o.JSON); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// programRack programs each plan's design on its emulated boards and
// returns the design each board carries.
func programRack(ctx context.Context, lab *labconfig.Lab, cat *bitstreams.Catalogue, rack *emu.Rack) (map[string]string, error) {
	designs := map[string]string{}
	for _, p := range lab.Plans {
		m, err := cat.Design(p.Design)
		if err != nil {
			return nil, setupError(err)
		}
		for _, pb := range p.Boards {
			b, ok := rack.Board(pb.Board)
			if !ok {
				continue
			}
			_, f, data, err := cat.FileFor(m.Name, b.Kind().Part)
			if err != nil {
				return nil, setupError(err)
			}
			img, err := cat.Check(m, f.Path, data, b.Kind().Part)
			if err != nil {
				return nil, setupError(err)
			}
			pctx, cancel := drivers.Deadline(ctx, lab.Deadlines.Program)
			err = b.Programmer().Program(pctx, img)
			cancel()
			if err != nil {
				return nil, classError(err)
			}
			designs[b.Name()] = m.Name + " " + m.Version
		}
	}
	return designs, nil
}

func servedBoards(rack *emu.Rack, designs map[string]string) []ServedBoard {
	var rows []ServedBoard
	for _, b := range rack.Boards() {
		cp, _ := rack.ConsolePath(b.Name())
		bp, _ := rack.BridgePath(b.Name())
		rows = append(rows, ServedBoard{b.Name(), b.Kind().Name, designs[b.Name()], cp, bp})
	}
	return rows
}

func writeServed(w io.Writer, rows []ServedBoard, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BOARD\tKIND\tDESIGN\tCONSOLE\tBRIDGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Board, r.Kind, r.Design, r.Console, r.Bridge)
	}
	tw.Flush()
	_, err := fmt.Fprintln(w, "emulated rack running; Ctrl-C to stop")
	return err
}

// writeServedLab writes a lab file for a rack `sim serve` keeps up: each
// emulated board becomes a board reached through the rack's pseudo-terminals
// (console and UART bridge), so that regs, console and program act on the
// running rack instead of starting a throw-away one. Its plans name the same
// designs and boards (for --design defaults) with the generic registers
// test; its programmer is the fpga_manager the emulated boards do not have,
// so `program` on it fails cleanly: sim serve has programmed them.
func writeServedLab(path string, lab *labconfig.Lab, rack *emu.Rack) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# The boards of lab %s as `labrunner sim serve` serves them, reached through its pseudo-terminals.\n", lab.Name)
	b.WriteString("# Valid while that sim serve runs; written by labrunner sim serve --lab-out.\n")
	fmt.Fprintf(&b, "lab: %s-served\nseed: %d\n", lab.Name, lab.Seed)
	d := lab.Deadlines
	fmt.Fprintf(&b, "deadlines: {register: %s, program: %s, console: %s, test: %s, power: %s}\nboards:\n", d.Register, d.Program, d.Console, d.Test, d.Power)
	served := map[string]bool{}
	for _, eb := range rack.Boards() {
		cp, cerr := rack.ConsolePath(eb.Name())
		bp, berr := rack.BridgePath(eb.Name())
		if cerr != nil || berr != nil || cp == "" || bp == "" {
			continue
		}
		served[eb.Name()] = true
		k := eb.Kind()
		fmt.Fprintf(&b, "  - name: %s\n    kind: %s\n    dcn: true\n", eb.Name(), k.Name)
		fmt.Fprintf(&b, "    console: {port: %s, baud: %d}\n", cp, k.ConsoleBaud)
		fmt.Fprintf(&b, "    bus: {uart_bridge: {port: %s, baud: %d}}\n", bp, k.BridgeBaud)
		b.WriteString("    programmer: {type: fpga_manager, sysfs: /nonexistent/served-by-sim, firmware_dir: /nonexistent/served-by-sim}\n")
	}
	if len(served) == 0 {
		return fmt.Errorf("--lab-out: lab %s has no board served on pseudo-terminals", lab.Name)
	}
	var plans strings.Builder
	for _, p := range lab.Plans {
		var bs []string
		for _, pb := range p.Boards {
			if served[pb.Board] {
				bs = append(bs, "{board: "+pb.Board+"}")
			}
		}
		if len(bs) == 0 {
			continue
		}
		fmt.Fprintf(&plans, "  - name: %s\n    design: %s\n    boards: [%s]\n    tests: [{test: registers}]\n", p.Name, p.Design, strings.Join(bs, ", "))
	}
	if plans.Len() > 0 {
		b.WriteString("plans:\n" + plans.String())
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
