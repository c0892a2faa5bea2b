package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/lease"
)

// The hostile-token suite (RELIABILITY.md, "Hostile tokens"): what a client
// that wants to break a guarded resource can send, tried against a Guard
// (HTTP, gRPC unary and stream) in front of a real fence.RedisStore on a
// private redis-server, and against the store's own Write. Every input is
// checked for what it gets (the refusal reason, the HTTP status, the gRPC
// code), where it is counted (one result label of
// lockwatch_fence_checks_total, and lockwatch_fence_rejections_total only
// for a genuine stale token), that it leaves the key's mark where it was,
// that the store is not called for input the guard cannot parse, and that
// the guard's lock table is empty after it. The figures in RELIABILITY.md
// come from the t.Logf lines of these tests, run with
// go test -race -count=1 -run TestHostile -v ./middleware/.

// hostileResource is the resource label of the rigs' guards and stores.
const hostileResource = "ledger"

// hostileRig is one Guard over one fence.RedisStore: PUT /r/{id} on HTTP
// (the lock key is id), the health service's Check and Watch on gRPC (the
// lock key is the lock-key metadata). The guard and its store record to h;
// writer is a second store over the same marks, recording to wh, for the
// direct Writes. The guard calls the store through a counter, which also
// notes how many keys its lock table holds at each call (a key's lock is
// held while its token is admitted, so at least that one).
type hostileRig struct {
	h, wh   *telemetrytest.Harness
	client  *redis.Client
	store   *fence.RedisStore
	writer  *fence.RedisStore
	prefix  string // the store's Redis keys: prefix + lock key
	guard   *Guard
	admits  atomic.Int64 // calls of store.Admit by the guard
	busiest atomic.Int64 // the most keys in the lock table seen during a call
	ran     atomic.Int64 // guarded handlers run
	url     string
	http    *http.Client
	rpc     grpc_health_v1.HealthClient
	// The same entry points in process, for the floods: the guarded
	// mux and the unary interceptor, without sockets or clients.
	mux   http.Handler
	unary grpc.UnaryServerInterceptor
}

// newHostileRig serves a rig whose store keeps its marks under the fence
// namespace "hostile-<name>" of client's server, so that several rigs of one
// test count their Redis keys apart.
func newHostileRig(t *testing.T, client *redis.Client, name string, cfg fence.RedisConfig) *hostileRig {
	r := &hostileRig{h: telemetrytest.New(t), wh: telemetrytest.New(t), client: client, prefix: "hostile-" + name + ":" + hostileResource + ":"}
	cfg.Namespace = "hostile-" + name
	cfg.Telemetry = r.h.Tel
	r.store = fence.NewRedisStore(client, hostileResource, cfg)
	cfg.Telemetry = r.wh.Tel
	r.writer = fence.NewRedisStore(client, hostileResource, cfg)
	r.guard = NewGuard(hostileAdmitter{r}, GuardConfig{Telemetry: r.h.Tel, Resource: hostileResource})

	mux := http.NewServeMux()
	mux.Handle("PUT /r/{id}", r.guard.HTTP(pathKey)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.ran.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})))
	r.mux, r.unary = mux, r.guard.UnaryServerInterceptor(unaryKey)
	r.url, _ = serveHTTP(t, mux)
	// Enough idle connections for the flood's workers: the default two
	// would open and close a connection per request.
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	r.http = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	r.rpc = serveGRPC(t, &health{
		check: func(context.Context) error { r.ran.Add(1); return nil },
		watch: func(stream grpc_health_v1.Health_WatchServer) error {
			r.ran.Add(1)
			return stream.Send(&grpc_health_v1.HealthCheckResponse{})
		},
	}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(r.unary),
		grpc.ChainStreamInterceptor(r.guard.StreamServerInterceptor(streamKey)),
	})
	return r
}

// hostileAdmitter is the rig's store as the guard sees it, counted.
type hostileAdmitter struct{ r *hostileRig }

func (a hostileAdmitter) Admit(ctx context.Context, key string, tok fence.Token) error {
	a.r.admits.Add(1)
	n := int64(a.r.lockTable())
	for b := a.r.busiest.Load(); n > b && !a.r.busiest.CompareAndSwap(b, n); b = a.r.busiest.Load() {
	}
	return a.r.store.Admit(ctx, key, tok)
}

// lockTable is how many keys the guard's lock table holds: an entry lives
// while a request holds or waits for its key.
func (r *hostileRig) lockTable() int {
	r.guard.locks.mu.Lock()
	defer r.guard.locks.mu.Unlock()
	return len(r.guard.locks.locks)
}

// put sends PUT /r/key with one Fencing-Token header line per value and
// returns the status and, for a refusal, the problem's reason. Safe in any
// goroutine: it reports what went wrong instead of failing the test.
func (r *hostileRig) put(key string, values ...string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPut, r.url+"/r/"+key, nil)
	if err != nil {
		return 0, "", err
	}
	for _, v := range values {
		req.Header.Add(tokenHeader, v)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, "", nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		return resp.StatusCode, "", fmt.Errorf("status %d, Content-Type %q, not a problem", resp.StatusCode, ct)
	}
	var p Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return resp.StatusCode, "", err
	}
	if p.Status != resp.StatusCode || p.Detail == "" {
		return resp.StatusCode, p.Reason, fmt.Errorf("problem %+v does not match status %d, or has no detail", p, resp.StatusCode)
	}
	return resp.StatusCode, p.Reason, nil
}

// serve is put in process: the request goes through the guarded mux
// without a socket. Safe in any goroutine.
func (r *hostileRig) serve(key string, values ...string) (int, string, error) {
	req := httptest.NewRequest(http.MethodPut, "/r/"+key, nil)
	for _, v := range values {
		req.Header.Add(tokenHeader, v)
	}
	rec := httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	if rec.Code == http.StatusNoContent {
		return rec.Code, "", nil
	}
	var p Problem
	if err := json.NewDecoder(rec.Body).Decode(&p); err != nil {
		return rec.Code, "", fmt.Errorf("status %d: %w", rec.Code, err)
	}
	return rec.Code, p.Reason, nil
}

