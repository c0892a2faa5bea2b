package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
)

// runLockName is the lock name of the run holders' leases (lockwatch run
// --name): a metric attribute of the lockwatch process only.
const runLockName = "chaos-run"

// electLockName is the election name of the lockwatch elect holders
// (lockwatch elect --name).
const electLockName = "chaos-elect"

// runHolder is a holder that is a lockwatch run process, as cron or a
// supervisor starts one: it loops, running
//
//	lockwatch run --key K --ttl TTL --namespace lockwatch-chaos [--grace G] [--wait W] -- PROGRAM
//
// where PROGRAM is this binary heartbeating with the fence lockwatch gave
// it (runprogram.go) onto a pipe the harness reads (heartbeats.go). Its
// leases contend with the other holders' on the same keys. Their metrics
// stay in the lockwatch process, which exports none: the metric check
// leaves them out.
type runHolder struct {
	id     string
	elect  bool              // a candidate: lockwatch elect --key e1, not lockwatch run
	bin    string            // the lockwatch binary
	self   string            // the program: this binary
	conn   []string          // connection flags
	fwd    *faultproxy.Proxy // single: its own way to the lock Redis, which run-ignore-term may cut; nil elsewhere
	ttl    time.Duration
	keys   []string
	rng    *rand.Rand
	stop   <-chan struct{}
	pipe   *os.File      // the heartbeat pipe's write end: the stdout of every lockwatch run
	log    *os.File      // the stderr of every lockwatch run
	starts chan beat     // the first heartbeats of armed programs
	done   chan struct{} // closed when run returns

	mu     sync.Mutex
	seq    int
	armed  *arming
	cur    *exec.Cmd // the lockwatch run under way, nil between runs
	curSeq int
	last   beat // the last program's first heartbeat
	runs   []runRec
}

// arming is what a run-lane fault asks of a holder's next program.
type arming struct {
	fault      int
	work       time.Duration
	ignoreTerm bool
	leave      string
	childLife  time.Duration
	grace      time.Duration // 0: lockwatch's default
	refused    bool          // lockwatch refused the grace: the run goes on with the default
}

// runRec is one lockwatch run as the harness saw it.
type runRec struct {
	Holder     string        `json:"h"`
	Elect      bool          `json:"elect,omitempty"` // lockwatch elect
	Seq        int           `json:"seq"`
	Key        string        `json:"key"`
	Grace      time.Duration `json:"grace,omitempty"` // 0: the default, TTL/20
	Fault      int           `json:"fault,omitempty"`
	IgnoreTerm bool          `json:"ignore_term,omitempty"`
	Start      int64         `json:"start"`
	Exit       int64         `json:"exit"`   // when the harness saw it exit: after its release
	Status     int           `json:"status"` // its exit status; 128+n if a signal n ended it
	Termed     bool          `json:"termed,omitempty"`
	Said       string        `json:"said,omitempty"` // the last line it wrote on stderr
}

// margin is the longest grace lockwatch run honours, half its safety
// margin (TTL/20): the rest is room for a late SIGKILL before the key can
// expire.
func (h *runHolder) margin() time.Duration { return h.ttl / 20 }

// run loops until stop, one lockwatch run at a time. The run under way
// when stop closes gets SIGTERM, as a supervisor stopping it would send.
func (h *runHolder) run() {
	defer close(h.done)
	loop(h.stop, h.rng, h.once)
}

// draw picks the next run's key and program. One program in four ignores
// SIGTERM; half the runs give --grace, up to the safety margin or past
// it, up to a TTL (lockwatch may refuse one longer than the margin). An
// armed fault's wishes override.
func (h *runHolder) draw() (programSpec, string, time.Duration, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	spec := programSpec{Holder: h.id, Seq: h.seq, Beat: max(h.ttl/100, time.Millisecond), Role: roleProgram,
		Work: time.Duration((0.5 + 2*h.rng.Float64()) * float64(h.ttl)), IgnoreTerm: h.rng.IntN(4) == 0}
	key := h.keys[h.rng.IntN(len(h.keys))]
	var grace, wait time.Duration
	switch h.rng.IntN(4) {
	case 0:
		grace = time.Duration((0.1 + 0.9*h.rng.Float64()) * float64(h.margin()))
	case 1:
		grace = time.Duration((1.1 + 8.9*h.rng.Float64()) * float64(h.margin()))
	}
	if h.rng.IntN(waitShare) == 0 && !h.elect {
		wait = time.Duration((0.5 + 1.5*h.rng.Float64()) * float64(h.ttl))
	}
	if a := h.armed; a != nil {
		spec.Fault, spec.Work, spec.IgnoreTerm, spec.Leave, spec.ChildLife = a.fault, a.work, a.ignoreTerm, a.leave, a.childLife
		grace, wait = a.grace, 4*h.ttl
		if a.refused {
			grace = 0
		}
	}
	return spec, key, grace, wait
}

