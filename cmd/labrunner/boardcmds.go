package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
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
		return nil, exitf(selftest.ExitConfig, "no board %q in lab %s (boards: %s)", name, s.lab.Name, strings.Join(names, ", "))
	}
	if s.rack, err = startRack(c, s.lab, s.cat, log); err != nil {
		return nil, err
	}
	ctx, cancel := drivers.Deadline(c.Context, s.lab.Deadlines.Console)
	defer cancel()
	s.board, err = boards.Open(ctx, *cfg, boards.Options{Emulator: emulator(s.rack), Log: log, NoConsole: open&withConsole == 0, NoBus: open&withBus == 0})
	if err != nil {
		s.close()
		return nil, withCode(exitCodeFor(err), err)
	}
	return s, nil
}

func exitCodeFor(err error) int {
	switch drivers.ClassOf(err) {
	case drivers.ClassSetup:
		return selftest.ExitConfig
	case drivers.ClassInfra:
		return selftest.ExitInfra
	}
	return selftest.ExitFail
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
		return nil, exitf(selftest.ExitConfig, "board %s is in no plan: say which design with --design", s.board.Name)
	}
	m, err := s.cat.Design(name)
	if err != nil {
		return nil, withCode(selftest.ExitConfig, err)
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
			return exitf(selftest.ExitConfig, "reading bitstream: %w", err)
		}
	} else {
		var file *bitstreams.File
		if _, file, data, err = s.cat.FileFor(m.Name, s.board.Kind.Part, program.Formats(s.board.Config.Programmer.Type, s.board.Kind.Vendor)...); err != nil {
			return withCode(selftest.ExitConfig, err)
		}
		path = s.cat.FilePath(m, file)
	}
	img, err := s.cat.Check(m, path, data, s.board.Kind.Part)
	if err != nil {
		return withCode(selftest.ExitConfig, err)
	}
	ctx, cancel := drivers.Deadline(c.Context, s.lab.Deadlines.Program)
	defer cancel()
	if err := s.board.Programmer.Program(ctx, img); err != nil {
		return withCode(exitCodeFor(err), err)
	}
	fmt.Fprintf(os.Stderr, "%s: programmed %s %s (%s, sha256 %s)\n", s.board.Name, m.Name, m.Version, path, img.SHA256[:12])
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
	open := func(c *cli.Context) (*session, *regmap.Regs, error) {
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
	return &cli.Command{
		Name:  "regs",
		Usage: "read, write or dump registers by name (from the design's map) or address",
		Subcommands: []*cli.Command{
			{
				Name: "read", Usage: "read registers", ArgsUsage: "NAME|ADDR...", Flags: common,
				Description: "NAME is a register (ID), an array element (LINK_STATUS[1]) or a field (TG_STATUS.DONE);\n" +
					"ADDR a byte address (0x10). Addresses outside the design's windows are refused.",
				Action: func(c *cli.Context) error {
					s, r, err := open(c)
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
							return withCode(exitCodeFor(err), err)
						}
						out[a] = fmt.Sprintf("0x%08x", v)
						if !c.Bool("json") {
							fmt.Printf("%-24s 0x%08x  %d\n", a, v, v)
						}
					}
					if c.Bool("json") {
						return json.NewEncoder(os.Stdout).Encode(out)
					}
					return nil
				},
			},
			{
				Name: "write", Usage: "write a register", ArgsUsage: "NAME|ADDR VALUE", Flags: common,
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return exitf(selftest.ExitConfig, "regs write takes NAME|ADDR VALUE")
					}
					v, err := strconv.ParseUint(c.Args().Get(1), 0, 32)
					if err != nil {
						return exitf(selftest.ExitConfig, "value %q: %v", c.Args().Get(1), err)
					}
					s, r, err := open(c)
					if err != nil {
						return err
					}
					defer s.close()
					ctx, cancel := drivers.Deadline(c.Context, s.lab.Deadlines.Register)
					defer cancel()
					a := c.Args().Get(0)
					if addr, perr := strconv.ParseUint(a, 0, 64); perr == nil {
						err = r.WriteAddr(ctx, addr, uint32(v))
					} else if name, field, ok := strings.Cut(a, "."); ok {
						err = r.WriteField(ctx, name, field, uint32(v))
					} else {
						err = r.Write(ctx, a, uint32(v))
					}
					if err == nil && s.rack != nil {
						fmt.Fprintf(os.Stderr, "%s: wrote %s = 0x%x to an emulated board that lived only as long as this command: the write is gone with it.\n"+
							"To keep a rack up, run `labrunner sim serve --lab-out served.yaml` in another terminal and use --lab served.yaml.\n",
							s.board.Name, a, v)
					}
					return withCode(exitCodeFor(err), err)
				},
			},
			{
				Name: "dump", Usage: "read every register without side effects (clear-on-read and FIFO registers are skipped)", Flags: common,
				Action: func(c *cli.Context) error {
					s, r, err := open(c)
					if err != nil {
						return err
					}
					defer s.close()
					ctx, cancel := drivers.Deadline(c.Context, 10*s.lab.Deadlines.Register)
					defer cancel()
					vals, err := r.Dump(ctx)
					if err != nil {
						return withCode(exitCodeFor(err), err)
					}
					if c.Bool("json") {
						return json.NewEncoder(os.Stdout).Encode(vals)
					}
					tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
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
				},
			},
		},
	}
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
				return exitf(selftest.ExitConfig, "board %s has no console in the lab file", s.board.Name)
			}
			if sends := c.StringSlice("send"); len(sends) > 0 {
				return sendLines(c, s.board, sends, c.String("expect"), c.Duration("timeout"))
			}
			return interactive(c, con)
		},
	}
}