// intercept is check in process: the call goes through the guard's unary
// interceptor, with the metadata a server would have received. Safe in any
// goroutine.
func (r *hostileRig) intercept(ctx context.Context, key string, values ...string) (codes.Code, string, error) {
	ctx = metadata.NewIncomingContext(ctx, metadata.MD{"lock-key": {key}, tokenMetadata: values})
	_, err := r.unary(ctx, nil, &grpc.UnaryServerInfo{FullMethod: checkMethod}, func(context.Context, any) (any, error) {
		r.ran.Add(1)
		return nil, nil
	})
	return hostileStatus(err)
}

// outgoing is ctx with the call's lock key and one fencing-token metadata
// value per value.
func outgoing(ctx context.Context, key string, values []string) context.Context {
	ctx = withLockKey(ctx, key)
	for _, v := range values {
		ctx = metadata.AppendToOutgoingContext(ctx, tokenMetadata, v)
	}
	return ctx
}

// check calls Check for key with the given fencing-token values and
// returns the code and the ErrorInfo reason. Safe in any goroutine.
func (r *hostileRig) check(ctx context.Context, key string, values ...string) (codes.Code, string, error) {
	_, err := r.rpc.Check(outgoing(ctx, key, values), &grpc_health_v1.HealthCheckRequest{})
	return hostileStatus(err)
}

// watch opens Watch for key with the given values and reads the stream to
// its end, so that the handler and the guard's hold have both ended when
// it returns.
func (r *hostileRig) watch(ctx context.Context, key string, values ...string) (codes.Code, string, error) {
	stream, err := r.rpc.Watch(outgoing(ctx, key, values), &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		return hostileStatus(err)
	}
	for {
		if _, err = stream.Recv(); err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return hostileStatus(err)
}

// hostileStatus reads a gRPC answer: OK, or the refusal's code and reason
// (an ErrorInfo of lockwatch's domain, without RetryInfo: no token refusal
// is worth retrying as it is).
func hostileStatus(err error) (codes.Code, string, error) {
	if err == nil {
		return codes.OK, "", nil
	}
	st := status.Convert(err)
	var reason string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() != errorDomain {
				return st.Code(), "", fmt.Errorf("ErrorInfo of domain %q", d.GetDomain())
			}
			reason = d.GetReason()
		case *errdetails.RetryInfo:
			return st.Code(), "", fmt.Errorf("a token refusal with RetryInfo: %v", st)
		}
	}
	if reason == "" {
		return st.Code(), "", fmt.Errorf("no ErrorInfo: %v", st)
	}
	return st.Code(), reason, nil
}

func (r *hostileRig) mark(t *testing.T, key string) int64 {
	t.Helper()
	_, mark, err := r.store.Read(context.Background(), key)
	require.NoError(t, err)
	return mark
}

