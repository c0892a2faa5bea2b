package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// These bound failures on a loaded 2-core machine running -race; on success
// nothing waits for them to elapse.
const (
	startTimeout     = 30 * time.Second
	stopTimeout      = 15 * time.Second
	pollInterval     = 10 * time.Millisecond
	maxStartAttempts = 5
	logTailLines     = 30
)

// errAddrInUse marks a start that lost the race for its port, which is worth
// retrying, unlike every other start failure.
var errAddrInUse = errors.New("redistest: address already in use")

var errNotRunning = errors.New("redistest: redis-server is not running")

// Server is one redis-server process owned by a test. Its port stays fixed
// for its whole life so that clients configured before a Kill reconnect to
// the restarted server, as they would to a real crashed-and-restarted Redis.
type Server struct {
	bin     string
	dir     string
	logPath string
	extra   []string
	conf    string   // a config file put first on the command line (a sentinel's), or ""
	env     []string // added to the process's environment (StartSkewed)
	port    int
	busPort int // cluster bus port we chose; 0 when not in cluster mode or chosen by the caller

	mu     sync.Mutex
	proc   *process
	parked net.Listener // the fake primary of StopReplication
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // result of Wait; read only after done is closed
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start launches redis-server on 127.0.0.1 and a free port, without
// persistence, with its working directory and log in t.TempDir(), and returns
// once it answers PING. A t.Cleanup kills and reaps it, paused or not.
// extraArgs are appended to the redis-server command line and so override the
// defaults. It calls Require itself.
//
// With "--cluster-enabled yes" and no "--cluster-port", Start also picks a
// free port for the cluster bus, rather than relying on port+10000 being free.
func Start(t testing.TB, extraArgs ...string) *Server {
	t.Helper()
	Require(t)
	return startWith(t, nil, extraArgs)
}

// startWith is Start with env added to the server's environment.
func startWith(t testing.TB, env, extraArgs []string) *Server {
	t.Helper()
	s, err := newServer(t.TempDir(), extraArgs)
	s.env = env
	// Registered before the first launch so that a server which started but
	// failed its readiness check is still killed.
	t.Cleanup(func() {
		if err := s.Kill(); err != nil {
			t.Errorf("redistest: kill %s: %v", s.Addr(), err)
		}
		s.closeParked()
	})
	if err == nil {
		err = s.start()
	}
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	return s
}

// Launch starts a server like Start, for code that has no testing.TB: a
// TestMain that serves runnable examples. dir is its working directory; the
// caller must Kill it.
func Launch(dir string, extraArgs ...string) (*Server, error) {
	return launchWith(dir, nil, extraArgs)
}

// launchWith is Launch with env added to the server's environment.
func launchWith(dir string, env, extraArgs []string) (*Server, error) {
	s, err := newServer(dir, extraArgs)
	s.env = env
	if err == nil {
		err = s.start()
	}
	if err != nil {
		_ = s.Kill()
		return nil, err
	}
	return s, nil
}

func newServer(dir string, extraArgs []string) (*Server, error) {
	s := &Server{
		dir:     dir,
		logPath: filepath.Join(dir, "redis.log"),
		extra:   slices.Clone(extraArgs),
	}
	bin, err := exec.LookPath(serverBinary())
	if err != nil {
		return s, fmt.Errorf("redistest: %w", err)
	}
	s.bin = bin
	return s, nil
}

// start picks ports and launches, retrying when it lost the race for a port.
func (s *Server) start() error {
	for attempt := 1; ; attempt++ {
		if err := s.pickPorts(); err != nil {
			return fmt.Errorf("redistest: pick a free port: %w", err)
		}
		err := s.launch()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == maxStartAttempts {
			return fmt.Errorf("redistest: start redis-server (attempt %d): %w", attempt, err)
		}
	}
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the TCP port, which Restart keeps.
func (s *Server) Port() int { return s.port }

// announcedPort is the port other servers see s at: the port a proxy in
// front of it listens on when its arguments announce one
// (--cluster-announce-port, --replica-announce-port), else its own.
func (s *Server) announcedPort() int {
	port := s.port
	for i, a := range s.extra[:max(len(s.extra)-1, 0)] {
		if a == "--cluster-announce-port" || a == "--replica-announce-port" {
			if p, err := strconv.Atoi(s.extra[i+1]); err == nil && p != 0 {
				port = p
			}
		}
	}
	return port
}

// BusPort is the cluster bus port Start or Launch chose, 0 when the server
// is not in cluster mode.
func (s *Server) BusPort() int { return s.busPort }

// Client returns a client for this server, closed on t.Cleanup. opts adjust
// the options after Addr is filled in.
func (s *Server) Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.Addr()}
	for _, opt := range opts {
		opt(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Do runs one command through a client that lives only for this call. It
// neither retries the command nor redials, so a fault injected by the test
// surfaces as an error at once instead of being papered over.
func (s *Server) Do(ctx context.Context, args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	return c.Do(ctx, args...).Result()
}

// Stop shuts the server down gracefully with SHUTDOWN NOSAVE and waits for
// the process to exit. A paused server is resumed first, since it could not
// answer otherwise. Stopping a server that is not running is a no-op.
func (s *Server) Stop() error {
	p := s.current()
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	// On success SHUTDOWN has no reply, the connection just closes, so only
	// an error reply from the server means it refused.
	_, err := s.Do(ctx, "SHUTDOWN", "NOSAVE")
	var refused redis.Error
	if errors.As(err, &refused) {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		_ = s.kill(p)
		return fmt.Errorf("redistest: %s did not shut down within %v (last error %v); killed it", s.Addr(), stopTimeout, err)
	}
}

// Kill sends SIGKILL and waits for the process to be reaped. Without
// persistence every key is lost, as in a real crash. Killing a server that is
// not running is a no-op.
func (s *Server) Kill() error {
	p := s.current()
	if p == nil {
		return nil
	}
	return s.kill(p)
}

func (s *Server) kill(p *process) error {
	if p.exited() {
		return nil
	}
	// Linux delivers SIGKILL to stopped processes too; SIGCONT first makes
	// sure a paused server can never survive its cleanup on any platform.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.done
	return nil
}

// Restart starts the server again on the same port with the same arguments
// after Stop or Kill, and waits until it answers PING. If the port is
// briefly held by someone else it keeps trying until startTimeout.
func (s *Server) Restart() error {
	if p := s.current(); p != nil && !p.exited() {
		return errors.New("redistest: restart: redis-server is still running; Stop or Kill it first")
	}
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.launch()
		if err == nil || !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * pollInterval)
	}
}

// Pause freezes the process with SIGSTOP. The kernel still completes TCP
// handshakes into the listen backlog, so clients connect but never get a
// reply: the signature of a stalled server, not of a dead one.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume undoes Pause with SIGCONT.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) error {
	p := s.current()
	if p == nil || p.exited() {
		return errNotRunning
	}
	return p.cmd.Process.Signal(sig)
}

