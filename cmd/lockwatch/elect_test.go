package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/integration"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
)

// electScript is the program of the elect tests' candidates, named $NAME.
// It appends "start FENCE NAME KEY SECRETS SIGIGN" to $DIR/log as it starts
// (SIGIGN: the signals it ignores, from /proc) and writes its token to
// $DIR/token.FENCE; it appends "end FENCE NAME NANOS" as it ends: on
// SIGTERM (exit 0), or when $DIR/exit.NAME appears, exiting with the status
// it holds; 20 s at most. Appends of one line are atomic, so the log's
// order is the order of the starts and ends.
const electScript = `trap 'echo "end $LOCKWATCH_FENCE $NAME $(date +%s%N)" >> "$DIR/log"; exit 0' TERM
ign=$(grep SigIgn /proc/$$/status 2>/dev/null | cut -f2)
echo "$LOCKWATCH_FENCE_TOKEN" > "$DIR/token.$LOCKWATCH_FENCE"
echo "start $LOCKWATCH_FENCE $NAME $LOCKWATCH_KEY ${LOCKWATCH_TOKEN_SECRETS:-none} ${ign:-none}" >> "$DIR/log"
i=0
while [ ! -e "$DIR/exit.$NAME" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
code=$(cat "$DIR/exit.$NAME" 2>/dev/null); rm -f "$DIR/exit.$NAME"
echo "end $LOCKWATCH_FENCE $NAME $(date +%s%N)" >> "$DIR/log"
exit "${code:-0}"`

// promptly bounds a failover that must not wait for the key's expiry: half
// the default TTL of 10 s, which the candidates run with.
const promptly = defaultTTL / 2

// candidateOf starts lockwatch elect with args as candidate name, in dir.
// Neither lockwatch nor its watchdog sleeps at exit under the race
// detector: a term would end a second late.
func candidateOf(t *testing.T, dir, name string, env []string, args ...string) *proc {
	t.Helper()
	env = append([]string{"DIR=" + dir, "NAME=" + name, noExitSleep()}, env...)
	args = append(append([]string{"elect"}, args...), "--", "/bin/sh", "-c", electScript)
	return startEnv(t, env, args...)
}

// logEvent is one line of electScript's log.
type logEvent struct {
	kind  string // start or end
	fence int64
	name  string
	rest  []string // start: key, secrets, ignored signals; end: the time
}

// readLog parses $DIR/log.
func readLog(t *testing.T, dir string) []logEvent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var events []logEvent
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 3, "log line %q", line)
		n, err := strconv.ParseInt(f[1], 10, 64)
		require.NoError(t, err, "log line %q", line)
		events = append(events, logEvent{kind: f[0], fence: n, name: f[2], rest: f[3:]})
	}
	return events
}