// once runs lockwatch run once and records how it ended.
func (h *runHolder) once() {
	spec, key, grace, wait := h.draw()
	args := append([]string{"run"}, h.conn...)
	args = append(args, "--key", key, "--ttl", h.ttl.String(), "--namespace", lockNamespace, "--name", runLockName)
	if h.elect {
		// A campaign: it runs the program in each term it leads, until
		// the program exits by itself while leading (lockwatch resigns and
		// exits with its status) or the run's SIGTERM.
		args = append([]string{"elect"}, h.conn...)
		args = append(args, "--key", key, "--ttl", h.ttl.String(), "--namespace", lockNamespace, "--name", electLockName,
			"--identity", h.id)
	}
	if grace > 0 {
		args = append(args, "--grace", grace.String())
	}
	if wait > 0 {
		args = append(args, "--wait", wait.String())
	}
	env, _ := json.Marshal(spec)
	cmd := exec.Command(h.bin, append(args, "--", h.self)...)
	cmd.Env = append(os.Environ(), programEnv+"="+string(env), noExitSleep())
	// Files, not pipes the harness copies: Wait returns when lockwatch
	// exits, not when the last process holding them (one its program
	// left behind) closes them.
	cmd.Stdout, cmd.Stderr = h.pipe, h.log
	cmd.SysProcAttr = childAttr()
	rec := runRec{Holder: h.id, Elect: h.elect, Seq: spec.Seq, Key: key, Grace: grace, Fault: spec.Fault, IgnoreTerm: spec.IgnoreTerm}
	from, _ := h.log.Seek(0, io.SeekEnd)
	rec.Start = now()
	if err := cmd.Start(); err != nil {
		rec.Exit, rec.Status, rec.Said = now(), -1, err.Error()
		h.record(rec)
		return
	}
	h.mu.Lock()
	h.cur, h.curSeq = cmd, spec.Seq
	h.mu.Unlock()
	var termed atomic.Bool
	exited := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-h.stop:
			termed.Store(true)
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case <-exited:
		}
	})
	_ = cmd.Wait()
	rec.Exit = now()
	close(exited)
	wg.Wait()
	h.mu.Lock()
	h.cur = nil
	if a := h.armed; a != nil && a.fault == spec.Fault && grace > h.margin() && cmd.ProcessState.ExitCode() == exitUsage {
		a.refused = true
	}
	h.mu.Unlock()
	rec.Status, rec.Termed, rec.Said = waitStatus(cmd.ProcessState), termed.Load(), lastLine(h.log.Name(), from)
	h.record(rec)
}

func (h *runHolder) record(r runRec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs = append(h.runs, r)
}

// started is told of every program start the heartbeats show: an armed
// fault waits for its program's.
func (h *runHolder) started(b beat) {
	h.mu.Lock()
	if h.armed != nil && h.armed.fault == b.Fault {
		h.armed = nil
	}
	h.last = b
	h.mu.Unlock()
	if b.Fault == 0 {
		return
	}
	select {
	case h.starts <- b:
	default: // its fault gave up waiting, and another one's is waiting
	}
}

// lockwatchPid returns the pid of the lockwatch run whose program started
// with b, 0 if that run has exited.
func (h *runHolder) lockwatchPid(b beat) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil || h.curSeq != b.Seq {
		return 0
	}
	return h.cur.Process.Pid
}

// finish waits for the holder's last run to exit, at most timeout. One
// that does not is killed, with its program's group, and reported.
func (h *runHolder) finish(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-h.done:
		return nil
	case <-t.C:
	}
	h.mu.Lock()
	if h.cur != nil {
		for _, pid := range []int{h.cur.Process.Pid, h.programPid()} {
			if pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGCONT)
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}
	h.mu.Unlock()
	<-h.done
	return fmt.Errorf("%s: lockwatch run did not exit within %v of its SIGTERM; killed it and its program", h.id, timeout)
}

// programPid is the pid of the program of the run under way, as its first
// heartbeat gave it; 0 if none came. Called with mu held.
func (h *runHolder) programPid() int {
	if h.last.Seq == h.curSeq {
		return h.last.Pid
	}
	return 0
}

// connFlags are lockwatch's connection flags for target; addr, if not
// empty, replaces the single topology's address.
func connFlags(target lockTarget, addr string) []string {
	switch target.Topology {
	case topoSentinel:
		return []string{"--sentinel", strings.Join(target.Addrs, ","), "--master", target.Master}
	case topoCluster:
		return []string{"--cluster", strings.Join(target.Addrs, ",")}
	}
	if addr == "" {
		addr = target.Addrs[0]
	}
	return []string{"--redis", addr}
}

// lockwatch run's exit statuses the harness tells apart (cmd/lockwatch's
// doc).
const (
	exitUsage       = 64
	exitUnavailable = 69
	exitInternal    = 70
	exitHeld        = 75
	exitUnknown     = 76
	exitLost        = 79
	exitTerm        = 128 + int(syscall.SIGTERM)
)

// waitStatus is the status a shell would report.
func waitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// noExitSleep is GORACE with atexit_sleep_ms=0 added: a program built
// with the race detector (this package's test binary) would otherwise
// live a second past its exit, and its lockwatch run wait for it.
func noExitSleep() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// lastLine returns the last line written to the file at path from offset
// on.
func lastLine(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return lines[len(lines)-1]
}

// arm has the holder's next program run as a asks, and waits (at most
// timeout, or until stop) for its first heartbeat.
func (h *runHolder) arm(a *arming, timeout time.Duration, stop <-chan struct{}) (beat, bool) {
	h.mu.Lock()
	h.armed = a
	h.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case b := <-h.starts:
			if b.Fault == a.fault {
				return b, true
			}
			continue
		case <-t.C:
		case <-stop:
		}
		h.mu.Lock()
		if h.armed == a {
			h.armed = nil
		}
		h.mu.Unlock()
		return beat{}, false
	}
}

// refused reports whether lockwatch refused the grace a asked for.
func (h *runHolder) refused(a *arming) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return a.refused
}
