package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
)

// The tests that stop processes read their states from /proc: a state is
// a condition to wait on, where a sleep would guess.

// stopWait bounds the waits for a process to change state: seconds on a
// loaded machine, where the change takes milliseconds.
const stopWait = 10 * time.Second

// stopTTL is the TTL of the tests that keep a job stopped until its key
// expires: its safety margin (400 ms) is the time a program has to run
// its SIGTERM handler on a loaded machine.
const stopTTL = "4s"

// beat starts lockwatch with args (which end in "--") running
// beatProgram in dir, as start does, or as startJob does if job.
func beat(t *testing.T, dir string, job bool, args ...string) *proc {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	env := []string{"DIR=" + dir, beatEnv}
	args = append(args, self)
	if job {
		return startJob(t, env, args...)
	}
	return startEnv(t, env, args...)
}

// procState is the state letter /proc shows for pid (R, S, D, T, t, Z...),
// or 0 once it is gone.
func procState(pid int) byte {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces and parentheses: the state follows
	// the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// ended tells whether pid no longer runs: gone, or a zombie whose parent
// has not reaped it (a stopped lockwatch cannot).
func ended(pid int) bool {
	s := procState(pid)
	return s == 0 || s == 'Z'
}

// stopped tells whether pid is stopped by a signal.
func stopped(pid int) bool { return procState(pid) == 'T' }

// waitPid waits for the pid a program wrote to $DIR/<name>.
func waitPid(t *testing.T, dir, name string, p *proc) int {
	t.Helper()
	pid, err := strconv.Atoi(waitFile(t, filepath.Join(dir, name), p))
	require.NoError(t, err)
	return pid
}

// readBeats returns the heartbeats in $DIR/beats, in order (a line still
// being written is left out).
func readBeats(t *testing.T, dir string) []time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "beats"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var beats []time.Time
	for _, line := range strings.SplitAfter(string(b), "\n") {
		ns, err := strconv.ParseInt(strings.TrimSuffix(line, "\n"), 10, 64)
		if err != nil || !strings.HasSuffix(line, "\n") {
			continue
		}
		beats = append(beats, time.Unix(0, ns))
	}
	return beats
}

// waitBeats waits until the program has written more than n heartbeats,
// and returns how many there are.
func waitBeats(t *testing.T, dir string, n int, msg string) int {
	t.Helper()
	var got int
	require.Eventually(t, func() bool {
		got = len(readBeats(t, dir))
		return got > n
	}, stopWait, 10*time.Millisecond, "%s (%d heartbeats)", msg, got)
	return got
}

// keyClient is a client of the shared server, for the lock keys' TTLs.
func keyClient(t *testing.T) *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: sharedAddr})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// earliestExpiry is the earliest time key's lock can expire in Redis if
// nothing renews it after this call: the server answered PTTL at or after
// the command was sent.
func earliestExpiry(ctx context.Context, t *testing.T, client *redis.Client, key string) time.Time {
	t.Helper()
	lockKey := leasekeys.Of(defaultNamespace, key).Lock
	sent := time.Now()
	pttl, err := client.PTTL(ctx, lockKey).Result()
	require.NoError(t, err)
	require.Positive(t, pttl, "the key is not held")
	return sent.Add(pttl)
}

// waitExpired waits until key's lock is gone from Redis, within d.
func waitExpired(ctx context.Context, t *testing.T, client *redis.Client, key string, d time.Duration, msg string) {
	t.Helper()
	lockKey := leasekeys.Of(defaultNamespace, key).Lock
	require.Eventually(t, func() bool { return client.Exists(ctx, lockKey).Val() == 0 }, d, 5*time.Millisecond, msg)
}

// startJob starts lockwatch in a process group of its own, as a shell
// with job control starts a job.
func startJob(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = newCmd(args...)
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.launch(t)
	return p
}

// waitWithin waits up to d for lockwatch to exit and returns its status,
// or fails with msg.
func (p *proc) waitWithin(t *testing.T, d time.Duration, msg string) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("%s: lockwatch did not exit within %v", msg, d)
		return -1
	}
}

// waitUntil waits up to d for cond, and reports whether it held.
func waitUntil(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
