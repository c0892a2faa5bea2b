package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/redis/go-redis/v9"
)

// instrCycles is how many cycles each case of BenchmarkRedisInstructions
// runs, one at a time.
const instrCycles = 2000

// BenchmarkRedisInstructions counts the instructions redis-server executes
// per cycle, under valgrind's callgrind: a count, not a time, so it comes
// out the same on a loaded machine and an idle one, and shows what each
// implementation costs the server, where at 16 goroutines on these 2 cores
// the time goes. Each case runs instrCycles cycles, one at a time, against a
// redis-server of its own; Ir/cycle is its instruction total less that of a
// server started and stopped with nothing sent, over the cycles.
//
//   - ping: two PINGs (a cycle's two round trips, doing nothing).
//   - raw: the raw floor of BenchmarkCycle (SET NX PX, then an EVALSHA
//     compare-and-delete).
//   - empty-scripts: two EVALSHA calls of a script that returns at once,
//     with lockwatch's four keys and five arguments: what two script calls
//     cost before they do anything.
//   - lockwatch/fresh, lockwatch/reused: lease.Locker's Acquire and Release
//     (telemetry off), on a new key per cycle, and on 16 keys taken in turn
//     (their fence records keep 16 barred tokens each).
//
// It runs once whatever b.N is: run it with -benchtime 1x.
func BenchmarkRedisInstructions(b *testing.B) {
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		if os.Getenv("LOCKWATCH_REQUIRE_INTEGRATION") == "1" {
			b.Fatalf("valgrind (Debian's valgrind package) is needed: %v", err)
		}
		b.Skipf("valgrind not on PATH: %v", err)
	}
	idle := instructions(b, valgrind, 0, nil)
	empty := redis.NewScript("return {1, 1}")
	for _, name := range []string{"ping", "raw", "empty-scripts", "lockwatch/fresh", "lockwatch/reused"} {
		b.Run(name, func(b *testing.B) {
			total := instructions(b, valgrind, instrCycles, func(ctx context.Context, rc *redis.Client) (func(i int) error, func()) {
				keys := func(i int) []string {
					k := "instr:{" + strconv.Itoa(i) + "}"
					return []string{k + ":l", k + ":f", k + ":q", k + ":e"}
				}
				switch name {
				case "ping":
					return func(int) error {
						if err := rc.Ping(ctx).Err(); err != nil {
							return err
						}
						return rc.Ping(ctx).Err()
					}, func() {}
				case "raw":
					return func(i int) error {
						key, owner := "instr:"+strconv.Itoa(i), rand.Text()
						if err := rc.SetNX(ctx, key, owner, cycleTTL).Err(); err != nil {
							return err
						}
						return rawRelease.Run(ctx, rc, []string{key}, owner).Err()
					}, func() {}
				case "empty-scripts":
					return func(i int) error {
						for range 2 {
							if err := empty.Run(ctx, rc, keys(i), rand.Text(), cycleTTL.Milliseconds(), time.Hour.Milliseconds(), 0, keys(i)[0]).Err(); err != nil {
								return err
							}
						}
						return nil
					}, func() {}
				}
				lk := lease.NewLocker(rc, lease.Config{TTL: cycleTTL, Telemetry: telemetryOff()})
				reused := name == "lockwatch/reused"
				return func(i int) error {
					key := "k" + strconv.Itoa(i)
					if reused {
						key = "k" + strconv.Itoa(i%16)
					}
					l, err := lk.Acquire(ctx, key)
					if err != nil {
						return err
					}
					return l.Release(ctx)
				}, func() { _ = lk.Close() }
			})
			b.ReportMetric(float64(total-idle)/instrCycles, "Ir/cycle")
		})
	}
}

// instructions starts a redis-server under callgrind, runs cycles cycles of
// what setup returns (setup may be nil with no cycles), stops the server
// and returns the instructions it executed.
func instructions(b *testing.B, valgrind string, cycles int, setup func(context.Context, *redis.Client) (cycle func(i int) error, done func())) int64 {
	b.Helper()
	dir := b.TempDir()
	port, err := loopbackPort()
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "callgrind.out")
	cmd := exec.Command(valgrind, "--tool=callgrind", "--callgrind-out-file="+out,
		"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--hz", "1", "--dir", dir)
	log, err := os.Create(filepath.Join(dir, "valgrind.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{}) // closed once the process is gone
	var waitErr error             // set before exited is closed
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	ctx := context.Background()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	loopbackOnly(b, addr)
	// No retries: SHUTDOWN closes the connection without a reply, and a
	// retry would only dial the stopped server.
	rc := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxRetries: -1})
	deadline := time.Now().Add(2 * time.Minute)
	for !listening(addr) { // before go-redis dials: it logs every refused dial
		select {
		case <-exited:
			text, _ := os.ReadFile(log.Name())
			b.Fatalf("redis-server under valgrind exited (%v):\n%s", waitErr, text)
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("redis-server under valgrind did not answer within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := rc.Ping(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	if setup != nil {
		cycle, done := setup(ctx, rc)
		for i := range cycles {
			if err := cycle(i); err != nil {
				b.Fatalf("cycle %d: %v", i, err)
			}
		}
		done()
	}
	_ = rc.Do(ctx, "SHUTDOWN", "NOSAVE").Err() // the connection closes: no reply
	_ = rc.Close()
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		b.Fatal("redis-server under valgrind did not stop")
	}
	n, err := callgrindTotal(out)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// callgrindTotal reads the instruction total (the summary line) of a
// callgrind output file.
func callgrindTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "summary: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(path + ": no summary line")
}

// listening reports whether addr accepts a TCP connection.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

// loopbackPort returns a TCP port on 127.0.0.1 that was free a moment ago.
func loopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