// waitEvents waits until the log holds more than n events, and returns
// them.
func waitEvents(t *testing.T, dir string, n int, ps ...*proc) []logEvent {
	t.Helper()
	deadline := time.Now().Add(procTimeout)
	for time.Now().Before(deadline) {
		if events := readLog(t, dir); len(events) > n {
			return events
		}
		for _, p := range ps {
			select {
			case <-p.done:
				t.Fatalf("lockwatch exited %d while the log has %d events; stderr: %s", p.code, n, p.stderr.String())
			default:
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the log did not pass %d events in %v", n, procTimeout)
	return nil
}

// assertOneAtATime checks that the log alternates a start and the end of
// the same term, and that each term's fence is above the one before.
func assertOneAtATime(t *testing.T, events []logEvent) {
	t.Helper()
	var last int64
	for i, e := range events {
		if i%2 == 0 {
			assert.Equal(t, "start", e.kind, "event %d: a program started while another ran: %v", i, events)
			assert.Greater(t, e.fence, last, "event %d: the term's fence is not above the last: %v", i, events)
			last = e.fence
			continue
		}
		assert.Equal(t, logEvent{kind: "end", fence: last, name: events[i-1].name}, logEvent{kind: e.kind, fence: e.fence, name: e.name},
			"event %d: not the end of the running term: %v", i, events)
	}
}

// observe is who leads key's election, as package election reads it.
func observe(t *testing.T, client *redis.Client, key string) election.Leader {
	t.Helper()
	lk := lease.NewLocker(client, lease.Config{})
	t.Cleanup(func() { _ = lk.Close() })
	e, err := election.New(lk, key, election.Config{})
	require.NoError(t, err)
	l, err := e.Observe(testContext(t))
	require.NoError(t, err)
	return l
}

// quick runs lockwatch with args to the end, as lockwatchRun does, but
// without the race detector's sleep at exit.
func quick(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	p := startEnv(t, []string{noExitSleep()}, args...)
	code := p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

// held tells whether key's lock is in the shared Redis.
func held(t *testing.T, key string) bool {
	t.Helper()
	n, err := keyClient(t).Exists(testContext(t), leasekeys.Of(defaultNamespace, key).Lock).Result()
	require.NoError(t, err)
	return n == 1
}

// queued waits until n candidates wait in key's queue.
func queued(t *testing.T, client *redis.Client, key string, n int64) {
	t.Helper()
	queue := leasekeys.Of(defaultNamespace, key).Queue
	ctx := testContext(t)
	require.Eventually(t, func() bool { return client.LLen(ctx, queue).Val() == n }, procTimeout, 5*time.Millisecond,
		"%d candidates are not queued for %s", n, key)
}

// TestElectOneLeaderAtATime: of three candidates one runs its program at a
// time, with a fence above every earlier term's and its signed token.
// SIGTERM to the leader's lockwatch reaches its program, which exits;
// lockwatch resigns and exits with the program's status, and the next
// candidate's program starts at once, not after the TTL. A program that
// exits 3 by itself makes its lockwatch exit 3, and the next takes over.
func TestElectOneLeaderAtATime(t *testing.T) {
	t.Parallel()
	const key = "elect-failover"
	dir := t.TempDir()
	secrets := "k2=" + testSecret(t, 32)
	env := []string{envSecrets + "=" + secrets}
	conn := []string{"--redis", sharedAddr, "--key", key}
	client := keyClient(t)
	a := candidateOf(t, dir, "a", env, append(conn, "--identity", "a")...)
	waitEvents(t, dir, 0, a)
	assert.Equal(t, election.Leader{Term: readLog(t, dir)[0].fence, Identity: "a"}, observe(t, client, key))
	b := candidateOf(t, dir, "b", env, append(conn, "--identity", "b")...)
	queued(t, client, key, 1)
	c := candidateOf(t, dir, "c", env, append(conn, "--identity", "c")...)
	queued(t, client, key, 2)
	procs := map[string]*proc{"a": a, "b": b, "c": c}

	began := time.Now()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	events := waitEvents(t, dir, 2)
	t.Logf("failover after SIGTERM: %v", time.Since(began))
	assert.Less(t, time.Since(began), promptly, "the next candidate started after SIGTERM only in %v", time.Since(began))
	assert.Equal(t, exitOK, a.wait(t), "the program's status after its TERM trap; stderr: %s", a.stderr.String())
	second := procs[events[2].name]

	began = time.Now()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "exit."+events[2].name), []byte("3"), 0o644))
	events = waitEvents(t, dir, 4)
	t.Logf("failover after exit 3: %v", time.Since(began))
	assert.Less(t, time.Since(began), promptly, "the next candidate started after an exit 3 only in %v", time.Since(began))
	assert.Equal(t, 3, second.wait(t), second.stderr.String())

	assert.Equal(t, election.Leader{Term: events[4].fence, Identity: events[4].name}, observe(t, client, key))
	third := events[4].name
	require.NoError(t, os.WriteFile(filepath.Join(dir, "exit."+third), nil, 0o644))
	assert.Equal(t, exitOK, procs[third].wait(t), procs[third].stderr.String())
	events = readLog(t, dir)
	require.Len(t, events, 6)
	assertOneAtATime(t, events)
	assert.Equal(t, []string{"a", "b", "c"}, []string{events[0].name, events[2].name, events[4].name}, "not first come, first served")
	parsed, err := fence.ParseSecrets(secrets)
	require.NoError(t, err)
	for i := 0; i < len(events); i += 2 {
		e := events[i]
		assert.Equal(t, []string{key, "none"}, e.rest[:2], "LOCKWATCH_KEY, and no secrets in the program's environment")
		tok, err := fence.Parse(waitFile(t, filepath.Join(dir, "token."+strconv.FormatInt(e.fence, 10)), nil))
		require.NoError(t, err)
		assert.Equal(t, fence.Mint(defaultNamespace, key, e.fence, parsed), tok, "LOCKWATCH_FENCE_TOKEN is the term's, signed")
	}
	assert.False(t, held(t, key), "the last leader did not resign")
}

// TestElectLossEndsProgramBeforeExpiry pauses Redis under a leader: its
// program gets SIGTERM before the key could expire; lockwatch campaigns
// again and, re-elected once Redis is back, runs the program anew with a
// larger fence (and SIGTTOU's default: the first term's ignored SIGTTOU is
// not inherited).
func TestElectLossEndsProgramBeforeExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := testContext(t)
	const key = "elect-paused"
	dir := t.TempDir()
	p := candidateOf(t, dir, "a", nil, "--redis", srv.Addr(), "--key", key, "--ttl", "2s", "--name", "paused-election")
	first := waitEvents(t, dir, 0, p)[0]

	lockKey := leasekeys.Of(defaultNamespace, key).Lock
	sent := time.Now()
	pttl, err := client.PTTL(ctx, lockKey).Result()
	require.NoError(t, err)
	require.Positive(t, pttl)
	earliestExpiry := sent.Add(pttl)
	require.NoError(t, srv.Pause())
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = srv.Resume()
		}
	})
	end := waitEvents(t, dir, 1, p)[1]
	require.NoError(t, srv.Resume())
	resumed = true
	require.Equal(t, "end", end.kind)
	nanos, err := strconv.ParseInt(end.rest[0], 10, 64)
	require.NoError(t, err)
	term := time.Unix(0, nanos)
	assert.True(t, term.Before(earliestExpiry), "the program got SIGTERM %v after the key could expire", term.Sub(earliestExpiry))

	again := waitEvents(t, dir, 2, p)[2]
	assert.Equal(t, "start", again.kind)
	assert.Greater(t, again.fence, first.fence, "the next term's fence is not larger")
	if runtime.GOOS == "linux" {
		ign, err := strconv.ParseUint(again.rest[2], 16, 64)
		require.NoError(t, err, "SigIgn %q", again.rest[2])
		assert.Zero(t, ign&(1<<(syscall.SIGTTOU-1)), "the second term's program ignores SIGTTOU")
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, exitOK, p.wait(t), p.stderr.String())
	assert.Contains(t, p.stderr.String(), "campaigning again")
	assert.Contains(t, p.stderr.String(), "level=WARN", "the loss is not logged")
	assert.Contains(t, p.stderr.String(), "lock.name=paused-election", "--name is not the terms' lock name")
	assertOneAtATime(t, readLog(t, dir))
}

