// Package influx exports run directories to InfluxDB (2.x/3.x with org,
// bucket and token; 1.8+ through its v2 compatibility endpoint with bucket
// "db/rp" and token "user:pass") without losing a point.
//
// Points are built from the run directory (Points), spooled to disk
// (Spool, fsync'ed) and sent from the spool in batches with
// influxdb-client-go's WriteAPIBlocking; a batch leaves the spool only when
// the server acknowledged it. The client's own batching and retries are not
// used: its non-blocking API keeps retries in memory only, and its blocking
// API with batching drops a batch before sending it (docs/architecture.md, "Known
// behaviour of the dependencies"). A server that is down, slow, or answers
// 429/5xx leaves the points waiting for the next export; a batch refused
// with 400 is split until the point the server refuses is found and set
// aside, and the rest is sent. Every point's series and timestamp come from
// the run directory, so a re-sent point replaces itself in InfluxDB.
package influx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	http2 "github.com/influxdata/influxdb-client-go/v2/api/http"

	"github.com/labrunner/labrunner/results"
)

// Defaults of Config.
const (
	DefaultBatchSize      = 5000
	DefaultRequestTimeout = 10 * time.Second
	DefaultRetries        = 3
	// DefaultMaxQuarantine bounds how many single points one flush sets
	// aside: a server that refuses more than that refuses the requests, not
	// the points, and the points stay in the spool.
	DefaultMaxQuarantine = 100
	// SpoolFolder is the spools' folder under a results root.
	SpoolFolder = "influx-spool"
)

// Config names the server and bucket points go to.
type Config struct {
	URL    string // http(s)://host:port
	Org    string // 1.8: anything (ignored by the server)
	Bucket string // 1.8: "db/rp" or "db"
	// Token authenticates (1.8: "user:pass"). It is never written to a log,
	// an error, the spool or a run directory; Config's String and LogValue
	// leave it out.
	Token string
	// BatchSize is the number of points per request and per spool segment.
	BatchSize int
	// RequestTimeout bounds one HTTP request.
	RequestTimeout time.Duration
	// Retries is how many times a batch is re-sent after 429, 5xx or a
	// network error before the flush stops (its points wait in the spool).
	Retries int
	// MaxQuarantine: see DefaultMaxQuarantine.
	MaxQuarantine int
	// RetryBase is the first back-off after a failed request (doubled on
	// each retry, capped at 10 s; a Retry-After header wins). Default 500 ms.
	RetryBase time.Duration
	Log       *slog.Logger
}

// String describes the target without the token.
func (c Config) String() string {
	return fmt.Sprintf("InfluxDB bucket %q (org %q) at %s", c.Bucket, c.Org, redactURL(c.URL))
}

// GoString keeps %#v from printing the token.
func (c Config) GoString() string { return "influx.Config{" + c.String() + "}" }

// LogValue keeps slog from printing the token.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("url", redactURL(c.URL)), slog.String("org", c.Org), slog.String("bucket", c.Bucket))
}