// storeKeys counts the store's Redis keys (SCAN over its prefix): one per
// key that has a mark.
func (r *hostileRig) storeKeys(t *testing.T) int {
	t.Helper()
	n := 0
	iter := r.client.Scan(context.Background(), 0, r.prefix+"*", 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	require.NoError(t, iter.Err())
	return n
}

// fenceCounts reads lockwatch_fence_checks_total{resource="ledger"} by
// result (the results counted at least once), and
// lockwatch_fence_rejections_total{resource="ledger"}, from h.
func fenceCounts(t *testing.T, h *telemetrytest.Harness) (checks map[obs.FenceResult]int64, rejections int64) {
	t.Helper()
	checks = map[obs.FenceResult]int64{}
	for _, m := range h.Collect(t) {
		sum, ok := m.Data.(metricdata.Sum[int64])
		if !ok || (m.Name != obs.FenceChecks && m.Name != obs.FenceRejections) {
			continue
		}
		for _, dp := range sum.DataPoints {
			if res, _ := dp.Attributes.Value(obs.AttrResource); res.AsString() != hostileResource {
				continue
			}
			if m.Name == obs.FenceRejections {
				rejections += dp.Value
				continue
			}
			if result, _ := dp.Attributes.Value(obs.AttrResult); dp.Value != 0 {
				checks[obs.FenceResult(result.AsString())] += dp.Value
			}
		}
	}
	return checks, rejections
}

// hostileResults are every result label of lockwatch_fence_checks_total.
var hostileResults = []obs.FenceResult{obs.FenceAccepted, obs.FenceRejected, obs.FenceLate, obs.FenceForeign,
	obs.FenceForged, obs.FenceAhead, obs.FenceUnscoped, obs.FenceMalformed}

// hostileAnswer is what a reason means on each side: the HTTP status, the
// gRPC code, the label it is counted under, and what the store's Write says
// to the same token. The statuses and codes are spelled out here, not taken
// from refusal.go's rows, so that a change of a row fails this suite.
type hostileAnswer struct {
	status int
	code   codes.Code
	result obs.FenceResult
	write  error
}

var hostileAnswers = map[string]hostileAnswer{
	// Admitted: Admit admits a token equal to the mark (one lease sends
	// several requests); Write is strict and refuses it as stale.
	"":                {http.StatusNoContent, codes.OK, obs.FenceAccepted, fence.ErrStale},
	"FENCE_STALE":     {http.StatusConflict, codes.Aborted, obs.FenceRejected, fence.ErrStale},
	"FENCE_FOREIGN":   {http.StatusForbidden, codes.PermissionDenied, obs.FenceForeign, fence.ErrForeign},
	"FENCE_FORGED":    {http.StatusForbidden, codes.PermissionDenied, obs.FenceForged, fence.ErrForged},
	"FENCE_AHEAD":     {http.StatusForbidden, codes.PermissionDenied, obs.FenceAhead, fence.ErrAhead},
	"FENCE_UNSCOPED":  {http.StatusBadRequest, codes.InvalidArgument, obs.FenceUnscoped, fence.ErrUnscoped},
	"FENCE_MALFORMED": {http.StatusBadRequest, codes.InvalidArgument, obs.FenceMalformed, fence.ErrMalformed},
}

// hostileCase is one input: the token values a client sends (each one
// header line, each one metadata value) for the guard's key, and the
// reason it must get ("" for admitted).
type hostileCase struct {
	name   string
	key    string
	values []string
	reason string
}

// try sends c on HTTP, as a gRPC unary call and as a gRPC stream, then
// (when c is one value that parses) to the store's Write, and checks each
// answer, the counts, the mark and the lock table.
func (r *hostileRig) try(t *testing.T, c hostileCase) {
	t.Helper()
	want, ok := hostileAnswers[c.reason]
	require.True(t, ok, "unknown reason %q", c.reason)
	ctx := testCtx(t)
	mark := r.mark(t, c.key)
	checks, rejections := fenceCounts(t, r.h)
	admits, ran := r.admits.Load(), r.ran.Load()

	status, reason, err := r.put(c.key, c.values...)
	require.NoError(t, err)
	assert.Equal(t, want.status, status, "HTTP status")
	assert.Equal(t, c.reason, reason, "HTTP reason")
	code, reason, err := r.check(ctx, c.key, c.values...)
	require.NoError(t, err)
	assert.Equal(t, want.code, code, "unary code")
	assert.Equal(t, c.reason, reason, "unary reason")
	code, reason, err = r.watch(ctx, c.key, c.values...)
	require.NoError(t, err)
	assert.Equal(t, want.code, code, "stream code")
	assert.Equal(t, c.reason, reason, "stream reason")

	assert.Equal(t, mark, r.mark(t, c.key), "the mark moved")
	after, afterRejections := fenceCounts(t, r.h)
	for _, res := range hostileResults {
		d := after[res] - checks[res]
		if res == want.result {
			assert.EqualValues(t, 3, d, "counted %s: once per request", res)
		} else {
			assert.Zero(t, d, "counted %s too", res)
		}
	}
	if c.reason == "FENCE_STALE" {
		assert.EqualValues(t, 3, afterRejections-rejections, "a genuine stale token is a stale write, counted as one")
	} else {
		assert.Zero(t, afterRejections-rejections, "counted as a stale write")
	}
	if c.reason == "FENCE_MALFORMED" {
		assert.Zero(t, r.admits.Load()-admits, "the store was called for a token the guard cannot read")
	} else {
		assert.EqualValues(t, 3, r.admits.Load()-admits, "the store decided")
	}
	if c.reason == "" {
		assert.EqualValues(t, 3, r.ran.Load()-ran, "admitted, the handlers ran")
	} else {
		assert.Zero(t, r.ran.Load()-ran, "a refused request's handler ran")
	}
	assert.Zero(t, r.lockTable(), "the lock table kept a key")

	if len(c.values) != 1 {
		return
	}
	tok, err := fence.Parse(c.values[0])
	if err != nil {
		return
	}
	wchecks, wrejections := fenceCounts(t, r.wh)
	err = r.writer.Write(ctx, c.key, tok, []byte("hostile"))
	require.ErrorIs(t, err, want.write, "Write")
	value, _, rerr := r.writer.Read(ctx, c.key)
	require.NoError(t, rerr)
	assert.Nil(t, value, "Write stored a value")
	assert.Equal(t, mark, r.mark(t, c.key), "Write moved the mark")
	wafter, wafterRejections := fenceCounts(t, r.wh)
	wresult, stale := want.result, errors.Is(want.write, fence.ErrStale)
	if stale {
		wresult = obs.FenceRejected
	}
	for _, res := range hostileResults {
		if res == wresult {
			assert.EqualValues(t, 1, wafter[res]-wchecks[res], "Write counted %s", res)
		} else {
			assert.Zero(t, wafter[res]-wchecks[res], "Write counted %s too", res)
		}
	}
	if stale {
		assert.EqualValues(t, 1, wafterRejections-wrejections, "Write's stale token is a rejection")
	} else {
		assert.Zero(t, wafterRejections-wrejections, "Write counted a refusal as a stale write")
	}
}

// hostileWire is tok's wire form with the text of its fence replaced by
// fenceText: a client may put any characters between the quotes.
func hostileWire(tok fence.Token, fenceText string) string {
	s := tok.String()
	end := strings.IndexByte(s[1:], '"') + 1
	return `"` + fenceText + s[end:]
}

// hostileSecrets returns secrets whose only id, the active one, is id,
// with a 32-byte secret of fill.
func hostileSecrets(t *testing.T, id string, fill byte) *fence.Secrets {
	t.Helper()
	s, err := fence.NewSecrets(id, map[string][]byte{id: bytes.Repeat([]byte{fill}, 32)})
	require.NoError(t, err)
	return s
}

// redisMicros is the server's TIME in microseconds: the clock fences are
// minted from, and the one the store bounds unsigned tokens by.
func redisMicros(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	require.NoError(t, err)
	return now.UnixMicro()
}

// hostileLeases are genuine leases of the test's lease namespace ns: B1
// then B2 on key B (B1 released first, so B2's fence is newer), A on key A
// acquired after them (its fence above B's mark), and OtherB on key B in
// the lease namespace ns+"-other". B2's token is admitted at the rig, so B's
// mark is B2's fence.
type hostileLeases struct {
	ns                string
	b1, b2, a, otherB *lease.Lease
}

func newHostileLeases(t *testing.T, r *hostileRig, client *redis.Client, ns string, cfg lease.Config) hostileLeases {
	t.Helper()
	ctx := testCtx(t)
	tel := telemetrytest.New(t).Tel
	cfg.Namespace = ns
	lk := newLocker(t, client, tel, cfg)
	cfg.Namespace = ns + "-other"
	other := newLocker(t, client, tel, cfg)
	acquire := func(lk *lease.Locker, key string) *lease.Lease {
		l, err := lk.Acquire(ctx, key)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Release(context.Background()) })
		return l
	}
	admit := func(l *lease.Lease) {
		status, reason, err := r.put("B", l.Token().String())
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, status, reason)
	}
	ls := hostileLeases{ns: ns}
	ls.b1 = acquire(lk, "B")
	admit(ls.b1)
	require.NoError(t, ls.b1.Release(ctx))
	ls.b2 = acquire(lk, "B")
	require.Greater(t, ls.b2.Fence(), ls.b1.Fence())
	admit(ls.b2)
	ls.a = acquire(lk, "A")
	ls.otherB = acquire(other, "B")
	require.Greater(t, ls.a.Fence(), ls.b2.Fence(), "A's token must be above B's mark, or admitting it could not move the mark")
	require.Greater(t, ls.otherB.Fence(), ls.b2.Fence(), "so must the other namespace's")
	require.Equal(t, ls.b2.Fence(), r.mark(t, "B"))
	return ls
}

