package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// runMain, set in a replica's environment, makes the test binary run the
// program's main instead of the tests: the replicas are the program as
// go test built it, with the race detector when the tests have it (a
// race fails the replica's exit status), and no second build to wait for.
const runMain = "FIRSTSERVICE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMain) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// The README's block lies between these lines, in a ```go fence.
const (
	readmeBegin = "<!-- begin examples/firstservice/main.go -->"
	readmeEnd   = "<!-- end examples/firstservice/main.go -->"
)

// TestREADMEShowsTheProgram: the program in the README's "Your first
// service" is this main.go, byte for byte, so the README cannot drift;
// its recipe's output shows the stale answer TestPauseAReplicaPastItsTTL
// gets.
func TestREADMEShowsTheProgram(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), readmeBegin+"\n")
	require.True(t, ok, "README.md has no line %q", readmeBegin)
	block, _, ok := strings.Cut(after, readmeEnd)
	require.True(t, ok, "README.md has no line %q after the beginning", readmeEnd)
	block, ok = strings.CutPrefix(block, "```go\n")
	require.True(t, ok, "the block starts with ```go")
	block, ok = strings.CutSuffix(block, "```\n")
	require.True(t, ok, "the block ends with ``` before %q", readmeEnd)
	assert.Equal(t, string(src), block, "README.md's program differs from examples/firstservice/main.go")
	assert.Contains(t, string(readme), "\n"+readmeStale+"\n", "the recipe's output shows a's stale answer")
}

// readmeStale is the third line the README's recipe prints: a's late
// write refused by the table, as middleware.WriteError answers it.
const readmeStale = `{"type":"urn:lockwatch:problem:FENCE_STALE","title":"Stale fencing token","status":409,"detail":"a newer lease holder has already written","reason":"FENCE_STALE","lock_name":"POST /orders/{id}/ship"}`

// The timings of the pause: a replica holds its lease through a write of
// writeDelay, longer than the TTL, so that it can be stopped inside it
// and its key expire meanwhile.
const (
	ttl        = time.Second
	writeDelay = 3 * time.Second
)

// TestPauseAReplicaPastItsTTL runs two replicas of the program, two
// processes, against a real redis-server and PostgreSQL, as the README's
// recipe does: replica a takes order o1 and is stopped (SIGSTOP) inside its
// write; meanwhile b refuses o1 (409 on a route, ABORTED on the gRPC
// method), then takes it once a's key has expired, and writes; a resumes,
// and its late write reaches the table, which refuses it: a's route
// answers 409, a's /metrics counts the rejection, its debug page shows
// the loss, and the row keeps b's write.
func TestPauseAReplicaPastItsTTL(t *testing.T) {
	db := pgtest.Open(t)
	var schema string
	require.NoError(t, db.QueryRow("SELECT current_schema()").Scan(&schema))
	srv := redistest.Start(t)
	args := func(name string) []string {
		return []string{"-name", name, "-redis", srv.Addr(), "-dsn", withSearchPath(pgtest.DSN(), schema),
			"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-admin", "127.0.0.1:0",
			"-ttl", ttl.String(), "-write-delay", writeDelay.String()}
	}
	a, b := startReplica(t, args("a")...), startReplica(t, args("b")...)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer client.Transport.(*http.Transport).CloseIdleConnections()

	// a takes o1 and is inside its write.
	first := make(chan reply, 1)
	go func() { first <- post(client, a.http+"/orders/o1/ship") }()
	aFence := a.waitFor(t, `writing order o1 with fence (\d+)`)

	// While a holds the key, b refuses o1 on a route and on the method.
	r := post(client, b.http+"/orders/o1/cancel")
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusConflict, r.status, r.body)
	assert.Contains(t, r.body, "LEASE_CONTENDED")
	assert.Contains(t, r.body, `"detail":"replica a is doing this work"`, "b's refusal names a, its -name")
	assert.NotEmpty(t, r.retryAfter)
	conn, err := grpc.NewClient(b.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ship := func(id string) (*wrapperspb.StringValue, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out := new(wrapperspb.StringValue)
		return out, conn.Invoke(ctx, "/orders.Orders/Ship", wrapperspb.String(id), out)
	}
	_, err = ship("o1")
	assert.Equal(t, codes.Aborted, status.Code(err), "%v", err)
	assert.Equal(t, "replica a is doing this work", status.Convert(err).Message())

	// a stops inside its write; b takes o1 once a's key has expired.
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	won := retryContended(t, client, b.http+"/orders/o1/cancel")
	bFence := b.waitFor(t, `writing order o1 with fence (\d+)`)
	assert.Greater(t, bFence, aFence)
	assert.Equal(t, "order o1 cancelled by b with fence "+strconv.FormatInt(bFence, 10)+"\n", won.body)

	// a resumes: its write reaches the table and is refused there.
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	late := <-first
	require.NoError(t, late.err)
	assert.Equal(t, http.StatusConflict, late.status, "%s (a 200: a was stopped only after its write had gone out)", late.body)
	assert.Equal(t, "application/problem+json", late.contentType)
	assert.Equal(t, readmeStale+"\n", late.body, "a's answer is the README's third line") //nolint:testifylint // byte for byte, field order included: what curl prints
	a.waitLine(t, regexp.MustCompile(`order o1 not written: fence: stale token `+strconv.FormatInt(aFence, 10)+` at orders: `+strconv.FormatInt(bFence, 10)+` already accepted`))
	assert.Regexp(t, `(?m)^lockwatch_fence_rejections_total\{[^}]*resource="orders"[^}]*\} 1$`, get(t, client, a.admin+"/metrics"))
	assert.Contains(t, lossesOn(t, client, a.admin), `POST /orders/{id}/ship `+strconv.FormatInt(aFence, 10))
	a.waitLine(t, regexp.MustCompile(`lease lost; its work is cancelled`))
	a.waitLine(t, regexp.MustCompile(`stale write rejected by the fence resource=orders`))
	var state, replica string
	var mark int64
	require.NoError(t, db.QueryRow(`SELECT state, replica, last_fence FROM orders WHERE id = 'o1'`).Scan(&state, &replica, &mark))
	assert.Equal(t, []any{"cancelled", "b", bFence}, []any{state, replica, mark})

	// The method writes under the same key, with a newer fence.
	shipped, err := ship("o1")
	require.NoError(t, err)
	assert.Regexp(t, `^order o1 shipped by b with fence \d+$`, shipped.GetValue())

	a.stop(t)
	b.stop(t)
}

