// Command cosim runs the Verilator co-simulation of the UART bridge RTL and
// its example design (rtl/, docs/uart-bridge.md "Co-simulation") until it is
// interrupted (SIGINT or SIGTERM), and writes a lab file that points
// labrunner at it:
//
//	go run ./rtl/cosim --baud 921600 --lab cosim.yaml &
//	labrunner regs read --lab cosim.yaml --board rtl-sim --design bridge-example ID VERSION
//
// (The lab file has no plan, so register commands name the design.)
//
// The simulator is built once into .cache/rtl (Verilator must be installed:
// make rtl-tools). Exit codes: 0 stopped, 2 bad usage, 3 the simulator could
// not be built or started. A --lab path whose directory does not exist is
// bad usage, found before anything is built.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/labrunner/labrunner/rtl"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cosim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baud := fs.Int("baud", 921600, "line rate of the simulated bridge UART")
	lab := fs.String("lab", "", "write a lab file with the co-simulated board "+rtl.Board+" to this path")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *baud <= 0 {
		fmt.Fprintln(stderr, "usage: cosim [--baud N] [--lab FILE]")
		return 2
	}
	if *lab != "" {
		if fi, err := os.Stat(filepath.Dir(*lab)); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "cosim: --lab %s: no directory %s to write it in\n", *lab, filepath.Dir(*lab))
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := rtl.Config{Baud: *baud}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	bin, err := rtl.Build(bctx, cfg)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "cosim:", err)
		return 3
	}
	// Not under ctx: an interrupt stops the simulator through Close, which
	// lets it report its figures first.
	sim, err := rtl.Start(context.Background(), bin, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "cosim:", err)
		return 3
	}
	defer sim.Close()
	if *lab != "" {
		if err := os.WriteFile(*lab, []byte(rtl.LabFile(sim.Port, *baud)), 0o644); err != nil {
			fmt.Fprintln(stderr, "cosim:", err)
			return 3
		}
	}
	fmt.Fprintf(stdout, "bridge-example co-simulated at %d baud (CLK_HZ %d): bridge UART on %s\n", *baud, cfg.ClkHz(), sim.Port)
	if *lab != "" {
		fmt.Fprintf(stdout, "lab file %s: board %s\n", *lab, rtl.Board)
	}
	// Until interrupted (or the simulator stops by itself).
	select {
	case <-ctx.Done():
	case <-sim.Done():
		fmt.Fprintln(stderr, "cosim: the simulator stopped")
		return 3
	}
	if st, err := sim.Stats(); err == nil {
		fmt.Fprintf(stdout, "%d cycles simulated (%.3f s) in %.3f s, %.1f M cycles per CPU second\n",
			st.Cycles, st.Sim.Seconds(), st.Wall.Seconds(), st.CyclesPerCPUSecond()/1e6)
	}
	return 0
}