// Validate checks the URL, org and bucket.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("influx url %q is not an http(s) URL: write it like http://host:8086 (--influx-url or the lab file's influx.url)", redactURL(c.URL))
	}
	if c.Bucket == "" {
		return errors.New("influx needs a bucket (--influx-bucket or influx.bucket; InfluxDB 1.8: \"db/rp\")")
	}
	if c.Org == "" {
		return errors.New("influx needs an org (--influx-org or influx.org; InfluxDB 1.8 ignores it: any name will do)")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Retries < 0 {
		c.Retries = 0
	} else if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.MaxQuarantine <= 0 {
		c.MaxQuarantine = DefaultMaxQuarantine
	}
	if c.RetryBase <= 0 {
		c.RetryBase = 500 * time.Millisecond
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// NoRetries, set as Config.Retries, sends each batch once.
const NoRetries = -1

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// SpoolDir is where points for the target wait: one spool per server,
// org and bucket under the results root, shared by every run of that root.
func SpoolDir(resultsRoot string, c Config) string {
	sum := sha256.Sum256([]byte(c.URL + "\x00" + c.Org + "\x00" + c.Bucket))
	host := "server"
	if u, err := url.Parse(c.URL); err == nil && u.Host != "" {
		host = u.Host
	}
	name := fileSafe(host) + "-" + fileSafe(c.Bucket) + "-" + hex.EncodeToString(sum[:4])
	return filepath.Join(resultsRoot, SpoolFolder, name)
}

// ErrorKind sorts export failures by what a person does about them.
type ErrorKind string

// Kinds of export failure.
const (
	Unreachable ErrorKind = "unreachable" // down, slow, network: try later
	Throttled   ErrorKind = "throttled"   // 429 after every retry
	ServerError ErrorKind = "server"      // 5xx after every retry
	Auth        ErrorKind = "auth"        // 401/403: the token
	NotFound    ErrorKind = "not-found"   // 404: bucket or org
	Refused     ErrorKind = "refused"     // other 4xx, or too many points refused
)

// Error is an export that stopped. The points not sent wait in the spool.
type Error struct {
	Kind    ErrorKind
	Status  int    // HTTP status, 0 for network errors
	Target  string // Config.String()
	Message string // what the server (or the network) said, token removed
	Waiting int    // points waiting in the spool after the failure
	Spool   string
	Err     error
}

func (e *Error) Error() string {
	var what, todo string
	switch e.Kind {
	case Auth:
		what, todo = "refused the token", "check the token in --influx-token-file or INFLUX_TOKEN (InfluxDB 1.8: \"user:pass\") and its rights on the bucket"
	case NotFound:
		what, todo = "has no such bucket or org", "create it, or fix --influx-bucket/--influx-org (InfluxDB 1.8: bucket \"db/rp\" of an existing database)"
	case Unreachable:
		what, todo = "did not answer", "check that the server runs and is reachable"
	case Throttled:
		what, todo = "kept answering 429 (too many requests)", "export again later"
	case ServerError:
		what, todo = "kept failing with a server error", "check the server's log"
	default:
		what, todo = "refused the write", "see the server's message"
	}
	status := ""
	if e.Status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	return fmt.Sprintf("%s %s%s: %s; %s. %d points wait in the spool %s and go out with the next run or `labrunner export`",
		e.Target, what, status, e.Message, todo, e.Waiting, e.Spool)
}

func (e *Error) Unwrap() error { return e.Err }

// Result says what an export did.
type Result struct {
	Spool       string
	Spooled     int // points put in the spool by this export
	Sent        int // points the server acknowledged
	Quarantined int // points the server refused for good (kept in quarantine/)
	Corrupt     int // segments set aside because their file was damaged
	Waiting     int // points still waiting in the spool
}

// Exporter sends spooled points to one InfluxDB target.
type Exporter struct {
	cfg      Config
	spoolDir string
	client   influxdb2.Client
	write    api.WriteAPIBlocking
	// Progress, if set, is told after each acknowledged batch how many
	// points this flush sent and how many it has still to send.
	Progress func(sent, left int)
}

// New makes an exporter for cfg whose spool lives under resultsRoot.
func New(cfg Config, resultsRoot string) (*Exporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	secs := uint((cfg.RequestTimeout + time.Second - 1) / time.Second)
	opts := influxdb2.DefaultOptions().
		SetHTTPRequestTimeout(secs).
		SetPrecision(time.Nanosecond).
		SetLogLevel(0) // errors only; the blocking API logs nothing of its own
	client := influxdb2.NewClientWithOptions(strings.TrimRight(cfg.URL, "/"), cfg.Token, opts)
	return &Exporter{
		cfg:      cfg,
		spoolDir: SpoolDir(resultsRoot, cfg),
		client:   client,
		write:    client.WriteAPIBlocking(cfg.Org, cfg.Bucket),
	}, nil
}

// Close releases the HTTP client.
func (e *Exporter) Close() { e.client.Close() }

// SpoolDir returns the exporter's spool directory.
func (e *Exporter) SpoolDir() string { return e.spoolDir }

func (e *Exporter) open(ctx context.Context) (*Spool, error) {
	s, err := OpenSpool(ctx, e.spoolDir)
	if err != nil {
		return nil, err
	}
	// target.json tells a person what the spool is for; never the token.
	t, _ := json.MarshalIndent(map[string]string{"url": redactURL(e.cfg.URL), "org": e.cfg.Org, "bucket": e.cfg.Bucket}, "", "  ")
	if b, err := os.ReadFile(filepath.Join(s.Dir, "target.json")); err != nil || string(b) != string(t)+"\n" {
		writeSynced(filepath.Join(s.Dir, "target.json"), append(t, '\n'))
	}
	return s, nil
}

// Export spools the points of a run directory and sends everything waiting
// in the spool (what earlier runs left, then this run's points). A failure
// to send is an *Error; the points then wait in the spool.
//
// Reading, spooling and sending overlap: measurements are turned into
// points as they are decoded, and each segment is handed to the sender as
// soon as it is durable in the spool (file and directory synced), so an
// export takes about as long as the slowest of the three instead of their
// sum. A send failure never stops the spooling: every point of the run is
// in the spool when Export returns. A measurements file that is not JSON
// lines is refused before anything is spooled (results.EachMeasurement).
func (e *Exporter) Export(ctx context.Context, runDir string) (Result, error) {
	run, err := results.ReadRun(runDir)
	if err != nil {
		return Result{Spool: e.spoolDir}, err
	}
	// A points file the nightly wrote from these very files holds the
	// points ready to send; otherwise they are built from the logs.
	pointsBody, built := readPointsFile(runDir)
	var b *builder
	expect := bytes.Count(pointsBody, []byte{'\n'})
	if !built {
		vs, err := results.ReadVerdictLog(runDir)
		if err != nil {
			return Result{Spool: e.spoolDir}, fmt.Errorf("reading verdicts of run %s: %w", runDir, err)
		}
		b = newBuilder(&RunData{Run: *run, Verdicts: vs})
		expect = len(vs)
	}
	s, err := e.open(ctx)
	if err != nil {
		return Result{Spool: e.spoolDir}, err
	}
	defer s.Close()
	prior, err := s.Pending()
	if err != nil {
		return Result{Spool: e.spoolDir}, err
	}
	left, _, _ := s.Waiting()
	src := make(chan pending, 2)
	own := fileSafe(run.ID) + "."
	var spooled int
	var serr error
	go func() {
		defer close(src)
		// This run's old segments are rewritten below; they go when their
		// new version is durable.
		for _, name := range prior {
			if !strings.HasPrefix(name, own) {
				src <- pending{name: name}
			}
		}
		spooled, serr = s.putStream(run.ID, e.cfg.BatchSize, func(name string, seg Segment) { src <- pending{name, &seg} }, func(emit func(*Point) error, emitLine func([]byte) error) error {
			if built {
				for body := pointsBody; len(body) > 0; {
					line := body
					if i := bytes.IndexByte(body, '\n'); i >= 0 {
						line, body = body[:i], body[i+1:]
					} else {
						body = nil
					}
					if err := emitLine(line); err != nil {
						return err
					}
				}
				return nil
			}
			if err := results.EachMeasurement(runDir, func(m *results.Measurement) error {
				p := b.measurement(m)
				return emit(&p)
			}); err != nil {
				return fmt.Errorf("reading measurements of run %s: %w", runDir, err)
			}
			rest := b.rest()
			for i := range rest {
				if err := emit(&rest[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}()
	res, err := e.flush(ctx, s, src, left+expect)
	// flush drained src: the spooling goroutine is done.
	res.Spooled = spooled
	if serr != nil {
		return e.finish(s, res, errors.Join(serr, err))
	}
	return e.finish(s, res, err)
}

// Flush sends what waits in the spool.
func (e *Exporter) Flush(ctx context.Context) (Result, error) {
	s, err := e.open(ctx)
	if err != nil {
		return Result{Spool: e.spoolDir}, err
	}
	defer s.Close()
	names, err := s.Pending()
	if err != nil {
		return Result{Spool: s.Dir}, err
	}
	left, _, _ := s.Waiting()
	src := make(chan pending, len(names))
	for _, n := range names {
		src <- pending{name: n}
	}
	close(src)
	res, err := e.flush(ctx, s, src, left)
	return e.finish(s, res, err)
}

// Waiting counts the points waiting in the spool.
func (e *Exporter) Waiting() (int, error) {
	if _, err := os.Stat(e.spoolDir); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	s := &Spool{Dir: e.spoolDir}
	n, _, err := s.Waiting()
	return n, err
}

// flush sends the segments named on src in order, each removed from the
// spool once the server took it, until src is closed or a send fails. It
// returns only after src is closed (what comes after a failure is left
// waiting), so a goroutine feeding src is done by then. left is what the
// progress callback counts down from.
// pending is a segment to send: by name, read from the spool, or with its
// content when the caller has it in memory (it is in the spool too).
type pending struct {
	name string
	seg  *Segment
}

func (e *Exporter) flush(ctx context.Context, s *Spool, src <-chan pending, left int) (Result, error) {
	res := Result{Spool: s.Dir}
	defer func() {
		for range src {
		}
	}()
	fl := &flushState{e: e, s: s, res: &res}

	// The next segment is read and checked while the current one is on
	// the wire.
	type next struct {
		name string
		seg  Segment
		body string
		err  error
	}
	pctx, stop := context.WithCancel(ctx)
	ch := make(chan next, 1)
	go func() {
		defer close(ch)
		for p := range src {
			n := next{name: p.name}
			if p.seg != nil {
				n.seg = *p.seg
			} else {
				n.seg, n.err = s.Read(p.name)
			}
			if n.err == nil {
				// The file's body is the request body already.
				n.body = string(n.seg.Body)
			}
			select {
			case ch <- n:
			case <-pctx.Done():
				return
			}
		}
	}()
	defer func() {
		stop()
		for range ch {
		}
	}()

	for n := range ch {
		if n.err != nil {
			if errors.Is(n.err, os.ErrNotExist) {
				continue
			}
			e.cfg.Log.Warn("influx spool: a damaged segment is set aside, not sent", "segment", n.name, "err", n.err)
			if aerr := s.SetAside(n.name, n.err); aerr != nil {
				return res, fmt.Errorf("setting aside damaged spool segment %s: %w", n.name, aerr)
			}
			res.Corrupt++
			continue
		}
		fl.segment = n.name
		if err := fl.send(ctx, n.seg.Lines, 0, n.body); err != nil {
			return res, err
		}
		if err := s.Ack(n.name); err != nil {
			return res, err
		}
		left -= len(n.seg.Lines)
		if e.Progress != nil {
			e.Progress(res.Sent, max(left, 0))
		}
	}
	return res, nil
}

func joinLines(lines [][]byte) string {
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	var sb strings.Builder
	sb.Grow(n)
	for i, l := range lines {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.Write(l)
	}
	return sb.String()
}

func (e *Exporter) finish(s *Spool, res Result, err error) (Result, error) {
	res.Waiting, _, _ = s.Waiting()
	var xe *Error
	if errors.As(err, &xe) {
		xe.Waiting = res.Waiting
		xe.Spool = s.Dir
	}
	if err != nil {
		e.cfg.Log.Warn("influx export stopped; points wait in the spool", "target", e.cfg, "waiting", res.Waiting, "spool", s.Dir, "err", err)
	} else {
		e.cfg.Log.Info("influx export done", "target", e.cfg, "sent", res.Sent, "quarantined", res.Quarantined, "waiting", res.Waiting)
	}
	return res, err
}

type flushState struct {
	e       *Exporter
	s       *Spool
	res     *Result
	segment string
}

// send writes lines (starting at index first of the segment), splitting
// the batch when the server refuses it as a whole for one bad point (400)
// or for its size (413).
func (f *flushState) send(ctx context.Context, lines [][]byte, first int, body string) error {
	if body == "" {
		body = joinLines(lines)
	}
	herr := f.e.post(ctx, body)
	if herr == nil {
		f.res.Sent += len(lines)
		return nil
	}
	switch {
	case herr.StatusCode == http.StatusBadRequest || herr.StatusCode == http.StatusRequestEntityTooLarge:
		if len(lines) == 1 {
			if f.res.Quarantined >= f.e.cfg.MaxQuarantine {
				return f.e.fail(Refused, herr, fmt.Errorf("more than %d points refused in one export; the rest stay in the spool", f.e.cfg.MaxQuarantine))
			}
			msg := f.e.redact(serverMessage(herr))
			if err := f.s.Quarantine(f.segment, first, lines[0], msg); err != nil {
				return fmt.Errorf("quarantining a refused point: %w", err)
			}
			f.res.Quarantined++
			f.e.cfg.Log.Warn("influx refused a point; it is kept in the spool's quarantine", "segment", f.segment, "index", first, "server", msg)
			return nil
		}
		// The 1.8 server's "partial write" stored the good points of the
		// batch already; sending them again replaces them with themselves.
		h := len(lines) / 2
		if err := f.send(ctx, lines[:h], first, ""); err != nil {
			return err
		}
		return f.send(ctx, lines[h:], first+h, "")
	}
	return f.e.classify(herr)
}

// post sends one batch, retrying on 429, 5xx and network errors with
// back-off (a Retry-After header wins), within the request timeout and the
// context. It returns the last error.
func (e *Exporter) post(ctx context.Context, body string) *http2.Error {
	delay := e.cfg.RetryBase
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
		err := e.write.WriteRecord(rctx, body)
		cancel()
		if err == nil {
			return nil
		}
		var herr *http2.Error
		if !errors.As(err, &herr) {
			herr = http2.NewError(err)
		}
		retryable := herr.StatusCode == 0 || herr.StatusCode == http.StatusTooManyRequests || herr.StatusCode >= 500
		if !retryable || attempt >= e.cfg.Retries || ctx.Err() != nil {
			return herr
		}
		wait := delay
		if herr.RetryAfter > 0 {
			wait = time.Duration(herr.RetryAfter) * time.Second
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return herr
		}
		e.cfg.Log.Info("influx write failed; retrying", "target", e.cfg, "status", herr.StatusCode, "in", wait, "attempt", attempt+1, "err", e.redact(serverMessage(herr)))
		select {
		case <-ctx.Done():
			return herr
		case <-time.After(wait):
		}
		delay = min(delay*2, 10*time.Second)
	}
}

func (e *Exporter) classify(herr *http2.Error) error {
	switch s := herr.StatusCode; {
	case s == 0:
		return e.fail(Unreachable, herr, nil)
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return e.fail(Auth, herr, nil)
	case s == http.StatusNotFound:
		return e.fail(NotFound, herr, nil)
	case s == http.StatusTooManyRequests:
		return e.fail(Throttled, herr, nil)
	case s >= 500:
		return e.fail(ServerError, herr, nil)
	}
	return e.fail(Refused, herr, nil)
}

func (e *Exporter) fail(kind ErrorKind, herr *http2.Error, extra error) error {
	msg := e.redact(serverMessage(herr))
	if extra != nil {
		msg += "; " + extra.Error()
	}
	// The cause is kept as text only: the client's error carries the
	// response headers, and nothing of the request may leak the token.
	return &Error{Kind: kind, Status: herr.StatusCode, Target: e.cfg.String(), Message: msg, Err: errors.New(msg)}
}

func serverMessage(herr *http2.Error) string {
	switch {
	case herr.Err != nil:
		return herr.Err.Error()
	case herr.Message != "":
		return herr.Message
	case herr.Code != "":
		return herr.Code
	}
	return "HTTP " + strconv.Itoa(herr.StatusCode)
}

// redact removes the token, and the password of a "user:pass" token, from
// text that may be shown to a person.
func (e *Exporter) redact(s string) string { return Redact(s, e.cfg.Token) }

// Redact removes token (and the password part of a "user:pass" token) from
// s. Parts shorter than 4 bytes are left alone: replacing them would
// garble the message without hiding anything worth hiding.
func Redact(s, token string) string {
	if len(token) >= 4 {
		s = strings.ReplaceAll(s, token, "[token]")
	}
	if _, pass, ok := strings.Cut(token, ":"); ok && len(pass) >= 4 {
		s = strings.ReplaceAll(s, pass, "[token]")
	}
	return s
}

// LoadToken reads the token from file (trimmed of surrounding white
// space) when file is set, else from the INFLUX_TOKEN environment variable.
// An empty token is allowed (a server without authentication); errors name
// the file, never its content.
func LoadToken(file string) (string, error) {
	if file == "" {
		return os.Getenv("INFLUX_TOKEN"), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the InfluxDB token file %s: %w (give a readable file with --influx-token-file, or set INFLUX_TOKEN)", file, err)
	}
	tok := strings.TrimSpace(string(b))
	if strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("InfluxDB token file %s holds more than one line: put only the token in it", file)
	}
	return tok, nil
}
