package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/console"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/selftest"
)

func boardFlag() cli.Flag {
	return &cli.StringFlag{Name: "board", Aliases: []string{"b"}, Usage: "board name from the lab file", Required: true}
}

// session is one board opened for a manual command, with the emulated rack
// behind it when the board is emulated.
type session struct {
	lab   *labconfig.Lab
	cat   *bitstreams.Catalogue
	rack  *emu.Rack
	board *boards.Board
}

func (s *session) close() {
	if s.board != nil {
		s.board.Close()
	}
	if s.rack != nil {
		s.rack.Close()
	}
}

// What a board command opens: only what it uses, so that a device it does
// not need (a bridge unplugged while a board is programmed over JTAG) does
// not stop it.
const (
	withBus = 1 << iota
	withConsole
)

func openSession(c *cli.Context, open int) (*session, error) {
	log := logger(c)
	s := &session{cat: bitstreams.Default()}
	var err error
	if s.lab, err = loadLab(c, s.cat); err != nil {
		return nil, err
	}
	name := c.String("board")
	var cfg *labconfig.Board
	for i := range s.lab.Boards {
		if s.lab.Boards[i].Name == name {
			cfg = &s.lab.Boards[i]
		}
	}
	if cfg == nil {
		var names []string
		for _, b := range s.lab.Boards {
			names = append(names, b.Name)
		}
		return nil, exitf(labrun.ExitConfig, "no board %q in lab %s (boards: %s)", name, s.lab.Name, strings.Join(names, ", "))
	}
	var seed int64
	if c.IsSet("seed") {
		seed = c.Int64("seed")
	}
	if s.rack, err = labrun.StartRack(s.lab, s.cat, log, c.StringSlice("fault"), seed); err != nil {
		return nil, err
	}
	ctx, cancel := drivers.Deadline(c.Context, s.lab.Deadlines.Console)
	defer cancel()
	s.board, err = boards.Open(ctx, *cfg, boards.Options{Emulator: labrun.Emulator(s.rack), Log: log, NoConsole: open&withConsole == 0, NoBus: open&withBus == 0})
	if err != nil {
		s.close()
		return nil, withCode(labrun.ExitCodeFor(err), err)
	}
	return s, nil
}

// designFor returns the design named by --design, else that of the first
// plan using the board.
func (s *session) designFor(c *cli.Context) (*bitstreams.Manifest, error) {
	name := c.String("design")
	if name == "" {
		for _, p := range s.lab.Plans {
			for _, pb := range p.Boards {
				if pb.Board == s.board.Name && name == "" {
					name = p.Design
				}
			}
		}
	}
	if name == "" {
		return nil, exitf(labrun.ExitConfig, "board %s is in no plan: say which design with --design", s.board.Name)
	}
	m, err := s.cat.Design(name)
	if err != nil {
		return nil, withCode(labrun.ExitConfig, err)
	}
	return m, nil
}

// program checks the catalogue's (or --file's) bitstream against the board
// and programs it.
func (s *session) program(c *cli.Context, m *bitstreams.Manifest) error {
	var path string
	var data []byte
	var err error
	if f := c.String("file"); f != "" {
		path = f
		if data, err = os.ReadFile(f); err != nil {
			return exitf(labrun.ExitConfig, "reading bitstream: %w", err)
		}
	} else {
		var file *bitstreams.File
		if _, file, data, err = s.cat.FileFor(m.Name, s.board.Kind.Part, program.Formats(s.board.Config.Programmer.Type, s.board.Kind.Vendor)...); err != nil {
			return withCode(labrun.ExitConfig, err)
		}
		path = s.cat.FilePath(m, file)
	}
	img, err := s.cat.Check(m, path, data, s.board.Kind.Part)
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	ctx, cancel := drivers.Deadline(c.Context, s.lab.Deadlines.Program)
	defer cancel()
	if err := s.board.Programmer.Program(ctx, img); err != nil {
		return withCode(labrun.ExitCodeFor(err), err)
	}
	fmt.Fprintf(c.App.ErrWriter, "%s: programmed %s %s (%s, sha256 %s)\n", s.board.Name, m.Name, m.Version, path, img.SHA256[:12])
	return nil
}

