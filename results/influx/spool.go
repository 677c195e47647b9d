package influx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The spool is a directory of segment files, each a batch of line-protocol
// points waiting to be sent:
//
//	pending/<run id>.<part>.lp    waiting; sent in name order (run ids start with the UTC start time)
//	quarantine/<...>.lp           points the server refused for good, with a .txt saying why
//	target.json                   which server and bucket the spool is for (never the token)
//	lock                          flock'ed by the process using the spool
//
// A segment is written to a temporary file, synced, and renamed into
// pending/ (then the directory is synced), so a crash leaves either the
// whole segment or none of it. A segment leaves pending/ only after the
// server acknowledged every point in it.
const (
	pendingDir    = "pending"
	quarantineDir = "quarantine"
	segmentExt    = ".lp"
	lockFile      = "lock"
	segmentMagic  = "#labrunner-spool v1"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Segment is one spooled batch.
type Segment struct {
	Run   string   // run id the points come from
	Lines [][]byte // line-protocol points, without newlines
	// Body is the points as they are in the file: one per line, each
	// ending with a newline (what a request sends).
	Body []byte
}

// EncodeSegment renders a segment file: a header line (a line-protocol
// comment, so the file is valid line protocol as it is) carrying the run,
// the number of points and a CRC-32C of the body, then one point per line.
func EncodeSegment(run string, lines [][]byte) []byte {
	var body []byte
	for _, l := range lines {
		body = append(body, l...)
		body = append(body, '\n')
	}
	return append(segmentHeader(run, len(lines), body), body...)
}

func segmentHeader(run string, points int, body []byte) []byte {
	return fmt.Appendf(nil, "%s run=%s points=%d crc32c=%08x\n", segmentMagic, headerSafe(run), points, crc32.Checksum(body, crcTable))
}

func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// ParseSegment reads a segment file, checking its header, point count and
// checksum. A segment that fails any check is corrupt (a disk error, or a
// file someone edited) and is set aside, never sent half.
func ParseSegment(data []byte) (Segment, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return Segment{}, errors.New("spool segment has no header line")
	}
	header, body := string(data[:nl]), data[nl+1:]
	rest, ok := strings.CutPrefix(header, segmentMagic+" ")
	if !ok {
		return Segment{}, fmt.Errorf("spool segment header %q does not start with %q", clip(header, 80), segmentMagic)
	}
	var seg Segment
	var count int64 = -1
	var sum int64 = -1
	for _, kv := range strings.Fields(rest) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Segment{}, fmt.Errorf("spool segment header: %q is not key=value", clip(kv, 40))
		}
		var err error
		switch k {
		case "run":
			seg.Run = v
		case "points":
			count, err = strconv.ParseInt(v, 10, 32)
			if err == nil && count < 0 {
				err = errors.New("negative")
			}
		case "crc32c":
			sum, err = strconv.ParseInt(v, 16, 64)
			if err == nil && (len(v) != 8 || sum < 0) {
				err = errors.New("not 8 hex digits")
			}
		}
		if err != nil {
			return Segment{}, fmt.Errorf("spool segment header: bad %s %q: %w", k, clip(v, 40), err)
		}
	}
	if count < 0 || sum < 0 {
		return Segment{}, errors.New("spool segment header lacks points= or crc32c=")
	}
	if got := crc32.Checksum(body, crcTable); int64(got) != sum {
		return Segment{}, fmt.Errorf("spool segment body checksum %08x, header says %08x", got, sum)
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		return Segment{}, errors.New("spool segment body does not end with a newline")
	}
	seg.Body = body
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n')
		line := body[:i]
		body = body[i+1:]
		if len(line) == 0 || line[0] == '#' {
			return Segment{}, fmt.Errorf("spool segment line %d is empty or a comment", len(seg.Lines)+2)
		}
		seg.Lines = append(seg.Lines, line)
	}
	if int64(len(seg.Lines)) != count {
		return Segment{}, fmt.Errorf("spool segment holds %d points, header says %d", len(seg.Lines), count)
	}
	return seg, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Spool is an open spool directory. It holds an exclusive lock on the
// directory while open, so two labrunner processes never send (or delete)
// the same segment at once.
type Spool struct {
	Dir  string
	lock *os.File
}

