// Package lease holds board reservations as leases in a lock directory that
// the users of one lab host share: a board is held by one runner at a time;
// a lease records its owner, host, pid, command, since-when and expiry; it
// is refreshed while held, released only by its owner, and a dead or expired
// holder's lease is taken over with a log line (the stale-lock trouble of
// board farms after cancelled CI jobs).
//
// Layout of the directory, per board:
//
//	<board>.lease   the lease, JSON, replaced atomically (write + rename)
//	<board>.lock    an empty file whose flock serialises the read-check-write
//	                of the lease between processes (held for microseconds)
//	<board>.state   what was last done to the board (design, health), JSON
//
// The directory is shared by the host's users, so nothing in it is trusted:
// no file in it is ever opened through a symbolic link (O_NOFOLLOW) or
// chmod-ed by name, only regular files are used, and the directory itself
// must be safe to share (Open refuses one that anyone may write without the
// sticky bit, which would let a user delete or replace another's leases).
//
// flock is released by the kernel when a process dies, so a runner killed
// with SIGKILL in the middle of an update cannot wedge the directory. The
// lease itself survives its holder; liveness is judged from the expiry and,
// on the same host, from the holder's pid and process start time (so a
// recycled pid does not keep a dead holder's lease alive).
package lease

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Info is a lease as stored.
type Info struct {
	Board string `json:"board"`
	Owner string `json:"owner"`
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	// Start is the holder process's start time (clock ticks since boot,
	// from /proc/<pid>/stat) so that a recycled pid is not mistaken for
	// the holder; 0 when unknown.
	Start   uint64    `json:"start,omitempty"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
	Expires time.Time `json:"expires"`
	// Manual leases come from `labrunner reserve`: no process holds them,
	// only their expiry or `labrunner release` ends them.
	Manual bool   `json:"manual,omitempty"`
	Note   string `json:"note,omitempty"`
	Token  string `json:"token"`
}

// String describes the holder for a person: "alice@lab1 pid 4242 (labrunner
// nightly) since 02:00:01, expires 02:05:01".
func (i Info) String() string {
	s := fmt.Sprintf("%s@%s", i.Owner, i.Host)
	if !i.Manual {
		s += fmt.Sprintf(" pid %d", i.PID)
	} else {
		s += " (manual reservation)"
	}
	if i.Command != "" {
		s += " (" + i.Command + ")"
	}
	s += " since " + i.Since.Local().Format("2006-01-02 15:04:05") + ", expires " + i.Expires.Local().Format("15:04:05")
	if i.Note != "" {
		s += ": " + i.Note
	}
	return s
}

// HeldError says a board is held by someone else.
type HeldError struct{ Holder Info }

func (e *HeldError) Error() string {
	return fmt.Sprintf("board %s is held by %s", e.Holder.Board, e.Holder)
}

// ErrLost is returned by Refresh and Release when the lease is no longer
// ours (it expired and someone took it over).
var ErrLost = errors.New("the lease is no longer ours")

// DefaultLease is how long a lease lasts without a refresh.
const DefaultLease = 5 * time.Minute

// Dir is a lock directory.
type Dir struct {
	path string
	log  *slog.Logger
	now  func() time.Time
	host string
}

// Open opens (creating it if needed) a lock directory. A new directory is
// made world-writable with the sticky bit, like /tmp, so that every user of
// the lab host can take leases in it and nobody can delete another's files.
// An existing directory must be safe to share (CheckDir); an unsafe one is
// refused with the fix, and nothing in it is touched.
func Open(path string, log *slog.Logger) (*Dir, error) {
	if path == "" {
		return nil, errors.New("lock directory: no path (set locks.dir in the lab file or --locks)")
	}
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("lock directory %s: %w", path, err)
		}
		if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lock directory %s: %w", path, err)
		} else if err == nil {
			// Ours, just made; in a sticky parent (/tmp) nobody else can
			// replace the entry before the chmod.
			if err := os.Chmod(path, 0o777|os.ModeSticky); err != nil {
				return nil, fmt.Errorf("lock directory %s: %w", path, err)
			}
		}
	} else if err != nil {
		return nil, fmt.Errorf("lock directory %s: %w", path, err)
	}
	if err := CheckDir(path); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h, _ := os.Hostname()
	return &Dir{path: path, log: log, now: time.Now, host: h}, nil
}

// UnsafeDirError says why a lock directory cannot be trusted, and the fix.
type UnsafeDirError struct {
	Path string
	Why  string
	Fix  string
}

func (e *UnsafeDirError) Error() string {
	return fmt.Sprintf("lock directory %s is not safe to share: %s (%s)", e.Path, e.Why, e.Fix)
}

// CheckDir says whether path is a lock directory the host's users can
// share safely: it is a directory (a symbolic link to one is followed only
// when the link belongs to root or to this user, like /var/lock ->
// /run/lock); if users other than its owner may write it, it has the sticky
// bit (else anyone could delete or replace another's leases and locks); its
// owner is root, this user, or, in a sticky directory, another user of the
// lab; and this user may write it.
func CheckDir(path string) error {
	lst, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("lock directory %s: %w", path, err)
	}
	uid := os.Geteuid()
	if lst.Mode()&os.ModeSymlink != 0 {
		if st, ok := lst.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != uid {
			return &UnsafeDirError{Path: path, Why: fmt.Sprintf("it is a symbolic link owned by uid %d, who can point it anywhere", st.Uid),
				Fix: "set locks.dir (or --locks) to the real directory"}
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("lock directory %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if err := dirSafe(path, fi.Mode(), int(st.Uid), uid); err != nil {
		return err
	}
	if err := syscall.Access(path, 2 /* W_OK */); err != nil {
		return fmt.Errorf("lock directory %s is not writable by this user (%w): ask its owner (uid %d) to make it shared: chmod 1777 %s", path, err, st.Uid, path)
	}
	return nil
}

// dirSafe is CheckDir's judgement of a directory's mode and owner.
func dirSafe(path string, mode os.FileMode, owner, self int) error {
	if !mode.IsDir() {
		return &UnsafeDirError{Path: path, Why: "it is not a directory", Fix: "remove it, or set locks.dir (or --locks) to a directory"}
	}
	shared := mode.Perm()&0o022 != 0
	if shared && mode&os.ModeSticky == 0 {
		return &UnsafeDirError{Path: path, Why: fmt.Sprintf("mode %04o lets every user delete or replace the others' leases (no sticky bit)", mode.Perm()),
			Fix: "chmod 1777 " + path + " (as its owner or root), or use a directory only you can write"}
	}
	if owner != 0 && owner != self && !shared {
		return &UnsafeDirError{Path: path, Why: fmt.Sprintf("it belongs to uid %d and only its owner may write it", owner),
			Fix: "ask root to create a shared one (install -d -m 1777 /var/lock/labrunner) and set locks.dir"}
	}
	return nil
}

// openNoFollow opens a file of the directory without following a symbolic
// link and without blocking on a FIFO, and checks that it is a regular
// file: a link or a special file planted in the shared directory is refused
// with the fix, never opened through.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link, which labrunner never follows in a lock directory: remove it (someone else may have planted it): %w", path, err)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%v): remove it", path, fi.Mode().Type())
	}
	return f, nil
}

// readNoFollow reads a file of the directory (see openNoFollow).
func readNoFollow(path string) ([]byte, error) {
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// Path is the directory.
func (d *Dir) Path() string { return d.path }

var safeName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (d *Dir) file(board, ext string) (string, error) {
	if !safeName.MatchString(board) || strings.HasPrefix(board, ".") {
		return "", fmt.Errorf("board name %q cannot name a lock file (letters, digits, . _ - only)", board)
	}
	return filepath.Join(d.path, board+ext), nil
}

// locked runs f while holding the board's flock.
func (d *Dir) locked(board string, f func() error) error {
	lp, err := d.file(board, ".lock")
	if err != nil {
		return err
	}
	fd, err := openLockFile(lp)
	if err != nil {
		return fmt.Errorf("lock file %s: %w", lp, err)
	}
	defer fd.Close()
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("flock %s: %w", lp, err)
	}
	defer syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
	return f()
}

// openLockFile opens a board's lock file for flock, creating it when it is
// not there. flock needs only read access, so the file is opened read-only
// and never chmod-ed; it is created with O_EXCL (never through a link), and
// an existing one is opened without O_CREAT (a sticky directory refuses
// O_CREAT on another user's file where fs.protected_regular is set).
func openLockFile(path string) (*os.File, error) {
	for i := 0; i < 10; i++ {
		f, err := openNoFollow(path, os.O_RDONLY, 0)
		if !errors.Is(err, os.ErrNotExist) {
			return f, err
		}
		f, err = openNoFollow(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, os.ErrExist) {
			return f, err
		}
		// Someone else created it in between: open theirs.
	}
	return nil, errors.New("the file keeps appearing and disappearing")
}

func (d *Dir) read(board string) (*Info, error) {
	p, err := d.file(board, ".lease")
	if err != nil {
		return nil, err
	}
	b, err := readNoFollow(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil // released in place (see clear)
	}
	var i Info
	if err := json.Unmarshal(b, &i); err != nil {
		// A lease nobody can read protects nothing: treat it as stale,
		// but say so.
		d.log.Warn("unreadable lease file, treating it as free", "file", p, "err", err)
		return nil, nil
	}
	return &i, nil
}

func (d *Dir) write(i Info) error {
	p, err := d.file(i.Board, ".lease")
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(p, append(b, '\n'), 0o666)
}

// Stale says why a lease no longer protects its board, or "" if it does.
func (d *Dir) Stale(i Info) string {
	now := d.now()
	if now.After(i.Expires) {
		return fmt.Sprintf("expired at %s", i.Expires.Local().Format("15:04:05"))
	}
	if !i.Manual && i.Host == d.host && i.PID > 0 {
		if !processAlive(i.PID, i.Start) {
			return fmt.Sprintf("its holder, pid %d, is no longer running", i.PID)
		}
	}
	return ""
}

// Options describe the holder of a new lease.
type Options struct {
	Command string
	TTL     time.Duration // default DefaultLease
	Manual  bool
	Note    string
	Owner   string // default: the current user
}

// Acquire takes the board's lease, or returns a *HeldError naming the
// holder. A stale lease (expired, or its holder dead) is taken over, with a
// log line.
func (d *Dir) Acquire(board string, o Options) (*Lease, error) {
	if o.TTL <= 0 {
		o.TTL = DefaultLease
	}
	if o.Owner == "" {
		o.Owner = currentUser()
	}
	var l *Lease
	err := d.locked(board, func() error {
		cur, err := d.read(board)
		if err != nil {
			return err
		}
		if cur != nil {
			if why := d.Stale(*cur); why == "" {
				return &HeldError{Holder: *cur}
			} else {
				d.log.Warn("taking over a stale lease", "board", board, "holder", cur.String(), "why", why)
			}
		}
		now := d.now()
		i := Info{
			Board: board, Owner: o.Owner, Host: d.host, PID: os.Getpid(), Start: processStart(os.Getpid()),
			Command: o.Command, Since: now, Expires: now.Add(o.TTL), Manual: o.Manual, Note: o.Note, Token: newToken(),
		}
		if err := d.write(i); err != nil {
			return err
		}
		l = &Lease{dir: d, info: i, ttl: o.TTL}
		return nil
	})
	return l, err
}

// Get returns the board's current lease, or nil when the board is free
// (a stale lease counts as free).
func (d *Dir) Get(board string) (*Info, error) {
	var out *Info
	err := d.locked(board, func() error {
		cur, err := d.read(board)
		if err != nil || cur == nil {
			return err
		}
		if d.Stale(*cur) == "" {
			out = cur
		}
		return nil
	})
	return out, err
}

// ReleaseOwned releases a board's lease on behalf of a person: only the
// lease's owner (same user) may, unless force is set.
func (d *Dir) ReleaseOwned(board string, force bool) (*Info, error) {
	var released *Info
	err := d.locked(board, func() error {
		cur, err := d.read(board)
		if err != nil {
			return err
		}
		if cur == nil {
			return fmt.Errorf("board %s is not held", board)
		}
		if !force && cur.Owner != currentUser() && d.Stale(*cur) == "" {
			return fmt.Errorf("board %s is held by %s, not by you (use --force to break it)", board, cur)
		}
		if err := d.clear(board); err != nil {
			return err
		}
		released = cur
		return nil
	})
	return released, err
}

// Lease is a held lease.
type Lease struct {
	dir  *Dir
	info Info
	ttl  time.Duration
	stop chan struct{}
	done chan struct{}
}

// Info returns the lease as last written.
func (l *Lease) Info() Info { return l.info }

// Refresh extends the lease by its TTL. It fails with ErrLost if the lease
// was taken over meanwhile (we let it expire).
func (l *Lease) Refresh() error {
	return l.dir.locked(l.info.Board, func() error {
		cur, err := l.dir.read(l.info.Board)
		if err != nil {
			return err
		}
		if cur == nil || cur.Token != l.info.Token {
			return fmt.Errorf("board %s: %w", l.info.Board, ErrLost)
		}
		l.info.Expires = l.dir.now().Add(l.ttl)
		return l.dir.write(l.info)
	})
}

// KeepAlive refreshes the lease every third of its TTL until Release. A
// failed refresh is logged; a lost lease stops the refreshing.
func (l *Lease) KeepAlive() {
	if l.stop != nil {
		return
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				if err := l.Refresh(); err != nil {
					l.dir.log.Error("lease refresh failed", "board", l.info.Board, "err", err)
					if errors.Is(err, ErrLost) {
						return
					}
				}
			}
		}
	}()
}

// Release gives the board back. Only the holder's token can remove the
// lease; a lease already taken over by someone else is left alone.
func (l *Lease) Release() error {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	return l.dir.locked(l.info.Board, func() error {
		cur, err := l.dir.read(l.info.Board)
		if err != nil {
			return err
		}
		if cur == nil || cur.Token != l.info.Token {
			return fmt.Errorf("board %s: %w", l.info.Board, ErrLost)
		}
		return l.dir.clear(l.info.Board)
	})
}

// clear removes a board's lease. A lease file another user wrote first
// cannot be removed in a sticky directory: it is emptied in place, which
// reads as free.
func (d *Dir) clear(board string) error {
	p, err := d.file(board, ".lease")
	if err != nil {
		return err
	}
	err = os.Remove(p)
	if err == nil || !errors.Is(err, os.ErrPermission) {
		return err
	}
	f, oerr := openNoFollow(p, os.O_WRONLY, 0)
	if oerr != nil {
		return fmt.Errorf("%w (and in place: %w)", err, oerr)
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return err
	}
	return f.Sync()
}

// State is what was last done to a board, for `labrunner boards`.
type State struct {
	Board         string    `json:"board"`
	Design        string    `json:"design,omitempty"`
	Version       string    `json:"version,omitempty"`
	Programmed    time.Time `json:"programmed,omitempty"`
	Health        string    `json:"health,omitempty"` // good, unhealthy, maintenance
	HealthReason  string    `json:"health_reason,omitempty"`
	HealthChecked time.Time `json:"health_checked,omitempty"`
	Maintenance   bool      `json:"maintenance,omitempty"`
}

// ReadState returns the board's recorded state (zero when none).
func (d *Dir) ReadState(board string) (State, error) {
	p, err := d.file(board, ".state")
	if err != nil {
		return State{}, err
	}
	var s State
	b, err := readNoFollow(p)
	if errors.Is(err, os.ErrNotExist) {
		return State{Board: board}, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return State{Board: board}, nil
	}
	return s, nil
}

// UpdateState changes the board's recorded state under its lock.
func (d *Dir) UpdateState(board string, f func(*State)) error {
	return d.locked(board, func() error {
		s, err := d.ReadState(board)
		if err != nil {
			return err
		}
		s.Board = board
		f(&s)
		p, _ := d.file(board, ".state")
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		return writeAtomic(p, append(b, '\n'), 0o666)
	})
}

// Boards lists the boards the directory knows (leases or state), sorted.
func (d *Dir) Boards() ([]string, error) {
	es, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, e := range es {
		for _, ext := range []string{".lease", ".state"} {
			if n, ok := strings.CutSuffix(e.Name(), ext); ok {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// writeAtomic replaces path with data: a new temporary file (O_EXCL, so
// never through a planted link), synced, chmod-ed through its descriptor,
// renamed over path. In a sticky directory a user may not rename over
// another user's file (a stale lease taken over from someone else): then
// the file, made writable for everyone when it was written (mode), is
// rewritten in place, under the board's flock like every write.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	merr := tmp.Chmod(mode)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, serr, cerr); err != nil {
		os.Remove(name)
		return err
	}
	err = os.Rename(name, path)
	if err == nil {
		return nil
	}
	os.Remove(name)
	if !errors.Is(err, os.ErrPermission) {
		return err
	}
	f, oerr := openNoFollow(path, os.O_WRONLY, 0)
	if oerr != nil {
		return fmt.Errorf("%w (and in place: %w)", err, oerr)
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

func newToken() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return hex.EncodeToString(b[:])
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return strconv.Itoa(os.Getuid())
}

// processAlive reports whether pid runs and, when start is known, is the
// same process that took the lease (pids are recycled).
func processAlive(pid int, start uint64) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if start == 0 {
		return true
	}
	s := processStart(pid)
	return s == 0 || s == start
}

// processStart reads a process's start time (field 22 of /proc/<pid>/stat,
// clock ticks since boot); 0 when unavailable.
func processStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may contain spaces: skip past its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After ')' come fields 3.. ; starttime is field 22, index 19 here.
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}