func programCommand() *cli.Command {
	return &cli.Command{
		Name:  "program",
		Usage: "check a bitstream against a board's part and program it",
		Description: "Programs the catalogue's file for the board's part (or --file). The file is parsed and checked\n" +
			"first; a wrong part, a truncated or corrupt file is refused and the board is not touched.\n" +
			"An emulated board lives only as long as this command: use `labrunner sim serve` to keep one up.",
		Flags: []cli.Flag{labFlag(), boardFlag(),
			&cli.StringFlag{Name: "design", Usage: "design from the catalogue (default: the board's plan)"},
			&cli.StringFlag{Name: "file", Usage: "bitstream file to program instead of the catalogue's"},
			faultFlag(), seedFlag()},
		Action: func(c *cli.Context) error {
			s, err := openSession(c, 0)
			if err != nil {
				return err
			}
			defer s.close()
			m, err := s.designFor(c)
			if err != nil {
				return err
			}
			return s.program(c, m)
		},
	}
}

func regsCommand() *cli.Command {
	common := []cli.Flag{labFlag(), boardFlag(),
		&cli.StringFlag{Name: "design", Usage: "register map to use (default: the board's plan design)"},
		&cli.BoolFlag{Name: "program", Usage: "program the design first", DefaultText: "yes for emulated boards, which start empty"},
		&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		faultFlag(), seedFlag()}
	return &cli.Command{
		Name:  "regs",
		Usage: "read, write or dump registers by name (from the design's map) or address",
		Subcommands: []*cli.Command{
			{
				Name: "read", Usage: "read registers", ArgsUsage: "NAME|ADDR...", Flags: common,
				Description: "NAME is a register (ID), an array element (LINK_STATUS[1]) or a field (TG_STATUS.DONE);\n" +
					"ADDR a byte address (0x10). Addresses outside the design's windows are refused.",
				Action: regsRead,
			},
			{Name: "write", Usage: "write a register", ArgsUsage: "NAME|ADDR VALUE", Flags: common, Action: regsWrite},
			{Name: "dump", Usage: "read every register without side effects (clear-on-read and FIFO registers are skipped)", Flags: common, Action: regsDump},
		},
	}
}

// openRegs opens the board's bus, programs the design first when asked
// (by default on emulated boards, which start empty) and gives its
// register map.
func openRegs(c *cli.Context) (*session, *regmap.Regs, error) {
	s, err := openSession(c, withBus)
	if err != nil {
		return nil, nil, err
	}
	m, err := s.designFor(c)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	prog := c.Bool("program")
	if !c.IsSet("program") {
		prog = s.board.Config.Emulated != nil
	}
	if prog {
		if err := s.program(c, m); err != nil {
			s.close()
			return nil, nil, err
		}
	}
	return s, regmap.New(s.board.Bus, m, s.board.Name), nil
}

func regsRead(c *cli.Context) error {
	s, r, err := openRegs(c)
	if err != nil {
		return err
	}
	defer s.close()
	out := map[string]string{}
	for _, a := range c.Args().Slice() {
		ctx, cancel := drivers.Deadline(c.Context, s.lab.Deadlines.Register)
		v, err := readOne(ctx, r, a)
		cancel()
		if err != nil {
			return withCode(labrun.ExitCodeFor(err), err)
		}
		out[a] = fmt.Sprintf("0x%08x", v)
		if !c.Bool("json") {
			fmt.Fprintf(c.App.Writer, "%-24s 0x%08x  %d\n", a, v, v)
		}
	}
	if c.Bool("json") {
		return json.NewEncoder(c.App.Writer).Encode(out)
	}
	return nil
}

func regsWrite(c *cli.Context) error {
	if c.NArg() != 2 {
		return exitf(labrun.ExitConfig, "regs write takes NAME|ADDR VALUE")
	}
	v, err := strconv.ParseUint(c.Args().Get(1), 0, 32)
	if err != nil {
		return exitf(labrun.ExitConfig, "value %q: %v", c.Args().Get(1), err)
	}
	s, r, err := openRegs(c)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := drivers.Deadline(c.Context, s.lab.Deadlines.Register)
	defer cancel()
	a := c.Args().Get(0)
	if err := writeOne(ctx, r, a, uint32(v)); err != nil {
		return withCode(labrun.ExitCodeFor(err), err)
	}
	if s.rack != nil {
		fmt.Fprintf(c.App.ErrWriter, "%s: wrote %s = 0x%x to an emulated board that lived only as long as this command: the write is gone with it.\n"+
			"To keep a rack up, run `labrunner sim serve --lab-out served.yaml` in another terminal and use --lab served.yaml.\n",
			s.board.Name, a, v)
	}
	return nil
}