// TestElectSignalWhileCampaigning: a candidate that does not lead leaves
// the queue on SIGINT and exits 128+2 without running its program; the
// leader's resignation then leaves the key free.
func TestElectSignalWhileCampaigning(t *testing.T) {
	t.Parallel()
	const key = "elect-interrupted"
	dir := t.TempDir()
	conn := []string{"--redis", sharedAddr, "--key", key}
	a := candidateOf(t, dir, "a", nil, conn...)
	fence := waitEvents(t, dir, 0, a)[0].fence
	b := candidateOf(t, dir, "b", nil, conn...)
	client := keyClient(t)
	queued(t, client, key, 1)
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, election.Leader{Term: fence, Identity: host + "-" + strconv.Itoa(a.cmd.Process.Pid)}, observe(t, client, key),
		"the default identity is hostname-pid")

	require.NoError(t, b.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, exitSignalBase+int(syscall.SIGINT), b.wait(t), b.stderr.String())
	assertOneLine(t, b.stderr.String())
	assert.Contains(t, b.stderr.String(), "left the campaign")
	queued(t, client, key, 0)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "exit.a"), nil, 0o644))
	assert.Equal(t, exitOK, a.wait(t), a.stderr.String())
	events := readLog(t, dir)
	require.Len(t, events, 2, "b's program ran")
	assertOneAtATime(t, events)
	assert.False(t, held(t, key), "a resigned, and b took the key")
}

