package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockwatch/lockwatch/internal/suspend"
	"github.com/lockwatch/lockwatch/telemetry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// childEnv marks a re-executed copy of this binary as a holder process. An
// environment variable rather than a flag, so that a test binary, whose
// flags belong to the testing package, can be re-executed the same way.
const childEnv = "LOCKWATCH_CHAOS_CHILD"

func isChild() bool { return os.Getenv(childEnv) == "1" }

// childConfig is the first line the parent writes to a child's stdin.
type childConfig struct {
	Index     int           `json:"index"` // 1-based
	Lock      lockTarget    `json:"lock"`
	FenceAddr string        `json:"fence_addr"`
	Guard     guardAddrs    `json:"guard"` // the parent's guarded register
	DSN       string        `json:"dsn"`
	Schema    string        `json:"schema"`
	Keys      []string      `json:"keys"`
	TTL       time.Duration `json:"ttl"`
	Work      time.Duration `json:"work"`
	Seed      uint64        `json:"seed"`
	Unfenced  bool          `json:"unfenced"`
	// Candidate, if set, makes the process an election candidate of this
	// name instead of a holder (elections.go).
	Candidate string `json:"candidate,omitempty"`
}

// Messages from child to parent, one JSON object per line on stdout.
type childMsg struct {
	Op     *op          `json:"op,omitempty"`
	Lease  *leaseRec    `json:"lease,omitempty"`
	Term   *termRec     `json:"term,omitempty"`
	StopMe *stopMe      `json:"stopme,omitempty"` // inside Commit, armed: stop me now
	Report *childReport `json:"report,omitempty"` // the last message
	Err    string       `json:"err,omitempty"`
}

type stopMe struct {
	Key   string `json:"key"`
	Fence int64  `json:"f"`
}

// childReport is what a child's own metrics counted, read from its manual
// reader after its Locker closed.
type childReport struct {
	Metrics counts `json:"metrics"`
	// Seen is what the child's holder saw, counted as it sent the records:
	// the parent compares it with the records it received, so a history
	// that lost a line on the way cannot pass as exact.
	Seen counts `json:"seen"`
	// A candidate's election counters, read from a reader of their own,
	// and how many terms it sent.
	Election electionCounts `json:"election"`
	Terms    int            `json:"terms"`
}

// Commands from parent to child, one per line on stdin.
const (
	cmdArm    = "arm"    // stop inside the next Commit
	cmdDisarm = "disarm" // never mind
	cmdGo     = "go"     // the parent has resumed you: finish the Commit
	cmdStop   = "stop"   // finish the current operation and report
	// cmdSuspend and a count of nanoseconds: move your lease clock that far
	// (internal/suspend) and stop yourself; the parent resumes you.
	cmdSuspend = "suspend "
)

// childMain is a holder process: it reads its configuration, runs one
// holder until told to stop (or until its stdin closes: the parent is
// gone), and reports its metrics.
func childMain() int {
	in := bufio.NewScanner(os.Stdin)
	out := &childOut{enc: json.NewEncoder(os.Stdout)}
	if !in.Scan() {
		fmt.Fprintln(os.Stderr, "chaos child: no configuration on stdin")
		return 2
	}
	var cfg childConfig
	if err := json.Unmarshal(in.Bytes(), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chaos child:", err)
		return 2
	}
	if err := runChild(cfg, in, out); err != nil {
		out.send(childMsg{Err: err.Error()})
		fmt.Fprintln(os.Stderr, "chaos child:", err)
		return 1
	}
	return 0
}

func runChild(cfg childConfig, in *bufio.Scanner, out *childOut) error {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	tel := telemetry.New(telemetry.Config{MeterProvider: mp, Logger: slog.New(slog.DiscardHandler)})
	regs, err := newRegisters(cfg.FenceAddr, cfg.DSN, cfg.Schema, cfg.Guard, tel, cfg.Unfenced)
	if err != nil {
		return err
	}
	defer regs.close()

	stop, pause := listen(in, out, cfg.TTL)
	if cfg.Candidate != "" {
		return runCandidateChild(cfg, reader, regs, pause, stop, out)
	}
	id := fmt.Sprintf("p%d", cfg.Index)
	lc := newLockClient(cfg.Lock, cfg.TTL, tel)
	h := newHolder(id, cfg.Index, lc.locker, cfg.TTL, cfg.Work, cfg.Keys, tel, regs, cfg.Seed, out, stop)
	h.pause = pause
	h.run()
	if err := lc.close(); err != nil {
		return err
	}
	c, err := collect(context.Background(), reader)
	if err != nil {
		return err
	}
	out.send(childMsg{Report: &childReport{Metrics: c, Seen: out.seen()}})
	return out.err
}