// shell is the console driver's prompt-aware side (drivers/console).
type shell interface {
	WaitPrompt(ctx context.Context, prompt string, retry time.Duration) (string, error)
	Command(ctx context.Context, cmd, prompt string) (string, error)
}

// sendLines types each line at the board's shell: first it waits for a
// prompt (a board just powered, or an emulated one just started, is still
// booting and would lose what is typed), then sends each line, waiting for
// the prompt after each but the last; after the last, expect (if given) is
// awaited and what arrived up to it printed. Each wait has the timeout.
func sendLines(c *cli.Context, b *boards.Board, lines []string, expect string, timeout time.Duration) error {
	con := b.Console
	prompt := selftest.DefaultPrompt
	if b.Config.Console != nil && b.Config.Console.Prompt != "" {
		prompt = b.Config.Console.Prompt
	}
	if sh, ok := con.(shell); ok {
		ctx, cancel := drivers.Deadline(c.Context, timeout)
		_, err := sh.WaitPrompt(ctx, prompt, 0)
		cancel()
		if err != nil {
			return withCode(exitCodeFor(err), err)
		}
		for _, l := range lines[:len(lines)-1] {
			ctx, cancel := drivers.Deadline(c.Context, timeout)
			out, err := sh.Command(ctx, l, prompt)
			cancel()
			if out != "" {
				fmt.Println(out)
			}
			if err != nil {
				return withCode(exitCodeFor(err), err)
			}
		}
		lines = lines[len(lines)-1:]
	}
	for _, l := range lines {
		ctx, cancel := drivers.Deadline(c.Context, timeout)
		err := con.Send(ctx, l)
		cancel()
		if err != nil {
			return withCode(exitCodeFor(err), err)
		}
	}
	if expect == "" {
		return nil
	}
	ctx, cancel := drivers.Deadline(c.Context, timeout)
	defer cancel()
	out, err := con.Expect(ctx, expect)
	fmt.Print(out)
	if err != nil {
		return withCode(exitCodeFor(err), err)
	}
	if !strings.HasSuffix(out, "\n") {
		fmt.Println()
	}
	return nil
}

func interactive(c *cli.Context, con drivers.Console) error {
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		out, err := con.Expect(rctx, `(?s).+`)
		cancel()
		fmt.Print(out)
		if err != nil && ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, drivers.ErrTimeout) {
			return withCode(exitCodeFor(err), err)
		}
		select {
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			sctx, cancel := drivers.Deadline(ctx, 5*time.Second)
			err := con.Send(sctx, l)
			cancel()
			if err != nil {
				return withCode(exitCodeFor(err), err)
			}
		default:
		}
	}
}