func TestElectUsageAndHelp(t *testing.T) {
	t.Parallel()
	r := "--redis=" + sharedAddr
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"elect", r, "--", "true"}, "--key is required"},
		{[]string{"elect", r, "--key", "k"}, "no program"},
		{[]string{"elect", r, "--key", "k", "--namespace", "", "--", "true"}, "--namespace must not be empty"},
		{[]string{"elect", r, "--key", "elect-usage", "--ttl", "1s", "--grace", "51ms", "--", "true"}, "safety margin"},
		{[]string{"elect", r, "--key", "elect-usage", "--identity", "a\nb", "--", "true"}, "identity"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := lockwatchRun(t, tc.args...)
			assert.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr)
			assert.Empty(t, stdout)
			assertOneLine(t, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}
	help := startEnv(t, []string{noExitSleep()}, "elect", "-h")
	require.Equal(t, exitOK, help.wait(t), help.stderr.String())
	stdout := help.stdout.String()
	for _, w := range []string{"LOCKWATCH_FENCE", "LOCKWATCH_FENCE_TOKEN", "LOCKWATCH_KEY", "--grace", "TTL/20", "--identity",
		"campaigns again", "resigns", "watchdog", " 64 ", " 69 ", " 70 ", " 79 ", " 126 ", " 127 ", "128+n"} {
		assert.Contains(t, stdout, w)
	}
	top := startEnv(t, []string{noExitSleep()}, "-h")
	require.Equal(t, exitOK, top.wait(t))
	assert.Contains(t, top.stdout.String(), "elect ")
}

// TestElectSignalThenLossExits79: a leader asked to end by SIGTERM keeps
// leading while its program runs on (here it ignores the signal); when the
// term is then lost, the program is killed after the grace and lockwatch
// exits 79 instead of campaigning again.
func TestElectSignalThenLossExits79(t *testing.T) {
	t.Parallel()
	const key = "elect-asked-then-lost"
	dir := t.TempDir()
	script := `trap 'echo got > "$DIR/got"' TERM
echo ready > "$DIR/ready"
i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	p := startEnv(t, []string{"DIR=" + dir, noExitSleep()}, "elect", "--redis", sharedAddr, "--key", key, "--ttl", "2s", "--",
		"/bin/sh", "-c", script)
	waitFile(t, filepath.Join(dir, "ready"), p)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	waitFile(t, filepath.Join(dir, "got"), p)
	assert.True(t, held(t, key), "the leader resigned before its program exited")

	code, _, stderr := quick(t, "release", "--redis", sharedAddr, "--force", "--key", key)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, exitLost, p.wait(t), p.stderr.String())
	assert.Contains(t, p.stderr.String(), "force_released")
	assert.Contains(t, p.stderr.String(), "SIGKILL in 100ms", "the grace is not TTL/20 by default")
	assert.NotContains(t, p.stderr.String(), "campaigning again")
}

// TestElectNeverCampaigns: a PROGRAM that cannot run (127, 126) and a Redis
// that cannot be reached or is unsafe for leases (69) end lockwatch elect
// before it campaigns.
func TestElectNeverCampaigns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data.txt")
	require.NoError(t, os.WriteFile(notExec, []byte("echo hi\n"), 0o644))
	unsafe := redistest.Start(t, "--maxmemory-policy", "allkeys-lru")
	for _, tc := range []struct {
		name    string
		redis   string
		program string
		want    int
	}{
		{"not found", sharedAddr, "lockwatch-no-such-program", exitNotFound},
		{"not executable", sharedAddr, notExec, exitNoExec},
		{"unreachable", integration.FreeLoopbackAddr(t), "true", exitUnavailable},
		{"unsafe", unsafe.Addr(), "true", exitUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := "elect-never-" + strings.ReplaceAll(tc.name, " ", "-")
			code, _, stderr := quick(t, "elect", "--redis", tc.redis, "--key", key, "--", tc.program)
			assert.Equal(t, tc.want, code, "stderr: %s", stderr)
			assertOneLine(t, stderr)
			if tc.redis != sharedAddr {
				return
			}
			assert.Zero(t, keyClient(t).Exists(testContext(t), leasekeys.Of(defaultNamespace, key).Fence).Val(), "a term was taken")
		})
	}
}
