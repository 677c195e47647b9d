package emu

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/labconfig"
)

func powerCycle(t testing.TB, b *Board) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.Power().Set(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := b.Power().Set(ctx, true); err != nil {
		t.Fatal(err)
	}
}

func TestConsoleBootAndCommands(t *testing.T) {
	b := testBoard(t, rackOpts{bootMS: 60})
	waitPrompt(t, b)
	c := openConsole(t, b)
	// The first boot's output may still be on its way (or waiting in the
	// pseudo-terminal) when the port opens: a command of its own marks
	// where it ends, so that the boot read below is the power cycle's.
	c.send("drain\r")
	c.expect(`drain: command not found\r\nroot@b0:~# `, 3*time.Second)
	powerCycle(t, b)
	boot := c.expect(`root@b0:~# `, 3*time.Second)
	for _, want := range []string{"Xilinx Zynq MP First Stage Boot Loader", "U-Boot 2023.01", "Chip:  zu9eg",
		"Starting kernel ...", "PetaLinux 2023.2 b0 ttyPS0", "b0 login: root (automatic login)"} {
		if !strings.Contains(boot, want) {
			t.Errorf("boot log lacks %q:\n%s", want, boot)
		}
	}
	if !regexp.MustCompile(`\[    0\.000000\] Booting Linux on physical CPU`).Match(c.raw) {
		t.Errorf("no kernel lines in the boot log:\n%q", c.raw)
	}
	// The power cycle took the design away.
	run := func(cmd, wantOut string) {
		t.Helper()
		c.send(cmd + "\r")
		got := c.expect(`root@b0:~# `, 2*time.Second)
		want := cmd + "\r\n" + wantOut + "root@b0:~# "
		if !regexp.MustCompile(`^` + want + `$`).MatchString(got) {
			t.Errorf("%q printed %q, want /%s/", cmd, got, want)
		}
	}
	run("id", fmt.Sprintf(`board=b0 kind=zcu102 part=xczu9eg-ffvb1156-2-e dna=0x%08x\r\n`, b.DeviceID()))
	run("status", `power=on design=none uptime=\d+\.\d\ds\r\n`)
	b.setDesignForTest(t, testDesignName)
	run("status", `power=on design=servetest version=0\.1\.0-test uptime=\d+\.\d\ds\r\n`)
	run("version", regexp.QuoteMeta(FirmwareVersion+" (PetaLinux 2023.2, Linux 6.1.30-xilinx-v2023.2)")+`\r\n`)
	run("frobnicate --now", `-sh: frobnicate: command not found\r\n`)
	run("", ``)
	run("help", `Commands:\r\n(  \w+ +.*\r\n){5}`)
	// "\n" and "\r\n" end lines as well, and DEL edits.
	c.send("ix\x7fd\r\n")
	if got := c.expect(`root@b0:~# `, 2*time.Second); !strings.Contains(got, "board=b0 ") {
		t.Errorf("edited line: %q", got)
	}
}

func TestConsoleUptimeGoesOn(t *testing.T) {
	b := testBoard(t, rackOpts{noPTY: true})
	waitPrompt(t, b)
	up := func() float64 {
		var v float64
		out := b.ConsoleCommand("status")
		if _, err := fmt.Sscanf(out[strings.Index(out, "uptime=")+len("uptime="):], "%fs", &v); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		return v
	}
	u1 := up()
	time.Sleep(60 * time.Millisecond)
	if u2 := up(); u2 < u1+0.04 || u1 < b.kernelBootEnd().Seconds() {
		t.Fatalf("uptime %v then %v (boot ends at %v)", u1, u2, b.kernelBootEnd())
	}
}

