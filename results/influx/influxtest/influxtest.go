// Package influxtest starts real InfluxDB 1.8 servers on 127.0.0.1 for
// tests: the exporter is tested against the server it will talk to, not a
// mock.
//
// The influxd binary comes from the LABRUNNER_INFLUXD environment variable
// (the Makefile's `influxd` target builds it into .cache/bin and `make test`
// passes its path). When the variable is not set, the binary at
// <repository>/.cache/bin/influxd is used, and built there first with
// `go install github.com/influxdata/influxdb/cmd/influxd@v1.8.3` when it is
// missing (a one-time build of about two minutes), so `go test` alone works
// too and the tests never skip.
package influxtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Version is the InfluxDB release the tests run against.
const Version = "v1.8.3"

// EnvBinary names the environment variable holding influxd's path.
const EnvBinary = "LABRUNNER_INFLUXD"

var buildOnce sync.Once
var buildPath string
var buildErr error

// Binary returns the path of influxd, building it into the repository's
// .cache/bin when neither LABRUNNER_INFLUXD nor a cached binary is there.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w (run `make influxd`, or unset it to build into .cache)", EnvBinary, p, err)
		}
		return p, nil
	}
	buildOnce.Do(func() { buildPath, buildErr = buildCached() })
	return buildPath, buildErr
}

func buildCached() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, ".cache", "bin")
	path := filepath.Join(bin, "influxd")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	// Several test binaries may get here at once: one builds, the others
	// wait on the lock and find the binary.
	lock, err := os.OpenFile(filepath.Join(root, ".cache", "influxd.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	fmt.Fprintf(os.Stderr, "influxtest: building influxd %s into %s (once; about two minutes)\n", Version, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/influxdata/influxdb/cmd/influxd@"+Version)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-buildvcs=false")
	cmd.Dir = os.TempDir() // outside the module: go install pkg@version ignores go.mod
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building influxd %s (run `make influxd` to see why): %w\n%s", Version, err, out)
	}
	return path, nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "module github.com/labrunner/labrunner") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("influxtest: no labrunner go.mod above the working directory; set %s to influxd's path", EnvBinary)
		}
		dir = parent
	}
}

// Options configure a server.
type Options struct {
	// Flux enables Flux queries on /api/v2/query (startup takes a few
	// seconds longer).
	Flux bool
	// User and Password, when set, turn authentication on with that admin
	// user; the v2 token is then "User:Password".
	User, Password string
	// Databases are created once the server is up.
	Databases []string
	// Log receives the server's log (discarded when nil).
	Log io.Writer
}

// Server is a running influxd.
type Server struct {
	URL  string // http://127.0.0.1:port
	Dir  string
	opts Options
	bin  string
	conf string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts influxd with its data under dir (which must exist).
func Start(dir string, opts Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, opts: opts, bin: bin}
	var lastErr error
	for try := 0; try < 3; try++ { // a free port can be taken before influxd binds it
		httpPort, err1 := freePort()
		rpcPort, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		s.URL = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
		s.conf = filepath.Join(dir, "influxd.conf")
		conf := fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"
[meta]
  dir = %q
  logging-enabled = false
[data]
  dir = %q
  wal-dir = %q
  query-log-enabled = false
  wal-fsync-delay = "0s"
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:%d"
  flux-enabled = %t
  log-enabled = false
  auth-enabled = %t
  pprof-enabled = false
[logging]
  level = "warn"
  suppress-logo = true
`, rpcPort, filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), httpPort, opts.Flux, opts.User != "")
		if err := os.WriteFile(s.conf, []byte(conf), 0o644); err != nil {
			return nil, err
		}
		if lastErr = s.start(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	if opts.User != "" {
		q := fmt.Sprintf("CREATE USER %q WITH PASSWORD '%s' WITH ALL PRIVILEGES", opts.User, strings.ReplaceAll(opts.Password, "'", `\'`))
		if _, err := s.Query("", q); err != nil {
			s.Stop()
			return nil, fmt.Errorf("creating the admin user: %w", err)
		}
	}
	for _, db := range opts.Databases {
		if _, err := s.Query("", fmt.Sprintf("CREATE DATABASE %q", db)); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

func (s *Server) start() error {
	cmd := exec.Command(s.bin, "run", "-config", s.conf)
	cmd.Dir = s.Dir
	logw := s.opts.Log
	if logw == nil {
		logw = io.Discard
	}
	cmd.Stdout, cmd.Stderr = logw, logw
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("influxd exited while starting (%v); config %s", cmd.ProcessState, s.conf)
		default:
		}
		resp, err := http.Get(s.URL + "/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("influxd at %s did not answer /ping within 90 s", s.URL)
}

// Stop shuts the server down (SIGTERM, then SIGKILL after 15 s).
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Kill stops the server at once (SIGKILL), as a crash or a power cut would.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

// Restart starts a stopped server again on the same port and data.
func (s *Server) Restart() error {
	return s.start()
}

// Token is the v2 token for the server's admin user ("" without auth).
func (s *Server) Token() string {
	if s.opts.User == "" {
		return ""
	}
	return s.opts.User + ":" + s.opts.Password
}

// Result is one InfluxQL statement's answer.
type Result struct {
	Series []struct {
		Name    string            `json:"name"`
		Tags    map[string]string `json:"tags"`
		Columns []string          `json:"columns"`
		Values  [][]any           `json:"values"`
	} `json:"series"`
	Error string `json:"error"`
}

// Query runs an InfluxQL statement (on database db, "" for none) and
// returns its result. Numbers come back as json.Number.
func (s *Server) Query(db, q string) (*Result, error) {
	form := url.Values{"q": {q}, "epoch": {"ns"}}
	if db != "" {
		form.Set("db", db)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL+"/query", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if s.opts.User != "" && !strings.HasPrefix(q, "CREATE USER") {
		req.SetBasicAuth(s.opts.User, s.opts.Password)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Results []Result `json:"results"`
		Error   string   `json:"error"`
	}
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("influxql %q: HTTP %d: %w", q, resp.StatusCode, err)
	}
	if out.Error != "" {
		return nil, fmt.Errorf("influxql %q: %s", q, out.Error)
	}
	if len(out.Results) == 0 {
		return &Result{}, nil
	}
	if out.Results[0].Error != "" {
		return nil, fmt.Errorf("influxql %q: %s", q, out.Results[0].Error)
	}
	return &out.Results[0], nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
