package failover

import (
	"bufio"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var faults = flag.Int("faults", 20, "faults per case and election")

const (
	candidates = 3
	// settleFor is how long the elections are left alone after a fault was
	// handled and every candidate campaigns: the candidates that were started
	// or woken join the queue (or the watch) meanwhile.
	settleFor = time.Second
	// leadMax bounds every wait for a line: a next leader, a deposed one's
	// end. No failover measured here comes near it.
	leadMax = 30 * time.Second
)

// event is one line of a child's standard output, stamped when the parent
// read it; f is nil when the output ended.
type event struct {
	at   time.Time
	from *child
	f    []string
}

// child is one process of the test binary in a role.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   string // its standard error
}

// spawn starts the test binary in a child process with env added to this
// process's, and sends its lines to events.
func spawn(b *testing.B, name string, events chan<- event, env ...string) *child {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), env...)
	c := &child{cmd: cmd, log: filepath.Join(b.TempDir(), name+".log")}
	stderr, err := os.Create(c.log)
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	_ = stderr.Close()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			events <- event{at: time.Now(), from: c, f: strings.Fields(sc.Text())}
		}
		events <- event{at: time.Now(), from: c}
	}()
	return c
}

// tail is the end of c's standard error, for a failure's message.
func (c *child) tail() string {
	b, _ := os.ReadFile(c.log)
	return string(b[max(0, len(b)-2000):])
}

// startEtcd starts the etcd server in a child process and returns its
// client URL.
func startEtcd(b *testing.B) string {
	events := make(chan event, 16)
	c := spawn(b, "etcd-server", events, envRole+"=etcd-server", envDir+"="+b.TempDir())
	select {
	case ev := <-events:
		if len(ev.f) == 2 && ev.f[0] == "ready" {
			return ev.f[1]
		}
		b.Fatalf("etcd server: %q\n%s", ev.f, c.tail())
	case <-time.After(startMax):
		b.Fatalf("etcd server not ready after %v\n%s", startMax, c.tail())
	}
	return ""
}

// contest is one election's candidates, as the parent follows them.
// Candidates are started on top, the benchmark, so that they live through
// its cases.
type contest struct {
	top      *testing.B
	name     string
	env      []string
	events   chan event
	children []*child
	leader   *child
	killed   map[*child]bool
	started  map[*child]bool // it said "campaign" once
	spawned  int
}

func newContest(b *testing.B, name string, env ...string) *contest {
	e := &contest{top: b, name: name, env: env, events: make(chan event, 1024),
		killed: map[*child]bool{}, started: map[*child]bool{}}
	for range candidates {
		e.spawn()
	}
	e.settle(b)
	return e
}

func (e *contest) spawn() {
	e.spawned++
	id := e.name + "-" + strconv.Itoa(e.spawned)
	e.children = append(e.children, spawn(e.top, id, e.events, append(e.env, envRole+"="+e.name, envID+"="+id)...))
}

// next handles the next line of any candidate, or returns false after
// timeout without one.
func (e *contest) next(b *testing.B, timeout time.Duration) (event, bool) {
	b.Helper()
	select {
	case ev := <-e.events:
		switch {
		case ev.f == nil && !e.killed[ev.from]:
			b.Fatalf("%s: a candidate exited\n%s", e.name, ev.from.tail())
		case ev.f == nil:
		case ev.f[0] == "campaign":
			e.started[ev.from] = true
		case ev.f[0] == "lead":
			e.leader = ev.from
		case ev.f[0] == "ended" && e.leader == ev.from:
			e.leader = nil
		}
		return ev, true
	case <-time.After(timeout):
		return event{}, false
	}
}

// await handles lines until one from (any candidate when nil) whose first
// field is word.
func (e *contest) await(b *testing.B, from *child, word string) event {
	b.Helper()
	deadline := time.Now().Add(leadMax)
	for {
		ev, ok := e.next(b, time.Until(deadline))
		if !ok {
			b.Fatalf("%s: no %q line in %v", e.name, word, leadMax)
		}
		if ev.f != nil && ev.f[0] == word && (from == nil || ev.from == from) {
			return ev
		}
	}
}

// settle returns once a candidate leads, every candidate has campaigned,
// and settleFor passed without a line.
func (e *contest) settle(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(leadMax)
	for e.leader == nil || len(e.started) < len(e.children) {
		if _, ok := e.next(b, time.Until(deadline)); !ok {
			b.Fatalf("%s: no leader or a candidate not campaigning after %v", e.name, leadMax)
		}
	}
	for {
		if _, ok := e.next(b, settleFor); !ok {
			return
		}
	}
}