func TestConsoleHandleConsole(t *testing.T) {
	b := testBoard(t, rackOpts{})
	waitPrompt(t, b)
	var gotArgs []string
	b.HandleConsole("mos", func(args []string) string {
		gotArgs = args
		// A handler reads registers through the bus, as firmware does.
		v, err := b.Bus().Read32(context.Background(), tdID)
		if err != nil {
			return "mos: " + err.Error()
		}
		return fmt.Sprintf("mos: %s\nid=0x%08x", strings.Join(args, ","), v)
	})
	c := openConsole(t, b)
	c.send("mos  bootstrap   --node 3\n")
	got := c.expect(`root@b0:~# `, 2*time.Second)
	if want := fmt.Sprintf("mos  bootstrap   --node 3\r\nmos: bootstrap,--node,3\r\nid=0x%08x\r\nroot@b0:~# ", tdIDValue); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if strings.Join(gotArgs, " ") != "bootstrap --node 3" {
		t.Fatalf("args %q", gotArgs)
	}
	c.send("help\n")
	if got := c.expect(`root@b0:~# `, 2*time.Second); !strings.Contains(got, "  mos\r\n") {
		t.Fatalf("help does not list mos: %q", got)
	}
	b.HandleConsole("mos", nil)
	if out := b.ConsoleCommand("mos x"); out != "-sh: mos: command not found\n" {
		t.Fatalf("removed command: %q", out)
	}
	for _, bad := range []string{"", "two words", "id", "reboot"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("HandleConsole(%q) did not panic", bad)
				}
			}()
			b.HandleConsole(bad, func([]string) string { return "" })
		}()
	}
}