// listen reads the parent's commands until stdin says stop or closes, which
// closes stop. pause is what a holder (or candidate) calls before an
// armed write: it tells the parent, waits for the parent's go, and reports
// whether the process was stopped meanwhile for at least a TTL.
func listen(in *bufio.Scanner, out *childOut, ttl time.Duration) (<-chan struct{}, func(key string, fence int64) bool) {
	stop := make(chan struct{})
	resume := make(chan struct{}, 1)
	var armed atomic.Bool // stop inside the next Commit
	go func() {
		defer close(stop)
		for in.Scan() {
			switch in.Text() {
			case cmdArm:
				armed.Store(true)
			case cmdDisarm:
				armed.Store(false)
			case cmdGo:
				select {
				case resume <- struct{}{}:
				default:
				}
			case cmdStop:
				return
			default:
				// A suspend: the lease clock jumps and the process stops at
				// once, so that on resume (the parent's SIGCONT) no timer
				// fires before the lease clock has moved, as after a real
				// suspend, where both happen at the same instant.
				if d, ok := strings.CutPrefix(in.Text(), cmdSuspend); ok {
					if n, err := strconv.ParseInt(d, 10, 64); err == nil && n >= 0 {
						suspend.Emulate(time.Duration(n))
						_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
					}
				}
			}
		}
	}()
	pause := func(key string, fence int64) bool {
		if !armed.Swap(false) {
			return false
		}
		from := now()
		out.send(childMsg{StopMe: &stopMe{Key: key, Fence: fence}})
		// The parent stops this process now, and says go once it has
		// resumed it; a parent that went away ends the wait too.
		select {
		case <-resume:
		case <-stop:
		}
		// A lease never has a whole TTL of validity left, so a stop this
		// long has certainly lost it. A shorter one (the run ended during
		// the stop) proves nothing.
		return time.Duration(now()-from) >= ttl
	}
	return stop, pause
}

// childOut serializes the child's messages onto stdout, and keeps what it
// sent for the report.
type childOut struct {
	mu     sync.Mutex
	enc    *json.Encoder
	err    error
	ops    []op
	leases []leaseRec
	terms  int
}

func (o *childOut) seen() counts {
	o.mu.Lock()
	defer o.mu.Unlock()
	return holderCounts(o.ops, o.leases)
}

func (o *childOut) send(m childMsg) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.enc.Encode(m); err != nil && o.err == nil {
		o.err = err
	}
}

func (o *childOut) op(x op) {
	o.send(childMsg{Op: &x})
	o.mu.Lock()
	o.ops = append(o.ops, op{Kind: x.Kind, Outcome: x.Outcome}) // all holderCounts reads
	o.mu.Unlock()
}

func (o *childOut) term(t termRec) {
	o.send(childMsg{Term: &t})
	o.mu.Lock()
	o.terms++
	o.mu.Unlock()
}

func (o *childOut) lease(r leaseRec) {
	o.send(childMsg{Lease: &r})
	o.mu.Lock()
	o.leases = append(o.leases, r)
	o.mu.Unlock()
}

// child is the parent's handle on one holder process.
type child struct {
	index  int
	name   string // p<index> for a holder process, the candidate's name for a candidate process
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	inMu   sync.Mutex
	stopMe chan stopMe // a fault waiting for the child to enter its Commit
	report chan childReport
	errs   chan string
	done   chan struct{} // closed when stdout is drained
	log    *os.File
	net    *childNet // how it reaches the servers

	pauseMu sync.Mutex
	pauses  [][2]int64 // [SIGSTOP, SIGCONT] intervals
	stopped bool
}

// startChild re-executes this binary as holder process cfg.Index. Its
// stderr goes to logPath. With Pdeathsig (Linux) the kernel kills it if the
// parent dies without cleaning up. With a network namespace of its own
// (netns), startChild joins it to the harness's as cn.ns; with cn not nil,
// cfg's addresses point at cn's forwarders before cfg is sent.
func startChild(cfg childConfig, h *history, logPath string, cn *childNet, netns bool) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = logFile
	cmd.SysProcAttr = childAttr()
	if netns {
		netnsAttr(cmd.SysProcAttr)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	name := cfg.Candidate
	if name == "" {
		name = fmt.Sprintf("p%d", cfg.Index)
	}
	c := &child{index: cfg.Index, name: name, cmd: cmd, stdin: stdin, stopMe: make(chan stopMe), report: make(chan childReport, 1),
		errs: make(chan string, 1), done: make(chan struct{}), log: logFile, net: cn}
	go c.read(stdout, h)
	if netns {
		cn.ns, err = newNetNS(cmd.Process.Pid, cfg.Index)
	}
	if err == nil && cn != nil {
		err = cn.rewrite(&cfg)
	}
	if err != nil {
		c.kill()
		_ = c.wait(time.Second)
		return nil, err
	}
	b, _ := json.Marshal(cfg)
	if err := c.send(string(b)); err != nil {
		c.kill()
		_ = c.wait(time.Second)
		return nil, err
	}
	return c, nil
}

