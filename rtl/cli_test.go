package rtl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binaries built once per test process: labrunner and the cosim command.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func binaries(t testing.TB) (labrunner, cosim string) {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "rtl-cli-"); binErr != nil {
			return
		}
		root := filepath.Join(Dir(), "..")
		for _, b := range []struct{ out, pkg string }{{"labrunner", "./cmd/labrunner"}, {"cosim", "./rtl/cosim"}} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "labrunner"), filepath.Join(binDir, "cosim")
}

// cosimLab starts `cosim --baud B --lab FILE` as docs/uart-bridge.md shows
// it and returns the lab file; the test stops it with SIGINT at its end,
// and it must then exit 0.
func cosimLab(t *testing.T, baud int) string {
	t.Helper()
	simBinary(t, baud) // build (or find) the simulator under the test's own deadline first
	_, cosim := binaries(t)
	lab := filepath.Join(t.TempDir(), "cosim.yaml")
	cmd := exec.Command(cosim, "--baud", fmt.Sprint(baud), "--lab", lab)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("cosim after SIGINT: %v", err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("cosim did not stop within 10 s of SIGINT")
		}
		for l := range lines {
			t.Log("cosim:", l)
		}
	})
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("cosim stopped before announcing its lab file")
			}
			t.Log("cosim:", l)
			if strings.HasPrefix(l, "lab file ") {
				return lab
			}
		case <-time.After(30 * time.Second):
			t.Fatal("cosim announced no lab file within 30 s")
		}
	}
}

// labrunner runs the labrunner binary and returns its output and exit code.
func labrunner(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin, _ := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("labrunner %s: %v\n%s", strings.Join(args, " "), err, out)
	return "", -1
}

// docCommands returns the commands docs/uart-bridge.md shows for the
// co-simulation: the cosim line, and the labrunner command lines.
func docCommands(t *testing.T) (cosim string, cmds [][]string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(Dir(), "..", "docs", "uart-bridge.md"))
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, l := range strings.Split(string(doc), "\n") {
		switch {
		case l == "```sh":
			in = true
		case l == "```":
			in = false
		case in && strings.HasPrefix(l, "go run ./rtl/cosim "):
			cosim = l
		case in && strings.HasPrefix(l, "labrunner "):
			cmds = append(cmds, strings.Fields(l)[1:])
		}
	}
	if cosim == "" || len(cmds) == 0 {
		t.Fatal("docs/uart-bridge.md shows no co-simulation commands")
	}
	return cosim, cmds
}

// TestRegsCommands runs `labrunner regs read/write/dump` on the RTL: the
// commands docs/uart-bridge.md ("Co-simulation") shows, then more.
func TestRegsCommands(t *testing.T) {
	cosimLine, shown := docCommands(t)
	if want := "go run ./rtl/cosim --baud 921600 --lab cosim.yaml &"; cosimLine != want {
		t.Fatalf("docs/uart-bridge.md shows %q; this test runs %q", cosimLine, want)
	}
	for _, baud := range Bauds {
		t.Run(fmt.Sprint(baud), func(t *testing.T) {
			lab := cosimLab(t, baud)
			for _, args := range shown {
				args = slices.Clone(args)
				for i := range args {
					if args[i] == "cosim.yaml" {
						args[i] = lab
					}
				}
				if out, code := labrunner(t, args...); code != 0 {
					t.Fatalf("labrunner %s (docs/uart-bridge.md): exit %d\n%s", strings.Join(args, " "), code, out)
				}
			}
			board := []string{"--lab", lab, "--board", "rtl-sim"}
			regs := func(sub string, args ...string) (string, int) {
				return labrunner(t, append(append([]string{"regs", sub}, board...), args...)...)
			}

			out, code := regs("read", "ID", "VERSION")
			if code != 0 || !strings.Contains(out, "0x42524558") || !strings.Contains(out, "0x00010000") {
				t.Fatalf("regs read ID VERSION: exit %d\n%s", code, out)
			}
			if out, code := regs("write", "SCRATCH", "0x1234"); code != 0 {
				t.Fatalf("regs write SCRATCH: exit %d\n%s", code, out)
			}
			if out, code := regs("write", "TG_PAYLOAD", "0x3c"); code != 0 {
				t.Fatalf("regs write TG_PAYLOAD: exit %d\n%s", code, out)
			}
			out, code = regs("read", "--json", "SCRATCH", "TG_PAYLOAD", "TG_STATUS.DONE", "0x8")
			var got map[string]string
			if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
				t.Fatalf("regs read --json: exit %d\n%s", code, out)
			}
			want := map[string]string{"SCRATCH": "0x00001234", "TG_PAYLOAD": "0x0000003c", "TG_STATUS.DONE": "0x00000000", "0x8": "0x00001234"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("regs read %s = %s, want %s", k, got[k], v)
				}
			}

			out, code = regs("dump", "--json")
			var dump []struct {
				Name    string `json:"name"`
				Value   uint32 `json:"value"`
				Skipped string `json:"skipped"`
			}
			if code != 0 {
				t.Fatalf("regs dump: exit %d\n%s", code, out)
			}
			if err := json.Unmarshal([]byte(out), &dump); err != nil {
				t.Fatalf("regs dump --json: %v\n%s", err, out)
			}
			seen := map[string]bool{}
			for _, v := range dump {
				seen[v.Name] = true
				switch v.Name {
				case "ID":
					if v.Value != 0x42524558 {
						t.Errorf("dump: ID 0x%08x", v.Value)
					}
				case "SCRATCH":
					if v.Value != 0x1234 {
						t.Errorf("dump: SCRATCH 0x%08x", v.Value)
					}
				case "CLOCK_KHZ":
					if v.Value != uint32(Config{Baud: baud}.ClkHz()/1000) {
						t.Errorf("dump: CLOCK_KHZ %d, the simulation runs at %d Hz", v.Value, Config{Baud: baud}.ClkHz())
					}
				case "FIFO_POP", "CTRL", "TG_CTRL", "FIFO_PUSH":
					if v.Skipped == "" {
						t.Errorf("dump read %s (pop or write-only)", v.Name)
					}
				}
			}
			if !seen["TG_CYCLES"] || !seen["FIFO_POP"] {
				t.Errorf("dump lacks registers of the map: %v", seen)
			}
			if out, code := regs("dump"); code != 0 || !strings.Contains(out, "SCRATCH") {
				t.Fatalf("regs dump (table): exit %d\n%s", code, out)
			}

			// Refusals: a read-only register, an address outside the map,
			// and programming a board whose design is fixed: setup errors.
			for _, args := range [][]string{{"write", "ID", "1"}, {"read", "0x2000"}, {"read", "--program", "ID"}} {
				if out, code := regs(args[0], args[1:]...); code != 2 {
					t.Errorf("regs %s: exit %d, want 2\n%s", strings.Join(args, " "), code, out)
				}
			}
		})
	}
}