// hostileNumbers are the numbers at the edges of a fence's range, as text:
// the fence is an int64 and, in JSON clients, a double.
var hostileNumbers = []struct {
	name, text string
	inRange    bool // 1..2^63-1 in canonical form: parses as a fence
}{
	{"2^53-1", "9007199254740991", true},
	{"2^63-1", "9223372036854775807", true},
	{"2^63", "9223372036854775808", false},
	{"2^64-1 (20 digits)", "18446744073709551615", false},
	{"20 nines", "99999999999999999999", false},
	{"1 in 20 digits", "00000000000000000001", false},
	{"zero", "0", false},
	{"-1", "-1", false},
	{"-2^63", "-9223372036854775808", false},
}

// TestHostileTokensWithoutSecrets: a store without secrets trusts a token
// that names its key and is within the clock bound. Another key's lease
// token, or the key's token of another lease namespace, is FENCE_FOREIGN;
// a fence further ahead than 10 s of the store's Redis TIME is FENCE_AHEAD
// (2^53-1, 2^63-1, now+1h; also under a signature the store cannot check);
// a plain number is FENCE_UNSCOPED; anything that does not parse as one
// token (zero, negatives, 20 digits, both header forms at once, a
// comma-joined pair) is FENCE_MALFORMED, refused by the guard without
// calling the store. A replay of an older lease's token after a newer one
// was admitted is FENCE_STALE, and that one is a stale write: counted in
// lockwatch_fence_rejections_total. A replay of the current token is
// admitted: Admit lets one lease send several requests (the store's Write,
// which is strict, refuses it as stale). None of the refusals moves B's
// mark or is counted as stale.
func TestHostileTokensWithoutSecrets(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	r := newHostileRig(t, client, "plain", fence.RedisConfig{LockNamespace: "hostile-ns"})
	ls := newHostileLeases(t, r, client, "hostile-ns", lease.Config{})
	now := redisMicros(t, client)
	scoped := fence.Mint(ls.ns, "B", ls.b2.Fence(), nil)
	cases := []hostileCase{
		{"another key's lease token", "B", []string{ls.a.Token().String()}, "FENCE_FOREIGN"},
		{"the key's lease token of another lease namespace", "B", []string{ls.otherB.Token().String()}, "FENCE_FOREIGN"},
		{"fence 2^53-1", "B", []string{fence.Mint(ls.ns, "B", 1<<53-1, nil).String()}, "FENCE_AHEAD"},
		{"fence 2^63-1", "B", []string{fence.Mint(ls.ns, "B", math.MaxInt64, nil).String()}, "FENCE_AHEAD"},
		{"fence now+1h", "B", []string{fence.Mint(ls.ns, "B", now+time.Hour.Microseconds(), nil).String()}, "FENCE_AHEAD"},
		{"fence 2^63-1 signed with a secret the store does not have", "B",
			[]string{fence.Mint(ls.ns, "B", math.MaxInt64, hostileSecrets(t, "k1", 0x33)).String()}, "FENCE_AHEAD"},
		{"replay of an older lease's token", "B", []string{ls.b1.Token().String()}, "FENCE_STALE"},
		{"replay of the current token", "B", []string{ls.b2.Token().String()}, ""},
		{"a plain number and a scoped token as two values", "B", []string{strconv.FormatInt(ls.b2.Fence(), 10), scoped.String()}, "FENCE_MALFORMED"},
		{"a scoped token and a plain number as two values", "B", []string{scoped.String(), strconv.FormatInt(ls.b2.Fence(), 10)}, "FENCE_MALFORMED"},
		{"the current token twice", "B", []string{scoped.String(), scoped.String()}, "FENCE_MALFORMED"},
		{"a plain number and a scoped token in one comma-joined value", "B", []string{strconv.FormatInt(ls.b2.Fence(), 10) + ", " + scoped.String()}, "FENCE_MALFORMED"},
		{"a scoped token and a plain number in one comma-joined value", "B", []string{scoped.String() + ", " + strconv.FormatInt(ls.b2.Fence(), 10)}, "FENCE_MALFORMED"},
		{"the current token twice in one comma-joined value", "B", []string{scoped.String() + "," + scoped.String()}, "FENCE_MALFORMED"},
	}
	for _, n := range hostileNumbers {
		plain, wire := "FENCE_MALFORMED", "FENCE_MALFORMED"
		if n.inRange {
			plain, wire = "FENCE_UNSCOPED", "FENCE_AHEAD"
		}
		cases = append(cases,
			hostileCase{"plain " + n.name, "B", []string{n.text}, plain},
			hostileCase{"wire form " + n.name, "B", []string{hostileWire(scoped, n.text)}, wire})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { r.try(t, c) })
	}
	checks, rejections := fenceCounts(t, r.h)
	t.Logf("%d inputs, each on HTTP, gRPC unary and stream: checks %v, rejections %d (the stale replay's 3)", len(cases), checks, rejections)
	assert.EqualValues(t, 3, rejections, "only the replay of an older lease's token is a stale write")
	assert.Equal(t, ls.b2.Fence(), r.mark(t, "B"))
	assert.Zero(t, r.mark(t, "A"), "a refused token was admitted under its own key")

	t.Run("tokens Parse cannot produce, at the store", func(t *testing.T) {
		// A caller's bug rather than a client's input: fences 0 and below
		// in a token built in Go. ErrMalformed, uncounted, Redis not
		// called (no key appears).
		ctx := testCtx(t)
		keys := r.storeKeys(t)
		checks, rejections := fenceCounts(t, r.h)
		for _, n := range []int64{0, -1, math.MinInt64} {
			tok := fence.Mint(ls.ns, "fresh", n, nil)
			require.ErrorIs(t, r.store.Admit(ctx, "fresh", tok), fence.ErrMalformed, "Admit %d", n)
			require.ErrorIs(t, r.store.Write(ctx, "fresh", tok, []byte("x")), fence.ErrMalformed, "Write %d", n)
		}
		assert.Equal(t, keys, r.storeKeys(t), "a malformed token reached Redis")
		after, afterRejections := fenceCounts(t, r.h)
		assert.Equal(t, checks, after, "a caller's bug was counted as a check")
		assert.Equal(t, rejections, afterRejections)
	})

	t.Run("plain tokens allowed", func(t *testing.T) {
		// A store that admits plain numbers (clients not migrated yet)
		// holds them to the clock bound: the edges of the range are ahead,
		// the rest malformed, as in the wire form.
		p := newHostileRig(t, client, "plainok", fence.RedisConfig{LockNamespace: "hostile-ns", PlainTokens: true})
		status, reason, err := p.put("B", strconv.FormatInt(ls.b2.Fence(), 10))
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, status, reason)
		for _, n := range hostileNumbers {
			want := "FENCE_MALFORMED"
			if n.inRange {
				want = "FENCE_AHEAD"
			}
			t.Run(n.name, func(t *testing.T) { p.try(t, hostileCase{n.name, "B", []string{n.text}, want}) })
		}
		p.try(t, hostileCase{"replay of an older lease's fence", "B", []string{strconv.FormatInt(ls.b1.Fence(), 10)}, "FENCE_STALE"})
		assert.Equal(t, ls.b2.Fence(), p.mark(t, "B"))
	})
}

