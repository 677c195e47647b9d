package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/golden"
	_ "github.com/labrunner/labrunner/golden/models" // every golden model
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/selftest"
)

func bitstreamsCommand() *cli.Command {
	return &cli.Command{
		Name:  "bitstreams",
		Usage: "list the design catalogue, or inspect a bitstream file",
		Subcommands: []*cli.Command{
			{
				Name:   "list",
				Usage:  "list the catalogue's designs and their files",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "json"}},
				Action: bitstreamsList,
			},
			{
				Name:      "inspect",
				Usage:     "parse a bitstream file (.bit, .bin, .rbf) and print its header, size and sha256",
				ArgsUsage: "FILE",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "json"},
					&cli.StringFlag{Name: "kind", Usage: "also check the file against this board kind's part"},
				},
				Action: bitstreamsInspect,
			},
		},
	}
}

// bitstreamsList lists the catalogue's designs and their files.
func bitstreamsList(c *cli.Context) error {
	cat := bitstreams.Default()
	ms := cat.Designs()
	if c.Bool("json") {
		return json.NewEncoder(c.App.Writer).Encode(ms)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DESIGN\tVERSION\tCLOCK\tREGISTERS\tFILE\tPART\tSHA256")
	for _, m := range ms {
		for i := range m.Files {
			f := &m.Files[i]
			// Where the file is for a user: inside the binary
			// ("embedded:" and its path in the repository), or
			// on disk for a catalogue loaded from a directory;
			// never the manifest-relative "../files/...".
			fmt.Fprintf(tw, "%s\t%s\t%g MHz\t%d\t%s\t%s\t%.12s\n", m.Name, m.Version, m.ClockMHz, len(m.Registers), cat.FilePath(m, f), f.Part, f.SHA256)
		}
	}
	return tw.Flush()
}

// bitstreamsInspect parses a bitstream file and prints its header, size and sha256.
func bitstreamsInspect(c *cli.Context) error {
	if c.NArg() != 1 {
		return exitf(labrun.ExitConfig, "bitstreams inspect takes one FILE")
	}
	path := c.Args().First()
	data, err := bitstreams.ReadFile(path)
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	info, err := bitstreams.Parse(path, data)
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	if k := c.String("kind"); k != "" {
		kind, err := boards.Lookup(k)
		if err != nil {
			return withCode(labrun.ExitConfig, err)
		}
		if info.Part != "" && !bitstreams.SamePart(info.Part, kind.Part) {
			return exitf(labrun.ExitConfig, "%s is built for %s; a %s carries %s", path, info.Part, kind.Name, kind.Part)
		}
	}
	if c.Bool("json") {
		return json.NewEncoder(c.App.Writer).Encode(info)
	}
	return writeBitstreamInfo(c.App.Writer, path, info)
}

func goldenCommand() *cli.Command {
	return &cli.Command{
		Name:  "golden",
		Usage: "the golden models: list them, or print a model's predictions",
		Subcommands: []*cli.Command{
			bandsCommand(),
			{
				Name:   "list",
				Usage:  "list the models and their parameters",
				Action: goldenList,
			},
			{
				Name:      "predict",
				Usage:     "print a model's predictions, each with its source in the paper",
				ArgsUsage: "MODEL",
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "set", Usage: "parameter `KEY=VALUE` (repeatable; labrunner golden list shows each model's keys)"},
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
				},
				Action: goldenPredict,
			},
		},
	}
}

// writeBitstreamInfo prints what bitstreams inspect found, one field a
// line.
func writeBitstreamInfo(w io.Writer, path string, info *bitstreams.Info) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "file\t%s\nformat\t%s\n", path, info.Format)
	if info.Design != "" {
		fmt.Fprintf(tw, "design\t%s\n", info.Design)
	}
	if info.Part != "" {
		fmt.Fprintf(tw, "part\t%s\n", info.Part)
	}
	if info.Date != "" {
		fmt.Fprintf(tw, "built\t%s %s\n", info.Date, info.Time)
	}
	fmt.Fprintf(tw, "size\t%d bytes\npayload\t%d bytes\nsha256\t%s\n", info.Size, info.PayloadLen, info.SHA256)
	if info.Format == "rbf" {
		fmt.Fprintf(tw, "checksum\t0x%08X\n", info.Checksum)
	}
	return tw.Flush()
}

