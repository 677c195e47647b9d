package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// WriterLockFile is the run directory's writer lock: a nightly or a resume
// holds an exclusive flock on it while it writes the directory, so that two
// writers never append to one run (two resumes would both run the missing
// tests and duplicate their records). It holds who the writer is, for the
// message the second one gets.
const WriterLockFile = ".writer.lock"

// Writer is who holds a run directory's writer lock.
type Writer struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// BusyError says a run directory is being written by another process.
type BusyError struct {
	Path   string
	Holder Writer // zero when the holder did not say
}

func (e *BusyError) Error() string {
	who := "another labrunner process"
	if e.Holder.PID > 0 {
		who = fmt.Sprintf("pid %d on %s (%s) since %s", e.Holder.PID, e.Holder.Host, e.Holder.Command, e.Holder.Since.Local().Format("2006-01-02 15:04:05"))
	}
	return fmt.Sprintf("run directory %s is being written by %s: two writers would duplicate its records; wait until it ends, or stop it and resume again", e.Path, who)
}

// lockWriter takes the run directory's writer lock without waiting, and
// records this process as the writer.
func lockWriter(dir string) (*os.File, error) {
	p := filepath.Join(dir, WriterLockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run directory %s: writer lock: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var w Writer
			b, _ := io.ReadAll(io.LimitReader(f, 4096))
			json.Unmarshal(b, &w)
			return nil, &BusyError{Path: dir, Holder: w}
		}
		return nil, fmt.Errorf("run directory %s: writer lock: %w", dir, err)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(Writer{PID: os.Getpid(), Host: host, Command: strings.Join(os.Args, " "), Since: time.Now()})
	if err := f.Truncate(0); err == nil {
		f.WriteAt(append(b, '\n'), 0)
	}
	return f, nil
}

// RepairTornLine cuts off the last line of a JSON-lines file when a crash
// or a power loss left it unfinished (no newline at its end: bytes of a
// record, or the zeros a file system leaves after a power loss), keeping a
// copy of the whole file first (FILE.torn, FILE.torn-2 ...). Appending to a
// torn line would glue the next record onto it, and the joined line would
// make the whole file unreadable. It returns what it did ("" when the file
// ends cleanly or does not exist).
func RepairTornLine(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	keep := bytes.LastIndexByte(data, '\n') + 1
	if keep == len(data) {
		return "", nil
	}
	torn := data[keep:]
	if len(bytes.TrimSpace(torn)) == 0 {
		// Only blanks after the last newline: nothing to lose, but a
		// record appended there would still start mid-line.
		torn = nil
	}
	copyPath := ""
	if torn != nil {
		for i := 1; ; i++ {
			copyPath = path + ".torn"
			if i > 1 {
				copyPath = fmt.Sprintf("%s.torn-%d", path, i)
			}
			f, err := os.OpenFile(copyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, os.ErrExist) && i < 1000 {
				continue
			}
			if err != nil {
				return "", fmt.Errorf("keeping a copy of %s before repairing it: %w", path, err)
			}
			_, werr := f.Write(data)
			serr := f.Sync()
			cerr := f.Close()
			if err := errors.Join(werr, serr, cerr); err != nil {
				return "", fmt.Errorf("keeping a copy of %s before repairing it: %w", path, err)
			}
			break
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Truncate(int64(keep)); err != nil {
		return "", fmt.Errorf("repairing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("repairing %s: %w", path, err)
	}
	if torn == nil {
		return fmt.Sprintf("%s: cut %d blank bytes after the last line", path, len(data)-keep), nil
	}
	return fmt.Sprintf("%s: cut off a last line left unfinished by a crash (%d bytes, line %d); the whole file was kept as %s",
		path, len(torn), bytes.Count(data[:keep], []byte{'\n'})+1, copyPath), nil
}