func (s *Server) current() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

func (s *Server) closeParked() {
	s.mu.Lock()
	l := s.parked
	s.parked = nil
	s.mu.Unlock()
	if l != nil {
		_ = l.Close()
	}
}

// pickPorts chooses ports the kernel just reported free. Holding the first
// listener while asking for the second keeps the two distinct.
func (s *Server) pickPorts() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	s.port = l.Addr().(*net.TCPAddr).Port
	if !clusterEnabled(s.extra) || slices.Contains(s.extra, "--cluster-port") {
		return nil
	}
	bus, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer bus.Close()
	s.busPort = bus.Addr().(*net.TCPAddr).Port
	return nil
}

func clusterEnabled(args []string) bool {
	for i, a := range args[:max(len(args)-1, 0)] {
		if a == "--cluster-enabled" && strings.EqualFold(args[i+1], "yes") {
			return true
		}
	}
	return false
}

func (s *Server) args() []string {
	var args []string
	if s.conf != "" {
		args = []string{s.conf, "--sentinel"}
	}
	args = append(args,
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(s.port),
		"--dir", s.dir,
		"--logfile", s.logPath,
		"--daemonize", "no",
		"--save", "",
		"--appendonly", "no",
		// A primary otherwise waits 5s for more replicas before a diskless
		// full sync; tests attach one replica at a time.
		"--repl-diskless-sync-delay", "0",
	)
	if s.busPort != 0 {
		args = append(args, "--cluster-port", strconv.Itoa(s.busPort))
	}
	return append(args, s.extra...)
}

// launch starts one process and waits for it to be ready. Its stdout and
// stderr go to the same log as --logfile, because redis-server reports
// command-line errors before it opens the logfile.
func (s *Server) launch() error {
	logStart := int64(0)
	if fi, err := os.Stat(s.logPath); err == nil {
		logStart = fi.Size()
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	if s.env != nil {
		cmd.Env = append(os.Environ(), s.env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	err = cmd.Start()
	_ = logFile.Close() // the child has its own copies
	if err != nil {
		return fmt.Errorf("exec %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()

	if err := s.waitReady(p); err != nil {
		_ = s.kill(p)
		log := s.readLog(logStart)
		if strings.Contains(log, "Address already in use") {
			return fmt.Errorf("%w: %v", errAddrInUse, err)
		}
		return fmt.Errorf("%v\n--- tail of %s ---\n%s", err, s.logPath, tail(log, logTailLines))
	}
	return nil
}

// waitReady polls until the server answers and INFO names our process: a
// bare PING could be answered by another test's server that won the port.
//
// Until the port accepts connections it is probed with a plain dial, not
// with go-redis: a go-redis pool that keeps failing to dial logs every
// failure and starts a background redialer that outlives Close by up to a
// second, which goleak would report.
func (s *Server) waitReady(p *process) error {
	c := redis.NewClient(&redis.Options{
		Addr:          s.Addr(),
		DialTimeout:   time.Second,
		ReadTimeout:   time.Second,
		MaxRetries:    -1,
		DialerRetries: 1,
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	want := strconv.Itoa(p.cmd.Process.Pid)
	var lastErr error
	for {
		var conn net.Conn
		conn, lastErr = net.DialTimeout("tcp", s.Addr(), time.Second)
		if lastErr == nil {
			_ = conn.Close()
			lastErr = answers(ctx, c, want)
			if lastErr == nil {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("redis-server exited during start: %v", p.err)
		case <-ctx.Done():
			return fmt.Errorf("redis-server not ready after %v: %v", startTimeout, lastErr)
		case <-time.After(pollInterval):
		}
	}
}

func answers(ctx context.Context, c *redis.Client, pid string) error {
	if err := c.Ping(ctx).Err(); err != nil {
		return err
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	if got := parseInfo(info)["process_id"]; got != pid {
		return fmt.Errorf("%s is answered by process %s, not by ours (%s)", c.Options().Addr, got, pid)
	}
	return nil
}

func (s *Server) readLog(from int64) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	if from > int64(len(b)) {
		from = 0
	}
	return string(b[from:])
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