// TestHostileTokensWithSecrets: a store with secrets trusts only tokens a
// Locker with one of them signed. Unsigned tokens (at any fence, 2^63-1
// included), tokens signed with another secret or an unknown key id, a
// genuine token whose fence was changed (up or down: a lowered one is
// forged, not stale), a genuine signature moved to another fence or to
// another key's scope are FENCE_FORGED; a genuine signed token of another
// key or another lease namespace is FENCE_FOREIGN; a plain number
// FENCE_UNSCOPED. A token both forged and foreign is forged: the
// signature is checked first. The signature does not stop replays of the
// key's own tokens: an older one is FENCE_STALE (a stale write, counted),
// the current one admitted.
func TestHostileTokensWithSecrets(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	secrets := hostileSecrets(t, "k1", 0x11)
	r := newHostileRig(t, client, "signed", fence.RedisConfig{LockNamespace: "hostile-ns", Secrets: secrets})
	ls := newHostileLeases(t, r, client, "hostile-ns", lease.Config{Secrets: secrets})
	require.Equal(t, "k1", ls.b2.Token().KeyID, "the Locker signs")
	now := redisMicros(t, client)
	next := ls.b2.Fence() + 1000 // admitted, any token at it would move B's mark

	raised, lowered := ls.b2.Token(), ls.b2.Token()
	raised.Fence++
	lowered.Fence--
	moved := fence.Mint(ls.ns, "B", next, nil)
	moved.KeyID, moved.MAC = ls.b2.Token().KeyID, ls.b2.Token().MAC
	rescoped := ls.a.Token()
	rescoped.Scope = fence.ScopeOf(ls.ns, "B")
	cases := []hostileCase{
		{"unsigned", "B", []string{fence.Mint(ls.ns, "B", next, nil).String()}, "FENCE_FORGED"},
		{"unsigned 2^53-1", "B", []string{fence.Mint(ls.ns, "B", 1<<53-1, nil).String()}, "FENCE_FORGED"},
		{"unsigned 2^63-1", "B", []string{fence.Mint(ls.ns, "B", math.MaxInt64, nil).String()}, "FENCE_FORGED"},
		{"unsigned now+1h", "B", []string{fence.Mint(ls.ns, "B", now+time.Hour.Microseconds(), nil).String()}, "FENCE_FORGED"},
		{"signed with another secret, same key id", "B", []string{fence.Mint(ls.ns, "B", next, hostileSecrets(t, "k1", 0x22)).String()}, "FENCE_FORGED"},
		{"unknown key id", "B", []string{fence.Mint(ls.ns, "B", next, hostileSecrets(t, "k9", 0x11)).String()}, "FENCE_FORGED"},
		{"genuine token, fence raised by one", "B", []string{raised.String()}, "FENCE_FORGED"},
		{"genuine token, fence lowered by one", "B", []string{lowered.String()}, "FENCE_FORGED"},
		{"genuine signature moved to another fence", "B", []string{moved.String()}, "FENCE_FORGED"},
		{"another key's genuine signature moved to this key", "B", []string{rescoped.String()}, "FENCE_FORGED"},
		{"unsigned, another key's", "B", []string{fence.Mint(ls.ns, "A", next, nil).String()}, "FENCE_FORGED"},
		{"another secret's, another lease namespace's", "B", []string{fence.Mint(ls.ns+"-other", "B", next, hostileSecrets(t, "k1", 0x22)).String()}, "FENCE_FORGED"},
		{"another key's lease token", "B", []string{ls.a.Token().String()}, "FENCE_FOREIGN"},
		{"the key's lease token of another lease namespace", "B", []string{ls.otherB.Token().String()}, "FENCE_FOREIGN"},
		{"plain number", "B", []string{strconv.FormatInt(next, 10)}, "FENCE_UNSCOPED"},
		{"plain 2^63-1", "B", []string{"9223372036854775807"}, "FENCE_UNSCOPED"},
		{"key id not a token", "B", []string{strings.Replace(ls.b2.Token().String(), ";kid=k1;", ";kid=K1;", 1)}, "FENCE_MALFORMED"},
		{"mac without key id", "B", []string{strings.Replace(ls.b2.Token().String(), ";kid=k1", "", 1)}, "FENCE_MALFORMED"},
		{"signed 20-digit fence", "B", []string{hostileWire(ls.b2.Token(), "18446744073709551615")}, "FENCE_MALFORMED"},
		{"signed and plain as two values", "B", []string{ls.b2.Token().String(), strconv.FormatInt(ls.b2.Fence(), 10)}, "FENCE_MALFORMED"},
		{"replay of an older lease's token", "B", []string{ls.b1.Token().String()}, "FENCE_STALE"},
		{"replay of the current token", "B", []string{ls.b2.Token().String()}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { r.try(t, c) })
	}
	checks, rejections := fenceCounts(t, r.h)
	t.Logf("%d inputs, each on HTTP, gRPC unary and stream: checks %v, rejections %d (the stale replay's 3)", len(cases), checks, rejections)
	assert.EqualValues(t, 3, rejections, "only the replay of an older lease's token is a stale write")
	assert.Equal(t, ls.b2.Fence(), r.mark(t, "B"))
	assert.Zero(t, r.mark(t, "A"), "a refused token was admitted under its own key")
}