func TestConsoleRebootKeepsTheDesign(t *testing.T) {
	b := testBoard(t, rackOpts{bootMS: 80})
	waitPrompt(t, b)
	h := openHost(t, b)
	if v := h.read(tdFIFO); v != 1000 {
		t.Fatalf("first pop %d", v)
	}
	c := openConsole(t, b)
	c.send("reboot\n")
	got := c.expect(`root@b0:~# `, 3*time.Second)
	for _, want := range []string{"The system is going down for reboot NOW!", "Requesting system reboot", "U-Boot 2023.01", "PetaLinux 2023.2 b0"} {
		if !strings.Contains(got, want) {
			t.Errorf("reboot output lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(string(c.raw), "] reboot: Restarting system\r\n") {
		t.Errorf("no kernel reboot line:\n%q", c.raw)
	}
	// Non-stop forwarding: the design, its state and the bridge carried on.
	if v := h.read(tdFIFO); v != 1001 {
		t.Fatalf("pop after reboot %d, want 1001", v)
	}
	c.send("status\n")
	st := c.expect(`root@b0:~# `, 2*time.Second)
	m := regexp.MustCompile(`design=servetest version=\S+ uptime=(\d+\.\d+)s`).FindStringSubmatch(st)
	if m == nil {
		t.Fatalf("status after reboot: %q", st)
	}
	var up float64
	fmt.Sscan(m[1], &up)
	if up > b.kernelBootEnd().Seconds()+1 {
		t.Fatalf("uptime %v after a reboot", up)
	}
}

func TestConsoleIntelBoard(t *testing.T) {
	b := testBoard(t, rackOpts{kind: "de5net", bootMS: 40})
	waitPrompt(t, b)
	c := openConsole(t, b)
	// The first boot's output ends before the power cycle's (see
	// TestConsoleBootAndCommands).
	c.send("drain\r")
	c.expect(`drain: command not found\r\nroot@b0:~# `, 3*time.Second)
	powerCycle(t, b)
	boot := c.expect(`root@b0:~# `, 3*time.Second)
	if !strings.Contains(boot, "Nios II Boot Loader") || !strings.Contains(boot, FirmwareVersion+" on b0 ttyAL0") {
		t.Fatalf("boot log:\n%s", boot)
	}
	c.send("id\n")
	if got := c.expect(`root@b0:~# `, 2*time.Second); !strings.Contains(got, "kind=de5net part=5sgxea7n2f45c2 ") {
		t.Fatalf("id: %q", got)
	}
}

// TestConsoleNoise: kernel messages land in the middle of lines and after
// them; removing them restores the output exactly.
func TestConsoleNoise(t *testing.T) {
	b := testBoard(t, rackOpts{seed: 11})
	waitPrompt(t, b)
	c := openConsole(t, b)
	want := fmt.Sprintf("id\r\nboard=b0 kind=zcu102 part=xczu9eg-ffvb1156-2-e dna=0x%08x\r\nroot@b0:~# ", b.DeviceID())
	for i := 0; i < 100; i++ {
		c.send("id\n")
		got := c.expect(`root@b0:~# `, 2*time.Second)
		if got != want {
			t.Fatalf("command %d: clean output %q, want %q", i, got, want)
		}
	}
	raw := string(c.raw)
	all := kernelMsg.FindAllStringIndex(raw, -1)
	mid := 0
	for _, loc := range all {
		if loc[0] > 0 && raw[loc[0]-1] != '\n' && raw[loc[0]-1] != ' ' {
			mid++
		}
	}
	if len(all) == 0 || mid == 0 {
		t.Fatalf("%d kernel messages, %d inside a line, in 100 commands", len(all), mid)
	}
	t.Logf("%d kernel messages, %d inside a line", len(all), mid)
}

// TestNoisePlacement: where noise lands depends on the seed and the text
// only, and removing it restores the text.
func TestNoisePlacement(t *testing.T) {
	r, err := startRack(t, rackOpts{noPTY: true, seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Board("b0")
	marks := func() (string, int, int) {
		s := newShell(b, nil)
		var all strings.Builder
		lines, mid := 0, 0
		for i := 0; i < 400; i++ {
			text := fmt.Sprintf("line %d of the output, key=value pairs and so on\nsecond line %d\n", i, i)
			out := string(s.appendOutput(nil, text))
			if got := kernelMsg.ReplaceAllString(out, ""); got != strings.ReplaceAll(text, "\n", "\r\n") {
				t.Fatalf("noise removal gives %q from %q", got, out)
			}
			for _, loc := range kernelMsg.FindAllStringIndex(out, -1) {
				if loc[0] > 0 && out[loc[0]-1] != '\n' {
					mid++
				}
			}
			lines += 2
			all.WriteString(kernelMsg.ReplaceAllString(out, "<K>"))
			p := string(s.appendPrompt(nil))
			if got := kernelMsg.ReplaceAllString(p, ""); got != b.prompt() {
				t.Fatalf("prompt %q", p)
			}
			all.WriteString(kernelMsg.ReplaceAllString(p, "<K>"))
		}
		return all.String(), lines, mid
	}
	a, lines, mid := marks()
	if a2, _, _ := marks(); a2 != a {
		t.Fatal("noise placement differs between two shells of one seed")
	}
	if f := float64(mid) / float64(lines); f < noiseMidLine/2 || f > noiseMidLine*2 {
		t.Fatalf("%d of %d lines broken by noise (%.3f), want about %.2f", mid, lines, f, noiseMidLine)
	}
}

func TestConsoleSilentBoard(t *testing.T) {
	b := testBoard(t, rackOpts{faults: []labconfig.Fault{fault("board-silent", "b0")}})
	c := openConsole(t, b)
	powerCycle(t, b)
	c.send("\nid\n")
	deadline := time.Now().Add(400 * time.Millisecond)
	buf := make([]byte, 256)
	for time.Now().Before(deadline) {
		n, _ := c.port.Read(buf)
		if n > 0 {
			t.Fatalf("a silent board printed %q", buf[:n])
		}
	}
	if out := b.ConsoleCommand("id"); out != "" {
		t.Fatalf("in-process console of a silent board: %q", out)
	}
}

func TestConsolePoweredOff(t *testing.T) {
	b := testBoard(t, rackOpts{})
	waitPrompt(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	b.Power().Set(ctx, false)
	c := openConsole(t, b)
	c.send("id\n")
	buf := make([]byte, 256)
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		if n, _ := c.port.Read(buf); n > 0 {
			t.Fatalf("a board switched off printed %q", buf[:n])
		}
	}
	// What was typed while off is gone; after power-on the board boots.
	b.Power().Set(ctx, true)
	c.expect(`root@b0:~# `, 3*time.Second)
	c.send("version\n")
	if got := c.expect(`root@b0:~# `, 2*time.Second); !strings.HasPrefix(got, "version\r\n") {
		t.Fatalf("after power-on: %q", got)
	}
}
