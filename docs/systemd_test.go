package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unitValue returns the value of key in a systemd unit file's text.
func unitValue(text, key string) string {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+"="); ok {
			return v
		}
	}
	return ""
}

// TestSystemdUnitRunsOnTheEmulatedRack checks what docs/ci.md's systemd
// recipe relies on, since the recipe itself (sudo, systemctl) cannot run in
// a sandbox: the timer starts the service, and the service's ExecStart is a
// labrunner command line that runs — with the host's paths (/etc, /srv)
// pointed at scratch copies and one plan of the emulated rack.
func TestSystemdUnitRunsOnTheEmulatedRack(t *testing.T) {
	t.Parallel()
	svc, err := os.ReadFile("ci/labrunner-nightly.service")
	if err != nil {
		t.Fatal(err)
	}
	timer, err := os.ReadFile("ci/labrunner-nightly.timer")
	if err != nil {
		t.Fatal(err)
	}
	if unitValue(string(timer), "OnCalendar") == "" {
		t.Error("the timer has no OnCalendar=")
	}
	if unitValue(string(svc), "Type") != "oneshot" {
		t.Error("the service must be Type=oneshot: a timer starts it and it ends")
	}
	exec0 := unitValue(string(svc), "ExecStart")
	args := strings.Fields(exec0)
	if len(args) < 2 || filepath.Base(args[0]) != "labrunner" || args[1] != "nightly" {
		t.Fatalf("ExecStart=%q is not a labrunner nightly", exec0)
	}
	bin := labrunnerBinary(t)
	dir := t.TempDir()
	lab := filepath.Join(dir, "lab.yaml")
	out, err := exec.Command(filepath.Join(bin, "labrunner"), "lab", "default").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lab, out, 0o644); err != nil {
		t.Fatal(err)
	}
	repl := strings.NewReplacer("/etc/labrunner/lab.yaml", lab, "/srv/labrunner/runs", filepath.Join(dir, "runs"))
	var cmdArgs []string
	for _, a := range args[1:] {
		cmdArgs = append(cmdArgs, repl.Replace(a))
	}
	cmdArgs = append(cmdArgs, "--plan", "exanet-mesh", "--locks", filepath.Join(dir, "locks"))
	cmd := exec.Command(filepath.Join(bin, "labrunner"), cmdArgs...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CI=true")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the service's command line %v: %v\n%s", cmdArgs, err, tail(string(b)))
	}
}