func regsDump(c *cli.Context) error {
	s, r, err := openRegs(c)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := drivers.Deadline(c.Context, 10*s.lab.Deadlines.Register)
	defer cancel()
	vals, err := r.Dump(ctx)
	if err != nil {
		return withCode(labrun.ExitCodeFor(err), err)
	}
	if c.Bool("json") {
		return json.NewEncoder(c.App.Writer).Encode(vals)
	}
	return writeDump(c.App.Writer, vals)
}

// writeDump prints a register dump as a table.
func writeDump(w io.Writer, vals []regmap.Value) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REGISTER\tADDRESS\tACCESS\tVALUE\tFIELDS")
	for _, v := range vals {
		if v.Skipped != "" {
			fmt.Fprintf(tw, "%s\t0x%04x\t%s\t-\t(not read: %s)\n", v.Name, v.Addr, v.Access, v.Skipped)
			continue
		}
		var fs []string
		for _, f := range v.Fields {
			fs = append(fs, fmt.Sprintf("%s=%d", f.Name, f.Value))
		}
		fmt.Fprintf(tw, "%s\t0x%04x\t%s\t0x%08x\t%s\n", v.Name, v.Addr, v.Access, v.Value, strings.Join(fs, " "))
	}
	return tw.Flush()
}

func readOne(ctx context.Context, r *regmap.Regs, a string) (uint32, error) {
	if addr, err := strconv.ParseUint(a, 0, 64); err == nil {
		return r.ReadAddr(ctx, addr)
	}
	if name, field, ok := strings.Cut(a, "."); ok {
		return r.ReadField(ctx, name, field)
	}
	return r.Read(ctx, a)
}

// writeOne writes a register by address, field (NAME.FIELD) or name.
func writeOne(ctx context.Context, r *regmap.Regs, a string, v uint32) error {
	if addr, err := strconv.ParseUint(a, 0, 64); err == nil {
		return r.WriteAddr(ctx, addr, v)
	}
	if name, field, ok := strings.Cut(a, "."); ok {
		return r.WriteField(ctx, name, field, v)
	}
	return r.Write(ctx, a, v)
}

func consoleCommand() *cli.Command {
	return &cli.Command{
		Name:  "console",
		Usage: "talk to a board's console: send commands and expect answers, or interactively",
		Description: "With --send (repeatable) each line is sent and, with --expect, a regular expression is awaited\n" +
			"after the last one (exit 3 on timeout). Without --send, lines typed on stdin are sent and the\n" +
			"console's output is printed until end of input or Ctrl-C.",
		Flags: []cli.Flag{labFlag(), boardFlag(),
			&cli.StringSliceFlag{Name: "send", Usage: "line to send (repeatable)"},
			&cli.StringFlag{Name: "expect", Usage: "regular expression to wait for after the last --send"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "how long --expect waits"},
			faultFlag(), seedFlag()},
		Action: func(c *cli.Context) error {
			s, err := openSession(c, withConsole)
			if err != nil {
				return err
			}
			defer s.close()
			con := s.board.Console
			if con == nil {
				return exitf(labrun.ExitConfig, "board %s has no console in the lab file", s.board.Name)
			}
			if sends := c.StringSlice("send"); len(sends) > 0 {
				prompt := selftest.DefaultPrompt
				if cfg := s.board.Config.Console; cfg != nil && cfg.Prompt != "" {
					prompt = cfg.Prompt
				}
				err := console.SendLines(c.Context, con, prompt, sends, c.String("expect"), c.Duration("timeout"), c.App.Writer)
				return withCode(labrun.ExitCodeFor(err), err)
			}
			ctx, stop := interruptible(c)
			defer stop()
			err = console.Interact(ctx, con, c.App.Reader, c.App.Writer)
			return withCode(labrun.ExitCodeFor(err), err)
		},
	}
}
