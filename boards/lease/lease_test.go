package lease

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func openDir(t *testing.T) (*Dir, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	d, err := Open(filepath.Join(t.TempDir(), "locks"), slog.New(slog.NewTextHandler(&lockedBuf{b: &logs}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return d, &logs
}

type lockedBuf struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func TestTwoRunnersContendForOneBoard(t *testing.T) {
	d, _ := openDir(t)
	// Two Dir values: two runners (flock conflicts between open file
	// descriptions, even within one process).
	d2, err := Open(d.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, held := 0, 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			dir := d
			if i%2 == 1 {
				dir = d2
			}
			_, err := dir.Acquire("zcu-1", Options{Command: "test"})
			mu.Lock()
			defer mu.Unlock()
			var he *HeldError
			switch {
			case err == nil:
				won++
			case errors.As(err, &he):
				held++
				if he.Holder.Board != "zcu-1" || !strings.Contains(err.Error(), "held by") {
					t.Errorf("held error %v", err)
				}
			default:
				t.Errorf("acquire: %v", err)
			}
		}(i)
	}
	wg.Wait()
	if won != 1 || held != 15 {
		t.Fatalf("%d runners won the board, %d were refused; want exactly 1 and 15", won, held)
	}
}

func TestReleaseOnlyByOwner(t *testing.T) {
	d, _ := openDir(t)
	l, err := d.Acquire("b", Options{Command: "one"})
	if err != nil {
		t.Fatal(err)
	}
	// Another runner's lease object for the same board cannot release it.
	other := &Lease{dir: d, info: l.info, ttl: time.Minute}
	other.info.Token = "not-the-owner"
	if err := other.Release(); !errors.Is(err, ErrLost) {
		t.Fatalf("release by a non-owner: %v, want ErrLost", err)
	}
	if i, _ := d.Get("b"); i == nil {
		t.Fatal("the owner's lease disappeared")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if i, _ := d.Get("b"); i != nil {
		t.Fatalf("still held after release: %v", i)
	}
}

func TestExpiredLeaseIsTakenOverWithALogLine(t *testing.T) {
	d, logs := openDir(t)
	if _, err := d.Acquire("b", Options{Command: "old", TTL: time.Minute, Manual: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Acquire("b", Options{}); err == nil {
		t.Fatal("a live manual reservation was taken")
	}
	d.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	l, err := d.Acquire("b", Options{Command: "new"})
	if err != nil {
		t.Fatalf("an expired lease was not taken over: %v", err)
	}
	if l.Info().Command != "new" || !strings.Contains(logs.String(), "taking over a stale lease") || !strings.Contains(logs.String(), "expired") {
		t.Errorf("takeover not logged: %s", logs.String())
	}
}

func TestRefreshKeepsAndLosesTheLease(t *testing.T) {
	d, _ := openDir(t)
	l, err := d.Acquire("b", Options{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	before := l.Info().Expires
	time.Sleep(5 * time.Millisecond)
	if err := l.Refresh(); err != nil || !l.Info().Expires.After(before) {
		t.Fatalf("refresh: %v, expiry %v -> %v", err, before, l.Info().Expires)
	}
	// Someone takes the lease after it expired: our refresh must say so.
	d2, _ := Open(d.Path(), nil)
	d2.now = func() time.Time { return time.Now().Add(time.Hour) }
	if _, err := d2.Acquire("b", Options{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(); !errors.Is(err, ErrLost) {
		t.Fatalf("refresh of a lost lease: %v", err)
	}
}

func TestRecycledPidDoesNotKeepALease(t *testing.T) {
	d, _ := openDir(t)
	l, err := d.Acquire("b", Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := l.Info()
	i.Start++ // same pid (ours, alive), another process start time
	if err := d.write(i); err != nil {
		t.Fatal(err)
	}
	if why := d.Stale(i); !strings.Contains(why, "no longer running") {
		t.Fatalf("a lease whose pid was recycled is not stale: %q", why)
	}
}

func TestManualReleaseNeedsOwnerOrForce(t *testing.T) {
	d, _ := openDir(t)
	if _, err := d.Acquire("b", Options{Manual: true, Owner: "somebody-else", Note: "bring-up"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReleaseOwned("b", false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("releasing another user's reservation: %v", err)
	}
	if i, err := d.ReleaseOwned("b", true); err != nil || i.Owner != "somebody-else" {
		t.Fatalf("forced release: %v %v", i, err)
	}
}

func TestBadBoardNamesAreRefused(t *testing.T) {
	d, _ := openDir(t)
	for _, n := range []string{"../etc/passwd", "a/b", ".hidden", ""} {
		if _, err := d.Acquire(n, Options{}); err == nil {
			t.Errorf("board name %q accepted", n)
		}
	}
}

func TestStateAndBoards(t *testing.T) {
	d, _ := openDir(t)
	if err := d.UpdateState("b1", func(s *State) { s.Design, s.Health = "exanet", "good" }); err != nil {
		t.Fatal(err)
	}
	d.Acquire("b2", Options{})
	s, _ := d.ReadState("b1")
	if s.Design != "exanet" || s.Health != "good" {
		t.Errorf("state %+v", s)
	}
	names, _ := d.Boards()
	if strings.Join(names, ",") != "b1,b2" {
		t.Errorf("boards %v", names)
	}
}

// A holder killed with SIGKILL leaves its lease file behind; the next runner
// takes it over at once (the pid is dead), without waiting for the expiry.
func TestHolderKilledWithSIGKILLIsTakenOver(t *testing.T) {
	if os.Getenv("LEASE_HOLDER_DIR") != "" {
		holdAndWait()
		return
	}
	d, logs := openDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHolderKilledWithSIGKILLIsTakenOver$")
	cmd.Env = append(os.Environ(), "LEASE_HOLDER_DIR="+d.Path())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf) // the child says "held" once it holds the lease
	if !strings.Contains(string(buf[:n]), "held") {
		cmd.Process.Kill()
		t.Fatalf("the holder did not take the lease: %q", buf[:n])
	}
	if _, err := d.Acquire("victim", Options{}); err == nil {
		t.Fatal("a live holder's lease was taken")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	l, err := d.Acquire("victim", Options{Command: "after the kill"})
	if err != nil {
		t.Fatalf("the killed holder's lease was not taken over: %v", err)
	}
	if !strings.Contains(logs.String(), "no longer running") {
		t.Errorf("takeover not logged with its reason: %s", logs.String())
	}
	l.Release()
}

func holdAndWait() {
	d, err := Open(os.Getenv("LEASE_HOLDER_DIR"), nil)
	if err != nil {
		os.Exit(2)
	}
	if _, err := d.Acquire("victim", Options{Command: "holder", TTL: time.Hour}); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(time.Hour)
}

// TestSymlinkInLockDirIsNeverFollowed: a <board>.lock (or .lease, .state)
// planted as a symbolic link to another of the user's files is refused,
// naming it, and the target is neither chmod-ed nor written.
func TestSymlinkInLockDirIsNeverFollowed(t *testing.T) {
	for _, ext := range []string{".lock", ".lease", ".state"} {
		t.Run(ext, func(t *testing.T) {
			d, _ := openDir(t)
			target := filepath.Join(t.TempDir(), "precious")
			if err := os.WriteFile(target, []byte("mine\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(d.Path(), "zcu-1"+ext)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			_, aerr := d.Acquire("zcu-1", Options{Command: "test"})
			serr := d.UpdateState("zcu-1", func(s *State) { s.Design = "x" })
			if ext != ".state" && aerr == nil {
				t.Errorf("Acquire through a planted %s link succeeded", ext)
			}
			if ext == ".state" && serr == nil {
				t.Errorf("UpdateState through a planted %s link succeeded", ext)
			}
			for _, err := range []error{aerr, serr} {
				if err != nil && ext != ".state" && !strings.Contains(err.Error(), "symbolic link") {
					t.Errorf("error %q does not say it refused a symbolic link", err)
				}
			}
			fi, err := os.Stat(target)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("target mode %v (%v): the link was followed", fi.Mode(), err)
			}
			if b, _ := os.ReadFile(target); string(b) != "mine\n" {
				t.Errorf("target written: %q", b)
			}
		})
	}
}

func TestFIFOInLockDirIsRefused(t *testing.T) {
	d, _ := openDir(t)
	if err := syscall.Mkfifo(filepath.Join(d.Path(), "zcu-1.lock"), 0o666); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := d.Acquire("zcu-1", Options{}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO lock file: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire blocked on a FIFO planted as the lock file")
	}
}

func TestUnsafeLockDirIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // world-writable, no sticky bit
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	var ue *UnsafeDirError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "sticky") || !strings.Contains(err.Error(), "chmod 1777 "+dir) {
		t.Fatalf("world-writable lock dir without sticky bit: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("the refused directory was written: %v", es)
	}
	// A file where the directory should be.
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := Open(file, nil); !errors.As(err, &ue) {
		t.Errorf("a file as lock dir: %v", err)
	}
	// A new directory is made shared and sticky, and accepted.
	fresh := filepath.Join(t.TempDir(), "a", "locks")
	if _, err := Open(fresh, nil); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("new lock dir mode %v", fi.Mode())
	}
}

// TestDirSafeJudgesOwners covers the owner rules with synthetic modes (a
// test cannot make files owned by another user without root).
func TestDirSafeJudgesOwners(t *testing.T) {
	const me, other = 1000, 1001
	cases := []struct {
		mode  os.FileMode
		owner int
		ok    bool
	}{
		{os.ModeDir | 0o755, me, true},
		{os.ModeDir | 0o755, 0, true},
		{os.ModeDir | 0o700, other, false},                // another's private directory
		{os.ModeDir | os.ModeSticky | 0o777, other, true}, // a shared /tmp-like directory
		{os.ModeDir | os.ModeSticky | 0o777, 0, true},     // made by root
		{os.ModeDir | 0o777, 0, false},                    // shared without sticky bit
		{os.ModeDir | 0o775, me, false},                   // group-writable without sticky bit
		{os.ModeDir | os.ModeSticky | 0o1775, me, true},   // group-shared, sticky
		{0o644, me, false},                                // not a directory
	}
	for _, c := range cases {
		err := dirSafe("/locks", c.mode, c.owner, me)
		if (err == nil) != c.ok {
			t.Errorf("mode %v owner %d: %v, want ok=%v", c.mode, c.owner, err, c.ok)
		}
	}
}

// TestReleasedInPlaceReadsAsFree: a lease emptied in place (another user's
// file in a sticky directory cannot be removed) counts as free.
func TestReleasedInPlaceReadsAsFree(t *testing.T) {
	d, _ := openDir(t)
	if err := os.WriteFile(filepath.Join(d.Path(), "zcu-1.lease"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if h, err := d.Get("zcu-1"); err != nil || h != nil {
		t.Fatalf("empty lease: %v %v", h, err)
	}
	if _, err := d.Acquire("zcu-1", Options{}); err != nil {
		t.Fatal(err)
	}
}
