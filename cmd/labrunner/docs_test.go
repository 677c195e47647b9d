package main

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// Every command docs/real-lab.md shows runs, and ends as the page says: lab
// check passes on the example lab; doctor, on a host without its rack,
// names every missing device and exits 3.
func TestRealLabDocCommands(t *testing.T) {
	exits := map[string]int{
		"labrunner lab check --lab docs/real-lab.yaml":     0,
		"labrunner doctor --lab docs/real-lab.yaml":        3,
		"labrunner doctor --lab docs/real-lab.yaml --json": 3,
	}
	f, err := os.Open("../../docs/real-lab.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in, ran := false, 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		}
		if !in || !strings.HasPrefix(line, "labrunner ") {
			continue
		}
		want, ok := exits[line]
		if !ok {
			t.Errorf("docs/real-lab.md shows %q, which this test does not run: add it with its exit code", line)
			continue
		}
		args := strings.Fields(strings.ReplaceAll(line, "docs/", "../../docs/"))[1:]
		args = append(args[:1:1], append([]string{"--locks", t.TempDir()}, args[1:]...)...)
		if args[0] == "lab" {
			args = strings.Fields(strings.ReplaceAll(line, "docs/", "../../docs/"))[1:]
		}
		code, out := runCLI(t, args...)
		noCrash(t, out)
		if code != want {
			t.Errorf("%s: exit %d, want %d:\n%s", line, code, want, out)
		}
		ran++
	}
	if ran != len(exits) {
		t.Errorf("ran %d of the %d commands: the page no longer shows some of them", ran, len(exits))
	}
}