// goldenList lists the golden models and their parameters.
func goldenList(c *cli.Context) error {
	for _, n := range golden.Names() {
		m, _ := golden.Lookup(n)
		fmt.Fprintf(c.App.Writer, "%s: %s\n", n, m.Doc())
		for _, p := range m.Params() {
			fmt.Fprintf(c.App.Writer, "    --set %s=%s\t%s\n", p.Name, p.Default, p.Doc)
		}
	}
	return nil
}

// goldenPredict prints a model's predictions, each with its source.
func goldenPredict(c *cli.Context) error {
	if c.NArg() != 1 {
		return exitf(labrun.ExitConfig, "golden predict takes one MODEL (%s)", strings.Join(golden.Names(), ", "))
	}
	m, err := golden.Lookup(c.Args().First())
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	set := map[string]string{}
	for _, kv := range c.StringSlice("set") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return exitf(labrun.ExitConfig, "--set %q: write key=value", kv)
		}
		set[k] = v
	}
	exps, err := m.Predict(set)
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(exps)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tPARAMS\tEXPECTED\tSOURCE")
	for _, e := range exps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Metric, e.Params.String(), e.Describe(), e.Source)
	}
	return tw.Flush()
}

func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "the emulated rack",
		Subcommands: []*cli.Command{{
			Name:  "serve",
			Usage: "keep the emulated rack up and print its pseudo-terminals, for labrunner or any serial tool",
			Description: "Starts the lab's emulated boards (the default lab's when no --lab), programs each plan's design\n" +
				"on its boards (unless --no-program), and prints every board's console and UART-bridge\n" +
				"pseudo-terminal. Point a serial tool at a console (e.g. `screen /dev/pts/5 115200`) or a lab\n" +
				"file's `uart_bridge: {port: /dev/pts/6}` at a bridge. Runs until Ctrl-C.",
			Flags: []cli.Flag{labFlag(), faultFlag(), seedFlag(),
				&cli.BoolFlag{Name: "no-program", Usage: "leave the boards unprogrammed"},
				&cli.StringFlag{Name: "lab-out", Usage: "write a lab file whose boards reach the served rack through its pseudo-terminals, for regs, console and program while it runs"},
				&cli.BoolFlag{Name: "json", Usage: "print the board table as JSON"}},
			Action: func(c *cli.Context) error {
				ctx, stop := interruptible(c)
				defer stop()
				return labrun.Serve(ctx, labrun.ServeOptions{LabFile: c.String("lab"), Faults: c.StringSlice("fault"), Seed: c.Int64("seed"),
					NoProgram: c.Bool("no-program"), LabOut: c.String("lab-out"), JSON: c.Bool("json"), Log: logger(c),
					Stdout: c.App.Writer, Stderr: c.App.ErrWriter})
			},
		}},
	}
}

func faultsCommand() *cli.Command {
	return &cli.Command{
		Name:        "faults",
		Usage:       "list the faults the emulated rack can inject (--fault NAME@BOARD[:PORT][,k=v]); faults campaign runs the plans once per fault",
		Flags:       []cli.Flag{&cli.BoolFlag{Name: "json"}},
		Subcommands: []*cli.Command{campaignCommand()},
		Action: func(c *cli.Context) error {
			fs := emu.Faults()
			if c.Bool("json") {
				return json.NewEncoder(c.App.Writer).Encode(fs)
			}
			for _, f := range fs {
				design := f.Design
				if design == "" {
					design = "any"
				}
				target := map[string]string{"board": "@BOARD", "link": "@BOARD:PORT", "rack": ""}[f.Scope]
				var ps []string
				for k, v := range f.Params {
					ps = append(ps, k+"="+v)
				}
				sort.Strings(ps)
				fmt.Fprintf(c.App.Writer, "%s%s  (design %s)", f.Name, target, design)
				if f.Benign {
					fmt.Fprintf(c.App.Writer, "  benign: a run passes and shows it in its counters")
					if len(f.Severe) > 0 {
						fmt.Fprintf(c.App.Writer, "; fails at %s", strings.Join(f.Severe, ", "))
					}
				}
				if len(ps) > 0 {
					fmt.Fprintf(c.App.Writer, "  params: %s", strings.Join(ps, ", "))
				}
				fmt.Fprintf(c.App.Writer, "\n    %s\n", f.Doc)
			}
			return nil
		},
	}
}