func (c *child) send(line string) error {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// read takes the child's messages until its stdout closes.
func (c *child) read(stdout io.Reader, h *history) {
	defer close(c.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m childMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue
		}
		switch {
		case m.Op != nil:
			h.op(*m.Op)
		case m.Lease != nil:
			h.lease(*m.Lease)
		case m.Term != nil:
			h.term(*m.Term)
		case m.StopMe != nil:
			select {
			case c.stopMe <- *m.StopMe:
			default:
				_ = c.send(cmdGo) // nobody is waiting any more: carry on
			}
		case m.Report != nil:
			c.report <- *m.Report
		case m.Err != "":
			select {
			case c.errs <- m.Err:
			default:
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
}

// pause stops the process with SIGSTOP: its holder, its Locker's renewal
// scheduler and its sockets all stand still, like a VM frozen by its host.
func (c *child) pause() error {
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	c.stopped = true
	c.pauses = append(c.pauses, [2]int64{now(), 0})
	return nil
}

// suspend has the process move its lease clock by d and stop itself, and
// waits (up to a second) until it has stopped.
func (c *child) suspend(d time.Duration) error {
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	if err := c.send(cmdSuspend + strconv.FormatInt(int64(d), 10)); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Second)
	for !isStopped(c.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("holder process p%d did not stop itself within a second", c.index)
		}
		time.Sleep(time.Millisecond)
	}
	c.stopped = true
	c.pauses = append(c.pauses, [2]int64{now(), 0})
	return nil
}

func (c *child) resume() error {
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	if !c.stopped {
		return nil
	}
	err := c.cmd.Process.Signal(syscall.SIGCONT)
	c.stopped = false
	c.pauses[len(c.pauses)-1][1] = now()
	return err
}

// pausedDuring reports whether the process was stopped at any time between
// from and to.
func (c *child) pausedDuring(from, to int64) bool {
	_, ok := c.pauseDuring(from, to)
	return ok
}

// pauseDuring returns the start of the first stop that overlaps from..to.
func (c *child) pauseDuring(from, to int64) (int64, bool) {
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	for _, p := range c.pauses {
		end := p[1]
		if end == 0 {
			end = now()
		}
		if p[0] <= to && end >= from {
			return p[0], true
		}
	}
	return 0, false
}

// resumedAt returns the end of the last stop that overlaps from..to, 0 if
// none (or if the process is still stopped).
func (c *child) resumedAt(from, to int64) int64 {
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	var last int64
	for _, p := range c.pauses {
		if p[0] <= to && (p[1] == 0 || p[1] >= from) {
			last = max(last, p[1])
		}
	}
	return last
}

// finish asks the child to stop and waits for its report and its exit.
func (c *child) finish(timeout time.Duration) (childReport, error) {
	_ = c.resume()
	_ = c.send(cmdGo) // in case it waits inside a Commit
	_ = c.send(cmdStop)
	t := time.NewTimer(timeout)
	defer t.Stop()
	var rep childReport
	var err error
	select {
	case rep = <-c.report:
	case msg := <-c.errs:
		err = fmt.Errorf("holder process p%d: %s", c.index, msg)
	case <-c.done:
		err = fmt.Errorf("holder process p%d exited without a report (see %s)", c.index, c.log.Name())
	case <-t.C:
		err = fmt.Errorf("holder process p%d did not report within %v; killed it", c.index, timeout)
	}
	if werr := c.wait(timeout); werr != nil && err == nil {
		err = werr
	}
	return rep, err
}

// wait closes stdin and waits for the process to exit, killing it when it
// does not within timeout, and reaps it.
func (c *child) wait(timeout time.Duration) error {
	c.inMu.Lock()
	_ = c.stdin.Close()
	c.inMu.Unlock()
	exited := make(chan error, 1)
	go func() {
		<-c.done // Wait closes stdout: drain it first
		exited <- c.cmd.Wait()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case err = <-exited:
	case <-t.C:
		c.kill()
		err = <-exited
		err = fmt.Errorf("holder process p%d did not exit within %v; killed it: %v", c.index, timeout, err)
	}
	_ = c.log.Close()
	if err != nil {
		return fmt.Errorf("holder process p%d: %w", c.index, err)
	}
	return nil
}

// kill ends the process at once, stopped or not.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
}