// TestHostileHugeHeaders: a token is at most 256 bytes, and the guard
// refuses a longer value before reading it. A 200 KB Fencing-Token, well
// under net/http's MaxHeaderBytes (1 MiB by default), and the same in gRPC
// metadata (grpc-go's header-list limit is 16 MiB) reach the guard and
// are refused FENCE_MALFORMED quickly, without the store being called. So
// is a value of exactly 1 MiB: net/http reads MaxHeaderBytes plus 4 KiB of
// slack before it answers 431 itself. A value past that gets net/http's
// 431 and never reaches the guard. The mark does not move either way.
func TestHostileHugeHeaders(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	r := newHostileRig(t, client, "huge", fence.RedisConfig{})
	now := redisMicros(t, client)
	start := time.Now()
	status, reason, err := r.put("B", wire("B", now))
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, status, reason)
	t.Logf("a genuine token: HTTP %d in %v", status, time.Since(start))

	// sent sends value once on HTTP and, with grpc, once on gRPC, and
	// checks that each was refused malformed by the guard alone.
	sent := func(t *testing.T, value string, grpc bool) (httpTook, grpcTook time.Duration) {
		t.Helper()
		admits := r.admits.Load()
		checks, _ := fenceCounts(t, r.h)
		start := time.Now()
		status, reason, err := r.put("B", value)
		httpTook = time.Since(start)
		require.NoError(t, err)
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Equal(t, "FENCE_MALFORMED", reason)
		refusals := int64(1)
		if grpc {
			start = time.Now()
			code, reason, err := r.check(testCtx(t), "B", value)
			grpcTook = time.Since(start)
			require.NoError(t, err)
			assert.Equal(t, codes.InvalidArgument, code)
			assert.Equal(t, "FENCE_MALFORMED", reason)
			refusals++
		}
		assert.Zero(t, r.admits.Load()-admits, "the store was called")
		after, _ := fenceCounts(t, r.h)
		assert.Equal(t, refusals, after[obs.FenceMalformed]-checks[obs.FenceMalformed], "counted malformed")
		assert.Equal(t, now, r.mark(t, "B"))
		return httpTook, grpcTook
	}

	t.Run("200 KB", func(t *testing.T) {
		httpTook, grpcTook := sent(t, strings.Repeat("9", 200_000), true)
		t.Logf("a 200000-byte Fencing-Token: HTTP 400 FENCE_MALFORMED in %v, gRPC INVALID_ARGUMENT in %v", httpTook, grpcTook)
		// Generous, for the race detector on a loaded machine: the guard
		// reads nothing of the value, what takes time is moving it.
		assert.Less(t, httpTook, 2*time.Second)
		assert.Less(t, grpcTook, 2*time.Second)
	})

	t.Run("1 MiB", func(t *testing.T) {
		httpTook, _ := sent(t, strings.Repeat("9", 1<<20), false)
		t.Logf("a 1048576-byte Fencing-Token: HTTP 400 FENCE_MALFORMED in %v", httpTook)
	})

	t.Run("past MaxHeaderBytes", func(t *testing.T) {
		// 1 MiB and 8 KiB: past MaxHeaderBytes + 4096.
		admits := r.admits.Load()
		checks, _ := fenceCounts(t, r.h)
		req, err := http.NewRequest(http.MethodPut, r.url+"/r/B", nil)
		require.NoError(t, err)
		req.Header.Set(tokenHeader, strings.Repeat("9", http.DefaultMaxHeaderBytes+8<<10))
		start := time.Now()
		resp, err := r.http.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		t.Logf("a %d-byte Fencing-Token: HTTP %d in %v", http.DefaultMaxHeaderBytes+8<<10, resp.StatusCode, time.Since(start))
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
		assert.NotEqual(t, "application/problem+json", resp.Header.Get("Content-Type"), "the guard answered")
		assert.Zero(t, r.admits.Load()-admits, "the store was called")
		after, _ := fenceCounts(t, r.h)
		assert.Equal(t, checks, after, "the guard saw the request")
		assert.Equal(t, now, r.mark(t, "B"))
	})
	assert.Zero(t, r.lockTable())
	assert.Equal(t, 1, r.storeKeys(t))
}