// replica is one running firstservice process and its addresses.
type replica struct {
	cmd               *exec.Cmd
	out               *syncBuffer
	http, grpc, admin string
	done              chan struct{}
}

// The adapter the README names for a pgx pool gives what a fence.Table
// writes through.
var _ = func(pool *pgxpool.Pool) fence.DB { return stdlib.OpenDBFromPool(pool) }

var listening = regexp.MustCompile(`HTTP on (\S+), gRPC on (\S+), /metrics and /debug/lockwatch on (\S+)`)

// startReplica runs the program with args, and waits until it listens.
func startReplica(t *testing.T, args ...string) *replica {
	t.Helper()
	r := &replica{cmd: exec.Command(os.Args[0], args...), out: &syncBuffer{}, done: make(chan struct{})}
	r.cmd.Env = append(os.Environ(), runMain+"=1")
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	require.NoError(t, r.cmd.Start())
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Logf("%s\n%s", r.cmd.Args[1:3], r.out.String())
	})
	m := r.waitLine(t, listening)
	r.http, r.grpc, r.admin = "http://"+m[1], m[2], "http://"+m[3]
	return r
}

// waitFor waits for a line of the replica's log that matches pattern, and
// returns the number its group matched.
func (r *replica) waitFor(t *testing.T, pattern string) int64 {
	t.Helper()
	m := r.waitLine(t, regexp.MustCompile(pattern))
	n, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return n
}

func (r *replica) waitLine(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := re.FindStringSubmatch(r.out.String()); m != nil {
			return m
		}
		select {
		case <-r.done:
			t.Fatalf("the replica exited before logging %q", re)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line %q in 20 s", re)
		}
	}
}

// stop ends the replica as a service manager would, and wants status 0.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-r.done:
		assert.Equal(t, 0, r.cmd.ProcessState.ExitCode())
	case <-time.After(20 * time.Second):
		t.Error("the replica did not stop in 20 s after SIGTERM")
	}
}

type reply struct {
	status                        int
	body, retryAfter, contentType string
	err                           error
}

// post posts to url; it runs on goroutines of its own too, so a failure
// is the reply's err, for the test's goroutine to require.
func post(client *http.Client, url string) reply {
	resp, err := client.Post(url, "", nil)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(body), resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), err}
}

// retryContended posts until the answer is not LEASE_CONTENDED.
func retryContended(t *testing.T, client *http.Client, url string) reply {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := post(client, url)
		require.NoError(t, r.err)
		if r.status != http.StatusConflict || !strings.Contains(r.body, "LEASE_CONTENDED") || time.Now().After(deadline) {
			require.Equal(t, http.StatusOK, r.status, r.body)
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func get(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// lossesOn lists the losses a replica's debug page shows, one
// "<name> <fence>" a line.
func lossesOn(t *testing.T, client *http.Client, admin string) string {
	t.Helper()
	var page struct {
		Losses []struct {
			Name  string `json:"name"`
			Fence int64  `json:"fence"`
		} `json:"losses"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(t, client, admin+"/debug/lockwatch?format=json")), &page))
	var lines []string
	for _, l := range page.Losses {
		lines = append(lines, l.Name+" "+strconv.FormatInt(l.Fence, 10))
	}
	return strings.Join(lines, "\n")
}

// withSearchPath adds search_path to a URL or keyword/value DSN.
func withSearchPath(dsn, schema string) string {
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// syncBuffer is a process's output, read while it is written.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