// OpenSpool opens (creating it if needed) the spool in dir, waiting for
// the lock until ctx ends.
func OpenSpool(ctx context.Context, dir string) (*Spool, error) {
	for _, d := range []string{dir, filepath.Join(dir, pendingDir), filepath.Join(dir, quarantineDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("influx spool %s: %w", dir, err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("influx spool %s: %w", dir, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking influx spool %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("influx spool %s is in use by another labrunner process (waited for its lock): %w", dir, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	s := &Spool{Dir: dir, lock: f}
	s.removeTemps()
	return s, nil
}

// Close releases the spool's lock.
func (s *Spool) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close() // closing the descriptor drops the flock
	s.lock = nil
	return err
}

// removeTemps deletes temporary files a crash left behind in pending/:
// they were never renamed into place, so nothing counts on them.
func (s *Spool) removeTemps() {
	ents, _ := os.ReadDir(filepath.Join(s.Dir, pendingDir))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp") {
			os.Remove(filepath.Join(s.Dir, pendingDir, e.Name()))
		}
	}
}

// segmentName names part n of a run's segments. Zero-padded parts keep the
// name order equal to the order the points were written in.
func segmentName(run string, n int) string {
	return fmt.Sprintf("%s.%06d%s", fileSafe(run), n, segmentExt)
}

func fileSafe(s string) string {
	out := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
	if out == "" {
		return "run"
	}
	return out
}

// PutRun spools a run's points in segments of at most perSegment points.
// Segments of the same run already waiting are replaced (the points of a
// run are rebuilt the same from its directory, so the new segments hold
// everything the old ones did), which keeps a run spooled twice from being
// sent twice. It returns the number of points spooled.
func (s *Spool) PutRun(run string, points []Point, perSegment int) (int, error) {
	return s.putRun(run, points, perSegment, nil)
}

// putRun is PutRun that, when durable is not nil, also syncs the directory
// after each segment and then hands it to durable, name and content: the
// segment may be sent from then on, a crash cannot take it back.
func (s *Spool) putRun(run string, points []Point, perSegment int, durable func(name string, seg Segment)) (int, error) {
	return s.putStream(run, perSegment, durable, func(emit func(*Point) error, _ func([]byte) error) error {
		for i := range points {
			if err := emit(&points[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// putStream is putRun for points made while they are spooled: produce
// calls emit with each point in order, or emitLine with each point already
// in line protocol (no newline). When produce fails, the segments already
// written stay (their points are good) and its error is returned.
func (s *Spool) putStream(run string, perSegment int, durable func(name string, seg Segment), produce func(emit func(*Point) error, emitLine func([]byte) error) error) (int, error) {
	if perSegment <= 0 {
		perSegment = DefaultBatchSize
	}
	pdir := filepath.Join(s.Dir, pendingDir)
	body := make([]byte, 0, 256*perSegment)
	n, part, inSeg := 0, 0, 0
	flush := func() error {
		if inSeg == 0 {
			return nil
		}
		name := segmentName(run, part)
		if err := writeSynced(filepath.Join(pdir, name), segmentHeader(run, inSeg, body), body); err != nil {
			return fmt.Errorf("spooling run %s: %w", run, err)
		}
		if durable != nil {
			if err := syncDir(pdir); err != nil {
				return fmt.Errorf("spooling run %s: %w", run, err)
			}
			// The sender takes the segment from memory rather than read
			// back what was just written.
			seg := Segment{Run: run, Body: bytes.Clone(body)}
			seg.Lines = make([][]byte, 0, inSeg)
			for rest := seg.Body; len(rest) > 0; {
				i := bytes.IndexByte(rest, '\n')
				seg.Lines = append(seg.Lines, rest[:i])
				rest = rest[i+1:]
			}
			durable(name, seg)
		}
		part++
		inSeg = 0
		body = body[:0]
		return nil
	}
	added := func() error {
		body = append(body, '\n')
		n++
		inSeg++
		if inSeg == perSegment {
			return flush()
		}
		return nil
	}
	if err := produce(func(p *Point) error {
		start := len(body)
		body = p.AppendLine(body)
		if len(body) == start {
			return nil
		}
		return added()
	}, func(line []byte) error {
		if len(line) == 0 {
			return nil
		}
		body = append(body, line...)
		return added()
	}); err != nil {
		return n - inSeg, err
	}
	if err := flush(); err != nil {
		return 0, err
	}
	// Older segments of this run beyond the new last part.
	prefix := fileSafe(run) + "."
	ents, err := os.ReadDir(pdir)
	if err != nil {
		return 0, fmt.Errorf("influx spool %s: %w", s.Dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || !strings.HasSuffix(rest, segmentExt) {
			continue
		}
		k, err := strconv.Atoi(strings.TrimSuffix(rest, segmentExt))
		if err == nil && k >= part {
			os.Remove(filepath.Join(pdir, name))
		}
	}
	return n, syncDir(pdir)
}

// PutLines spools raw line-protocol lines as one segment of a run (used to
// re-queue points by hand and by tests).
func (s *Spool) PutLines(run string, part int, lines [][]byte) error {
	pdir := filepath.Join(s.Dir, pendingDir)
	if err := writeSynced(filepath.Join(pdir, segmentName(run, part)), EncodeSegment(run, lines)); err != nil {
		return err
	}
	return syncDir(pdir)
}

// Pending lists the waiting segments in the order they are sent.
func (s *Spool) Pending() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.Dir, pendingDir))
	if err != nil {
		return nil, fmt.Errorf("influx spool %s: %w", s.Dir, err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), segmentExt) && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Read reads and checks a pending segment.
func (s *Spool) Read(name string) (Segment, error) {
	data, err := os.ReadFile(filepath.Join(s.Dir, pendingDir, name))
	if err != nil {
		return Segment{}, err
	}
	seg, err := ParseSegment(data)
	if err != nil {
		return Segment{}, fmt.Errorf("%s: %w", filepath.Join(s.Dir, pendingDir, name), err)
	}
	return seg, nil
}

// Ack removes a segment the server took whole. The removal is not synced:
// if a crash brings the segment back, it is sent again, and its points
// replace themselves in InfluxDB (same series, same timestamps).
func (s *Spool) Ack(name string) error {
	if err := os.Remove(filepath.Join(s.Dir, pendingDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("influx spool: removing sent segment: %w", err)
	}
	return nil
}

// SetAside moves a corrupt segment to quarantine/ with a note saying why.
func (s *Spool) SetAside(name string, why error) error {
	q := filepath.Join(s.Dir, quarantineDir)
	if err := os.Rename(filepath.Join(s.Dir, pendingDir, name), filepath.Join(q, name+".corrupt")); err != nil {
		return err
	}
	note := fmt.Sprintf("%s: set aside at %s: %v\n", name, time.Now().UTC().Format(time.RFC3339), why)
	if err := writeSynced(filepath.Join(q, name+".corrupt.txt"), []byte(note)); err != nil {
		return err
	}
	return errors.Join(syncDir(q), syncDir(filepath.Join(s.Dir, pendingDir)))
}

// Quarantine keeps a point the server refused for good: a one-point
// segment in quarantine/ (move it back to pending/ to send it again once the
// cause is fixed) and a .txt with the server's answer.
func (s *Spool) Quarantine(segment string, index int, line []byte, why string) error {
	q := filepath.Join(s.Dir, quarantineDir)
	base := fmt.Sprintf("%s.%06d", strings.TrimSuffix(segment, segmentExt), index)
	run := strings.TrimSuffix(segment, segmentExt)
	if i := strings.LastIndexByte(run, '.'); i > 0 {
		run = run[:i]
	}
	if err := writeSynced(filepath.Join(q, base+segmentExt), EncodeSegment(run, [][]byte{line})); err != nil {
		return err
	}
	note := fmt.Sprintf("refused at %s: %s\n", time.Now().UTC().Format(time.RFC3339), why)
	if err := writeSynced(filepath.Join(q, base+".txt"), []byte(note)); err != nil {
		return err
	}
	return syncDir(q)
}

// Waiting counts the points and segments waiting, from the segment
// headers (bodies are not read).
func (s *Spool) Waiting() (points, segments int, err error) {
	names, err := s.Pending()
	if err != nil {
		return 0, 0, err
	}
	for _, n := range names {
		c, err := headerCount(filepath.Join(s.Dir, pendingDir, n))
		if err != nil {
			continue // a corrupt segment is found and set aside when sending
		}
		points += c
		segments++
	}
	return points, segments, nil
}

// Quarantined counts the files in quarantine/ holding points (.lp) and
// corrupt segments (.corrupt).
func (s *Spool) Quarantined() int {
	ents, _ := os.ReadDir(filepath.Join(s.Dir, quarantineDir))
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), segmentExt) || strings.HasSuffix(e.Name(), ".corrupt") {
			n++
		}
	}
	return n
}

func headerCount(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, err
	}
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	for _, kv := range strings.Fields(string(line)) {
		if v, ok := strings.CutPrefix(kv, "points="); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("%s: no point count in the header", path)
}

// writeSynced writes data to a temporary file next to path, syncs it and
// renames it over path.
func writeSynced(path string, data ...[]byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	var werr error
	for _, d := range data {
		if _, err := tmp.Write(d); err != nil && werr == nil {
			werr = err
		}
	}
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