// flood sends n requests from workers goroutines, request i for the key
// and values input(i) gives, even ones through the guard's HTTP middleware
// and odd ones through its unary interceptor, in process (serve,
// intercept: the sockets and clients would cost ten times the guard's own
// work under the race detector), and checks each answer. It returns how long
// the requests took and, by reason, how many got it.
func (r *hostileRig) flood(t *testing.T, n, workers int, input func(i int) (key string, values []string, reason string)) (time.Duration, map[string]int) {
	t.Helper()
	ctx := testCtx(t)
	var mu sync.Mutex
	got := map[string]int{}
	var wrong atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				key, values, want := input(i)
				var reason string
				var err error
				if i%2 == 0 {
					var status int
					status, reason, err = r.serve(key, values...)
					if err == nil && status != hostileAnswers[want].status {
						err = fmt.Errorf("status %d", status)
					}
				} else {
					var code codes.Code
					code, reason, err = r.intercept(ctx, key, values...)
					if err == nil && code != hostileAnswers[want].code {
						err = fmt.Errorf("code %v", code)
					}
				}
				if err == nil && reason != want {
					err = fmt.Errorf("reason %q", reason)
				}
				if err != nil {
					if wrong.Add(1) <= 5 {
						t.Errorf("request %d for %s, want %q: %v", i, key, want, err)
					}
					continue
				}
				mu.Lock()
				got[reason]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	require.Zero(t, wrong.Load(), "requests answered otherwise than expected")
	return took, got
}

// TestHostileThousandsOfKeys: 5,000 requests, each for a key of its own,
// with tokens the store cannot trust, leave nothing behind: the guard's
// lock table is empty afterwards (it held up to one entry per request in
// flight) and the store's Redis has no new key. Without secrets: another
// key's token, the key's token of another lease namespace, 2^63-1,
// now+1h, a plain number and a zero. With secrets: unsigned, another
// secret's token of another key (forged: the signature is checked before
// the scope), an unknown key id, a signed token with its fence raised,
// another key's signed token, another namespace's signed token. Then
// 5,000 genuine unsigned tokens, one per key, at a store without secrets
// create one mark per key: marks are bounded by the key space the guard's
// key function admits. With secrets the 5,000 same unsigned tokens are
// forged and create none: only locked keys (whose Locker signed a token)
// get marks.
func TestHostileThousandsOfKeys(t *testing.T) {
	const n, workers = 5000, 8
	srv := redistest.Start(t)
	client := srv.Client(t, func(o *redis.Options) { o.PoolSize = 2 * workers })
	const ns = "hostile-ns"
	key := func(i int) string { return "k" + strconv.Itoa(i) }
	total := time.Now()

	t.Run("without secrets", func(t *testing.T) {
		r := newHostileRig(t, client, "flood", fence.RedisConfig{LockNamespace: ns})
		now := redisMicros(t, client)
		keys := r.storeKeys(t)
		took, got := r.flood(t, n, workers, func(i int) (string, []string, string) {
			k := key(i)
			switch i % 6 {
			case 0:
				return k, []string{fence.Mint(ns, k+"-other", now, nil).String()}, "FENCE_FOREIGN"
			case 1:
				return k, []string{fence.Mint(ns+"-other", k, now, nil).String()}, "FENCE_FOREIGN"
			case 2:
				return k, []string{fence.Mint(ns, k, math.MaxInt64, nil).String()}, "FENCE_AHEAD"
			case 3:
				return k, []string{fence.Mint(ns, k, now+time.Hour.Microseconds(), nil).String()}, "FENCE_AHEAD"
			case 4:
				return k, []string{strconv.FormatInt(now, 10)}, "FENCE_UNSCOPED"
			}
			return k, []string{"0"}, "FENCE_MALFORMED"
		})
		malformed := got["FENCE_MALFORMED"]
		t.Logf("%d refused requests for %d keys (%d workers) in %v: %v; lock table after: %d (at most %d during); store keys %d -> %d",
			n, n, workers, took, got, r.lockTable(), r.busiest.Load(), keys, r.storeKeys(t))
		assert.Equal(t, map[string]int{"FENCE_FOREIGN": 1668, "FENCE_AHEAD": 1666, "FENCE_UNSCOPED": 833, "FENCE_MALFORMED": 833}, got)
		assert.Zero(t, r.lockTable(), "the lock table kept keys of refused requests")
		assert.Positive(t, r.busiest.Load(), "the lock table was never used")
		assert.LessOrEqual(t, r.busiest.Load(), int64(workers))
		assert.EqualValues(t, n-malformed, r.admits.Load(), "the store decided every token the guard could read")
		assert.Equal(t, keys, r.storeKeys(t), "a refused token created a mark")
		checks, rejections := fenceCounts(t, r.h)
		assert.Equal(t, map[obs.FenceResult]int64{obs.FenceForeign: 1668, obs.FenceAhead: 1666, obs.FenceUnscoped: 833, obs.FenceMalformed: 833}, checks)
		assert.Zero(t, rejections)

		t.Run("genuine", func(t *testing.T) {
			now := redisMicros(t, client)
			keys := r.storeKeys(t)
			took, got := r.flood(t, n, workers, func(i int) (string, []string, string) {
				return key(i), []string{fence.Mint(ns, key(i), now, nil).String()}, ""
			})
			created := r.storeKeys(t) - keys
			t.Logf("%d genuine unsigned tokens for %d keys in %v: %v; lock table after: %d; marks created: %d", n, n, took, got, r.lockTable(), created)
			assert.Equal(t, n, created, "one mark per key")
			assert.Zero(t, r.lockTable())
			for i := 0; i < n; i += 499 {
				assert.Equal(t, now, r.mark(t, key(i)), key(i))
			}
			checks, rejections := fenceCounts(t, r.h)
			assert.EqualValues(t, n, checks[obs.FenceAccepted])
			assert.Zero(t, rejections)
		})
	})

	t.Run("with secrets", func(t *testing.T) {
		secrets := hostileSecrets(t, "k1", 0x11)
		r := newHostileRig(t, client, "floodsigned", fence.RedisConfig{LockNamespace: ns, Secrets: secrets})
		other, unknown := hostileSecrets(t, "k1", 0x22), hostileSecrets(t, "k9", 0x11)
		now := redisMicros(t, client)
		keys := r.storeKeys(t)
		took, got := r.flood(t, n, workers, func(i int) (string, []string, string) {
			k := key(i)
			switch i % 6 {
			case 0:
				return k, []string{fence.Mint(ns, k, now, nil).String()}, "FENCE_FORGED"
			case 1: // forged and foreign: the signature is checked first
				return k, []string{fence.Mint(ns, k+"-other", now, other).String()}, "FENCE_FORGED"
			case 2:
				return k, []string{fence.Mint(ns, k, now, unknown).String()}, "FENCE_FORGED"
			case 3:
				raised := fence.Mint(ns, k, now, secrets)
				raised.Fence++
				return k, []string{raised.String()}, "FENCE_FORGED"
			case 4:
				return k, []string{fence.Mint(ns, k+"-other", now, secrets).String()}, "FENCE_FOREIGN"
			}
			return k, []string{fence.Mint(ns+"-other", k, now, secrets).String()}, "FENCE_FOREIGN"
		})
		t.Logf("%d refused requests for %d keys (%d workers) in %v: %v; lock table after: %d (at most %d during); store keys %d -> %d",
			n, n, workers, took, got, r.lockTable(), r.busiest.Load(), keys, r.storeKeys(t))
		assert.Equal(t, map[string]int{"FENCE_FORGED": 3334, "FENCE_FOREIGN": 1666}, got)
		assert.Zero(t, r.lockTable(), "the lock table kept keys of refused requests")
		assert.Positive(t, r.busiest.Load(), "the lock table was never used")
		assert.EqualValues(t, n, r.admits.Load())
		assert.Equal(t, keys, r.storeKeys(t), "a refused token created a mark")
		checks, rejections := fenceCounts(t, r.h)
		assert.Equal(t, map[obs.FenceResult]int64{obs.FenceForged: 3334, obs.FenceForeign: 1666}, checks)
		assert.Zero(t, rejections)

		// Marks come only with leases: three locked keys, three marks.
		ctx := testCtx(t)
		lk := newLocker(t, client, telemetrytest.New(t).Tel, lease.Config{Namespace: ns, Secrets: secrets})
		for i := range 3 {
			l, err := lk.Acquire(ctx, key(i))
			require.NoError(t, err)
			status, reason, err := r.put(key(i), l.Token().String())
			require.NoError(t, err)
			assert.Equal(t, http.StatusNoContent, status, reason)
			require.NoError(t, l.Release(ctx))
		}
		assert.Equal(t, keys+3, r.storeKeys(t), "one mark per locked key")
		assert.Zero(t, r.lockTable())
	})
	t.Logf("the three floods of %d requests, with their set-up: %v", n, time.Since(total))
}