func labCommand() *cli.Command {
	return &cli.Command{
		Name:  "lab",
		Usage: "check a lab file, or print the embedded default lab",
		Subcommands: []*cli.Command{
			{
				Name:      "check",
				Usage:     "load and validate a lab file and everything the nightly needs of it; every problem is listed with file:line and the fix",
				ArgsUsage: "[FILE] (the same as --lab FILE)",
				Description: "Checks the file itself, then, touching no board: each plan's bitstream for each board (it exists,\n" +
					"parses, was built for the board's part, is in a format the board's programmer loads, and the programmer\n" +
					"supports the part), each test's parameters, each fault's target and parameters (also those of --fault).\n" +
					"labrunner doctor checks the host and the boards themselves.",
				Flags:  []cli.Flag{labFlag(), faultFlag()},
				Action: labCheck,
			},
			{
				Name:   "default",
				Usage:  "print the embedded default lab (the emulated rack), to copy and adapt",
				Action: labDefault,
			},
			{
				Name:  "tests",
				Usage: "list the tests plans can name, per design, with their parameters, and what each design's plans and their boards take in their params:",
				Description: "For each design: (plan) lists the keys a plan of the design may give in its own params:, (board) the keys each board\n" +
					"of the plan may give in its params: (\"required\" where there is no default, as a board's place in a mesh), then\n" +
					"the design's tests with the keys of each test entry's params:. Each key shows its type and limits, default and\n" +
					"what it sets. lab check and the nightly refuse any other key, a value of another type or outside its limits,\n" +
					"and a required key left out, with the file:line, before a board is touched.",
				Action: labTests,
			},
		},
	}
}

// labCheck checks a lab file and everything the nightly needs of it.
func labCheck(c *cli.Context) error {
	if err := labFileArg(c); err != nil {
		return err
	}
	cat := bitstreams.Default()
	lab, err := loadLab(c, cat)
	if err != nil {
		return err
	}
	if err := labrun.CheckLab(c.Context, lab, cat, c.StringSlice("fault"), nil, c.App.ErrWriter); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%s: lab %s: %d boards, %d links, %d plans: ok\n", lab.Pos.File, lab.Name, len(lab.Boards), len(lab.Links), len(lab.Plans))
	return nil
}

// labDefault prints the embedded default lab.
func labDefault(c *cli.Context) error {
	_, err := c.App.Writer.Write(labconfig.DefaultSource())
	return err
}

// labTests lists the tests plans can name, per design, each with the
// parameters its plan entry may set (from the test's parameter struct):
// name, type and limits, default, and what it sets. Before a design's
// tests come the parameters its plans take in their own params: and each
// of their boards in its params: (the design's DesignParams).
func labTests(c *cli.Context) error {
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DESIGN\tTEST\tWHAT IT CHECKS / PARAMETERS (type, default, what it sets)")
	listed := map[string]bool{}
	for _, t := range selftest.Tests() {
		d := t.Design
		if d == "" {
			d = "(any)"
		} else if !listed[d] {
			listed[d] = true
			if err := listDesignParams(tw, d); err != nil {
				return err
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d, t.Name, t.Doc)
		if t.Params == nil {
			continue
		}
		if err := listParams(tw, t.Params); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// listDesignParams lists what a design's plans and boards take.
func listDesignParams(tw io.Writer, design string) error {
	dp, _ := selftest.ParamsOfDesign(design)
	for _, s := range []struct {
		where, doc string
		v          any
	}{
		{"(plan)", "the plan's own params:", dp.Plan},
		{"(board)", "each board's params: in the plan's boards:", dp.Board},
	} {
		if s.v == nil {
			s.v = struct{}{}
		}
		fs, err := labconfig.ParamFields(s.v)
		if err != nil {
			return err // RegisterSetup refuses such a declaration
		}
		doc := s.doc
		if len(fs) == 0 {
			doc += " none (lab check and the nightly refuse any key)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", design, s.where, doc)
		if err := listParams(tw, s.v); err != nil {
			return err
		}
	}
	return nil
}

// listParams lists a parameter struct's fields, one a line.
func listParams(tw io.Writer, v any) error {
	fs, err := labconfig.ParamFields(v)
	if err != nil {
		return err // the registries refuse such a declaration
	}
	for _, f := range fs {
		typ := f.Type
		if f.Limits != "" {
			typ += " (" + f.Limits + ")"
		}
		def := "default " + f.Default
		if f.Required {
			def = "required"
		}
		fmt.Fprintf(tw, "\t\t  %s\t%s\t%s\t%s\n", f.Name, typ, def, f.Doc)
	}
	return nil
}
