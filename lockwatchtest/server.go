package lockwatchtest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/redis/go-redis/v9"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// defaultNamespace is lease.Config's default Namespace: the kit derives the
// keys and tokens of a lease from the namespace as the Locker does.
const defaultNamespace = "lockwatch"

// faultTimeout bounds each of the kit's own calls to the embedded Redis.
const faultTimeout = 5 * time.Second

// contendWait is how long Contend waits for a key's release: the
// middleware releases in the background, after the answer.
const contendWait = time.Second

// Server is an embedded Redis for one test, with a Locker on it and the
// faults the test can make its code meet.
type Server struct {
	t       testing.TB
	mr      *miniredis.Miniredis
	client  *redis.Client
	locker  *lease.Locker
	other   *lease.Locker // the other owner: Contend, NewerToken
	direct  *redis.Client // no reply dropped: NewerToken's clock
	cfg     lease.Config
	replies replyLoss

	mu     sync.Mutex
	issued map[string]int64 // NewerToken's last fence, by key
}

// New starts an embedded Redis on a loopback port and returns it with a
// Locker on it whose leases take cfg (the zero Config: every default). Both
// stop when the test ends (t.Cleanup): the Locker is closed first, so
// leases still held end with lease.LossClosed. Keys expire with the wall
// clock. New fails the test when the server cannot start.
func New(t testing.TB, cfg lease.Config) *Server {
	t.Helper()
	mr := miniredis.NewMiniRedis()
	mr.ClockTTL(true)
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatalf("lockwatchtest: start the embedded Redis: %v", err)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = defaultNamespace
	}
	s := &Server{t: t, mr: mr, cfg: cfg}
	s.client = redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true, Dialer: s.replies.dial})
	otherClient := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	s.direct = otherClient
	s.locker = lease.NewLocker(s.client, cfg)
	s.other = lease.NewLocker(otherClient, lease.Config{
		TTL: cfg.TTL, Namespace: cfg.Namespace, Name: "lockwatchtest", Secrets: cfg.Secrets, Telemetry: quiet(),
		Wait: contendWait,
	})
	t.Cleanup(func() {
		_ = s.locker.Close()
		_ = s.other.Close()
		_ = s.client.Close()
		_ = otherClient.Close()
		mr.Close()
	})
	return s
}

// Locker returns the Locker the code under test takes its leases from.
func (s *Server) Locker() *lease.Locker { return s.locker }

// Client returns the Locker's go-redis client, for whatever else the test
// keeps on the same Redis (a fence.RedisStore, say). DropNextReply acts on
// its commands too.
func (s *Server) Client() *redis.Client { return s.client }

// quiet is the telemetry of the other owner's Locker, which records
// nowhere: a test that reads the metrics of its own Locker's global
// providers counts only the acquires of the code under test.
func quiet() *telemetry.Telemetry {
	return telemetry.New(telemetry.Config{
		TracerProvider: tracenoop.NewTracerProvider(),
		MeterProvider:  metricnoop.NewMeterProvider(),
		Logger:         slog.New(slog.DiscardHandler),
	})
}

// context bounds one of the kit's calls to the embedded Redis.
func (s *Server) context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), faultTimeout)
}