// TestHostileTokenWithinTheSkew: the worst a forger without a secret can
// do is a mark within the clock bound (MaxSkew, 10 s by default; 300 ms
// here) ahead of the store's clock. Such a token is admitted, and the
// key's legitimate holders are refused as stale (counted: the fence cannot
// tell them from late writers) until the leases' clock passes the forged
// fence: at most MaxSkew after the forgery. With secrets the same token is
// forged, and the holder is admitted at once.
func TestHostileTokenWithinTheSkew(t *testing.T) {
	const skew = 300 * time.Millisecond
	const ns = "hostile-ns"
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := testCtx(t)

	t.Run("without secrets", func(t *testing.T) {
		r := newHostileRig(t, client, "skew", fence.RedisConfig{LockNamespace: ns, MaxSkew: skew})
		lk := newLocker(t, client, telemetrytest.New(t).Tel, lease.Config{Namespace: ns})
		forged := fence.Mint(ns, "K", redisMicros(t, client)+(skew-50*time.Millisecond).Microseconds(), nil)
		forgedAt := time.Now()
		status, reason, err := r.put("K", forged.String())
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, status, "a forged fence within the bound is admitted: %s", reason)
		require.Equal(t, forged.Fence, r.mark(t, "K"))

		var refused int
		for {
			l, err := lk.Acquire(ctx, "K")
			require.NoError(t, err)
			status, reason, err := r.put("K", l.Token().String())
			require.NoError(t, err)
			require.NoError(t, l.Release(ctx))
			if status == http.StatusNoContent {
				require.Greater(t, l.Fence(), forged.Fence)
				break
			}
			require.Equal(t, "FENCE_STALE", reason)
			require.Less(t, l.Fence(), forged.Fence)
			refused++
			time.Sleep(20 * time.Millisecond)
		}
		locked := time.Since(forgedAt)
		t.Logf("MaxSkew %v: the holder was refused as stale %d times, for %v", skew, refused, locked)
		assert.Positive(t, refused, "the forged mark delayed no one")
		assert.Less(t, locked, skew+time.Second, "the holder was locked out longer than the bound allows")
		_, rejections := fenceCounts(t, r.h)
		assert.EqualValues(t, refused, rejections)
	})

	t.Run("with secrets", func(t *testing.T) {
		secrets := hostileSecrets(t, "k1", 0x11)
		r := newHostileRig(t, client, "skewsigned", fence.RedisConfig{LockNamespace: ns, Secrets: secrets, MaxSkew: skew})
		lk := newLocker(t, client, telemetrytest.New(t).Tel, lease.Config{Namespace: ns, Secrets: secrets})
		forged := fence.Mint(ns, "K", redisMicros(t, client)+(skew-50*time.Millisecond).Microseconds(), nil)
		status, reason, err := r.put("K", forged.String())
		require.NoError(t, err)
		assert.Equal(t, http.StatusForbidden, status)
		assert.Equal(t, "FENCE_FORGED", reason)
		l, err := lk.Acquire(ctx, "K")
		require.NoError(t, err)
		defer l.Release(ctx)
		status, reason, err = r.put("K", l.Token().String())
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, status, "the holder waits for nothing: %s", reason)
		_, rejections := fenceCounts(t, r.h)
		assert.Zero(t, rejections)
	})
}
