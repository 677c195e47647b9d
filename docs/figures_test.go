package docs

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// TestMakeFigures runs figures.md's `make figures`: the golden models'
// reproductions that take seconds of CPU (the 512-node Shoal rack, the PRR
// §5.1 runs, Aquila's full Clique), about 28 s of CPU in simulations that
// run without the race detector whichever binary starts them. In make
// test's race pass, whose CPUs are busy from start to end, the test takes
// its share, the target's command as make prints it (`make -n`: the three
// golden packages and -figures); the pass without the detector, whose last
// part leaves a CPU idle, runs the target itself (docs/ci.md, "The test
// suite").
func TestMakeFigures(t *testing.T) {
	t.Parallel()
	var shown *command
	blocks, err := shellBlocks("figures.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		for i, c := range b.cmds {
			if c.text == "make figures" {
				shown = &b.cmds[i]
			}
		}
	}
	if shown == nil {
		t.Fatal("figures.md shows no `make figures`")
	}
	if raceshare.Enabled {
		out, err := exec.Command("make", "-C", "..", "-n", "figures").CombinedOutput()
		if err != nil {
			t.Fatalf("make -n figures: %v\n%s", err, out)
		}
		for _, want := range []string{"./golden/shoal", "./golden/prr", "./golden/tin", "-figures"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("make figures does not run %s:\n%s", want, out)
			}
		}
		t.Log("race share: the target's command (make -n figures); the pass without the detector runs it")
		return
	}
	newPage(t, t.TempDir()).run(*shown, 10*time.Minute)
}
